// Maintenance windows: which spans are open, what they cover, and what Classify excuses.
#include "schedwatch/maintenance.h"

#include <gtest/gtest.h>

#include "schedwatch/classify.h"
#include "schedwatch/timefmt.h"
#include "sources/catalog.h"

namespace schedwatch {
namespace {

constexpr std::int64_t kMinute = 60, kHour = 3600, kDay = 86400;

std::int64_t At(const char* rfc3339) { return *ParseRfc3339(rfc3339); }

Result<Spec> Parse(const std::string& jobs, const std::string& defaults = "") {
  return ParseSpec("version: 1\n" + defaults +
                       "sources:\n  host: {type: crontab}\n  timers: {type: systemd}\njobs:\n" +
                       jobs,
                   "maintenance.yml", BuiltInCatalog());
}

// A daily job at 02:00 UTC with a window every night from 01:00 for 2h, and a fixed one on
// 2026-12-05 from 10:00 to 14:00.
Spec NightlySpec() {
  auto spec = Parse(R"(  - role: nightly
    source: host
    schedule: "0 2 * * *"
    spec_version: "1"
    missed_starts: 1
    start_grace: 5m
    max_runtime: 30m
    stale_after: 25h
    maintenance:
      - {schedule: "0 1 * * *", duration: 2h}
      - {from: "2026-12-05T10:00:00Z", to: "2026-12-05T14:00:00Z"}
)");
  EXPECT_TRUE(spec.ok()) << spec.error();
  return *spec;
}

TEST(MaintenanceWindowTest, OpenNextAndCovered) {
  Spec spec = NightlySpec();
  const MaintenanceWindows& windows = spec.jobs[0].Alerting().maintenance;
  ASSERT_EQ(windows.size(), 2u);
  EXPECT_EQ(windows[0].text, "0 1 * * * for 2h");
  EXPECT_EQ(windows[1].text, "2026-12-05T10:00:00Z to 2026-12-05T14:00:00Z");

  // Open from its first second to just before its end.
  EXPECT_FALSE(OpenWindow(windows, At("2026-12-03T00:59:59Z")));
  EXPECT_EQ(OpenWindow(windows, At("2026-12-03T01:00:00Z")),
            (TimeSpan{At("2026-12-03T01:00:00Z"), At("2026-12-03T03:00:00Z")}));
  EXPECT_TRUE(OpenWindow(windows, At("2026-12-03T02:59:59Z")));
  EXPECT_FALSE(OpenWindow(windows, At("2026-12-03T03:00:00Z")));
  EXPECT_EQ(OpenWindow(windows, At("2026-12-05T12:00:00Z")),
            (TimeSpan{At("2026-12-05T10:00:00Z"), At("2026-12-05T14:00:00Z")}));

  EXPECT_EQ(NextWindow(windows, At("2026-12-03T03:00:00Z")),
            (TimeSpan{At("2026-12-04T01:00:00Z"), At("2026-12-04T03:00:00Z")}));
  EXPECT_EQ(NextWindow(windows, At("2026-12-05T03:00:00Z")),
            (TimeSpan{At("2026-12-05T10:00:00Z"), At("2026-12-05T14:00:00Z")}));

  // Two nights (2h each) and the fixed 4h, in three days; a part of one at each end.
  EXPECT_EQ(CoveredSeconds(windows, At("2026-12-04T00:00:00Z"), At("2026-12-06T00:00:00Z")),
            8 * kHour);
  EXPECT_EQ(CoveredSeconds(windows, At("2026-12-04T02:00:00Z"), At("2026-12-05T01:30:00Z")),
            kHour + 30 * kMinute);
  EXPECT_EQ(CoveredSeconds(windows, At("2026-12-04T05:00:00Z"), At("2026-12-04T06:00:00Z")), 0);
}

TEST(MaintenanceWindowTest, OverlappingWindowsAreOneDowntime) {
  auto spec = Parse(R"(  - role: a
    source: host
    schedule: "0 * * * *"
    spec_version: "1"
    maintenance:
      - {from: "2026-12-05T10:00:00Z", to: "2026-12-05T12:00:00Z"}
      - {from: "2026-12-05T11:00:00Z", to: "2026-12-05T13:00:00Z"}
      - {from: "2026-12-05T13:00:00Z", to: "2026-12-05T13:30:00Z"}
)");
  ASSERT_TRUE(spec.ok()) << spec.error();
  const MaintenanceWindows& windows = spec->jobs[0].Alerting().maintenance;
  EXPECT_EQ(OpenWindow(windows, At("2026-12-05T11:30:00Z")),
            (TimeSpan{At("2026-12-05T10:00:00Z"), At("2026-12-05T13:30:00Z")}));
  EXPECT_EQ(CoveredSeconds(windows, At("2026-12-05T00:00:00Z"), At("2026-12-06T00:00:00Z")),
            3 * kHour + 30 * kMinute);
}

class MaintenanceClassifyTest : public ::testing::Test {
 protected:
  const JobSpec& job() { return spec_.jobs[0]; }
  // The object is there; the last run started at `last_start` and succeeded 10 minutes later.
  RoleObservation Observed(std::int64_t last_start) {
    RoleObservation observation;
    observation.source_up = true;
    observation.objects.push_back({"/etc/cron.d/app:1", "nightly", "0 2 * * *", "", "1"});
    observation.history.Add({last_start, last_start + 10 * kMinute, Run::Outcome::kSucceeded});
    observation.desired_since = last_start - 30 * kDay;
    return observation;
  }
  Spec spec_ = NightlySpec();
};

TEST_F(MaintenanceClassifyTest, AFireTimeInsideAWindowIsExcusedOneJustOutsideIsNot) {
  // 02:00 is inside the nightly window: nothing started since yesterday, still not not_started.
  RoleObservation observation = Observed(At("2026-12-02T02:00:00Z"));
  RoleStatus status = Classify(job(), observation, At("2026-12-03T02:30:00Z"));
  EXPECT_FALSE(status.Has(Condition::kNotStarted)) << status.ConditionList();
  EXPECT_EQ(status.maintenance_until, At("2026-12-03T03:00:00Z"));

  // The same job with a window ending at 02:00: its 02:00 fire time is outside and counts.
  Spec earlier = *Parse(R"(  - role: nightly
    source: host
    schedule: "0 2 * * *"
    spec_version: "1"
    missed_starts: 1
    start_grace: 5m
    maintenance: [{schedule: "0 1 * * *", duration: 1h}]
)");
  status = Classify(earlier.jobs[0], observation, At("2026-12-03T02:30:00Z"));
  EXPECT_TRUE(status.Has(Condition::kNotStarted)) << status.ConditionList();
  EXPECT_FALSE(status.maintenance_until);
}

TEST_F(MaintenanceClassifyTest, ExcusedFireTimesAreSkippedNotCountedAsMissedStarts) {
  auto spec = Parse(R"(  - role: hourly
    source: host
    schedule: "0 * * * *"
    spec_version: "1"
    missed_starts: 2
    start_grace: 5m
    maintenance: [{from: "2026-12-03T01:30:00Z", to: "2026-12-03T03:30:00Z"}]
)");
  ASSERT_TRUE(spec.ok()) << spec.error();
  RoleObservation observation = Observed(At("2026-12-03T00:00:00Z"));
  observation.objects[0].set_schedule("0 * * * *");
  // Missed: 01:00, then 02:00 and 03:00 excused, then 04:00: two counted fire times.
  EXPECT_FALSE(
      Classify(spec->jobs[0], observation, At("2026-12-03T01:30:00Z")).Has(Condition::kNotStarted));
  EXPECT_FALSE(
      Classify(spec->jobs[0], observation, At("2026-12-03T04:04:00Z")).Has(Condition::kNotStarted));
  EXPECT_TRUE(
      Classify(spec->jobs[0], observation, At("2026-12-03T04:06:00Z")).Has(Condition::kNotStarted));
}

TEST_F(MaintenanceClassifyTest, TimeInsideWindowsDoesNotCountTowardsStale) {
  // stale_after 25h. From a success at 2026-12-04T10:00Z to 12-05T17:00Z is 31h, of which the
  // night's window (2h) and the fixed one (4h) are excused: 25h, not yet stale; a second later it
  // is. Without the windows, 25h and a second would have been.
  std::int64_t success = At("2026-12-04T10:00:00Z");
  RoleObservation observation = Observed(success - 10 * kMinute);
  EXPECT_FALSE(Classify(job(), observation, success + 25 * kHour + 1).Has(Condition::kStale));
  EXPECT_FALSE(Classify(job(), observation, success + 31 * kHour).Has(Condition::kStale));
  EXPECT_TRUE(Classify(job(), observation, success + 31 * kHour + 1).Has(Condition::kStale));
}

TEST_F(MaintenanceClassifyTest, ARunStartedInAWindowIsNoFailure) {
  RoleObservation observation = Observed(At("2026-12-02T02:00:00Z"));
  // Failed at 02:00 inside the window (the database was down for it): excused.
  observation.history.Add(
      {At("2026-12-03T02:00:00Z"), At("2026-12-03T02:01:00Z"), Run::Outcome::kFailed});
  RoleStatus status = Classify(job(), observation, At("2026-12-03T03:10:00Z"));
  EXPECT_FALSE(status.Has(Condition::kFailing)) << status.ConditionList();
  // Shown as it happened all the same.
  EXPECT_EQ(status.history.last_failure, At("2026-12-03T02:01:00Z"));
  // A failure started outside any window is one.
  observation.history.Add(
      {At("2026-12-03T03:05:00Z"), At("2026-12-03T03:06:00Z"), Run::Outcome::kFailed});
  EXPECT_TRUE(Classify(job(), observation, At("2026-12-03T03:10:00Z")).Has(Condition::kFailing));
}

TEST_F(MaintenanceClassifyTest, AnUnknownSourceStillSaysTheWindowIsOpen) {
  RoleObservation observation;
  RoleStatus status = Classify(job(), observation, At("2026-12-05T11:00:00Z"));
  EXPECT_TRUE(status.Has(Condition::kUnknown));
  EXPECT_EQ(status.maintenance_until, At("2026-12-05T14:00:00Z"));
}

TEST(MaintenanceMonotonicTest, ATimersNextStartInAWindowIsDueWhenItCloses) {
  auto spec = Parse(R"(  - role: t
    source: timers
    schedule: monotonic
    spec_version: "1"
    start_grace: 5m
    stale_after: 2d
    maintenance: [{from: "2026-12-05T10:00:00Z", to: "2026-12-05T14:00:00Z"}]
)");
  ASSERT_TRUE(spec.ok()) << spec.error();
  RoleObservation observation;
  observation.source_up = true;
  observation.objects.push_back({"t.timer", "t", "monotonic", "", "1"});
  observation.objects[0].next_start = At("2026-12-05T11:00:00Z");
  observation.desired_since = At("2026-12-01T00:00:00Z");
  const JobSpec& job = spec->jobs[0];
  EXPECT_FALSE(Classify(job, observation, At("2026-12-05T13:00:00Z")).Has(Condition::kNotStarted));
  EXPECT_FALSE(Classify(job, observation, At("2026-12-05T14:05:00Z")).Has(Condition::kNotStarted));
  EXPECT_TRUE(Classify(job, observation, At("2026-12-05T14:05:01Z")).Has(Condition::kNotStarted));
}

TEST(MaintenanceSpecTest, DefaultsApplyToEveryJobInItsOwnDialectAndZone) {
  auto spec = Parse(R"(  - {role: a, source: host, schedule: "0 2 * * *", spec_version: "1"}
  - {role: b, source: host, schedule: "0 2 * * *", spec_version: "1", timezone: Asia/Seoul,
     maintenance: [{from: "2026-12-05T10:00:00Z", to: "2026-12-05T11:00:00Z"}]}
  - {role: c, source: host, schedule: "0 2 * * *", spec_version: "1"}
)",
                    "defaults:\n  maintenance: [{schedule: \"0 1 * * 6\", duration: 2h}]\n");
  ASSERT_TRUE(spec.ok()) << spec.error();
  const auto& a = spec->jobs[0].Alerting().maintenance;
  const auto& b = spec->jobs[1].Alerting().maintenance;
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 2u);
  // Saturday 01:00 in each job's zone: 01:00Z for a, 16:00Z on Friday for b (Seoul is +9).
  EXPECT_TRUE(OpenWindow(a, At("2026-12-05T01:30:00Z")));
  EXPECT_FALSE(OpenWindow(b, At("2026-12-05T01:30:00Z")));
  EXPECT_TRUE(OpenWindow(b, At("2026-12-04T16:30:00Z")));
  // Jobs with equal windows share their settings.
  EXPECT_EQ(spec->jobs[0].alerting, spec->jobs[2].alerting);
}

TEST(MaintenanceSpecTest, SystemdJobsReadWindowsAsOnCalendar) {
  auto spec = Parse(R"(  - role: t
    source: timers
    schedule: "*-*-* 02:00:00"
    spec_version: "1"
    timezone: UTC
    maintenance: [{schedule: "Sat *-*-* 01:00:00", duration: 2h}]
)");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_TRUE(OpenWindow(spec->jobs[0].Alerting().maintenance, At("2026-12-05T02:00:00Z")));
  EXPECT_FALSE(OpenWindow(spec->jobs[0].Alerting().maintenance, At("2026-12-04T02:00:00Z")));
}

// A classification's timeline (MaintenanceTimeline), walked at once for a refresh's shared set or
// as far as asked for one role, answers as the free functions where its openings reach: around
// now, across a downtime open at now, and within the latest kMaxWindowsWalked + 1 openings of
// each window. Before them a window is not looked at (less is excused, never more).
TEST(MaintenanceTimelineTest, AnswersAsTheFreeFunctionsWhereItsOpeningsReach) {
  auto spec = Parse(R"(  - role: a
    source: host
    schedule: "0 * * * *"
    spec_version: "1"
    maintenance:
      - {schedule: "*/7 * * * *", duration: 3m}
      - {schedule: "0 * * * *", duration: 20m}
      - {schedule: "15 * * * *", duration: 10m}
      - {schedule: "30 1 * * *", duration: 2h}
      - {from: "2026-12-04T20:00:00Z", to: "2026-12-05T02:00:00Z"}
)");
  ASSERT_TRUE(spec.ok()) << spec.error();
  const MaintenanceWindows& windows = spec->jobs[0].Alerting().maintenance;
  // Outside any window, inside one, at the first and last second of a joined downtime.
  for (const char* at : {"2026-12-05T04:47:13Z", "2026-12-05T05:05:00Z", "2026-12-05T05:00:00Z",
                         "2026-12-05T05:24:59Z", "2026-12-05T01:45:00Z"}) {
    const std::int64_t now = At(at);
    MaintenanceTimeline eager(windows, now, true), lazy(windows, now, false);
    SCOPED_TRACE(at);
    // `*/7`'s 1,001 openings reach 4.86 days back.
    for (std::int64_t t = now - 12 * kDay; t <= now + kHour; t += 97) {
      auto open = eager.OpenWindow(t);
      ASSERT_EQ(lazy.OpenWindow(t), open) << FormatRfc3339(t);
      if (t >= now - 4 * kDay) {
        ASSERT_EQ(open, OpenWindow(windows, t)) << FormatRfc3339(t);
      }
    }
    // Only `*/7` is open at 05:50 (its 05:49 opening), ten days ago: too far back to be looked at.
    const std::int64_t long_ago = At("2026-11-25T05:50:00Z");
    EXPECT_TRUE(OpenWindow(windows, long_ago));
    EXPECT_FALSE(eager.OpenWindow(long_ago));
    EXPECT_FALSE(lazy.OpenWindow(long_ago));
    // Covered time counts the same openings, walked back past those 4.86 days.
    for (std::int64_t from = now - 9 * kDay; from <= now + kMinute; from += 3 * kHour + 17) {
      ASSERT_EQ(eager.CoveredSince(from), CoveredSeconds(windows, from, now))
          << FormatRfc3339(from);
      ASSERT_EQ(lazy.CoveredSince(from), CoveredSeconds(windows, from, now)) << FormatRfc3339(from);
    }
  }
}

// A minutely window beside a yearly one open for most of the year: the downtime open at now runs
// for months, its minutely openings are walked 1,000 at most, then asked of the schedule.
TEST(MaintenanceTimelineTest, ALongDowntimeOpenAtNowIsNotWalkedToItsEnd) {
  auto spec = Parse(R"(  - role: a
    source: host
    schedule: "0 * * * *"
    spec_version: "1"
    maintenance:
      - {schedule: "0 0 1 1 *", duration: 8000h}
      - {schedule: "* * * * *", duration: 30s}
)");
  ASSERT_TRUE(spec.ok()) << spec.error();
  const MaintenanceWindows& windows = spec->jobs[0].Alerting().maintenance;
  const std::int64_t now = At("2026-03-01T12:00:10Z");
  MaintenanceTimeline timeline(windows, now, true);
  EXPECT_EQ(timeline.OpenWindow(now), OpenWindow(windows, now));
  for (std::int64_t t = now - kDay; t <= now + 3 * kDay; t += 7 * kMinute + 13) {
    ASSERT_EQ(timeline.OpenWindow(t), OpenWindow(windows, t)) << FormatRfc3339(t);
  }
}

// Roles of a refresh that share a set of windows walk it once: the second asking builds the
// timeline, and an equal set of another job (the defaults', copied into each) finds it.
TEST(MaintenanceTimelineTest, AMemoBuildsOneTimelinePerSharedSet) {
  auto spec = Parse(R"(  - {role: a, source: host, schedule: "0 * * * *", spec_version: "1"}
  - {role: b, source: host, schedule: "0 * * * *", spec_version: "1", labels: {team: b}}
  - {role: c, source: host, schedule: "0 * * * *", spec_version: "1",
     maintenance: [{schedule: "0 3 * * *", duration: 1h}]}
)",
                    "defaults:\n  maintenance: [{schedule: \"0 1 * * *\", duration: 2h}]\n");
  ASSERT_TRUE(spec.ok()) << spec.error();
  const MaintenanceWindows& a = spec->jobs[0].Alerting().maintenance;
  const MaintenanceWindows& b = spec->jobs[1].Alerting().maintenance;
  const MaintenanceWindows& c = spec->jobs[2].Alerting().maintenance;
  ASSERT_NE(&a, &b);  // the labels make b's settings its own
  const std::int64_t now = At("2026-12-05T12:00:00Z");
  MaintenanceMemo memo;
  EXPECT_EQ(memo.Find(a, now), nullptr);
  MaintenanceTimeline* shared = memo.Find(b, now);
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(memo.Find(a, now), shared);
  EXPECT_EQ(memo.Find(c, now), nullptr);      // a set of its own: walked by its role
  EXPECT_EQ(memo.Find(a, now - 1), nullptr);  // another pass's now
  EXPECT_EQ(memo.Find(MaintenanceWindows{}, now), nullptr);
}

// The issue 34 spec: 16 windows opening every minute in the defaults, stale_after 1h, a success
// a month old. Each role is judged the same with the refresh's memo as without it.
TEST(MaintenanceTimelineTest, ClassifyWithTheMemoJudgesAsWithout) {
  std::string defaults = "defaults:\n  maintenance:\n";
  for (int w = 0; w < 16; ++w) {
    defaults += "    - {schedule: \"* * * * *\", duration: " + std::to_string(30 + w) + "s}\n";
  }
  std::string jobs;
  const char* schedules[] = {"*/5 * * * *", "7 */2 * * *", "30 4 * * 1-5", "0 0 1 * *"};
  for (int i = 0; i < 8; ++i) {
    jobs += "  - {role: r" + std::to_string(i) + ", source: host, schedule: \"" + schedules[i % 4] +
            "\", spec_version: \"1\", stale_after: 1h, missed_starts: " + std::to_string(1 + i) +
            "}\n";
  }
  auto spec = Parse(jobs, defaults);
  ASSERT_TRUE(spec.ok()) << spec.error();
  const std::int64_t now = At("2026-12-05T12:00:20Z");
  for (std::int64_t age : {std::int64_t{0}, 50 * kMinute, 3 * kHour, 30 * kDay}) {
    MaintenanceMemo memo;
    for (const JobSpec& job : spec->jobs) {
      RoleObservation observation;
      observation.source_up = true;
      observation.objects.push_back({"x", job.role, job.schedule.expression().text(), "", "1"});
      std::int64_t started = job.schedule.Previous(now - age).value_or(now);
      observation.history.Add({started, started + 5, Run::Outcome::kSucceeded});
      observation.history.Add({started - kHour, started - kHour + 50, Run::Outcome::kFailed});
      observation.desired_since = now - 60 * kDay;
      for (std::int64_t at : {now, now + 17, now + 45}) {
        RoleStatus alone = Classify(job, observation, at);
        RoleStatus memoised = Classify(job, observation, at, std::nullopt, nullptr, &memo);
        EXPECT_EQ(memoised, alone) << job.role << " age " << age << ": " << memoised.ConditionList()
                                   << " vs " << alone.ConditionList();
      }
    }
  }
}

}  // namespace
}  // namespace schedwatch
