// Run history per role across refreshes, for people: the status page, its timeline and
// `explain`. Sources report what their scheduler still shows (a CronJob keeps its last few
// Jobs, GitHub a page of runs); this keeps the newest kRunHistoryKept runs of each role after
// the scheduler has forgotten them. 16 bytes a run; a role's list is shared, never copied, with
// the published refreshes and is replaced only when it changes.
//
// It also counts finished runs (schedwatch_job_runs_total), each once: when a read first shows
// it finished. The kept runs are what was seen: a run counts when the read shows it finished
// and the role keeps it running, or keeps no run with its start and it is newer than the oldest
// one kept (any run, when the role keeps none: what a source shows at the exporter's start, or
// when a role is first seen, is counted). So a run is not counted again on later refreshes,
// after a reload, or when a source shows it again after it fell out of the kept runs (a page of
// 30 GitHub runs against 20 kept). A run first seen finished that started before the oldest
// kept run is not counted.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "exporter/state/state.h"

namespace schedwatch {

// `kept` merged with one read's runs. One start time is one run and the read's report wins,
// except that a running report never replaces a finished one. A kept run still running that
// the read no longer shows is dropped (it ended or vanished; the source would show it
// otherwise). A `complete` read (a snapshot file holds the whole history) replaces `kept`.
RoleRuns MergeRuns(const RoleRuns& kept, const std::vector<Run>& read, bool complete,
                   RunOrigin origin = RunOrigin::kSource);

// Adds to `history` the finished runs of `kept` it does not hold (by start), without touching
// its summaries: what a role's thresholds (failure_threshold, recovery_threshold, min_runtime)
// are judged from, so that runs the scheduler has since forgotten still count.
void AddKeptRuns(const RoleRuns& kept, RunHistory& history);

// Whether Classify needs the kept runs of `job`: it sets a threshold judged from runs, and its
// source's reads are not its whole history (a complete read replaces what was kept).
bool JudgedFromKeptRuns(const JobSpec& job);

// Calls `count` with each run of `read` counted now: finished, and by the rule above new to
// `kept` (the role's runs before this read).
void ForEachNewlyFinished(const RoleRuns& kept, const std::vector<Run>& read,
                          const std::function<void(const Run&)>& count);

class RunHistoryStore {
 public:
  // One role of a refresh: `read`, the runs its source showed (Classify's), merged into what
  // was kept; sets RoleResult::runs and counts the newly finished runs into run_counts. A role
  // whose source is unknown gets what was kept. `carried`, for a source whose reads bring only
  // news: its summaries so far (AddKept's and the read's), kept for the next refresh. Called by
  // one thread, once for each role.
  void Add(RoleResult& role, const std::vector<Run>& read, const RunSummary* carried = nullptr);
  // Adds to a read's `history` of `job` the finished runs kept that it does not hold
  // (::AddKeptRuns).
  void AddKeptRuns(const JobSpec& job, RunHistory& history) const;
  // For a source whose reads bring only news (SourceSnapshot::news_read): those runs and the
  // summaries Add kept, so that the read is judged as a read of the whole history would be.
  void AddKept(const JobSpec& job, RunHistory& history) const;
  // Once every role of the refresh was added: forgets the roles that were not (they left the
  // spec) and sets RefreshResult::durations. `order`: of the refresh's spec.
  void Finish(RefreshResult& result, const RoleOrder& order);

  std::size_t roles() const { return kept_.size(); }

 private:
  // A role's runs, shared with the refreshes (RoleResult::runs points into it), and the
  // summaries of a source whose reads bring only news.
  struct Runs {
    RoleRuns runs;
    RunSummary carried;
    std::shared_ptr<const RunExemplars> exemplars = nullptr;  // until a named run is counted
  };
  // A role's runs and counts, by its job of the last refresh (the role and source compared, not
  // the pointer, so a reloaded spec keeps them): 32 bytes a role, no copy of its names.
  struct Kept {
    const JobSpec* job = nullptr;
    std::shared_ptr<const Runs> runs;
    RunCounts counts;
  };
  std::shared_ptr<const Spec> spec_;      // the last refresh's: holds the jobs of kept_
  std::vector<Kept> kept_;                // sorted by role; roles without runs or counts left out
  std::vector<RoleDurations> durations_;  // sorted by role; jobs with duration_histogram only
  // The refresh being added, in the order added.
  std::vector<Kept> adding_;
  std::vector<RoleDurations> adding_durations_;
  std::vector<RoleExemplars> adding_exemplars_;
};

}  // namespace schedwatch
