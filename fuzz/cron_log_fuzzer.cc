// Cron's log lines as syslog text and as `journalctl -o json` lines, each read in two parts (the
// state one read hands the next) with tight limits, and whole with the defaults; the pending runs
// and their index by start stay one set.
#include "fuzz/fuzz_util.h"
#include "schedwatch/schedule.h"
#include "sources/crontab/cron_log.h"

namespace {

using namespace schedwatch;
using namespace schedwatch::crontab;

template <typename Parse>
void ReadInTwoParts(std::string_view text, const CronLogOptions& options, Parse parse) {
  CronLogState state;
  CronLogBatch batch;
  std::size_t consumed = parse(text.substr(0, text.size() / 2), options, state, batch);
  if (consumed > text.size() / 2) __builtin_trap();  // never more than it was given
  parse(text.substr(consumed), options, state, batch);
  // The runs by start hold exactly the pending runs, and no more than the options allow.
  if (state.pending.size() != state.pending_by_start.size() ||
      state.pending.size() > options.max_pending) {
    __builtin_trap();
  }
  for (const auto& [started, pid] : state.pending_by_start) {
    auto run = state.pending.find(pid);
    if (run == state.pending.end() || run->second.started != started) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::AsText(data, size);
  CronLogOptions defaults;
  defaults.now = fuzz::kNow;
  CronLogOptions tight = defaults;
  tight.zone = FindZone("Europe/Berlin");
  tight.max_line_bytes = 120;
  tight.max_pending = 3;
  auto syslog = [](std::string_view part, const CronLogOptions& options, CronLogState& state,
                   CronLogBatch& batch) { return ParseSyslog(part, options, state, batch); };
  auto journal = [](std::string_view part, const CronLogOptions& options, CronLogState& state,
                    CronLogBatch& batch) {
    std::string cursor;
    return ParseJournalJson(part, options, state, batch, &cursor);
  };
  for (const CronLogOptions* options : {&defaults, &tight}) {
    ReadInTwoParts(text, *options, syslog);
    ReadInTwoParts(text, *options, journal);
  }
  ParseSyslogTime(text, fuzz::kNow, tight.zone);
  return 0;
}
