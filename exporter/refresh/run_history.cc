#include "exporter/refresh/run_history.h"

#include <algorithm>
#include <limits>
#include <string_view>

#include "sources/catalog.h"

namespace schedwatch {
namespace {

RecordedRun Record(const Run& run, RunOrigin origin) {
  RecordedRun recorded;
  recorded.started = run.started;
  recorded.outcome = run.outcome;
  recorded.origin = origin;
  if (run.finished && run.outcome != Run::Outcome::kRunning) {
    // A clock that ran backwards between start and end is not a negative duration.
    std::int64_t seconds = std::max<std::int64_t>(0, *run.finished - run.started);
    recorded.duration = static_cast<std::int32_t>(
        std::min<std::int64_t>(seconds, std::numeric_limits<std::int32_t>::max()));
  }
  return recorded;
}

bool ByStart(const RecordedRun& a, const RecordedRun& b) { return a.started < b.started; }

// One role's slot of a list sorted by role, if it holds the same role on the same source.
template <typename List>
auto Find(List& list, const JobSpec& job) -> decltype(&*list.begin()) {
  auto it = std::lower_bound(
      list.begin(), list.end(), job.role,
      [](const auto& entry, std::string_view role) { return entry.job->role < role; });
  bool same = it != list.end() && it->job->role == job.role && it->job->source == job.source;
  return same ? &*it : nullptr;
}

template <typename Entry>
void SortByRole(std::vector<Entry>& list, const RoleOrder& order) {
  std::sort(list.begin(), list.end(), [&order](const Entry& a, const Entry& b) {
    return order.Rank(*a.job) < order.Rank(*b.job);
  });
}

}  // namespace

RoleRuns MergeRuns(const RoleRuns& kept, const std::vector<Run>& read, bool complete,
                   RunOrigin origin) {
  RoleRuns merged;
  merged.reserve(std::min(kept.size() + read.size(), kRunHistoryKept + read.size()));
  if (!complete) {
    for (const RecordedRun& run : kept) {
      if (run.outcome != Run::Outcome::kRunning || run.origin != origin) merged.push_back(run);
    }
  }
  std::size_t old_count = merged.size();
  for (const Run& run : read) merged.push_back(Record(run, origin));
  std::stable_sort(merged.begin() + static_cast<std::ptrdiff_t>(old_count), merged.end(), ByStart);
  // Both halves are sorted by start; the read's half comes second so it wins on equal starts.
  std::inplace_merge(merged.begin(), merged.begin() + static_cast<std::ptrdiff_t>(old_count),
                     merged.end(), ByStart);
  RoleRuns out;
  out.reserve(std::min(merged.size(), kRunHistoryKept));
  for (const RecordedRun& run : merged) {
    if (!out.empty() && out.back().started == run.started) {
      bool keep_finished =
          run.outcome == Run::Outcome::kRunning && out.back().outcome != Run::Outcome::kRunning;
      if (!keep_finished) out.back() = run;
      continue;
    }
    out.push_back(run);
  }
  if (out.size() > kRunHistoryKept) {
    out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(kRunHistoryKept));
  }
  return out;
}

void AddKeptRuns(const RoleRuns& kept, RunHistory& history) {
  RunHistory older;  // runs only: the summaries stay the source's
  for (const RecordedRun& run : kept) {
    if (run.outcome == Run::Outcome::kRunning) continue;
    bool read = std::any_of(history.runs.begin(), history.runs.end(),
                            [&](const Run& held) { return held.started == run.started; });
    if (!read) older.runs.push_back({run.started, run.finished(), run.outcome});
  }
  if (!older.runs.empty()) history.Merge(older);
}

bool JudgedFromKeptRuns(const JobSpec& job) {
  const JobAlerting& alerting = job.Alerting();
  if (!alerting.Thresholds() && alerting.min_runtime == 0) return false;
  const SourceDescriptor* type = BuiltInCatalog().Find(job.source_type);
  return type == nullptr || !type->reports_complete_history();
}

void ForEachNewlyFinished(const RoleRuns& kept, const std::vector<Run>& read,
                          const std::function<void(const Run&)>& count) {
  for (const Run& run : read) {
    if (run.outcome == Run::Outcome::kRunning) continue;
    auto held =
        std::lower_bound(kept.begin(), kept.end(), run.started,
                         [](const RecordedRun& a, std::int64_t b) { return a.started < b; });
    bool known = held != kept.end() && held->started == run.started;
    if (known ? held->outcome == Run::Outcome::kRunning
              : kept.empty() || run.started > kept.front().started) {
      count(run);
    }
  }
}

void RunHistoryStore::AddKeptRuns(const JobSpec& job, RunHistory& history) const {
  const Kept* kept = Find(kept_, job);
  if (kept != nullptr && kept->runs) schedwatch::AddKeptRuns(kept->runs->runs, history);
}

void RunHistoryStore::AddKept(const JobSpec& job, RunHistory& history) const {
  const Kept* kept = Find(kept_, job);
  if (kept == nullptr || !kept->runs) return;
  schedwatch::AddKeptRuns(kept->runs->runs, history);
  RunHistory summaries;  // no runs: the read's running ones are all there are
  static_cast<RunSummary&>(summaries) = kept->runs->carried;
  history.Merge(summaries);
}

void RunHistoryStore::Add(RoleResult& role, const std::vector<Run>& read,
                          const RunSummary* carried) {
  std::shared_ptr<const Runs> slot;
  RunCounts counts;
  if (Kept* before = Find(kept_, *role.job)) {
    slot = before->runs;
    counts = before->counts;
  }
  std::shared_ptr<const DurationHistogram> histogram;
  bool timed = role.job->Alerting().duration_histogram;
  if (RoleDurations* before = timed ? Find(durations_, *role.job) : nullptr) {
    histogram = before->histogram;
  }
  if (!role.status.Has(Condition::kUnknown)) {
    static const RoleRuns kNone;
    const RoleRuns& old = slot ? slot->runs : kNone;
    std::shared_ptr<DurationHistogram> observed;
    std::shared_ptr<const RunExemplars> exemplars = slot ? slot->exemplars : nullptr;
    std::optional<RunExemplars> named;  // the counted runs' newest named ones, when any
    ForEachNewlyFinished(old, read, [&](const Run& run) {
      bool succeeded = run.outcome == Run::Outcome::kSucceeded;
      ++(succeeded ? counts.succeeded : counts.failed);
      std::int64_t finished = run.finished.value_or(run.started);
      if (run.identity) {
        if (!named) named = exemplars ? *exemplars : RunExemplars{};
        auto& newest = succeeded ? named->succeeded : named->failed;
        if (!newest || finished >= newest->finished) {
          newest = RunExemplar{run.identity, finished,
                               std::max<std::int64_t>(0, finished - run.started)};
        }
      }
      if (!timed) return;
      if (!observed) {
        observed = histogram ? std::make_shared<DurationHistogram>(*histogram)
                             : std::make_shared<DurationHistogram>();
      }
      observed->Observe(std::max<std::int64_t>(0, run.finished.value_or(0) - run.started));
    });
    if (observed) histogram = std::move(observed);
    const SourceDescriptor* type = BuiltInCatalog().Find(role.job->source_type);
    bool complete = type != nullptr && type->reports_complete_history();
    if (named) exemplars = std::make_shared<const RunExemplars>(*named);
    Runs now{MergeRuns(old, read, complete), carried ? *carried : RunSummary{}, exemplars};
    now.carried.running_since = std::nullopt;  // each read shows every run still going
    if (now.runs.empty() && now.carried == RunSummary{} && !now.exemplars) {
      slot.reset();
    } else if (!slot || slot->runs != now.runs || slot->carried != now.carried ||
               slot->exemplars != now.exemplars) {
      slot = std::make_shared<const Runs>(std::move(now));
    }
  }
  role.runs =
      slot && !slot->runs.empty() ? std::shared_ptr<const RoleRuns>(slot, &slot->runs) : nullptr;
  role.run_counts = counts;
  // Kept, and served, from the first run the source shows the role (both outcomes, 0 until
  // counted): a run first seen running is then an increase when it ends. None for a role
  // that never showed a run.
  if (!slot && counts.empty()) return;
  // About as many as last time: grown by doubling, the list would hold up to three times that
  // while it moves (100,000 roles: 3 MB each).
  if (adding_.capacity() == 0) adding_.reserve(kept_.size() + kept_.size() / 8 + 16);
  if (timed) {
    if (!histogram) histogram = std::make_shared<const DurationHistogram>();
    adding_durations_.push_back({role.job, std::move(histogram)});
  }
  if (slot && slot->exemplars) adding_exemplars_.push_back({role.job, slot->exemplars});
  adding_.push_back({role.job, std::move(slot), counts});
}

void RunHistoryStore::Finish(RefreshResult& result, const RoleOrder& order) {
  // Roles that left the spec are forgotten: they were not added.
  SortByRole(adding_, order);
  SortByRole(adding_durations_, order);
  kept_ = std::move(adding_);
  adding_.clear();
  // The first refresh grew its list by doubling (nothing told its size): not kept at up to
  // twice what it holds.
  if (kept_.capacity() > kept_.size() + kept_.size() / 4) kept_.shrink_to_fit();
  durations_ = std::move(adding_durations_);
  adding_durations_.clear();
  result.durations = durations_;
  SortByRole(adding_exemplars_, order);
  result.exemplars = std::move(adding_exemplars_);
  adding_exemplars_.clear();
  spec_ = result.spec;
}

}  // namespace schedwatch
