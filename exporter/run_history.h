// Run history per role across refreshes, for people: the status page, its timeline and
// `explain`. Sources report what their scheduler still shows (a CronJob keeps its last few
// Jobs, GitHub a page of runs); this keeps the newest kRunHistoryKept runs of each role after
// the scheduler has forgotten them. 16 bytes a run; a role's list is shared, never copied, with
// the published refreshes and is replaced only when it changes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "exporter/state.h"

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

class RunHistoryStore {
 public:
  // Merges the runs of every role whose source was read into the store, moves them from
  // status.history.runs into RoleResult::runs, gives roles of unread sources what the store
  // kept, and forgets roles that left the spec. Called once per refresh, by one thread.
  void Update(RefreshResult& result);

  std::size_t roles() const { return kept_.size(); }

 private:
  // A role's runs, by its job of the last refresh (the role and source compared, not the
  // pointer, so a reloaded spec keeps them): 24 bytes a role, no copy of its names.
  struct Kept {
    const JobSpec* job = nullptr;
    std::shared_ptr<const RoleRuns> runs;
  };
  std::shared_ptr<const Spec> spec_;  // the last refresh's: holds the jobs of kept_
  std::vector<Kept> kept_;            // sorted by role; roles without runs left out
};

}  // namespace schedwatch
