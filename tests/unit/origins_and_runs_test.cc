// Where each threshold comes from (spec loader), and the runs RunHistory keeps for people.
#include <gtest/gtest.h>

#include "schedwatch/classify.h"
#include "schedwatch/spec.h"
#include "sources/catalog.h"

namespace schedwatch {
namespace {

TEST(ValueOriginTest, SaysWhereEachThresholdCameFrom) {
  auto spec = ParseSpec(R"(version: 1
defaults:
  start_grace: 2m
  missed_starts: 3
sources: {demo: {type: file, path: x.yaml}}
jobs:
  - {role: plain, source: demo, schedule: "*/10 * * * *", spec_version: "1"}
  - role: custom
    source: demo
    schedule: "*/10 * * * *"
    spec_version: "1"
    timezone: Asia/Seoul
    start_grace: 1m
    max_runtime: 5m
    alert_for: 1m
    stale_after: 1h
  - {role: boot, source: demo, schedule: "0 0 29 2 *", spec_version: "1"}
)",
                        "spec.yaml", BuiltInCatalog());
  ASSERT_TRUE(spec.ok()) << spec.error();
  const JobSpec& plain = spec->jobs[0];
  EXPECT_EQ(plain.origins.timezone, ValueOrigin::kBuiltIn);
  EXPECT_EQ(plain.origins.start_grace, ValueOrigin::kDefaults);
  EXPECT_EQ(plain.origins.missed_starts, ValueOrigin::kDefaults);
  EXPECT_EQ(plain.origins.max_runtime, ValueOrigin::kBuiltIn);
  EXPECT_EQ(plain.origins.alert_for, ValueOrigin::kBuiltIn);
  EXPECT_EQ(plain.origins.stale_after, ValueOrigin::kDerived);
  EXPECT_EQ(*plain.stale_after, 2 * 600 + 1800);

  const JobSpec& custom = spec->jobs[1];
  EXPECT_EQ(custom.origins.timezone, ValueOrigin::kJob);
  EXPECT_EQ(custom.origins.start_grace, ValueOrigin::kJob);
  EXPECT_EQ(custom.origins.missed_starts, ValueOrigin::kDefaults);
  EXPECT_EQ(custom.origins.max_runtime, ValueOrigin::kJob);
  EXPECT_EQ(custom.origins.alert_for, ValueOrigin::kJob);
  EXPECT_EQ(custom.origins.stale_after, ValueOrigin::kJob);
  EXPECT_EQ(ValueOriginText(ValueOrigin::kDerived), "derived: 2 × period + max_runtime");
}

Run Finished(std::int64_t start, std::int64_t end, bool ok) {
  return Run{start, end, ok ? Run::Outcome::kSucceeded : Run::Outcome::kFailed};
}

TEST(RunHistoryTest, KeepsTheNewestRunsInStartOrder) {
  RunHistory history;
  for (int i = 30; i >= 1; --i) history.Add(Finished(i * 100, i * 100 + 10, i % 2 == 0));
  ASSERT_EQ(history.runs.size(), kRunHistoryKept);
  EXPECT_EQ(history.runs.front().started, 1100);  // runs 11..30 are the newest 20
  EXPECT_EQ(history.runs.back().started, 3000);
  EXPECT_TRUE(std::is_sorted(
      history.runs.begin(), history.runs.end(),
      [](const schedwatch::Run& a, const schedwatch::Run& b) { return a.started < b.started; }));
  // The summaries still count every run.
  EXPECT_EQ(*history.last_success, 3010);
  EXPECT_EQ(*history.last_failure, 2910);
  // An old run arriving late does not push out a newer one.
  history.Add(Finished(50, 60, true));
  EXPECT_EQ(history.runs.front().started, 1100);
}

TEST(RunHistoryTest, OneStartIsOneRunAndAFinishedReportWins) {
  RunHistory history;
  history.Add({100, std::nullopt, Run::Outcome::kRunning});
  history.Add(Finished(100, 160, false));
  history.Add({100, std::nullopt, Run::Outcome::kRunning});  // a stale report of the same run
  ASSERT_EQ(history.runs.size(), 1u);
  EXPECT_EQ(history.runs[0].outcome, Run::Outcome::kFailed);
  EXPECT_EQ(*history.runs[0].finished, 160);

  RunHistory other;
  other.Add(Finished(200, 210, true));
  history.Merge(other);
  ASSERT_EQ(history.runs.size(), 2u);
  EXPECT_EQ(history.runs[1].started, 200);
}

TEST(ClassifyTest, KeepsLedgerIdAndDesiredSinceForTheExplanation) {
  auto spec = ParseSpec(R"(version: 1
sources: {demo: {type: file, path: x.yaml}}
jobs:
  - {role: a, source: demo, schedule: "*/10 * * * *", spec_version: "1"}
)",
                        "spec.yaml", BuiltInCatalog());
  ASSERT_TRUE(spec.ok()) << spec.error();
  RoleObservation observation;
  observation.source_up = true;
  observation.ledger_id = "obj-1";
  observation.desired_since = 1000;
  observation.objects.push_back({"obj-2", "a", "*/10 * * * *", "", "1", true});
  RoleStatus status = Classify(spec->jobs[0], observation, 2000);
  EXPECT_EQ(*status.ledger_id(), "obj-1");
  EXPECT_TRUE(*status.ledger_mismatch);
  EXPECT_EQ(status.desired_since, 1000);
}

}  // namespace
}  // namespace schedwatch
