// Run history kept across refreshes: merged, de-duplicated by start time, bounded.
#include "exporter/run_history.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace schedwatch
