#include "exporter/run_history.h"

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

void RunHistoryStore::Update(RefreshResult& result) {
  auto by_role = [](const Kept& kept, std::string_view role) { return kept.job->role < role; };
  std::vector<Kept> kept;
  kept.reserve(result.roles.size());
  for (RoleResult& role : result.roles) {
    std::shared_ptr<const RoleRuns> slot;
    auto it = std::lower_bound(kept_.begin(), kept_.end(), role.job->role, by_role);
    if (it != kept_.end() && it->job->role == role.job->role &&
        it->job->source == role.job->source) {
      slot = std::move(it->runs);
    }
    if (!role.status.Has(Condition::kUnknown)) {
      std::vector<Run> read = std::move(role.status.history.runs);
      role.status.history.runs = {};
      static const RoleRuns kNone;
      const SourceDescriptor* type = BuiltInCatalog().Find(role.job->source_type);
      bool complete = type != nullptr && type->reports_complete_history();
      RoleRuns merged = MergeRuns(slot ? *slot : kNone, read, complete);
      if (merged.empty()) {
        slot.reset();
      } else if (!slot || *slot != merged) {
        slot = std::make_shared<const RoleRuns>(std::move(merged));
      }
    }
    role.runs = slot;
    if (slot) kept.push_back({role.job, std::move(slot)});
  }
  // Roles that left the spec are forgotten: they are not in `kept`.
  std::sort(kept.begin(), kept.end(),
            [](const Kept& a, const Kept& b) { return a.job->role < b.job->role; });
  kept_ = std::move(kept);
  spec_ = result.spec;
}

}  // namespace schedwatch
