// Classification of one role at one refresh: a pure function of the
// job's spec, what its source saw, and `now`.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedwatch/compact_optional.h"
#include "schedwatch/shared_text.h"
#include "schedwatch/spec.h"

namespace schedwatch {

enum class Condition {
  kUnknown,
  kMissing,
  kInactive,
  kDuplicate,
  kDrift,
  kNotStarted,
  kHung,
  kFailing,
  kTooShort,
  kStale,
  kStalled,
  kOk,
};
inline constexpr int kConditionCount = 12;
// Metric label values, in enum order: "unknown", "missing", ..., "ok".
const std::array<std::string_view, kConditionCount>& ConditionNames();
std::string_view ConditionName(Condition condition);

// One object a scheduler holds for a role (a crontab line, a CronJob, a workflow).
//
// Its seven texts live back to back in one buffer, shared by its copies: at 100,000 roles
// several copies of every object are alive at a refresh's peak (a source's cache, its snapshot,
// the published lists), and seven std::strings took 256 bytes and a heap block each.
class LiveObject {
 public:
  LiveObject() = default;
  // The fields every scheduler has; the rest only some fill.
  LiveObject(std::string_view id, std::string_view role, std::string_view schedule,
             std::string_view timezone, std::string_view spec_version, bool enabled = true);

  // Unique within the source: "/etc/cron.d/app:12", "batch/retry", "61234567".
  std::string_view id() const { return Field(kId); }
  std::string_view role() const { return Field(kRole); }
  std::string_view schedule() const { return Field(kSchedule); }  // as the scheduler holds it
  // Empty when the scheduler does not say.
  std::string_view timezone() const { return Field(kTimezone); }
  // Empty when the object carries none.
  std::string_view spec_version() const { return Field(kSpecVersion); }
  // A difference from the job that only the source can see (a GitLab schedule's ref): drift,
  // worded for people. Empty when there is none.
  std::string_view other_drift() const { return Field(kOtherDrift); }
  // The scheduler's own word for why it is not enabled ("masked", "disabled", "stopped"), or
  // another fact people need ("Persistent=true"): shown on pages, never classified.
  std::string_view state() const { return Field(kState); }

  // Each rewrites the buffer: sources set a field or two after construction, once.
  void set_id(std::string_view id) { SetField(kId, id); }
  void set_role(std::string_view role) { SetField(kRole, role); }
  void set_schedule(std::string_view schedule) { SetField(kSchedule, schedule); }
  void set_timezone(std::string_view timezone) { SetField(kTimezone, timezone); }
  void set_spec_version(std::string_view spec_version) { SetField(kSpecVersion, spec_version); }
  void set_other_drift(std::string_view other_drift) { SetField(kOtherDrift, other_drift); }
  void set_state(std::string_view state) { SetField(kState, state); }

  // Seconds the scheduler may start a run late by design (systemd's RandomizedDelaySec plus
  // AccuracySec): widens the start grace.
  std::int64_t start_delay = 0;
  // The scheduler's own next start, for schedules without fire times of their own (systemd's
  // monotonic timers): long past it with no start is not_started.
  OptionalTime next_start;
  bool enabled = true;

  // Every field equal: a refresh shares an unchanged object list with the previous one, so a
  // field added above belongs here too.
  friend bool operator==(const LiveObject& a, const LiveObject& b);

 private:
  enum FieldIndex { kId, kRole, kSchedule, kTimezone, kSpecVersion, kOtherDrift, kState, kFields };
  // A buffer up to this long keeps the fields' ends in `ends_`; a longer one (a CronJob may carry
  // any text up to etcd's 1.5 MiB) starts with them as 32-bit numbers, its head.
  static constexpr std::size_t kNarrowBytes = 0xffff;
  static constexpr std::size_t kWideHeadBytes = sizeof(std::uint32_t) * (kFields - 1);

  std::string_view Field(int field) const;
  void SetField(int field, std::string_view value);
  void Pack(const std::array<std::string_view, kFields>& fields);
  bool Wide() const { return text_.size() > kNarrowBytes; }
  std::size_t HeadBytes() const { return Wide() ? kWideHeadBytes : 0; }
  std::size_t End(int field) const;  // where `field` ends, counted from the first field's start

  // The fields but the last (it ends with the buffer); zeros when the buffer is wide. Before
  // `text_`, where the padding after `enabled` holds it: 64 bytes in all.
  std::array<std::uint16_t, kFields - 1> ends_{};
  SharedText text_;
};

// Who a run was, as its scheduler names it: `id` (a workflow run's or pipeline's id, a Job's
// name, a systemd invocation id) and, where the scheduler has a page for the run, its `url`.
// Shown as an OpenMetrics exemplar of the run.
struct RunIdentity {
  std::string id;
  std::string url;
};

// A run as a scheduler reports it.
struct Run {
  enum class Outcome : std::uint8_t { kRunning, kSucceeded, kFailed };
  Run() = default;
  Run(std::int64_t started, OptionalTime finished = {}, Outcome outcome = Outcome::kRunning,
      std::shared_ptr<const RunIdentity> identity = nullptr)
      : started(started), finished(finished), outcome(outcome), identity(std::move(identity)) {}

  std::int64_t started = 0;
  OptionalTime finished;
  Outcome outcome = Outcome::kRunning;
  std::shared_ptr<const RunIdentity> identity;  // null: the scheduler names none (cron)
};

// How far ahead of `now` a time read from outside (a run's start or end, a checkpoint) may be
// and still be believed: hosts' clocks differ by seconds, not minutes. A run dated later is
// neither a start nor a success; it is set aside and reported (RoleStatus::in_future).
inline constexpr std::int64_t kClockSkewAllowance = 5 * 60;

// A jump of the watcher's wall clock against its monotonic clock (the refresher measures it).
struct ClockStep {
  std::int64_t seconds = 0;  // how far the wall clock moved: + forward, - back
  std::int64_t at = 0;       // wall time of the first refresh that saw it
};

// A time from outside dated later than now + kClockSkewAllowance: set aside, not counted.
struct FutureTime {
  std::string_view what;  // "run start", "run end", "last success", "checkpoint", ...
  std::int64_t time = 0;
};

// Runs kept per role for people (status page, timeline): the newest ones.
inline constexpr std::size_t kRunHistoryKept = 20;

// What a run history says in four times, without its runs.
struct RunSummary {
  OptionalTime last_started;
  OptionalTime last_success;   // end time of the latest successful run
  OptionalTime last_failure;   // end time of the latest failed run
  OptionalTime running_since;  // start of the oldest run still going

  bool operator==(const RunSummary& other) const {
    return last_started == other.last_started && last_success == other.last_success &&
           last_failure == other.last_failure && running_since == other.running_since;
  }
  bool operator!=(const RunSummary& other) const { return !(*this == other); }
};

// What the run history says about a role. Sources that keep only summaries (a CronJob's
// lastSuccessfulTime) fill these directly; others use Add(), which also keeps the run itself.
struct RunHistory : RunSummary {
  // The newest kRunHistoryKept runs, oldest first. One start time is one run: a finished
  // report replaces a running one. The summaries count every run ever added.
  std::vector<Run> runs;

  void Add(const Run& run);
  void Merge(const RunHistory& other);
};

struct RoleObservation {
  bool source_up = false;  // false: the list failed, the role is unknown
  // false: the list was read but not the run history. Existence (missing, inactive, duplicate,
  // drift) is judged from `objects`; the conditions that need runs are not, and the role is
  // `unknown` besides what the list shows.
  bool history_up = true;
  std::vector<LiveObject> objects;  // the latest read's objects for the role
  // The role had no object in the first read and none in the confirming re-read either.
  bool absence_confirmed = false;
  RunHistory history;
  std::optional<std::int64_t> last_progress;  // checkpoint time, for jobs with progress
  std::optional<std::string> ledger_id;       // what the ledger last verified
  std::int64_t desired_since = 0;             // when the exporter first saw the role desired
};

// A role's judgement at one refresh. A refresh holds one per role, twice while the next is built
// (100,000 roles: 120 bytes each); what few roles have is kept out of line (Rare).
struct RoleStatus {
  std::bitset<kConditionCount> conditions;
  // Time-based conditions (not_started, hung, stale, stalled) that only a recent clock step
  // raised: judged by the clock as it was before the step they do not hold, so they are held
  // back (not in `conditions`) and `clock_step()` says why.
  std::bitset<kConditionCount> held;
  // Absent while the source is unknown.
  OptionalCount registered_objects, active_objects, drifted_objects;
  std::optional<bool> ledger_mismatch;
  OptionalTime last_scheduled, next_scheduled;
  // The end of the maintenance window open now (maintenance.h); absent outside windows.
  OptionalTime maintenance_until;
  RunSummary history;  // absent values stay absent while unknown; the runs go to the caller
  OptionalTime last_progress;
  std::int64_t desired_since = 0;  // what "never succeeded" and "never started" count from

  struct Rare {
    std::optional<std::string> ledger_id;  // what the ledger last verified
    // Times later than now + kClockSkewAllowance, left out of `history` and `last_progress`.
    std::vector<FutureTime> in_future;
    std::optional<ClockStep> clock_step;  // set when something is held
  };
  const std::optional<std::string>& ledger_id() const { return rare().ledger_id; }
  const std::vector<FutureTime>& in_future() const { return rare().in_future; }
  const std::optional<ClockStep>& clock_step() const { return rare().clock_step; }
  Rare& MutableRare();  // made on first use

  bool Has(Condition condition) const { return conditions.test(static_cast<int>(condition)); }
  // "missing,stale" or "ok".
  std::string ConditionList() const;
  bool operator==(const RoleStatus& other) const;
  bool operator!=(const RoleStatus& other) const { return !(*this == other); }

 private:
  const Rare& rare() const;
  std::shared_ptr<const Rare> rare_;  // null while none is set; shared by copies, never changed
};

// How `failing` was judged for a job with failure_threshold or recovery_threshold.
struct FailingJudgement {
  bool failing = false;
  int finished_runs = 0;  // finished runs the history holds (at most kRunHistoryKept)
  // Fewer finished runs than failure_threshold: judged from those there are (failing when they
  // all failed), as a source may keep fewer (a CronJob keeps 1 failed Job by default).
  bool short_history = false;
};

// Walks the finished runs, oldest first (running ones are ignored): failing from the run that
// makes failure_threshold failures in a row (or every run there is, when there are fewer),
// until recovery_threshold successes in a row.
FailingJudgement JudgeFailing(const JobAlerting& alerting,
                              const std::vector<Run::Outcome>& outcomes);
FailingJudgement JudgeFailing(const JobAlerting& alerting, const std::vector<Run>& runs);

// Whether `object` differs from the job's spec in schedule, time zone or spec version.
bool Drifted(const JobSpec& job, const LiveObject& object);

// `recent_step`: a clock step the watcher saw a short while ago (the refresher's hold window).
// The role is then judged both at `now` and at `now - recent_step->seconds`, the clock without
// the step; a time-based condition that only the stepped clock raises is held (see `held`).
// After a step back, times up to the clock without the step are not in the future.
// `runs`, when given, receives the runs the judgement believed (those dated in the future set
// aside), oldest first: RoleStatus keeps only their summaries.
// `memo`, when given, is the classification pass's (one refresh's): roles sharing a set of
// maintenance windows walk them once (maintenance.h).
RoleStatus Classify(const JobSpec& job, const RoleObservation& observation, std::int64_t now,
                    const std::optional<ClockStep>& recent_step = std::nullopt,
                    std::vector<Run>* runs = nullptr, MaintenanceMemo* memo = nullptr);

// `history` without the times later than `limit`: runs dated later are dropped and the
// summaries rebuilt from the runs kept (a summary a source reported without runs is dropped
// when it is later); each time set aside goes to `in_future`.
RunHistory WithoutFutureTimes(const RunHistory& history, std::int64_t limit,
                              std::vector<FutureTime>& in_future);

}  // namespace schedwatch
