// The run records schedwatch_run writes and the exporter reads: one JSON file per run in
// `<runs_dir>/<role>/`, written atomically (temporary file, fsync, rename). A run's file is
// written when it starts (state "running") and replaced when it ends ("finished"); a copy that
// found the guard held writes a "skipped" file, and one that could not take the guard and was
// told to skip writes "not_run". The exporter treats the files as outside input: size-capped,
// strictly typed, a bad one is a problem (bad_run_record), never a crash.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/classify.h"
#include "schedwatch/result.h"
#include "sources/source.h"

namespace schedwatch {

inline constexpr int kRunRecordFormat = 1;
// A record is a few hundred bytes; anything larger is not one of ours.
inline constexpr std::size_t kMaxRunRecordBytes = 64u << 10;
// Files of one role looked at per refresh (the wrapper keeps far fewer).
inline constexpr std::size_t kMaxRunRecordFiles = 10000;

struct RunRecord {
  enum class State { kRunning, kFinished, kSkipped, kNotRun };
  std::string role;
  State state = State::kRunning;
  std::string host;  // host or pod name
  long pid = 0;      // the wrapper's
  double start = 0;  // Unix seconds with fractions
  std::optional<double> end;
  std::optional<int> exit_code;  // finished normally
  std::optional<int> signal;     // finished by a signal
  std::string guard;             // "flock", "lease" or "none"
  std::string guard_error;       // why the guard could not be taken or kept; empty: fine
  std::string held_by;           // skipped: the holder the guard named, when known

  std::optional<double> Duration() const {
    // To the microsecond the record holds, without the subtraction's noise.
    return end ? std::optional<double>(std::round((*end - start) * 1e6) / 1e6) : std::nullopt;
  }
  bool Succeeded() const { return state == State::kFinished && exit_code == 0; }
};

std::string_view RunStateName(RunRecord::State state);

// One record's JSON text (one line, newline-terminated).
std::string RenderRunRecord(const RunRecord& record);

// Strict: an object of known keys with the right types, format 1, a valid role and state.
Result<RunRecord> ParseRunRecord(std::string_view text);

// A record's file name: "<start in µs, 20 digits>-<pid>.json", so names sort by start.
std::string RunRecordFileName(const RunRecord& record);

// What a role's records say, for the refresher.
struct RunRecordSummary {
  RunHistory history;  // of the runs (skipped and not_run records are no runs)
  std::optional<double> last_duration;
  std::optional<int> last_exit_code;  // of the latest finished run
  std::optional<int> last_signal;
  int skipped = 0;  // skipped duplicates among the records
  // The latest run was guarded (no guard error) and a skipped duplicate is among the records:
  // the guard is holding copies apart. Unset without any run.
  std::optional<bool> guarded;
  std::set<std::string> skipped_files;  // names, for counting prevented runs once
  bool has_runs = false;
};

// Turns records (any order) into history. A "running" record followed by a later guarded run
// cannot still be running (the guard was free), so it counts as failed at that later start.
RunRecordSummary SummarizeRunRecords(const std::vector<std::pair<std::string, RunRecord>>& records);

// What one refresh keeps for the next about a role's files, so an unchanged file is neither
// read nor parsed again; a bad one stays a problem while it is there, unchanged.
struct RunRecordCache {
  struct Entry {
    std::uint64_t device = 0, inode = 0;
    std::int64_t mtime_ns = 0, size = 0;
    std::optional<RunRecord> record;  // nullopt: bad
    std::string problem;              // why it is bad: reported at every read while it stands
  };
  std::map<std::string, Entry> files;  // by name
};

// Reads `<directory>` (one role's records): files named *.json, at most kMaxRunRecordBytes each;
// records of another role or that do not parse are problems (bad_run_record). A directory that
// does not exist holds no records; one that a link of another user leads to is a problem
// (platform::OpenGuarded). `cache` may be null.
struct RunRecordRead {
  std::vector<std::pair<std::string, RunRecord>> records;  // file name, record
  std::vector<SourceProblem> problems;                     // every standing one, at each read
  std::vector<std::string> new_problems;  // those first seen at this read (to log them once)
};
RunRecordRead ReadRunRecords(const std::string& directory, const std::string& role,
                             RunRecordCache* cache);

}  // namespace schedwatch
