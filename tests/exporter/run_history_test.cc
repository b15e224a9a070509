// Run history kept across refreshes: merged, de-duplicated by start time, bounded.
#include "exporter/run_history.h"

#include <gtest/gtest.h>

#include "exporter/explain.h"
#include "sources/catalog.h"

namespace schedwatch {
namespace {

Run Finished(std::int64_t start, std::int64_t end, bool ok = true) {
  return Run{start, end, ok ? Run::Outcome::kSucceeded : Run::Outcome::kFailed};
}
Run Running(std::int64_t start) { return Run{start, std::nullopt, Run::Outcome::kRunning}; }

TEST(MergeRunsTest, KeepsWhatTheSchedulerForgotAndDeduplicatesByStart) {
  // A CronJob keeps its last three Jobs: older runs must survive here.
  RoleRuns kept =
      MergeRuns({}, {Finished(100, 110), Finished(200, 210), Finished(300, 310)}, false);
  kept =
      MergeRuns(kept, {Finished(200, 210), Finished(300, 310), Finished(400, 410, false)}, false);
  ASSERT_EQ(kept.size(), 4u);
  EXPECT_EQ(kept[0].started, 100);
  EXPECT_EQ(kept[3].outcome, Run::Outcome::kFailed);
  EXPECT_EQ(kept[3].duration, 10);
  EXPECT_EQ(*kept[3].finished(), 410);
}

TEST(MergeRunsTest, ARunningRunIsReplacedByItsEndOrDroppedWhenItVanishes) {
  RoleRuns kept = MergeRuns({}, {Finished(100, 110), Running(200), Running(300)}, false);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[1].duration, -1);
  // 200 finished; 300 is no longer shown (its Job was deleted): not running forever here.
  kept = MergeRuns(kept, {Finished(200, 260, false)}, false);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[1].started, 200);
  EXPECT_EQ(kept[1].outcome, Run::Outcome::kFailed);
  // A stale running report never undoes a finished run.
  kept = MergeRuns(kept, {Running(200)}, false);
  EXPECT_EQ(kept[1].outcome, Run::Outcome::kFailed);
}

TEST(MergeRunsTest, IsBoundedAndKeepsTheNewest) {
  RoleRuns kept;
  for (int refresh = 0; refresh < 10; ++refresh) {
    std::vector<schedwatch::Run> read;
    for (int i = 0; i < 5; ++i) read.push_back(Finished(refresh * 1000 + i, refresh * 1000 + i));
    kept = MergeRuns(kept, read, false);
  }
  ASSERT_EQ(kept.size(), kRunHistoryKept);
  EXPECT_EQ(kept.front().started, 6000);
  EXPECT_EQ(kept.back().started, 9004);
  EXPECT_EQ(sizeof(RecordedRun), 16u);
}

TEST(MergeRunsTest, ACompleteReadReplacesWhatWasKept) {
  // A snapshot file is the whole history (and the example's times move with each read).
  RoleRuns kept = MergeRuns({}, {Finished(100, 110), Finished(200, 210)}, true);
  kept = MergeRuns(kept, {Finished(130, 140)}, true);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].started, 130);
}

TEST(MergeRunsTest, ABackwardsClockIsNotANegativeDuration) {
  RoleRuns kept = MergeRuns({}, {Finished(100, 90)}, false);
  EXPECT_EQ(kept[0].duration, 0);
}

TEST(RunHistoryStoreTest, SharesUnchangedListsKeepsThemWhileUnknownAndForgetsRemovedRoles) {
  auto spec = ParseSpec(R"(version: 1
sources: {k: {type: kubernetes}}
jobs:
  - {role: a, source: k, schedule: "*/10 * * * *", spec_version: "1"}
  - {role: b, source: k, schedule: "*/10 * * * *", spec_version: "1"}
)",
                        "spec.yaml", BuiltInCatalog());
  ASSERT_TRUE(spec.ok()) << spec.error();
  auto shared = std::make_shared<const Spec>(std::move(*spec));
  auto refresh = [&](bool up, std::vector<schedwatch::Run> runs, std::size_t roles = 2) {
    RefreshResult result;
    result.spec = shared;
    for (std::size_t i = 0; i < roles; ++i) {
      RoleResult role;
      role.job = &shared->jobs[i];
      if (up) {
        for (const schedwatch::Run& run : runs) role.status.history.Add(run);
      } else {
        role.status.conditions.set(static_cast<int>(Condition::kUnknown));
      }
      result.roles.push_back(std::move(role));
    }
    return result;
  };
  RunHistoryStore store;
  RefreshResult first = refresh(true, {Finished(100, 110)});
  store.Update(first);
  ASSERT_TRUE(first.roles[0].runs);
  EXPECT_TRUE(first.roles[0].status.history.runs.empty());  // kept once, in the store
  RefreshResult second = refresh(true, {Finished(100, 110)});
  store.Update(second);
  EXPECT_EQ(second.roles[0].runs.get(), first.roles[0].runs.get());  // unchanged: not copied
  RefreshResult down = refresh(false, {});
  store.Update(down);
  ASSERT_TRUE(down.roles[0].runs);
  EXPECT_EQ(down.roles[0].runs->size(), 1u);
  EXPECT_EQ(store.roles(), 2u);
  RefreshResult fewer = refresh(true, {Finished(200, 210)}, 1);
  store.Update(fewer);
  EXPECT_EQ(store.roles(), 1u);
  EXPECT_EQ(fewer.roles[0].runs->size(), 2u);
}

TEST(AddKeptRunsTest, AddsTheFinishedRunsTheReadNoLongerShowsButNotTheirSummaries) {
  RoleRuns kept =
      MergeRuns({}, {Finished(100, 110, false), Finished(200, 210), Running(300)}, false);
  RunHistory history;
  history.Add(Finished(200, 210));
  history.last_failure = std::nullopt;  // what the source says stands
  AddKeptRuns(kept, history);
  ASSERT_EQ(history.runs.size(), 2u);  // the running one is the read's to report
  EXPECT_EQ(history.runs[0].started, 100);
  EXPECT_EQ(history.runs[0].finished, 110);
  EXPECT_EQ(history.runs[0].outcome, Run::Outcome::kFailed);
  EXPECT_EQ(history.last_failure, std::nullopt);
  EXPECT_EQ(history.last_success, 210);
}

// A CronJob keeps one failed Job (failedJobsHistoryLimit 1): each read shows the newest failure
// only. With the runs the exporter kept, three failures in a row are still three.
TEST(AddKeptRunsTest, FailuresASourceForgotCountTowardsFailureThreshold) {
  auto spec = ParseSpec(R"(version: 1
sources: {k: {type: kubernetes}, f: {type: file, path: x.yaml}}
jobs:
  - {role: a, source: k, schedule: "*/10 * * * *", spec_version: "1", failure_threshold: 3}
  - {role: b, source: k, schedule: "*/10 * * * *", spec_version: "1"}
  - {role: c, source: f, schedule: "*/10 * * * *", spec_version: "1", min_runtime: 1m}
)",
                        "spec.yaml", BuiltInCatalog());
  ASSERT_TRUE(spec.ok()) << spec.error();
  auto shared = std::make_shared<const Spec>(std::move(*spec));
  const JobSpec& job = shared->jobs[0];
  EXPECT_TRUE(JudgedFromKeptRuns(job));
  EXPECT_FALSE(JudgedFromKeptRuns(shared->jobs[1]));  // no threshold
  EXPECT_FALSE(JudgedFromKeptRuns(shared->jobs[2]));  // a snapshot is the whole history

  constexpr std::int64_t kNow = 1796040000;
  RunHistoryStore store;
  std::shared_ptr<const RoleRuns> kept;
  std::vector<std::string> seen;
  for (int failure = 1; failure <= 3; ++failure) {
    RoleObservation observation;
    observation.source_up = true;
    observation.objects.push_back({"batch/a", "a", "*/10 * * * *", "", "1", true});
    observation.desired_since = kNow - 3600;
    observation.history.Add(Finished(kNow - 600, kNow - 590));
    std::int64_t start = kNow + 600 * (failure - 1);
    observation.history.Add(Finished(start, start + 10, false));
    if (kept) AddKeptRuns(*kept, observation.history);
    RefreshResult result;
    result.spec = shared;
    RoleResult role;
    role.job = &job;
    role.status = Classify(job, observation, start + 60);
    result.roles.push_back(std::move(role));
    store.Update(result);
    kept = result.roles[0].runs;
    seen.push_back(result.roles[0].status.ConditionList() + " / " +
                   FailingHistoryText(result.roles[0]));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{
                      "ok / failure_threshold 3, recovery_threshold 1, judged from 2 finished "
                      "runs: fewer than failure_threshold, so from those there are (failing when "
                      "they all failed); the source may keep fewer runs",
                      "ok / failure_threshold 3, recovery_threshold 1, judged from 3 finished runs",
                      "failing / failure_threshold 3, recovery_threshold 1, judged from 4 finished "
                      "runs"}));
}

}  // namespace
}  // namespace schedwatch
