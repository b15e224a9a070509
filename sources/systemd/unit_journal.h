// Runs of services from the journal: the manager's own messages about a unit (PID 1's, so no
// other process can forge them: UNIT= is a field any client may set, _PID is the journal's own),
// grouped by INVOCATION_ID. For a service run:
//   7d4958e842da4a758f6c1cdc7b36dcc5  "Starting backup.service..."          the start
//   98e322203f7a4ed290d09fe03c09fe15  "Main process exited, code=exited, status=3/..."
//                                      EXIT_CODE=exited EXIT_STATUS=3
//   d9b373ed55a64feb8242e02dbe79a49c  "Failed with result 'exit-code'."     UNIT_RESULT=exit-code
//   7ad2d189f7e94e70a38c781354912448  "Deactivated successfully."           the success
// The assembly is pure (JournalRuns); JournalReader reads the journal with sd-journal.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/classify.h"
#include "schedwatch/result.h"
#include "sources/problems.h"

namespace schedwatch::systemd {

inline constexpr std::string_view kJobStarted = "7d4958e842da4a758f6c1cdc7b36dcc5";
inline constexpr std::string_view kProcessExit = "98e322203f7a4ed290d09fe03c09fe15";
inline constexpr std::string_view kUnitFailed = "d9b373ed55a64feb8242e02dbe79a49c";
inline constexpr std::string_view kUnitSucceeded = "7ad2d189f7e94e70a38c781354912448";

// The fields of one entry the assembly reads.
struct JournalEntry {
  std::int64_t time = 0;  // __REALTIME_TIMESTAMP in seconds
  std::string unit;       // UNIT
  std::string invocation_id;
  std::string message_id;
  std::string unit_result;  // UNIT_RESULT
  std::string exit_code;    // EXIT_CODE
  std::string exit_status;  // EXIT_STATUS
};

// An entry's fields from "NAME=value" data (as sd_journal_enumerate_data gives them); nullopt
// when it lacks what every run message has (UNIT, INVOCATION_ID, MESSAGE_ID), with `why`.
std::optional<JournalEntry> EntryFromFields(const std::vector<std::string_view>& fields,
                                            std::uint64_t realtime_us, std::string* why);

struct JournalRun {
  std::string invocation_id;
  Run run;
  std::string failure;  // "exit-code, status 3"
};

// Runs by unit, assembled from entries in journal order; the newest kept per unit.
class JournalRuns {
 public:
  explicit JournalRuns(std::size_t kept_per_unit = 2 * kRunHistoryKept) : kept_(kept_per_unit) {}
  void Apply(const JournalEntry& entry);
  // The unit's runs, without the one of invocation `skip` (the properties report it better).
  RunHistory HistoryOf(const std::string& unit, std::string_view skip = {}) const;
  const std::vector<JournalRun>* RunsOf(const std::string& unit) const;
  void Clear() { units_.clear(); }

 private:
  std::size_t kept_;
  std::map<std::string, std::vector<JournalRun>, std::less<>> units_;  // oldest first
};

struct JournalOptions {
  std::string directory;  // empty: the system journal
  std::set<std::string> units;
  std::size_t backlog_entries = 4000;  // read back on a first read (or when units change)
  std::size_t max_entries = 200000;    // per read after that
  const std::atomic<bool>* cancelled = nullptr;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// Reads new entries since the last call into its JournalRuns. Not thread-safe; one read at a
// time, as Source::List.
class JournalReader {
 public:
  Result<bool> Read(const JournalOptions& options, ProblemSink& problems);
  const JournalRuns& runs() const { return runs_; }
  void Swap(JournalReader& other);

 private:
  std::string directory_;
  std::set<std::string> units_;
  std::string cursor_;  // after the last entry read; empty: start from the backlog
  JournalRuns runs_;
};

}  // namespace schedwatch::systemd
