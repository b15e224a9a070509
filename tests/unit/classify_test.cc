#include "schedwatch/classify.h"

#include <gtest/gtest.h>

#include "sources/catalog.h"

namespace schedwatch {
namespace {

// 2026-11-30T12:00:00Z, a Monday; every fire time of "*/10 * * * *" is a multiple of 600.
constexpr std::int64_t kNow = 1796040000;
constexpr std::int64_t kMinute = 60, kHour = 3600, kDay = 86400;

Spec LoadSpec() {
  auto spec = ParseSpec(R"(version: 1
defaults: {start_grace: 5m, max_runtime: 30m, missed_starts: 2}
sources:
  host: {type: crontab}
jobs:
  - role: retry
    source: host
    schedule: "*/10 * * * *"
    spec_version: "7"
    max_runtime: 5m
  - role: gate
    source: host
    schedule: "*/5 * * * *"
    spec_version: "3"
  - role: checkpointed
    source: host
    schedule: "0 * * * *"
    spec_version: "1"
    progress: {file: /var/lib/app/checkpoint, stale_after: 2h}
  - role: flaky
    source: host
    schedule: "*/10 * * * *"
    spec_version: "1"
    failure_threshold: 3
    recovery_threshold: 2
    min_runtime: 2m
)",
                        "classify.yml", BuiltInCatalog());
  EXPECT_TRUE(spec.ok()) << spec.error();
  return *spec;
}

class ClassifyTest : public ::testing::Test {
 protected:
  const JobSpec& Job(const std::string& role) { return *spec_.FindJob(role); }

  // A healthy observation of `job`: one enabled object matching the spec, a recent success.
  RoleObservation Healthy(const JobSpec& job) {
    RoleObservation observation;
    observation.source_up = true;
    observation.objects.push_back({"/etc/cron.d/app:3", job.role, job.schedule.expression().text(),
                                   "", job.spec_version, true});
    std::int64_t last_fire = *job.schedule.Previous(kNow);
    observation.history.Add({last_fire + 1, last_fire + 30, Run::Outcome::kSucceeded});
    observation.desired_since = kNow - 30 * kDay;
    return observation;
  }

  std::string Conditions(const std::string& role, const RoleObservation& observation,
                         std::int64_t now = kNow) {
    return Classify(Job(role), observation, now).ConditionList();
  }

  Spec spec_ = LoadSpec();
};

TEST_F(ClassifyTest, HealthyRoleIsOkWithCountsAndScheduleTimes) {
  RoleStatus status = Classify(Job("retry"), Healthy(Job("retry")), kNow);
  EXPECT_EQ(status.ConditionList(), "ok");
  EXPECT_EQ(status.registered_objects, 1);
  EXPECT_EQ(status.active_objects, 1);
  EXPECT_EQ(status.drifted_objects, 0);
  EXPECT_EQ(status.last_scheduled, kNow);  // "at or before": 12:00 itself
  EXPECT_EQ(status.next_scheduled, kNow + 10 * kMinute);
  EXPECT_EQ(status.history.last_success, kNow + 30);
  EXPECT_FALSE(status.ledger_mismatch.has_value());
}

TEST_F(ClassifyTest, LedgerIdWithoutLiveObjectIsMissingNotOk) {
  RoleObservation observation = Healthy(Job("retry"));
  observation.objects.clear();
  observation.absence_confirmed = true;
  observation.ledger_id = "/etc/cron.d/app:3";  // a stored ID alone never passes
  RoleStatus status = Classify(Job("retry"), observation, kNow);
  EXPECT_TRUE(status.Has(Condition::kMissing));
  EXPECT_FALSE(status.Has(Condition::kOk));
  EXPECT_EQ(status.registered_objects, 0);
  EXPECT_EQ(status.ledger_mismatch, true);
}

TEST_F(ClassifyTest, AbsenceSeenInOneReadOnlyIsNotMissing) {
  RoleObservation observation = Healthy(Job("retry"));
  observation.objects.clear();
  observation.absence_confirmed = false;
  EXPECT_FALSE(Classify(Job("retry"), observation, kNow).Has(Condition::kMissing));
}

TEST_F(ClassifyTest, LedgerIdAmongLiveObjectsIsNoMismatch) {
  RoleObservation observation = Healthy(Job("retry"));
  observation.ledger_id = "/etc/cron.d/app:3";
  EXPECT_EQ(Classify(Job("retry"), observation, kNow).ledger_mismatch, false);
}

TEST_F(ClassifyTest, SuspendedObjectIsInactiveNotMissing) {
  RoleObservation observation = Healthy(Job("retry"));
  observation.objects[0].enabled = false;
  RoleStatus status = Classify(Job("retry"), observation, kNow);
  EXPECT_EQ(status.ConditionList(), "inactive");
  EXPECT_EQ(status.registered_objects, 1);
  EXPECT_EQ(status.active_objects, 0);
}

TEST_F(ClassifyTest, TwoObjectsForOneRoleAreDuplicate) {
  RoleObservation observation = Healthy(Job("retry"));
  observation.objects.push_back(observation.objects[0]);
  observation.objects[1].set_id("/etc/cron.d/copy:3");
  EXPECT_EQ(Conditions("retry", observation), "duplicate");
}

TEST_F(ClassifyTest, OlderSpecVersionWithSameScheduleIsDrift) {
  RoleObservation observation = Healthy(Job("retry"));
  observation.objects[0].set_spec_version("6");
  RoleStatus status = Classify(Job("retry"), observation, kNow);
  EXPECT_EQ(status.ConditionList(), "drift");
  EXPECT_EQ(status.drifted_objects, 1);
}

TEST_F(ClassifyTest, EquivalentScheduleTextIsNotDriftButADifferentOneIs) {
  RoleObservation observation = Healthy(Job("retry"));
  observation.objects[0].set_schedule("0,10,20,30,40,50 * * * *");
  EXPECT_EQ(Conditions("retry", observation), "ok");
  observation.objects[0].set_schedule("*/15 * * * *");
  EXPECT_EQ(Conditions("retry", observation), "drift");
  observation.objects[0].set_schedule("not a schedule");
  EXPECT_EQ(Conditions("retry", observation), "drift");
}

TEST_F(ClassifyTest, DifferentTimeZoneIsDriftAndAnAliasOfTheSameZoneIsNot) {
  RoleObservation observation = Healthy(Job("retry"));
  observation.objects[0].set_timezone("Etc/UTC");
  EXPECT_EQ(Conditions("retry", observation), "ok");
  observation.objects[0].set_timezone("Asia/Seoul");
  EXPECT_EQ(Conditions("retry", observation), "drift");
}

TEST_F(ClassifyTest, OneSkippedRunThenALateSuccessInsideGraceIsNeitherNotStartedNorStale) {
  // Runs at 11:40 succeeded; 11:50 was skipped; the 12:00 run starts late at 12:04.
  RoleObservation observation = Healthy(Job("retry"));
  observation.history = {};
  observation.history.Add({kNow - 20 * kMinute, kNow - 19 * kMinute, Run::Outcome::kSucceeded});
  // 12:04, before the 12:00 run started: only 11:50 + grace has passed, so one miss.
  EXPECT_EQ(Conditions("retry", observation, kNow + 4 * kMinute), "ok");
  observation.history.Add({kNow + 4 * kMinute, kNow + 5 * kMinute, Run::Outcome::kSucceeded});
  EXPECT_EQ(Conditions("retry", observation, kNow + 6 * kMinute), "ok");
}

TEST_F(ClassifyTest, TwoConsecutiveMissedFireTimesAreNotStarted) {
  RoleObservation observation = Healthy(Job("retry"));
  observation.history = {};
  observation.history.Add({kNow - 20 * kMinute, kNow - 19 * kMinute, Run::Outcome::kSucceeded});
  // 11:50 and 12:00 both passed their 5-minute grace at 12:05 with no start since 11:50.
  EXPECT_EQ(Conditions("retry", observation, kNow + 5 * kMinute - 1), "ok");
  EXPECT_EQ(Conditions("retry", observation, kNow + 5 * kMinute), "not_started");
}

TEST_F(ClassifyTest, FireTimesBeforeTheRoleWasDesiredDoNotCount) {
  RoleObservation observation = Healthy(Job("retry"));
  observation.history = {};
  observation.desired_since = kNow - 5 * kMinute;  // since 11:55: 11:50 does not count
  EXPECT_EQ(Conditions("retry", observation, kNow + 6 * kMinute), "ok");
}

TEST_F(ClassifyTest, RunningPastMaxRuntimeIsHung) {
  RoleObservation observation = Healthy(Job("retry"));
  observation.history.Add({kNow, std::nullopt, Run::Outcome::kRunning});
  EXPECT_EQ(Conditions("retry", observation, kNow + 5 * kMinute), "ok");  // exactly max_runtime
  RoleStatus status = Classify(Job("retry"), observation, kNow + 5 * kMinute + 1);
  EXPECT_EQ(status.ConditionList(), "hung");
  EXPECT_EQ(status.history.running_since, kNow);
}

TEST_F(ClassifyTest, LatestFailureAfterSuccessIsFailingAndALaterSuccessClearsIt) {
  RoleObservation observation = Healthy(Job("retry"));
  observation.history.Add({kNow + 60, kNow + 90, Run::Outcome::kFailed});
  EXPECT_EQ(Conditions("retry", observation, kNow + 120), "failing");
  observation.history.Add({kNow + 600, kNow + 630, Run::Outcome::kSucceeded});
  RoleStatus status = Classify(Job("retry"), observation, kNow + 700);
  EXPECT_EQ(status.ConditionList(), "ok");
  EXPECT_EQ(status.history.last_failure, kNow + 90);
}

// `flaky` (failure_threshold 3, recovery_threshold 2) after `outcomes`, one run every 10
// minutes up to kNow, each taking 5 minutes (longer than its min_runtime).
RoleObservation Runs(const std::string& outcomes) {
  RoleObservation observation;
  observation.source_up = true;
  observation.objects.push_back({"/etc/cron.d/app:9", "flaky", "*/10 * * * *", "", "1", true});
  observation.desired_since = kNow - 30 * kMinute;  // never stale for want of a success
  std::int64_t start = kNow - static_cast<std::int64_t>(outcomes.size()) * 10 * kMinute;
  for (char outcome : outcomes) {
    start += 10 * kMinute;
    if (outcome == 'r') {
      observation.history.Add({start, std::nullopt, Run::Outcome::kRunning});
    } else {
      observation.history.Add({start, start + 5 * kMinute,
                               outcome == 's' ? Run::Outcome::kSucceeded : Run::Outcome::kFailed});
    }
  }
  return observation;
}

TEST_F(ClassifyTest, FailureThresholdNeedsThatManyFailuresInARow) {
  EXPECT_EQ(Conditions("flaky", Runs("sff"), kNow + kMinute), "ok");        // N-1
  EXPECT_EQ(Conditions("flaky", Runs("sfff"), kNow + kMinute), "failing");  // N
  EXPECT_EQ(Conditions("flaky", Runs("sffsff"), kNow + kMinute), "ok");     // never N in a row
  FailingJudgement judgement = JudgeFailing(Job("flaky").Alerting(), Runs("sff").history.runs);
  EXPECT_FALSE(judgement.failing);
  EXPECT_EQ(judgement.finished_runs, 3);
  EXPECT_FALSE(judgement.short_history);
}

TEST_F(ClassifyTest, FewerFinishedRunsThanTheThresholdAreJudgedFromThoseThereAre) {
  // A CronJob keeps one failed Job by default: two failures are all there is.
  EXPECT_EQ(Conditions("flaky", Runs("ff"), kNow + kMinute), "failing");
  EXPECT_EQ(Conditions("flaky", Runs("f"), kNow + kMinute), "failing");
  EXPECT_EQ(Conditions("flaky", Runs("sf"), kNow + kMinute), "ok");
  FailingJudgement judgement = JudgeFailing(Job("flaky").Alerting(), Runs("ff").history.runs);
  EXPECT_TRUE(judgement.failing);
  EXPECT_EQ(judgement.finished_runs, 2);
  EXPECT_TRUE(judgement.short_history);
  // No finished run at all: nothing to judge.
  EXPECT_FALSE(JudgeFailing(Job("flaky").Alerting(), Runs("r").history.runs).failing);
}

TEST_F(ClassifyTest, RecoveryThresholdNeedsThatManySuccessesInARow) {
  // The latest failure is older than the latest success, yet one success is M-1.
  EXPECT_EQ(Conditions("flaky", Runs("fffs"), kNow + kMinute), "failing");
  EXPECT_EQ(Conditions("flaky", Runs("fffss"), kNow + kMinute), "ok");        // M
  EXPECT_EQ(Conditions("flaky", Runs("fffsfs"), kNow + kMinute), "failing");  // not in a row
  // Recovered, then failures again: N more are needed.
  EXPECT_EQ(Conditions("flaky", Runs("fffssff"), kNow + kMinute), "ok");
}

TEST_F(ClassifyTest, RunningRunsNeitherCountNorBreakARow) {
  EXPECT_EQ(Conditions("flaky", Runs("sffrf"), kNow + kMinute), "failing");
  EXPECT_EQ(Conditions("flaky", Runs("fffsrs"), kNow + kMinute), "ok");
  EXPECT_EQ(Conditions("flaky", Runs("fffr"), kNow + kMinute), "failing");
}

TEST_F(ClassifyTest, WithoutRunsThresholdsFallBackToTheLatestTimes) {
  // A source that reports only its latest success and failure times.
  RoleObservation observation = Runs("");
  observation.history.last_success = kNow - 20 * kMinute;
  observation.history.last_failure = kNow - 10 * kMinute;
  observation.history.last_started = kNow - 11 * kMinute;
  EXPECT_EQ(Conditions("flaky", observation), "failing");
}

TEST_F(ClassifyTest, SuccessShorterThanMinRuntimeIsTooShort) {
  // min_runtime 2m: one second less is too short, one second more and exactly 2m are not.
  for (auto [seconds, expected] : {std::pair{119, "too_short"}, {121, "ok"}, {120, "ok"}}) {
    RoleObservation observation = Runs("s");
    observation.history.Add({kNow + 10, kNow + 10 + seconds, Run::Outcome::kSucceeded});
    EXPECT_EQ(Conditions("flaky", observation, kNow + 5 * kMinute), expected) << seconds;
  }
  // Only the latest finished run counts: a run still going leaves it, a later one clears it.
  RoleObservation observation = Runs("s");
  observation.history.Add({kNow + 10, kNow + 20, Run::Outcome::kSucceeded});
  observation.history.Add({kNow + 600, std::nullopt, Run::Outcome::kRunning});
  EXPECT_EQ(Conditions("flaky", observation, kNow + 11 * kMinute), "too_short");
  observation.history.Add({kNow + 600, kNow + 900, Run::Outcome::kSucceeded});
  EXPECT_EQ(Conditions("flaky", observation, kNow + 16 * kMinute), "ok");
  // A short failure is a failure, not a short success; a job without min_runtime is never short.
  EXPECT_EQ(Conditions("flaky", Runs("sss"), kNow + kMinute), "ok");
  RoleObservation quick = Healthy(Job("gate"));  // a 29-second success
  EXPECT_EQ(Conditions("gate", quick), "ok");
}

TEST_F(ClassifyTest, FreshSuccessWithOldCheckpointIsStalled) {
  RoleObservation observation = Healthy(Job("checkpointed"));
  observation.last_progress = kNow - 2 * kHour;
  EXPECT_EQ(Conditions("checkpointed", observation), "ok");
  observation.last_progress = kNow - 2 * kHour - 1;
  EXPECT_EQ(Conditions("checkpointed", observation), "stalled");
}

TEST_F(ClassifyTest, FailedListIsUnknownAndNothingElse) {
  RoleObservation observation;  // source_up = false, no objects
  observation.ledger_id = "x";
  RoleStatus status = Classify(Job("retry"), observation, kNow);
  EXPECT_EQ(status.ConditionList(), "unknown");
  EXPECT_FALSE(status.registered_objects.has_value());
  EXPECT_FALSE(status.active_objects.has_value());
  EXPECT_FALSE(status.ledger_mismatch.has_value());
  EXPECT_EQ(status.next_scheduled, kNow + 10 * kMinute);  // the spec's side is still known
}

// Debian 12 without rsyslog: the crontabs are read, cron's log is not. What the list shows is
// judged; what needs runs is unknown, never missing, not_started or stale.
TEST_F(ClassifyTest, UnreadableHistoryJudgesExistenceAndLeavesRunsUnknown) {
  RoleObservation observation = Healthy(Job("retry"));
  observation.history_up = false;
  observation.history = {};                      // what a source without its history gives
  observation.desired_since = kNow - 30 * kDay;  // long past every fire time and stale_after
  std::vector<schedwatch::Run> runs = {{1, 2, schedwatch::Run::Outcome::kFailed}};
  RoleStatus status = Classify(Job("retry"), observation, kNow, std::nullopt, &runs);
  EXPECT_EQ(status.ConditionList(), "unknown");
  EXPECT_EQ(status.registered_objects, 1);
  EXPECT_EQ(status.active_objects, 1);
  EXPECT_EQ(status.drifted_objects, 0);
  EXPECT_FALSE(status.history.last_success.has_value());
  EXPECT_TRUE(runs.empty());

  // A history a caller left in place is not believed either: a failure is no `failing`.
  observation.history.Add({kNow - 5 * kMinute, kNow - 4 * kMinute, Run::Outcome::kFailed});
  observation.history.Add({kNow - 2 * kHour, std::nullopt, Run::Outcome::kRunning});
  EXPECT_EQ(Conditions("retry", observation), "unknown");

  RoleObservation absent = observation;
  absent.objects.clear();
  EXPECT_EQ(Conditions("retry", absent), "unknown");  // one read: not yet missing
  absent.absence_confirmed = true;
  RoleStatus missing = Classify(Job("retry"), absent, kNow);
  EXPECT_EQ(missing.ConditionList(), "unknown,missing");
  EXPECT_EQ(missing.registered_objects, 0);

  RoleObservation copies = observation;
  copies.objects.push_back(copies.objects.front());
  copies.objects.back().set_id("/etc/cron.d/other:1");
  copies.objects.back().set_schedule("*/7 * * * *");
  copies.objects.front().enabled = false;
  EXPECT_EQ(Conditions("retry", copies), "unknown,duplicate,drift");
  copies.objects.back().enabled = false;
  EXPECT_EQ(Conditions("retry", copies), "unknown,inactive,duplicate,drift");

  // A fresh checkpoint with no success to compare it with: stalled is not claimed either.
  RoleObservation checkpointed = Healthy(Job("checkpointed"));
  checkpointed.history_up = false;
  checkpointed.history = {};
  checkpointed.last_progress = kNow - 10 * kDay;
  EXPECT_EQ(Conditions("checkpointed", checkpointed), "unknown");
}

TEST_F(ClassifyTest, RetryDeletedWhileGateKeepsRunningIsNotReportedHealthy) {
  RoleObservation retry = Healthy(Job("retry"));
  retry.objects.clear();
  retry.absence_confirmed = true;
  retry.history = {};
  retry.history.Add({kNow - 2 * kHour, kNow - 2 * kHour + 30, Run::Outcome::kSucceeded});
  RoleStatus retry_status = Classify(Job("retry"), retry, kNow);
  EXPECT_TRUE(retry_status.Has(Condition::kMissing));
  EXPECT_TRUE(retry_status.Has(Condition::kNotStarted));
  EXPECT_TRUE(retry_status.Has(Condition::kStale));  // 2 h > 2 x 10m + 5m
  EXPECT_EQ(Conditions("gate", Healthy(Job("gate"))), "ok");
}

TEST_F(ClassifyTest, NeverSucceededIsStaleOnlyOnceDesiredLongerThanStaleAfter) {
  const JobSpec& gate = Job("gate");  // stale_after = 2 x 5m + 30m = 40m
  ASSERT_EQ(gate.stale_after, 40 * kMinute);
  RoleObservation observation = Healthy(gate);
  observation.history = {};
  observation.history.Add({kNow - 60, std::nullopt, Run::Outcome::kRunning});
  observation.desired_since = kNow - 40 * kMinute;
  EXPECT_FALSE(Classify(gate, observation, kNow).Has(Condition::kStale));
  observation.desired_since = kNow - 40 * kMinute - 1;
  EXPECT_TRUE(Classify(gate, observation, kNow).Has(Condition::kStale));
}

TEST_F(ClassifyTest, SuccessOlderThanStaleAfterIsStale) {
  const JobSpec& gate = Job("gate");
  RoleObservation observation = Healthy(gate);
  observation.history = {};
  observation.history.Add(
      {kNow - 40 * kMinute - 30, kNow - 40 * kMinute, Run::Outcome::kSucceeded});
  observation.history.Add({kNow - 60, std::nullopt, Run::Outcome::kRunning});
  EXPECT_EQ(Classify(gate, observation, kNow).ConditionList(), "ok");
  EXPECT_EQ(Classify(gate, observation, kNow + 1).ConditionList(), "stale");
}

TEST_F(ClassifyTest, ConditionsAreIndependent) {
  RoleObservation observation = Healthy(Job("retry"));
  observation.objects.push_back(observation.objects[0]);
  observation.objects[1].set_spec_version("5");
  EXPECT_EQ(Conditions("retry", observation), "duplicate,drift");
}

TEST(RunHistoryTest, KeepsLatestEndsAndOldestRunningStart) {
  RunHistory history;
  history.Add({100, 150, Run::Outcome::kSucceeded});
  history.Add({200, 260, Run::Outcome::kFailed});
  history.Add({300, std::nullopt, Run::Outcome::kRunning});
  history.Add({250, std::nullopt, Run::Outcome::kRunning});
  history.Add({50, 80, Run::Outcome::kSucceeded});
  EXPECT_EQ(history.last_started, 300);
  EXPECT_EQ(history.last_success, 150);
  EXPECT_EQ(history.last_failure, 260);
  EXPECT_EQ(history.running_since, 250);
}

// 2099-01-01T00:00:00Z: a date a job (or its user) wrote, far past any clock's skew.
constexpr std::int64_t k2099 = 4070908800;

TEST_F(ClassifyTest, RunDatedInTheFutureIsNeitherStartNorSuccess) {
  RoleObservation observation = Healthy(Job("retry"));
  std::int64_t real_success = *observation.history.last_success;
  observation.history.Add({k2099, k2099 + 30, Run::Outcome::kSucceeded});
  std::vector<schedwatch::Run> runs;
  RoleStatus status = Classify(Job("retry"), observation, kNow, std::nullopt, &runs);
  EXPECT_EQ(status.ConditionList(), "ok");
  EXPECT_EQ(status.history.last_success, real_success);  // not 2099
  EXPECT_EQ(status.history.last_started, kNow + 1);
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_EQ(status.in_future().size(), 1u);
  EXPECT_EQ(status.in_future()[0].what, "run start");
  EXPECT_EQ(status.in_future()[0].time, k2099);
}

TEST_F(ClassifyTest, OnlyFutureRunsKeepNoRoleOkForever) {
  RoleObservation observation = Healthy(Job("retry"));
  observation.history = {};
  observation.history.Add({k2099, k2099 + 30, Run::Outcome::kSucceeded});
  // A run that started on time but says it ended in 2099 is no success either.
  observation.history.Add({kNow - 20 * kMinute, k2099, Run::Outcome::kSucceeded});
  std::vector<schedwatch::Run> runs = {
      {1, 2, schedwatch::Run::Outcome::kSucceeded}};  // replaced, not added to
  RoleStatus status = Classify(Job("retry"), observation, kNow + kDay, std::nullopt, &runs);
  EXPECT_EQ(status.ConditionList(), "not_started,stale");
  EXPECT_FALSE(status.history.last_success.has_value());
  EXPECT_FALSE(status.history.last_started.has_value());
  EXPECT_TRUE(runs.empty());
  ASSERT_EQ(status.in_future().size(), 2u);
  EXPECT_EQ(status.in_future()[0].what, "run end");
  EXPECT_EQ(status.in_future()[1].what, "run start");
}

TEST_F(ClassifyTest, TimesWithinTheSkewAllowanceAreBelieved) {
  RoleObservation observation = Healthy(Job("retry"));
  observation.history.Add(
      {kNow + kClockSkewAllowance - 10, kNow + kClockSkewAllowance, Run::Outcome::kSucceeded});
  RoleStatus status = Classify(Job("retry"), observation, kNow);
  EXPECT_TRUE(status.in_future().empty());
  EXPECT_EQ(status.history.last_success, kNow + kClockSkewAllowance);
  observation.history.Add({kNow + kClockSkewAllowance + 1, std::nullopt, Run::Outcome::kRunning});
  status = Classify(Job("retry"), observation, kNow);
  ASSERT_EQ(status.in_future().size(), 1u);
  EXPECT_FALSE(status.history.running_since.has_value());
  EXPECT_EQ(status.history.last_started, kNow + kClockSkewAllowance - 10);
}

TEST_F(ClassifyTest, FutureSummaryWithoutRunsIsDropped) {
  // A source that reports summaries only (a CronJob's lastSuccessfulTime).
  RoleObservation observation = Healthy(Job("retry"));
  observation.history = {};
  observation.history.last_started = kNow - kMinute;
  observation.history.last_success = k2099;
  RoleStatus status = Classify(Job("retry"), observation, kNow);
  EXPECT_FALSE(status.history.last_success.has_value());
  EXPECT_EQ(status.history.last_started, kNow - kMinute);
  ASSERT_EQ(status.in_future().size(), 1u);
  EXPECT_EQ(status.in_future()[0].what, "last success");
  EXPECT_EQ(status.ConditionList(), "stale");
}

TEST_F(ClassifyTest, FutureCheckpointIsSetAside) {
  RoleObservation observation = Healthy(Job("checkpointed"));
  observation.last_progress = k2099;
  RoleStatus status = Classify(Job("checkpointed"), observation, kNow);
  EXPECT_FALSE(status.last_progress.has_value());
  ASSERT_EQ(status.in_future().size(), 1u);
  EXPECT_EQ(status.in_future()[0].what, "checkpoint");
  EXPECT_EQ(status.ConditionList(), "stalled");
}

TEST_F(ClassifyTest, ClockStepForwardHoldsWhatOnlyTheStepRaises) {
  // A healthy role, then the watcher's clock jumps an hour ahead.
  RoleObservation observation = Healthy(Job("retry"));
  observation.history.Add({kNow - 5 * kMinute, std::nullopt, Run::Outcome::kRunning});
  EXPECT_EQ(Conditions("retry", observation, kNow + kHour), "not_started,hung,stale");
  RoleStatus status =
      Classify(Job("retry"), observation, kNow + kHour, ClockStep{kHour, kNow + kHour});
  EXPECT_EQ(status.ConditionList(), "ok");
  EXPECT_TRUE(status.held.test(static_cast<int>(Condition::kNotStarted)));
  EXPECT_TRUE(status.held.test(static_cast<int>(Condition::kHung)));
  EXPECT_TRUE(status.held.test(static_cast<int>(Condition::kStale)));
  ASSERT_TRUE(status.clock_step().has_value());
  EXPECT_EQ(status.clock_step()->seconds, kHour);
}

TEST_F(ClassifyTest, ClockStepBackDoesNotMakeRecentRunsFuture) {
  RoleObservation observation = Healthy(Job("retry"));
  // Without the step known, the runs of the last hour look an hour ahead, so none counts.
  RoleStatus unaware = Classify(Job("retry"), observation, kNow - kHour);
  EXPECT_EQ(unaware.in_future().size(), 1u);
  EXPECT_EQ(unaware.ConditionList(), "not_started,stale");
  RoleStatus status =
      Classify(Job("retry"), observation, kNow - kHour, ClockStep{-kHour, kNow - kHour});
  EXPECT_EQ(status.ConditionList(), "ok");
  EXPECT_TRUE(status.in_future().empty());
  EXPECT_TRUE(status.held.none());
  EXPECT_EQ(status.history.last_success, kNow + 30);
}

TEST_F(ClassifyTest, ClockStepHoldsNothingThatHeldBeforeIt) {
  // Stale for two days: true by either clock, so it is raised, not held.
  RoleObservation observation = Healthy(Job("retry"));
  observation.history = {};
  observation.history.Add({kNow - 2 * kDay, kNow - 2 * kDay + 30, Run::Outcome::kSucceeded});
  RoleStatus status =
      Classify(Job("retry"), observation, kNow + kHour, ClockStep{kHour, kNow + kHour});
  EXPECT_EQ(status.ConditionList(), "not_started,stale");
  EXPECT_TRUE(status.held.none());
  EXPECT_FALSE(status.clock_step().has_value());
  // A condition that is not about time is never held.
  observation = Healthy(Job("retry"));
  observation.objects.clear();
  observation.absence_confirmed = true;
  status = Classify(Job("retry"), observation, kNow + kHour, ClockStep{kHour, kNow + kHour});
  EXPECT_TRUE(status.Has(Condition::kMissing));
}

// systemd timers with only monotonic triggers (`schedule: monotonic`): no fire times, stale_after
// from the spec, not_started from the timer's own next elapse.
class MonotonicClassifyTest : public ::testing::Test {
 protected:
  static Spec Load() {
    auto spec = ParseSpec(R"(version: 1
defaults: {start_grace: 1m, max_runtime: 10m}
sources:
  host: {type: systemd}
jobs:
  - {role: clean, source: host, schedule: monotonic, stale_after: 2h, spec_version: "1"}
  - {role: nightly, source: host, schedule: "*-*-* 02:00:00", spec_version: "1"}
)",
                          "monotonic.yml", BuiltInCatalog());
    EXPECT_TRUE(spec.ok()) << spec.error();
    return *spec;
  }

  // One enabled monotonic timer due 10 minutes from now, a success 50 minutes ago.
  RoleObservation Healthy() const {
    RoleObservation observation;
    observation.source_up = true;
    LiveObject timer("clean.timer", "clean", "monotonic", "", "1");
    timer.next_start = kNow + 10 * kMinute;
    observation.objects.push_back(timer);
    observation.history.Add({kNow - 50 * kMinute, kNow - 49 * kMinute, Run::Outcome::kSucceeded});
    observation.desired_since = kNow - 30 * kDay;
    return observation;
  }

  const JobSpec& clean() const { return *spec_.FindJob("clean"); }

  Spec spec_ = Load();
};

TEST_F(MonotonicClassifyTest, NoFireTimesStaleAfterFromTheSpecNextStartFromTheTimer) {
  EXPECT_TRUE(clean().schedule.is_monotonic());
  EXPECT_EQ(clean().schedule.text(), "monotonic");
  EXPECT_FALSE(clean().period);
  EXPECT_EQ(clean().stale_after, 2 * kHour);
  RoleStatus status = Classify(clean(), Healthy(), kNow);
  EXPECT_EQ(status.ConditionList(), "ok");
  EXPECT_FALSE(status.last_scheduled);
  EXPECT_EQ(status.next_scheduled, kNow + 10 * kMinute);  // NextElapseUSec*, not the spec's

  // A disabled timer's next elapse is no promise: the enabled one's counts.
  RoleObservation two = Healthy();
  two.objects.push_back(two.objects[0]);
  two.objects[1].set_id("clean-old.timer");
  two.objects[1].enabled = false;
  two.objects[1].next_start = kNow + kMinute;
  EXPECT_EQ(Classify(clean(), two, kNow).next_scheduled, kNow + 10 * kMinute);

  RoleObservation down;
  RoleStatus unknown = Classify(clean(), down, kNow);
  EXPECT_EQ(unknown.ConditionList(), "unknown");
  EXPECT_FALSE(unknown.next_scheduled);
}

TEST_F(MonotonicClassifyTest, NotStartedWhenTheTimersOwnNextStartPassedWithoutAStart) {
  RoleObservation observation = Healthy();
  observation.objects[0].next_start = kNow - kMinute;  // exactly start_grace ago: not yet
  EXPECT_EQ(Classify(clean(), observation, kNow).ConditionList(), "ok");
  observation.objects[0].next_start = kNow - kMinute - 1;
  EXPECT_EQ(Classify(clean(), observation, kNow).ConditionList(), "not_started");
  // RandomizedDelaySec and AccuracySec widen the grace.
  observation.objects[0].start_delay = 30;
  EXPECT_EQ(Classify(clean(), observation, kNow).ConditionList(), "ok");
  observation.objects[0].start_delay = 0;
  // A start (LastTriggerUSec) at or after the due time: it started.
  observation.history.last_started = kNow - kMinute - 1;
  EXPECT_EQ(Classify(clean(), observation, kNow).ConditionList(), "ok");
  observation.history.last_started = kNow - kMinute - 2;
  EXPECT_EQ(Classify(clean(), observation, kNow).ConditionList(), "not_started");
  // No next elapse at all (OnBootSec= that fired): nothing is due.
  observation.objects[0].next_start.reset();
  EXPECT_EQ(Classify(clean(), observation, kNow).ConditionList(), "ok");
  // A stopped timer is inactive, not late.
  observation.objects[0].next_start = kNow - kHour;
  observation.objects[0].enabled = false;
  EXPECT_EQ(Classify(clean(), observation, kNow).ConditionList(), "inactive");
}

TEST_F(MonotonicClassifyTest, FailingStaleAndHungAsForEveryJob) {
  RoleObservation observation = Healthy();
  observation.history.Add({kNow - 5 * kMinute, kNow - 4 * kMinute, Run::Outcome::kFailed});
  EXPECT_EQ(Classify(clean(), observation, kNow).ConditionList(), "failing");
  // Two hours after the last success and no later one: stale (stale_after 2h, from the spec).
  RoleObservation later = Healthy();
  later.objects[0].next_start = kNow + 3 * kHour;
  EXPECT_EQ(Classify(clean(), later, kNow - 49 * kMinute + 2 * kHour).ConditionList(), "ok");
  EXPECT_EQ(Classify(clean(), later, kNow - 49 * kMinute + 2 * kHour + 1).ConditionList(), "stale");
  observation = Healthy();
  observation.history.Add({kNow - 11 * kMinute, std::nullopt, Run::Outcome::kRunning});
  EXPECT_EQ(Classify(clean(), observation, kNow).ConditionList(), "hung");
}

TEST_F(MonotonicClassifyTest, OnCalendarLinesOnAMonotonicJobAreDriftAndViceVersa) {
  RoleObservation observation = Healthy();
  observation.objects[0].set_schedule("*-*-* 02:00:00");
  EXPECT_EQ(Classify(clean(), observation, kNow).ConditionList(), "drift");
  const JobSpec& nightly = *spec_.FindJob("nightly");
  observation = Healthy();
  observation.objects[0].set_role("nightly");
  EXPECT_TRUE(Drifted(nightly, observation.objects[0]));
  observation.objects[0].set_schedule("*-*-* 02:00:00");
  EXPECT_FALSE(Drifted(nightly, observation.objects[0]));
}

}  // namespace
}  // namespace schedwatch
