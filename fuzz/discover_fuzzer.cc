// discover's parsers of outside text, with the properties they promise: a role suggested from
// any crontab command is valid once made a name; markers inserted into any crontab cron loads
// leave its entries as they were; jobs appended to any spec read back as the spec's jobs and
// the new one (a crontab source's spec: its jobs need no other key).
#include <cctype>

#include "exporter/commands/discover.h"
#include "exporter/commands/spec_merge.h"
#include "fuzz/fuzz_util.h"
#include "sources/crontab/crontab_discoverer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace schedwatch;
  std::string_view text = fuzz::AsText(data, size);

  std::string role = RoleNameFrom(
      crontab::SuggestRole("/etc/cron.d/fuzz", crontab::CrontabKind::kSystem, "root", text));
  if (role.empty() || role.size() > 59 || !std::isalnum(static_cast<unsigned char>(role[0]))) {
    __builtin_trap();
  }

  crontab::ParsedCrontab parsed =
      crontab::ParseCrontab(text, crontab::CrontabKind::kSystem, "", nullptr);
  std::vector<std::pair<int, std::string>> markers;
  for (const auto& entry : parsed.entries) {
    if (entry.enabled && entry.role.empty()) {
      markers.emplace_back(entry.line, crontab::MarkerLine("r" + std::to_string(entry.line), "1"));
    }
  }
  if (auto marked =
          crontab::InsertMarkers(text, crontab::CrontabKind::kSystem, "", nullptr, markers)) {
    crontab::ParsedCrontab after =
        crontab::ParseCrontab(*marked, crontab::CrontabKind::kSystem, "", nullptr);
    if (after.entries.size() != parsed.entries.size()) __builtin_trap();
    for (std::size_t i = 0; i < after.entries.size(); ++i) {
      if (after.entries[i].command != parsed.entries[i].command ||
          after.entries[i].schedule != parsed.entries[i].schedule ||
          (after.entries[i].enabled && after.entries[i].role.empty())) {
        __builtin_trap();
      }
    }
  }

  auto spec = ParseSpec(text, "/fuzz/spec.yaml", BuiltInCatalog());
  if (!spec || spec->sources.empty() || spec->sources.begin()->second.type != "crontab" ||
      spec->FindJob("fuzz-new") != nullptr) {
    return 0;
  }
  JobText job;
  job.comments = {"fuzz"};
  job.fields = {{"role", "fuzz-new"},
                {"source", YamlScalar(spec->sources.begin()->first)},
                {"schedule", QuotedScalar("0 3 * * *")},
                {"spec_version", QuotedScalar("1")}};
  auto merged = AppendJobs(text, {job}, "added");
  if (!merged) return 0;  // refused: discover then changes nothing
  auto reread = ParseSpec(*merged, "/fuzz/spec.yaml", BuiltInCatalog());
  if (!reread || reread->jobs.size() != spec->jobs.size() + 1 ||
      reread->FindJob("fuzz-new") == nullptr) {
    __builtin_trap();
  }
  return 0;
}
