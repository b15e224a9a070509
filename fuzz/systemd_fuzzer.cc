// What the systemd source reads from outside, on the same bytes: a unit file's markers (as a
// hostile user might write one), a manager reading as JSON (the shape of the D-Bus answers) put
// through the mapping to live objects and runs and through discover's reading of every timer
// (monotonic triggers included), and journal entries' fields.
#include <nlohmann/json.hpp>

#include "fuzz/fuzz_util.h"
#include "sources/systemd/systemd_discoverer.h"
#include "sources/systemd/timer_mapping.h"
#include "sources/systemd/unit_journal.h"
#include "sources/systemd/unit_markers.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace schedwatch;
  using namespace schedwatch::systemd;
  std::string_view text = fuzz::AsText(data, size);

  UnitMarkers markers;
  ApplyUnitFile(text, "fuzz.timer", markers);

  auto json = nlohmann::json::parse(text, nullptr, false);
  if (!json.is_discarded()) {
    if (auto reading = ManagerReadingFromJson(json)) {
      std::map<std::string, UnitMarkers> marked;
      for (const auto& timer : reading->timers) marked[timer.name] = {"role", "1", {}, ""};
      ProblemSink problems;
      MapTimers(*reading, marked, 0, problems);
      ToJson(*reading);
      TimersRead read;
      read.manager = std::move(*reading);  // unmarked: discover sees every timer
      FindTimers(read);
    }
  }

  std::vector<std::string_view> fields;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    fields.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  JournalRuns runs(4);
  std::string why;
  for (std::uint64_t t : {std::uint64_t{0}, std::uint64_t{1796180670199692}, ~std::uint64_t{0}}) {
    if (auto entry = EntryFromFields(fields, t, &why)) {
      runs.Apply(*entry);
      runs.HistoryOf(entry->unit);
    }
  }
  return 0;
}
