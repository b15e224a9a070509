// What one refresh saw: the input of every renderer (metrics, status page, JSON).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exporter/source.h"
#include "schedwatch/classify.h"
#include "schedwatch/spec.h"

namespace schedwatch {

struct SourceStatus {
  std::string name;
  std::string type;
  bool up = false;
  std::string error;                      // why the last list failed; empty when up
  std::optional<std::int64_t> last_sync;  // end of the last successful list
  double sync_duration_seconds = 0;
  int objects = 0;
  int unowned_objects = 0;
  std::vector<SourceProblem> problems;  // of the last list
};

struct RoleResult {
  const JobSpec* job = nullptr;
  RoleStatus status;
  std::vector<LiveObject> objects;
  // From schedwatch_run's records (jobs with runs_dir); unset without them.
  std::optional<double> last_duration;
  std::optional<int> last_exit_code;  // 128 + N for a run ended by signal N, as shells say
  std::optional<bool> guarded;
  int run_records = 0;
  int skipped_duplicates = 0;  // among the records kept
};

struct RefreshResult {
  std::shared_ptr<const Spec> spec;   // keeps every JobSpec* alive
  std::int64_t time = 0;              // the refresh's now
  bool complete = false;              // false before the first refresh has finished
  std::vector<RoleResult> roles;      // sorted by role
  std::vector<SourceStatus> sources;  // sorted by name
};

}  // namespace schedwatch
