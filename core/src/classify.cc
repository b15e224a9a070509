#include "schedwatch/classify.h"

#include <algorithm>

namespace schedwatch {
namespace {

void KeepLatest(OptionalTime& slot, OptionalTime value) {
  if (value && (!slot || *value > *slot)) slot = value;
}

void KeepEarliest(OptionalTime& slot, OptionalTime value) {
  if (value && (!slot || *value < *slot)) slot = value;
}

void KeepRun(std::vector<Run>& runs, const Run& run) {
  auto it =
      std::lower_bound(runs.begin(), runs.end(), run.started,
                       [](const Run& kept, std::int64_t start) { return kept.started < start; });
  if (it != runs.end() && it->started == run.started) {
    if (run.outcome != Run::Outcome::kRunning || it->outcome == Run::Outcome::kRunning) *it = run;
    return;
  }
  if (runs.size() >= kRunHistoryKept && it == runs.begin()) return;  // older than every kept run
  runs.insert(it, run);
  if (runs.size() > kRunHistoryKept) runs.erase(runs.begin());
}

// The system tz database keeps "UTC" and its aliases as separate files: one zone, many names.
bool IsUtc(std::string_view name) {
  if (name.rfind("Etc/", 0) == 0) name.remove_prefix(4);
  return name == "UTC" || name == "UCT" || name == "Universal" || name == "Zulu";
}

bool SameZone(std::string_view a, std::string_view b) {
  if (a == b || (IsUtc(a) && IsUtc(b))) return true;
  const auto* zone_a = FindZone(a);
  return zone_a != nullptr && zone_a == FindZone(b);
}

// A role's maintenance windows at one `now`: the pass's timeline when its set has one, else its
// own, walked as far as asked.
class Downtime {
 public:
  Downtime(const MaintenanceWindows& windows, std::int64_t now, MaintenanceMemo* memo) {
    if (windows.empty()) return;
    timeline_ = memo ? memo->Find(windows, now) : nullptr;
    if (timeline_ == nullptr) timeline_ = &own_.emplace(windows, now, /*eager=*/false);
  }

  bool none() const { return timeline_ == nullptr; }
  std::optional<TimeSpan> Open(std::int64_t t) const {
    return timeline_ ? timeline_->OpenWindow(t) : std::nullopt;
  }
  // Seconds of [from, now) the windows cover.
  std::int64_t CoveredSince(std::int64_t from) const {
    return timeline_ ? timeline_->CoveredSince(from) : 0;
  }

 private:
  std::optional<MaintenanceTimeline> own_;
  MaintenanceTimeline* timeline_ = nullptr;
};

// The latest fire time at or before `at` that no maintenance window excuses; none before
// `floor`, where the walk back stops.
std::optional<std::int64_t> CountedFireBefore(const JobSpec& job, const Downtime& downtime,
                                              std::int64_t at, std::int64_t floor) {
  std::optional<std::int64_t> fire = job.schedule.Previous(at);
  for (int walked = 0; fire && *fire >= floor && !downtime.none(); ++walked) {
    if (walked == kMaxFireTimesSkipped) return std::nullopt;  // none outside windows for long
    auto open = downtime.Open(*fire);
    if (!open) return fire;
    fire = job.schedule.Previous(open->start - 1);
  }
  return fire && *fire >= floor ? fire : std::nullopt;
}

// `missed_starts` consecutive fire times, each with its grace passed, and no start seen since
// the first of them; fire times inside a maintenance window do not count. A role with no start
// at all only counts fire times since it was desired, so a role just added to the spec is not
// flagged before it had its chances.
bool NotStarted(const JobSpec& job, const RoleObservation& observation, std::int64_t now,
                const Downtime& downtime) {
  // A scheduler that starts late by design gets that much more grace.
  std::int64_t grace = job.start_grace;
  std::int64_t delay = 0;
  for (const LiveObject& object : observation.objects) delay = std::max(delay, object.start_delay);
  grace += delay;
  const auto& started = observation.history.last_started;
  if (job.schedule.is_monotonic()) {
    // No fire times of its own: the scheduler's own next start, passed by more than the grace
    // with no start (trigger or run) at or after it.
    // A next start inside a maintenance window is due when the window closes.
    return std::any_of(observation.objects.begin(), observation.objects.end(),
                       [&](const LiveObject& object) {
                         if (!object.enabled || !object.next_start) return false;
                         std::int64_t due = *object.next_start;
                         if (auto open = downtime.Open(due)) due = open->end;
                         return now - due > grace && !(started && *started >= *object.next_start);
                       });
  }
  // A fire time at or before the last start (before the role was desired, when it never
  // started) decides already that it is not: the walk back stops there.
  const std::int64_t floor = started ? *started + 1 : observation.desired_since;
  std::optional<std::int64_t> fire = CountedFireBefore(job, downtime, now - grace, floor);
  for (int i = 1; fire && i < job.missed_starts; ++i) {
    fire = CountedFireBefore(job, downtime, *fire - 1, floor);
  }
  if (!fire) return false;
  if (!started) return *fire >= observation.desired_since;
  return *started < *fire;
}

// No success within `limit`; a role that never succeeded counts from when it became desired.
// Time inside maintenance windows does not count.
bool OlderThan(std::optional<std::int64_t> last, std::int64_t desired_since, std::int64_t limit,
               std::int64_t now, const Downtime& downtime) {
  std::int64_t since = last.value_or(desired_since);
  if (now - since <= limit) return false;
  return downtime.none() || now - since - downtime.CoveredSince(since) > limit;
}

// A run that started inside a maintenance window is excused: it is neither a failure nor a too
// short success. Copies the history only when some run or summary is excused.
const RunHistory& WithoutExcusedRuns(const RunHistory& history, const Downtime& downtime,
                                     RunHistory& storage) {
  if (downtime.none()) return history;
  auto excused = [&](const Run& run) { return downtime.Open(run.started).has_value(); };
  bool any_run = std::any_of(history.runs.begin(), history.runs.end(), excused);
  // A failure reported without its run: its end is all there is to go by.
  bool failure_summary =
      history.runs.empty() && history.last_failure && downtime.Open(*history.last_failure);
  if (!any_run && !failure_summary) return history;
  storage = history;
  if (failure_summary) storage.last_failure = std::nullopt;
  storage.runs.erase(std::remove_if(storage.runs.begin(), storage.runs.end(), excused),
                     storage.runs.end());
  if (any_run) {
    // The latest failure, as far as the runs kept tell, without the excused ones.
    storage.last_failure = std::nullopt;
    for (const Run& run : storage.runs) {
      if (run.outcome == Run::Outcome::kFailed) {
        KeepLatest(storage.last_failure, run.finished.value_or(run.started));
      }
    }
  }
  return storage;
}

}  // namespace

const std::array<std::string_view, kConditionCount>& ConditionNames() {
  static constexpr std::array<std::string_view, kConditionCount> kNames = {
      "unknown", "missing", "inactive",  "duplicate", "drift",   "not_started",
      "hung",    "failing", "too_short", "stale",     "stalled", "ok"};
  return kNames;
}

std::string_view ConditionName(Condition condition) {
  return ConditionNames()[static_cast<int>(condition)];
}

void RunHistory::Add(const Run& run) {
  KeepLatest(last_started, run.started);
  std::int64_t end = run.finished.value_or(run.started);
  switch (run.outcome) {
    case Run::Outcome::kRunning:
      KeepEarliest(running_since, run.started);
      break;
    case Run::Outcome::kSucceeded:
      KeepLatest(last_success, end);
      break;
    case Run::Outcome::kFailed:
      KeepLatest(last_failure, end);
      break;
  }
  KeepRun(runs, run);
}

void RunHistory::Merge(const RunHistory& other) {
  KeepLatest(last_started, other.last_started);
  KeepLatest(last_success, other.last_success);
  KeepLatest(last_failure, other.last_failure);
  KeepEarliest(running_since, other.running_since);
  for (const Run& run : other.runs) KeepRun(runs, run);
}

bool RoleStatus::operator==(const RoleStatus& other) const {
  auto same_future = [](const std::vector<FutureTime>& a, const std::vector<FutureTime>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                      [](const FutureTime& x, const FutureTime& y) {
                        return x.what == y.what && x.time == y.time;
                      });
  };
  auto same_step = [](const std::optional<ClockStep>& a, const std::optional<ClockStep>& b) {
    return a.has_value() == b.has_value() && (!a || (a->seconds == b->seconds && a->at == b->at));
  };
  return conditions == other.conditions && held == other.held &&
         registered_objects == other.registered_objects && active_objects == other.active_objects &&
         drifted_objects == other.drifted_objects && ledger_mismatch == other.ledger_mismatch &&
         last_scheduled == other.last_scheduled && next_scheduled == other.next_scheduled &&
         maintenance_until == other.maintenance_until && history == other.history &&
         last_progress == other.last_progress && desired_since == other.desired_since &&
         (rare_ == other.rare_ ||
          (ledger_id() == other.ledger_id() && same_future(in_future(), other.in_future()) &&
           same_step(clock_step(), other.clock_step())));
}

const RoleStatus::Rare& RoleStatus::rare() const {
  static const Rare kNone;
  return rare_ ? *rare_ : kNone;
}

RoleStatus::Rare& RoleStatus::MutableRare() {
  // A copy, as statuses copied before share the old one.
  auto rare = rare_ ? std::make_shared<Rare>(*rare_) : std::make_shared<Rare>();
  Rare& mutable_rare = *rare;
  rare_ = std::move(rare);
  return mutable_rare;
}

std::string RoleStatus::ConditionList() const {
  std::string out;
  for (int i = 0; i < kConditionCount; ++i) {
    if (!conditions.test(i)) continue;
    if (!out.empty()) out += ',';
    out += ConditionNames()[i];
  }
  return out;
}

bool Drifted(const JobSpec& job, const LiveObject& object) {
  if (object.spec_version() != job.spec_version || !object.other_drift().empty()) return true;
  if (!object.timezone().empty() && !SameZone(object.timezone(), job.timezone)) return true;
  return !job.schedule.SameAs(object.schedule());
}

FailingJudgement JudgeFailing(const JobAlerting& alerting,
                              const std::vector<Run::Outcome>& outcomes) {
  FailingJudgement judgement;
  for (Run::Outcome outcome : outcomes)
    judgement.finished_runs += outcome != Run::Outcome::kRunning;
  judgement.short_history = judgement.finished_runs < alerting.failure_threshold;
  const int needed = std::min(alerting.failure_threshold, judgement.finished_runs);
  int failures = 0, successes = 0;
  for (Run::Outcome outcome : outcomes) {
    if (outcome == Run::Outcome::kFailed) {
      successes = 0;
      if (++failures >= needed) judgement.failing = true;
    } else if (outcome == Run::Outcome::kSucceeded) {
      failures = 0;
      if (++successes >= alerting.recovery_threshold) judgement.failing = false;
    }
  }
  return judgement;
}

FailingJudgement JudgeFailing(const JobAlerting& alerting, const std::vector<Run>& runs) {
  std::vector<Run::Outcome> outcomes;
  outcomes.reserve(runs.size());
  for (const Run& run : runs) outcomes.push_back(run.outcome);
  return JudgeFailing(alerting, outcomes);
}

namespace {

// The latest finished run (by start) succeeded in less than min_runtime.
bool TooShort(const JobAlerting& alerting, const RunHistory& history) {
  if (alerting.min_runtime <= 0) return false;
  for (auto run = history.runs.rbegin(); run != history.runs.rend(); ++run) {
    if (run->outcome == Run::Outcome::kRunning) continue;
    return run->outcome == Run::Outcome::kSucceeded && run->finished &&
           *run->finished - run->started < alerting.min_runtime;
  }
  return false;
}

constexpr Condition kTimeBased[] = {Condition::kNotStarted, Condition::kHung, Condition::kStale,
                                    Condition::kStalled};

bool Later(std::optional<std::int64_t> time, std::int64_t limit) { return time && *time > limit; }

// Classify at `now`, believing times up to `believed_until` + kClockSkewAllowance.
RoleStatus ClassifyAt(const JobSpec& job, const RoleObservation& given, std::int64_t now,
                      std::int64_t believed_until, std::vector<Run>* runs, MaintenanceMemo* memo) {
  RoleStatus status;
  const std::int64_t limit = believed_until + kClockSkewAllowance;
  RoleObservation sane;
  const RoleObservation* chosen = &given;
  if (given.source_up) {
    std::vector<FutureTime> in_future;
    RunHistory history = WithoutFutureTimes(given.history, limit, in_future);
    if (Later(given.last_progress, limit))
      in_future.push_back({"checkpoint", *given.last_progress});
    if (!in_future.empty()) {
      // A copy only when something is set aside: the common case keeps no second history.
      sane.source_up = given.source_up;
      sane.history_up = given.history_up;
      sane.objects = given.objects;
      sane.absence_confirmed = given.absence_confirmed;
      sane.history = std::move(history);
      if (!Later(given.last_progress, limit)) sane.last_progress = given.last_progress;
      sane.ledger_id = given.ledger_id;
      sane.desired_since = given.desired_since;
      chosen = &sane;
      status.MutableRare().in_future = std::move(in_future);
    }
  }
  const RoleObservation& observation = *chosen;
  status.desired_since = observation.desired_since;
  status.last_scheduled = job.schedule.Previous(now);
  status.next_scheduled = job.schedule.Next(now);
  if (job.schedule.is_monotonic() && observation.source_up) {
    // The scheduler's own next start: the earliest of the enabled objects'.
    for (const LiveObject& object : observation.objects) {
      if (object.enabled) KeepEarliest(status.next_scheduled, object.next_start);
    }
  }
  const Downtime downtime(job.Alerting().maintenance, now, memo);
  if (auto open = downtime.Open(now)) status.maintenance_until = open->end;
  auto set = [&status](Condition condition) { status.conditions.set(static_cast<int>(condition)); };
  if (!observation.source_up) {
    set(Condition::kUnknown);
    return status;
  }

  const auto& objects = observation.objects;
  int registered = static_cast<int>(objects.size());
  int active = static_cast<int>(
      std::count_if(objects.begin(), objects.end(), [](const LiveObject& o) { return o.enabled; }));
  int drifted = static_cast<int>(std::count_if(
      objects.begin(), objects.end(), [&job](const LiveObject& o) { return Drifted(job, o); }));
  status.registered_objects = registered;
  status.active_objects = active;
  status.drifted_objects = drifted;
  if (observation.history_up) status.history = static_cast<const RunSummary&>(observation.history);
  if (runs != nullptr)
    *runs = observation.history_up ? observation.history.runs : std::vector<Run>();
  status.last_progress = observation.last_progress;
  if (observation.ledger_id) {
    status.MutableRare().ledger_id = observation.ledger_id;
    status.ledger_mismatch = std::none_of(objects.begin(), objects.end(), [&](const LiveObject& o) {
      return o.id() == *observation.ledger_id;
    });
  }

  if (registered == 0 && observation.absence_confirmed) set(Condition::kMissing);
  if (registered > 0 && active == 0) set(Condition::kInactive);
  if (registered > 1) set(Condition::kDuplicate);
  if (drifted > 0) set(Condition::kDrift);
  if (!observation.history_up) {
    // The list says what exists; without the runs nothing else is claimed (stalled too: it
    // means success is fresh).
    set(Condition::kUnknown);
    return status;
  }
  RunHistory unexcused;
  const RunHistory& history = WithoutExcusedRuns(observation.history, downtime, unexcused);
  if (NotStarted(job, observation, now, downtime)) set(Condition::kNotStarted);
  if (history.running_since && now - *history.running_since > job.max_runtime) {
    set(Condition::kHung);
  }
  const JobAlerting& alerting = job.Alerting();
  if (alerting.Thresholds() && !history.runs.empty()) {
    if (JudgeFailing(alerting, history.runs).failing) set(Condition::kFailing);
  } else if (history.last_failure &&
             (!history.last_success || *history.last_failure > *history.last_success)) {
    // Without runs (a source that reports only the latest times) that is the latest run.
    set(Condition::kFailing);
  }
  if (TooShort(alerting, history)) set(Condition::kTooShort);
  bool stale = job.stale_after && OlderThan(history.last_success, observation.desired_since,
                                            *job.stale_after, now, downtime);
  if (stale) set(Condition::kStale);
  if (job.progress() && !stale &&
      OlderThan(observation.last_progress, observation.desired_since, job.progress()->stale_after,
                now, downtime)) {
    set(Condition::kStalled);
  }
  if (status.conditions.none()) set(Condition::kOk);
  return status;
}

}  // namespace

RunHistory WithoutFutureTimes(const RunHistory& history, std::int64_t limit,
                              std::vector<FutureTime>& in_future) {
  auto late_run = [limit](const Run& run) {
    return run.started > limit || Later(run.finished, limit);
  };
  bool late_runs = std::any_of(history.runs.begin(), history.runs.end(), late_run);
  bool late_summaries = Later(history.last_started, limit) || Later(history.last_success, limit) ||
                        Later(history.last_failure, limit) || Later(history.running_since, limit);
  if (!late_runs && !late_summaries) return history;
  RunHistory out;
  // Believable summaries stand (they may count runs no longer kept), except a start that is a
  // late run's: that run is no start. The rest is rebuilt from the runs kept.
  bool start_of_late_run = false;
  for (const Run& run : history.runs) {
    if (late_run(run) && history.last_started == run.started) start_of_late_run = true;
  }
  if (!Later(history.last_started, limit) && !start_of_late_run) {
    out.last_started = history.last_started;
  }
  if (!Later(history.last_success, limit)) out.last_success = history.last_success;
  if (!Later(history.last_failure, limit)) out.last_failure = history.last_failure;
  if (!Later(history.running_since, limit)) out.running_since = history.running_since;
  for (const Run& run : history.runs) {
    if (!late_run(run)) {
      out.Add(run);
    } else if (run.started > limit) {
      in_future.push_back({"run start", run.started});
    } else {
      in_future.push_back({"run end", *run.finished});
    }
  }
  if (!late_runs) {  // summaries a source reported without their runs
    if (Later(history.last_started, limit))
      in_future.push_back({"last start", *history.last_started});
    if (Later(history.last_success, limit))
      in_future.push_back({"last success", *history.last_success});
    if (Later(history.last_failure, limit))
      in_future.push_back({"last failure", *history.last_failure});
    if (Later(history.running_since, limit)) {
      in_future.push_back({"running since", *history.running_since});
    }
  }
  return out;
}

RoleStatus Classify(const JobSpec& job, const RoleObservation& observation, std::int64_t now,
                    const std::optional<ClockStep>& recent_step, std::vector<Run>* runs,
                    MaintenanceMemo* memo) {
  if (!recent_step || recent_step->seconds == 0) {
    return ClassifyAt(job, observation, now, now, runs, memo);
  }
  const std::int64_t unstepped = now - recent_step->seconds;
  const std::int64_t believed_until = std::max(now, unstepped);
  RoleStatus status = ClassifyAt(job, observation, now, believed_until, runs, memo);
  RoleStatus before = ClassifyAt(job, observation, unstepped, believed_until, nullptr, memo);
  for (Condition condition : kTimeBased) {
    int bit = static_cast<int>(condition);
    if (status.conditions.test(bit) && !before.conditions.test(bit)) status.held.set(bit);
  }
  if (status.held.none()) return status;
  status.conditions &= ~status.held;
  if (status.conditions.none()) status.conditions.set(static_cast<int>(Condition::kOk));
  status.MutableRare().clock_step = recent_step;
  return status;
}

}  // namespace schedwatch
