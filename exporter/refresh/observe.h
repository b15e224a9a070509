// Stage 2 of a refresh: what the reads, with the jobs' checkpoints and schedwatch_run's records
// they brought, and the ledger say about each role and each source. Opens no file (the read
// stage did) and classifies nothing (that is core's Classify).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "exporter/refresh/read_sources.h"
#include "exporter/refresh/run_history.h"
#include "exporter/state/state.h"
#include "schedwatch/classify.h"
#include "schedwatch/spec.h"
#include "sources/problems.h"
#include "sources/run_record.h"

namespace schedwatch {

struct Observed {
  std::vector<SourceStatus> sources;  // in the order of the reads
  // In the order of spec.jobs, each with its job, what run records said and what the
  // EachObservation made of its observation.
  RoleList roles;
  // By source: the problems to count in schedwatch_source_errors_total for this refresh.
  std::map<std::string, std::vector<SourceProblem>> problems;
  // By role: schedwatch_run's skipped records seen for the first time.
  std::map<std::string, int> new_duplicates_prevented;
};

// When each role was first desired, by index into its spec's jobs: 8 bytes a role (its name
// and time took 40, 38 MiB at 1,000,000 roles).
using DesiredSinceList = std::vector<std::int64_t>;

// Called for each role as soon as it is observed, in the order of spec.jobs, with its
// observation (which it may consume) and its result. Only one role's observation is held at a
// time, never every role's. `carried`: for a source whose reads bring only news, the summaries
// it has shown of the role's runs, this read's and earlier ones (RunHistoryStore::Add).
using EachObservation =
    std::function<void(RoleObservation& observation, RoleResult& role, const RunSummary* carried)>;

// Keeps the skipped records already counted across refreshes. One refresh at a time.
class Observer {
 public:
  // `desired_since`: when each job's role was first desired; `by_role`: the spec's jobs in role
  // order; `published`: the last refresh's roles, sorted by role, whose object lists are shared
  // where unchanged; `kept`: the runs kept, which complete the reads (for thresholds judged from
  // runs, and reads that bring only news); `ledger`: the reconciler's, read with the sources.
  // The reads' snapshots are consumed.
  Observed Observe(const Spec& spec, std::vector<SourceRead>& reads,
                   const DesiredSinceList& desired_since, std::int64_t now,
                   const RoleOrder& by_role, const RoleList& published, const RunHistoryStore& kept,
                   const LedgerIds& ledger, const EachObservation& each);

 private:
  // `objects`: the role's, from every read (kept only when the job's source was read); `files`:
  // what its source's read found in the job's own files, null when none were read; `before`:
  // the role in the published refresh, if any.
  void ObserveRole(const JobSpec& job, RoleObjects objects, std::vector<SourceRead>& reads,
                   const std::unordered_map<std::string_view, std::size_t>& source_index,
                   const LedgerIds& ledger, const RunHistoryStore& kept, JobFilesRead* files,
                   const RoleResult* before, RoleObservation& observation,
                   std::optional<RunSummary>& carried, RoleResult& role, Observed& observed);
  void ApplyRunRecords(const JobSpec& job, RunRecordsRead& read, RoleObservation& observation,
                       RoleResult& role, Observed& observed);
  void Forget(const Spec& spec);  // roles no longer desired with run records

  std::map<std::string, std::set<std::string>> prevented_counted_;
};

}  // namespace schedwatch
