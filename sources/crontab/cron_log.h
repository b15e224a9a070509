// Cron's own log lines turned into runs. Pure: text and state in, runs and problem counts out;
// the source does the reading.
//
// With `cron -L 15` every run logs, from one child process of the daemon (the tag's PID):
//   CRON[48210]: (backup) CMD ([48211] /usr/local/bin/pg-backup --full)
//   CRON[48210]: (CRON) error (grandchild #48211 failed with exit status 3)   <- only on failure
//   CRON[48210]: (backup) END ([48211] /usr/local/bin/pg-backup --full)
// so a run is the CMD and END of one tag PID, failed when an error line came between them.
// Syslog lines start with an RFC 3339 time (rsyslog on Debian 12) or an old-style
// "May  1 02:30:01" one, which has no year and no zone: it is read in `zone` (the host's local
// zone) in the year that puts it at most a day after `now`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sources/problems.h"
#include "sources/source.h"

namespace date {
class time_zone;
}

namespace schedwatch::crontab {

struct CronRun {
  std::string user;
  std::string command;  // as logged (see LoggedCommand), blanks trimmed
  std::int64_t started = 0;
  std::optional<std::int64_t> finished;
  bool failed = false;
  long job_pid = 0;  // 0 when cron does not log it (no -L 8)
};

struct CronLogOptions {
  std::int64_t now = 0;                   // Unix seconds: picks the year of old-style times
  const date::time_zone* zone = nullptr;  // zone of old-style times; UTC when null
  std::size_t max_line_bytes = 64 << 10;  // longer lines are skipped (and counted)
  std::size_t max_pending = 10000;        // runs started and not ended that are remembered
};

// What one read hands to the next.
struct CronLogState {
  std::unordered_map<long, CronRun> pending;  // by the tag PID of cron's child
  // The same runs by start and PID: the oldest at once. When max_pending are remembered each
  // start forgets the oldest, and a scan of the 10,000 at every CMD line took a minute of the
  // first read of a 1,000,000-role host's log (and was a way for a log to burn CPU).
  std::set<std::pair<std::int64_t, long>> pending_by_start;
  bool in_long_line = false;  // skipping the rest of an over-long line
};

struct CronLogBatch {
  std::vector<CronRun> finished;      // runs whose END was read, in log order
  std::vector<CronRun> started_only;  // CMD lines without a job PID (cron without -L 8)
  ProblemSink problems;
};

// One message of cron's child, from a syslog line or a journal entry.
struct CronMessage {
  std::int64_t time = 0;
  long pid = 0;           // CRON[pid]
  std::string_view text;  // "(backup) CMD ([48211] /usr/local/bin/pg-backup --full)"
};
void ApplyCronMessage(const CronMessage& message, const CronLogOptions& options,
                      CronLogState& state, CronLogBatch& batch);

// Reads the complete lines of syslog text (a trailing partial line is left for the next read)
// and returns how many bytes it consumed. Lines of other programs are skipped.
std::size_t ParseSyslog(std::string_view text, const CronLogOptions& options, CronLogState& state,
                        CronLogBatch& batch);

// Reads `journalctl -o json` lines (entries of SYSLOG_IDENTIFIER CRON) the same way; `cursor`
// gets the last __CURSOR seen.
std::size_t ParseJournalJson(std::string_view text, const CronLogOptions& options,
                             CronLogState& state, CronLogBatch& batch, std::string* cursor);

// "May  1 02:30:01" in `zone`, in the year that puts it at most a day after `now`.
std::optional<std::int64_t> ParseSyslogTime(std::string_view text, std::int64_t now,
                                            const date::time_zone* zone);

}  // namespace schedwatch::crontab
