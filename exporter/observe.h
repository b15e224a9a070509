// Stage 2 of a refresh: what the reads, the jobs' checkpoints, the ledger and schedwatch_run's
// records say about each role and each source. Classifies nothing (that is core's Classify).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "exporter/read_sources.h"
#include "exporter/state.h"
#include "schedwatch/classify.h"
#include "schedwatch/spec.h"
#include "sources/problems.h"
#include "sources/run_record.h"

namespace schedwatch {

struct Observed {
  std::vector<SourceStatus> sources;          // in the order of the reads
  std::vector<RoleObservation> observations;  // in the order of spec.jobs
  // In the order of spec.jobs, each with its job and what run records said; not classified.
  std::vector<RoleResult> roles;
  // By source: the problems to count in schedwatch_source_errors_total for this refresh.
  std::map<std::string, std::vector<SourceProblem>> problems;
  // By role: schedwatch_run's skipped records seen for the first time.
  std::map<std::string, int> new_duplicates_prevented;
};

// Keeps what saves work across refreshes: run record files already read and skipped records
// already counted. One refresh at a time.
class Observer {
 public:
  explicit Observer(std::string ledger_file) : ledger_file_(std::move(ledger_file)) {}

  // `desired_since`: when each role was first desired. The reads' snapshots are consumed.
  Observed Observe(const Spec& spec, std::vector<SourceRead>& reads,
                   const std::map<std::string, std::int64_t>& desired_since, std::int64_t now);

 private:
  void ApplyRunRecords(const JobSpec& job, RoleObservation& observation, RoleResult& role,
                       Observed& observed);
  void Forget(const Spec& spec);  // roles no longer desired with run records

  std::string ledger_file_;  // empty: no ledger
  std::map<std::string, RunRecordCache> run_record_cache_;
  std::map<std::string, std::set<std::string>> prevented_counted_;
};

}  // namespace schedwatch
