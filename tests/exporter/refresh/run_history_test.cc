// Run history kept across refreshes: merged, de-duplicated by start time, bounded.
#include "exporter/refresh/run_history.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <numeric>

#include "exporter/pages/explain.h"
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

// A spec of two roles, a and b, of one Kubernetes source.
std::shared_ptr<const Spec> TwoRoles() {
  auto spec = ParseSpec(R"(version: 1
sources: {k: {type: kubernetes}}
jobs:
  - {role: a, source: k, schedule: "*/10 * * * *", spec_version: "1"}
  - {role: b, source: k, schedule: "*/10 * * * *", spec_version: "1"}
)",
                        "spec.yaml", BuiltInCatalog());
  EXPECT_TRUE(spec.ok()) << spec.error();
  return std::make_shared<const Spec>(std::move(*spec));
}

// The newest counted named run of each outcome is the role's exemplar: kept while later reads
// show runs the scheduler did not name, replaced by a newer named one, gone with the role.
TEST(RunHistoryStoreTest, KeepsTheNewestNamedRunOfEachOutcome) {
  auto shared = TwoRoles();
  RunHistoryStore store;
  auto named = [](schedwatch::Run run, const std::string& id) {
    run.identity = std::make_shared<const RunIdentity>(RunIdentity{id, "https://ci/" + id});
    return run;
  };
  auto refresh = [&](const std::vector<schedwatch::Run>& runs) {
    RefreshResult result;
    result.spec = shared;
    for (std::size_t i = 0; i < 2; ++i) {
      RoleResult role;
      role.job = &shared->jobs[i];
      store.Add(role, i == 0 ? runs : std::vector<schedwatch::Run>{Finished(100, 110)});
      result.roles.push_back(std::move(role));
    }
    store.Finish(result, RoleOrder(*result.spec));
    return result;
  };
  RefreshResult first = refresh({named(Finished(100, 130), "j1"), named(Finished(200, 205), "j2"),
                                 named(Finished(300, 360, false), "j3")});
  ASSERT_EQ(first.exemplars.size(), 1u);  // b's runs are not named
  EXPECT_EQ(first.exemplars[0].job, &shared->jobs[0]);
  const RunExemplars& e = *first.exemplars[0].exemplars;
  ASSERT_TRUE(e.succeeded && e.failed);
  EXPECT_EQ(e.succeeded->identity->id, "j2");
  EXPECT_EQ(e.succeeded->finished, 205);
  EXPECT_EQ(e.succeeded->duration, 5);
  EXPECT_EQ(e.failed->identity->id, "j3");
  EXPECT_EQ(e.newest()->identity->id, "j3");
  // An unnamed newer run leaves the exemplar; a named one replaces its outcome's only.
  RefreshResult second = refresh({Finished(400, 410)});
  ASSERT_EQ(second.exemplars.size(), 1u);
  EXPECT_EQ(second.exemplars[0].exemplars->succeeded->identity->id, "j2");
  RefreshResult third = refresh({named(Finished(500, 520), "j5")});
  EXPECT_EQ(third.exemplars[0].exemplars->succeeded->identity->id, "j5");
  EXPECT_EQ(third.exemplars[0].exemplars->failed->identity->id, "j3");
}

TEST(RunHistoryStoreTest, SharesUnchangedListsKeepsThemWhileUnknownAndForgetsRemovedRoles) {
  auto shared = TwoRoles();
  RunHistoryStore store;
  auto refresh = [&](bool up, const std::vector<schedwatch::Run>& runs, std::size_t roles = 2) {
    RefreshResult result;
    result.spec = shared;
    for (std::size_t i = 0; i < roles; ++i) {
      RoleResult role;
      role.job = &shared->jobs[i];
      if (!up) role.status.conditions.set(static_cast<int>(Condition::kUnknown));
      store.Add(role, runs);
      result.roles.push_back(std::move(role));
    }
    store.Finish(result, RoleOrder(*result.spec));
    return result;
  };
  RefreshResult first = refresh(true, {Finished(100, 110)});
  ASSERT_TRUE(first.roles[0].runs);
  RefreshResult second = refresh(true, {Finished(100, 110)});
  EXPECT_EQ(second.roles[0].runs.get(), first.roles[0].runs.get());  // unchanged: not copied
  RefreshResult down = refresh(false, {Finished(300, 310)});  // an unknown role's read is ignored
  ASSERT_TRUE(down.roles[0].runs);
  EXPECT_EQ(down.roles[0].runs->size(), 1u);
  EXPECT_EQ(store.roles(), 2u);
  RefreshResult fewer = refresh(true, {Finished(200, 210)}, 1);
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
    std::vector<schedwatch::Run> runs;
    role.status = Classify(job, observation, start + 60, std::nullopt, &runs);
    store.Add(role, runs);
    result.roles.push_back(std::move(role));
    store.Finish(result, RoleOrder(*result.spec));
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

// schedwatch_job_runs_total: refreshes of one store, each a read of the roles' runs.
class RunCountsTest : public ::testing::Test {
 protected:
  std::shared_ptr<const Spec> Load(std::string_view jobs) {
    auto spec = ParseSpec(fmt::format(R"(version: 1
sources: {{k: {{type: kubernetes}}, c: {{type: kubernetes}}}}
jobs:
{})",
                                      jobs),
                          "spec.yaml", BuiltInCatalog());
    EXPECT_TRUE(spec.ok()) << spec.error();
    return std::make_shared<const Spec>(std::move(*spec));
  }
  // One refresh: the first role of `spec` reads `runs` (unknown when `up` is false).
  RefreshResult Refresh(const std::shared_ptr<const Spec>& spec, std::vector<schedwatch::Run> runs,
                        bool up = true) {
    RefreshResult result;
    result.spec = spec;
    for (const JobSpec& job : spec->jobs) {
      RoleResult role;
      role.job = &job;
      if (!up) role.status.conditions.set(static_cast<int>(Condition::kUnknown));
      store_.Add(role, up && &job == &spec->jobs[0] ? runs : std::vector<schedwatch::Run>{});
      result.roles.push_back(std::move(role));
    }
    store_.Finish(result, RoleOrder(*result.spec));
    return result;
  }
  static std::pair<std::uint32_t, std::uint32_t> Counts(const RefreshResult& result) {
    return {result.roles[0].run_counts.succeeded, result.roles[0].run_counts.failed};
  }
  using Pair = std::pair<std::uint32_t, std::uint32_t>;
  RunHistoryStore store_;
};

constexpr const char* kOneJob =
    R"(  - {role: a, source: k, schedule: "*/10 * * * *", spec_version: "1"}
  - {role: b, source: k, schedule: "*/10 * * * *", spec_version: "1"}
)";

TEST_F(RunCountsTest, EachFinishedRunOnceAcrossRefreshesARunningOneWhenItFinishes) {
  auto spec = Load(kOneJob);
  // The first read: what the source shows is counted (the counters start at zero then).
  RefreshResult first =
      Refresh(spec, {Finished(100, 110), Finished(200, 210, false), Running(300)});
  EXPECT_EQ(Counts(first), (Pair{1, 1}));
  // Shown again: not again. The running one counts when it is first seen finished.
  EXPECT_EQ(Counts(Refresh(spec, {Finished(100, 110), Finished(200, 210, false), Running(300)})),
            (Pair{1, 1}));
  RefreshResult finished = Refresh(spec, {Finished(200, 210, false), Finished(300, 390, false)});
  EXPECT_EQ(Counts(finished), (Pair{1, 2}));
  EXPECT_EQ(Counts(Refresh(spec, {Finished(300, 390, false), Finished(400, 410)})), (Pair{2, 2}));
  EXPECT_EQ(Counts(Refresh(spec, {Finished(300, 390, false), Finished(400, 410)})), (Pair{2, 2}));
  // b's source shows it no run: no series (neither runs nor counts).
  EXPECT_FALSE(finished.roles[1].runs);
  EXPECT_TRUE(finished.roles[1].run_counts.empty());
  // While the source is unknown the counts stay, and so do the series.
  RefreshResult down = Refresh(spec, {}, false);
  EXPECT_EQ(Counts(down), (Pair{2, 2}));
  EXPECT_TRUE(down.roles[0].runs);
  EXPECT_EQ(Counts(Refresh(spec, {Finished(400, 410)})), (Pair{2, 2}));
}

TEST_F(RunCountsTest, AReloadKeepsTheCountsOfARoleOnTheSameSource) {
  EXPECT_EQ(Counts(Refresh(Load(kOneJob), {Finished(100, 110), Finished(200, 210)})), (Pair{2, 0}));
  // A new spec object with the same role and source: its runs are not counted again.
  EXPECT_EQ(Counts(Refresh(Load(kOneJob), {Finished(100, 110), Finished(200, 210)})), (Pair{2, 0}));
  EXPECT_EQ(Counts(Refresh(Load(kOneJob), {Finished(200, 210), Finished(300, 310, false)})),
            (Pair{2, 1}));
  // On another source it is another role's history: counted from what that one shows.
  auto moved = Load(R"(  - {role: a, source: c, schedule: "*/10 * * * *", spec_version: "1"}
)");
  EXPECT_EQ(Counts(Refresh(moved, {Finished(300, 310, false)})), (Pair{0, 1}));
}

// A GitHub page shows 30 runs, the store keeps 20: a run the source shows again after it fell
// out of the kept ones is not counted again.
TEST_F(RunCountsTest, ARunShownAgainAfterItLeftTheKeptRunsIsNotCountedAgain) {
  auto spec = Load(kOneJob);
  std::vector<schedwatch::Run> page;
  for (int i = 1; i <= 25; ++i) {
    page.push_back(Finished(i * 100, i * 100 + 10));
    Refresh(spec, page);
  }
  RefreshResult all = Refresh(spec, page);
  EXPECT_EQ(Counts(all), (Pair{25, 0}));
  ASSERT_EQ(all.roles[0].runs->size(), kRunHistoryKept);
  EXPECT_EQ(all.roles[0].runs->front().started, 600);
  // Runs 3 and 5 are older than every kept run: shown again, not counted; 26 is new.
  EXPECT_EQ(Counts(Refresh(spec, {Finished(300, 310), Finished(500, 510, false),
                                  Finished(2600, 2610, false)})),
            (Pair{25, 1}));
  // A run the store keeps no start of, newer than the oldest kept one, was never seen.
  EXPECT_EQ(Counts(Refresh(spec, {Finished(2550, 2560)})), (Pair{26, 1}));
}

TEST_F(RunCountsTest, DurationHistogramOnlyForJobsThatAskAndCountedTheSameWay) {
  auto spec = Load(R"(  - {role: a, source: k, schedule: "*/10 * * * *", spec_version: "1",
     duration_histogram: true}
  - {role: b, source: k, schedule: "*/10 * * * *", spec_version: "1"}
)");
  RefreshResult running = Refresh(spec, {Running(100)});
  // Its series start with the role's first run, at zero.
  ASSERT_EQ(running.durations.size(), 1u);
  EXPECT_EQ(running.durations[0].job, &spec->jobs[0]);
  EXPECT_EQ(running.roles[0].run_counts.empty(), true);
  EXPECT_EQ(running.durations[0].histogram->sum, 0);
  RefreshResult first = Refresh(spec, {Finished(100, 142), Finished(200, 200, false)});
  RefreshResult again = Refresh(spec, {Finished(100, 142), Finished(200, 200, false)});
  ASSERT_EQ(again.durations.size(), 1u);
  EXPECT_EQ(again.durations[0].histogram, first.durations[0].histogram);  // unchanged: shared
  const DurationHistogram& histogram = *again.durations[0].histogram;
  EXPECT_EQ(histogram.sum, 42);
  EXPECT_EQ(histogram.counts[0], 1u);  // le 1: the failure that took no time
  EXPECT_EQ(histogram.counts[4], 1u);  // le 60
  EXPECT_EQ(std::accumulate(histogram.counts.begin(), histogram.counts.end(), 0u), 2u);
  // Roles of jobs without it have none, and neither does a job once it stops asking.
  auto without = Load(kOneJob);
  EXPECT_TRUE(Refresh(without, {Finished(300, 310)}).durations.empty());
}

}  // namespace
}  // namespace schedwatch
