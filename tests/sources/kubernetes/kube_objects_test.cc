// CronJobList and JobList pages mapped to live objects and run history, on fixture JSON.
#include "sources/kubernetes/kube_objects.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "schedwatch/timefmt.h"
#include "tests/test_util.h"

namespace schedwatch::kubernetes {
namespace {

const std::filesystem::path kFixtures =
    std::filesystem::path(SCHEDWATCH_TEST_DIR) / "sources/kubernetes/fixtures";

std::int64_t T(const char* rfc3339) { return ParseRfc3339(rfc3339).value(); }

std::string Fixture(const std::string& name) { return testing::ReadFile(kFixtures / name); }

std::vector<std::string> Messages(const std::vector<SourceProblem>& problems) {
  std::vector<std::string> messages;
  for (const auto& problem : problems) {
    EXPECT_EQ(problem.reason, "malformed_object") << problem.message;
    messages.push_back(problem.message);
  }
  return messages;
}

std::unordered_map<std::string, std::size_t> Owners(const std::vector<CronJob>& cronjobs) {
  std::unordered_map<std::string, std::size_t> owners;
  for (std::size_t i = 0; i < cronjobs.size(); ++i) owners[cronjobs[i].uid] = i;
  return owners;
}

TEST(CronJobListTest, ReferenceSampleWithoutRoleLabelsYieldsNothing) {
  auto page = ParseCronJobList(Fixture("cronjob-list-reference-sample.json"));
  ASSERT_TRUE(page.ok()) << page.error();
  EXPECT_TRUE(page->items.empty());
  EXPECT_TRUE(page->problems.empty());
  EXPECT_EQ(page->continue_token, "");
}

TEST(CronJobListTest, MapsLabelledCronJobs) {
  auto page = ParseCronJobList(Fixture("cronjob-list.json"));
  ASSERT_TRUE(page.ok()) << page.error();
  EXPECT_EQ(page->continue_token.rfind("eyJ2Ijoi", 0), 0u);
  ASSERT_EQ(page->items.size(), 4u);

  const CronJob& backup = page->items[0];
  EXPECT_EQ(backup.uid, "5b1c2a9e-0001-4c61-9a0e-2f7b8c1d4e01");
  EXPECT_EQ(backup.object.id(), "ops/db-backup");
  EXPECT_EQ(backup.object.role(), "backup");
  EXPECT_EQ(backup.object.schedule(), "30 2 * * *");
  EXPECT_EQ(backup.object.timezone(), "Europe/Berlin");
  EXPECT_EQ(backup.object.spec_version(), "4");
  EXPECT_TRUE(backup.object.enabled);
  EXPECT_EQ(backup.last_schedule, T("2024-05-01T00:30:00Z"));
  EXPECT_EQ(backup.last_successful, T("2024-05-01T00:41:12Z"));
  EXPECT_TRUE(backup.active_job_uids.empty());

  const CronJob& report = page->items[1];
  EXPECT_EQ(report.object.id(), "analytics/report-hourly");
  EXPECT_EQ(report.object.timezone(), "UTC") << "no timeZone: the controller's default, UTC";
  EXPECT_EQ(report.object.spec_version(), "");
  EXPECT_EQ(report.active_job_uids,
            std::vector<std::string>{"c3f1e2d0-0005-4a8e-b1f2-0c9d8e7f6a55"});

  const CronJob& cleanup = page->items[2];
  EXPECT_FALSE(cleanup.object.enabled) << "spec.suspend: true";
  EXPECT_EQ(cleanup.object.schedule(), "0 4 * * *") << "the CRON_TZ= prefix is split off";
  EXPECT_EQ(cleanup.object.timezone(), "Asia/Seoul");
  EXPECT_FALSE(cleanup.last_schedule.has_value());

  const CronJob& nulls = page->items[3];
  EXPECT_EQ(nulls.object.role(), "null-zone");
  EXPECT_EQ(nulls.object.schedule(), "@hourly");
  EXPECT_EQ(nulls.object.timezone(), "UTC");
  EXPECT_TRUE(nulls.object.enabled);
}

TEST(CronJobListTest, MalformedItemsBecomeProblemsAndTheRestIsKept) {
  auto page = ParseCronJobList(Fixture("cronjob-list.json"));
  ASSERT_TRUE(page.ok()) << page.error();
  std::vector<std::string> expected = {
      "CronJobList item 4 is not an object",
      "CronJobList item 5: metadata is missing",
      "CronJob ops/labels-wrong: metadata.labels is array, not object",
      "CronJob ops/empty-role: the role label is empty",
      "CronJob ops/schedule-number: spec.schedule is number, not string",
      "CronJob ops/bad-time: status.lastScheduleTime \"yesterday\" is not an RFC 3339 time",
      "CronJob ops/no-spec: spec is missing",
      "CronJob ops/suspend-string: spec.suspend is string, not boolean",
      "CronJob ops/no-uid: metadata.uid is missing",
  };
  EXPECT_EQ(Messages(page->problems), expected);
}

TEST(CronJobListTest, AnItemPastTheValueBoundsIsAProblemNotBuilt) {
  // Members kept whole (spec.schedule) are built: 1 M nested arrays there, or 20,000 values,
  // would be a DOM of tens of MB. The item is a problem, the rest of the page read.
  const std::string labelled = R"({"metadata":{"name":"%s","namespace":"ops","uid":"%s",)"
                               R"("labels":{"schedwatch.io/role":"%s"}},"spec":{"schedule":%s}})";
  auto item = [&](const std::string& name, const std::string& schedule) {
    std::string text = labelled;
    for (const std::string& value : {name, "uid-" + name, name, schedule}) {
      text.replace(text.find("%s"), 2, value);
    }
    return text;
  };
  std::string wide = "[0";
  for (int i = 0; i < 20000; ++i) wide += ",0";
  auto page =
      ParseCronJobList(R"({"kind":"CronJobList","metadata":{},"items":[)" +
                       item("deep", std::string(1u << 20, '[') + std::string(1u << 20, ']')) + "," +
                       item("wide", wide + "]") + "," + item("fine", R"("0 3 * * *")") + "]}");
  ASSERT_TRUE(page.ok()) << page.error();
  EXPECT_EQ(Messages(page->problems),
            (std::vector<std::string>{
                "CronJobList item 0 is nested deeper than 32 or holds more than 10,000 values",
                "CronJobList item 1 is nested deeper than 32 or holds more than 10,000 values"}));
  ASSERT_EQ(page->items.size(), 1u);
  EXPECT_EQ(page->items[0].object.id(), "ops/fine");
  // Members after the list are no items, however deep.
  auto after = ParseCronJobList(R"({"items":[)" + item("fine", R"("0 3 * * *")") +
                                R"(],"metadata":{"continue":)" + std::string(40, '[') +
                                std::string(40, ']') + "}}");
  ASSERT_TRUE(after.ok()) << after.error();
  EXPECT_TRUE(after->problems.empty()) << Messages(after->problems)[0];
  EXPECT_EQ(after->items.size(), 1u);
}

TEST(CronJobListTest, AWholePageThatIsNotAListIsAnError) {
  EXPECT_EQ(ParseCronJobList("{\"kind\":\"CronJobList\",\"items\":")
                .error()
                .rfind("malformed JSON in a CronJobList: ", 0),
            0u);
  EXPECT_EQ(ParseCronJobList("[]").error(), "a CronJobList is not a JSON object");
  EXPECT_EQ(ParseCronJobList("{\"kind\":\"Status\"}").error(), "a CronJobList has no items list");
  EXPECT_EQ(ParseCronJobList("{\"items\":{}}").error(), "a CronJobList has no items list");
  EXPECT_EQ(ParseCronJobList("").error().rfind("malformed JSON", 0), 0u);
  EXPECT_EQ(ParseCronJobList("\"text\"").error(), "a CronJobList is not a JSON object");
  EXPECT_EQ(ParseCronJobList("{\"items\":[]} trailing").error().rfind("malformed JSON", 0), 0u);
  auto empty = ParseCronJobList(R"({"kind":"CronJobList","metadata":{},"items":[]})");
  ASSERT_TRUE(empty.ok()) << empty.error();
  EXPECT_TRUE(empty->items.empty());
}

// An API server writes [] for an empty list; null or a page of nothing readable would make
// every role look missing (and reconcile create it): the page is a failed read instead.
TEST(CronJobListTest, NullItemsOrOnlyUnreadableItemsAreAnErrorNotAnEmptyList) {
  EXPECT_EQ(ParseCronJobList(R"({"kind":"CronJobList","metadata":{},"items":null})").error(),
            "a CronJobList has items: null, not a list");
  EXPECT_EQ(ParseJobList(R"({"kind":"JobList","metadata":{},"items":null})", {}).error(),
            "a JobList has items: null, not a list");
  // A page of nothing readable is counted; the list it belongs to is judged as a whole.
  auto garbage = ParseCronJobList(R"({"kind":"CronJobList","items":[1,"x",null]})");
  ASSERT_TRUE(garbage.ok()) << garbage.error();
  EXPECT_EQ(garbage->listed, 3u);
  EXPECT_EQ(NothingReadable(garbage->listed, garbage->problems, "cronjobs"),
            "none of the 3 cronjobs listed can be read (first: CronJobList item 0 is not an "
            "object)");
  auto jobs = ParseJobList(R"({"kind":"JobList","items":[[],{"metadata":{}}]})", {});
  ASSERT_TRUE(jobs.ok()) << jobs.error();
  EXPECT_EQ(jobs->listed, 2u);
  EXPECT_EQ(jobs->problems.size(), 2u);
  EXPECT_EQ(NothingReadable(0, {}, "jobs"), std::nullopt) << "an empty list is a list";
  // One readable item is enough: the rest are problems.
  auto mixed = ParseCronJobList(R"({"kind":"CronJobList","items":[7,{"metadata":{"name":"other",
      "namespace":"ns"}}]})");
  ASSERT_TRUE(mixed.ok()) << mixed.error();
  EXPECT_TRUE(mixed->items.empty());
  EXPECT_EQ(NothingReadable(mixed->listed, mixed->problems, "cronjobs"), std::nullopt);
  EXPECT_EQ(Messages(mixed->problems),
            std::vector<std::string>{"CronJobList item 0 is not an object"});
}

// Not ours or not, an item without a name is counted, never dropped silently.
TEST(CronJobListTest, ItemsWithoutANameAreProblems) {
  auto cronjobs = ParseCronJobList(R"({"kind":"CronJobList","items":[
      {"metadata":{"namespace":"ns","uid":"u1"},"spec":{"schedule":"@daily"}},
      {"metadata":{"name":"","namespace":"ns","labels":{"schedwatch.io/role":"r"}}},
      {"metadata":{"name":"fine","namespace":"ns","uid":"u2","labels":{"schedwatch.io/role":"r"}},
       "spec":{"schedule":"@daily"}}]})");
  ASSERT_TRUE(cronjobs.ok()) << cronjobs.error();
  ASSERT_EQ(cronjobs->items.size(), 1u);
  EXPECT_EQ(Messages(cronjobs->problems),
            (std::vector<std::string>{"CronJobList item 0: metadata.name is missing",
                                      "CronJob ns/: metadata.name is empty"}));
  auto jobs = ParseJobList(R"({"kind":"JobList","items":[
      {"metadata":{"namespace":"ns","uid":"j1","ownerReferences":[{"kind":"CronJob","uid":"x"}]}},
      {"metadata":{"name":"other","namespace":"ns","uid":"j2"}}]})",
                           {{"u2", 0}});
  ASSERT_TRUE(jobs.ok()) << jobs.error();
  EXPECT_EQ(Messages(jobs->problems),
            std::vector<std::string>{"JobList item 0: metadata.name is missing"});
}

TEST(CronJobListTest, KeyOrderDoesNotMatter) {
  auto page = ParseCronJobList(R"({"items":[{"status":{"lastScheduleTime":"2024-05-01T00:30:00Z"},
      "spec":{"jobTemplate":{"spec":{"template":{"metadata":{"labels":{"schedwatch.io/role":"x"}}}}},
              "schedule":"@daily","suspend":true},
      "metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"a\":[1,2]}",
                                 "schedwatch.io/spec-version":"9"},
                  "labels":{"schedwatch.io/role":"late"},"uid":"u","name":"n","namespace":"ns"}}],
      "metadata":{"remainingItemCount":3,"continue":"after-the-items"},"kind":"CronJobList"})");
  ASSERT_TRUE(page.ok()) << page.error();
  EXPECT_EQ(page->continue_token, "after-the-items");
  ASSERT_EQ(page->items.size(), 1u);
  EXPECT_EQ(page->items[0].object.role(), "late");
  EXPECT_EQ(page->items[0].object.spec_version(), "9");
  EXPECT_EQ(page->items[0].object.schedule(), "@daily");
  EXPECT_FALSE(page->items[0].object.enabled);
  EXPECT_EQ(page->items[0].last_schedule, T("2024-05-01T00:30:00Z"));
}

TEST(JobListTest, MapsOwnedJobsAndTheirConditions) {
  auto cronjobs = ParseCronJobList(Fixture("cronjob-list.json"));
  ASSERT_TRUE(cronjobs.ok());
  auto page = ParseJobList(Fixture("job-list.json"), Owners(cronjobs->items));
  ASSERT_TRUE(page.ok()) << page.error();
  std::map<std::string, Job> by_uid;
  for (const auto& job : page->items) by_uid[job.uid] = job;
  ASSERT_EQ(by_uid.size(), 8u);

  const Job& succeeded = by_uid.at("a1000000-0003-4000-8000-000000000001");
  EXPECT_EQ(succeeded.owner, 0u);
  EXPECT_EQ(succeeded.state, JobState::kSucceeded);
  EXPECT_EQ(succeeded.started, T("2024-05-01T00:30:03Z"));
  EXPECT_EQ(succeeded.finished, T("2024-05-01T00:41:12Z"));

  const Job& backoff = by_uid.at("a1000000-0004-4000-8000-000000000002");
  EXPECT_EQ(backoff.state, JobState::kFailed);
  EXPECT_EQ(backoff.reason, "BackoffLimitExceeded");
  EXPECT_EQ(backoff.finished, T("2024-04-30T00:34:52Z")) << "the Failed condition's time";

  const Job& deadline = by_uid.at("a1000000-0006-4000-8000-000000000006");
  EXPECT_EQ(deadline.state, JobState::kFailed);
  EXPECT_EQ(deadline.reason, "DeadlineExceeded");

  const Job& running = by_uid.at("c3f1e2d0-0005-4a8e-b1f2-0c9d8e7f6a55");
  EXPECT_EQ(running.owner, 1u);
  EXPECT_EQ(running.state, JobState::kRunning);
  EXPECT_EQ(running.started, T("2024-05-01T09:00:04Z"));
  EXPECT_FALSE(running.finished.has_value());

  EXPECT_EQ(by_uid.at("a1000000-0007-4000-8000-000000000007").state, JobState::kSuspended);

  const Job& interim = by_uid.at("a1000000-0008-4000-8000-000000000008");
  EXPECT_EQ(interim.state, JobState::kRunning) << "SuccessCriteriaMet and unknown types decide "
                                                  "nothing; Suspended=False is not suspended";

  const Job& future = by_uid.at("a1000000-0009-4000-8000-000000000009");
  EXPECT_EQ(future.state, JobState::kFailed);
  EXPECT_EQ(future.reason, "QuotaExhausted") << "unknown reasons are kept as written";

  const Job& pending = by_uid.at("a1000000-0012-4000-8000-000000000012");
  EXPECT_EQ(pending.state, JobState::kRunning);
  EXPECT_EQ(pending.started, T("2024-05-01T10:00:00Z")) << "no startTime: creationTimestamp";
}

TEST(JobListTest, MalformedOwnedJobsBecomeProblemsOthersAreNotRead) {
  auto cronjobs = ParseCronJobList(Fixture("cronjob-list.json"));
  ASSERT_TRUE(cronjobs.ok());
  auto page = ParseJobList(Fixture("job-list.json"), Owners(cronjobs->items));
  ASSERT_TRUE(page.ok()) << page.error();
  std::vector<std::string> expected = {
      "Job ops/db-backup-conditions-wrong: status.conditions is string, not array",
      "Job ops/db-backup-no-times: status.startTime and metadata.creationTimestamp are both "
      "missing",
      "JobList item 13 is not an object",
  };
  EXPECT_EQ(Messages(page->problems), expected);
}

TEST(JobListTest, TheCronJobOwnerMayFollowOtherReferences) {
  auto page = ParseJobList(R"({"kind":"JobList","items":[{"metadata":{"name":"j","uid":"j1",
      "creationTimestamp":"2024-05-01T00:00:00Z","ownerReferences":[
        {"kind":"Workflow","name":"w","uid":"w1"},"junk",{"kind":"CronJob","name":"c","uid":"c1"}]},
      "spec":{"template":{"spec":{"containers":[]}}}}]})",
                           {{"c1", 7}});
  ASSERT_TRUE(page.ok()) << page.error();
  ASSERT_EQ(page->items.size(), 1u);
  EXPECT_EQ(page->items[0].owner, 7u);
  EXPECT_EQ(page->items[0].state, JobState::kRunning);
}

TEST(JobListTest, NoOwnersNoJobs) {
  auto page = ParseJobList(Fixture("job-list.json"), {});
  ASSERT_TRUE(page.ok()) << page.error();
  EXPECT_TRUE(page->items.empty());
  EXPECT_EQ(Messages(page->problems), std::vector<std::string>{"JobList item 13 is not an object"});
}

TEST(BuildSnapshotTest, MergesStatusAndJobsPerRole) {
  auto cronjobs = ParseCronJobList(Fixture("cronjob-list.json"));
  ASSERT_TRUE(cronjobs.ok());
  auto jobs = ParseJobList(Fixture("job-list.json"), Owners(cronjobs->items));
  ASSERT_TRUE(jobs.ok());
  SourceSnapshot snapshot = BuildSnapshot(cronjobs->items, jobs->items);
  ASSERT_EQ(snapshot.objects.size(), 4u);
  EXPECT_EQ(snapshot.objects[0].id(), "ops/db-backup");

  const RunHistory& backup = snapshot.history.at("backup");
  EXPECT_EQ(backup.last_started, T("2024-05-02T00:30:02Z"));
  EXPECT_EQ(backup.last_success, T("2024-05-01T00:41:12Z"));
  EXPECT_EQ(backup.last_failure, T("2024-05-02T01:30:03Z")) << "DeadlineExceeded after success";
  EXPECT_FALSE(backup.running_since.has_value());
  // Finished runs are named by their Job (their exemplar's run_id).
  auto succeeded =
      std::find_if(backup.runs.begin(), backup.runs.end(), [](const schedwatch::Run& run) {
        return run.outcome == schedwatch::Run::Outcome::kSucceeded;
      });
  ASSERT_NE(succeeded, backup.runs.end());
  ASSERT_TRUE(succeeded->identity);
  EXPECT_EQ(succeeded->identity->id, "db-backup-28575390");

  const RunHistory& report = snapshot.history.at("report");
  EXPECT_EQ(report.last_started, T("2024-05-01T10:00:00Z"));
  EXPECT_EQ(report.last_success, T("2024-05-01T08:02:40Z")) << "from lastSuccessfulTime";
  EXPECT_EQ(report.running_since, T("2024-05-01T09:00:04Z"));
  EXPECT_FALSE(report.last_failure.has_value());

  const RunHistory& cleanup = snapshot.history.at("cleanup");
  EXPECT_EQ(cleanup.running_since, T("2024-05-02T19:00:01Z")) << "the suspended Job is no run";
  EXPECT_EQ(cleanup.last_failure, T("2024-04-29T19:10:00Z"));
  EXPECT_FALSE(cleanup.last_success.has_value());
}

TEST(BuildSnapshotTest, AnActiveJobMissingFromTheJobListRunsSinceLastScheduleTime) {
  auto cronjobs = ParseCronJobList(Fixture("cronjob-list.json"));
  ASSERT_TRUE(cronjobs.ok());
  SourceSnapshot snapshot = BuildSnapshot(cronjobs->items, {});
  const RunHistory& report = snapshot.history.at("report");
  EXPECT_EQ(report.running_since, T("2024-05-01T09:00:00Z"));
  EXPECT_EQ(report.last_started, T("2024-05-01T09:00:00Z"));
  EXPECT_FALSE(snapshot.history.at("backup").running_since.has_value());
}

TEST(BuildSnapshotTest, TwoCronJobsForOneRoleShareItsHistory) {
  CronJob first, second;
  first.uid = "u1";
  first.object = {"ns/a", "dup", "* * * * *", "UTC", "1", true};
  first.last_successful = 100;
  second.uid = "u2";
  second.object = {"ns/b", "dup", "* * * * *", "UTC", "1", false};
  second.last_successful = 200;
  std::vector<Job> jobs(1);
  jobs[0].owner = 1;
  jobs[0].uid = "j";
  jobs[0].state = JobState::kFailed;
  jobs[0].started = 250;
  jobs[0].finished = 260;
  SourceSnapshot snapshot = BuildSnapshot({first, second}, jobs);
  EXPECT_EQ(snapshot.objects.size(), 2u);
  ASSERT_EQ(snapshot.history.size(), 1u);
  EXPECT_EQ(snapshot.history.at("dup").last_success, 200);
  EXPECT_EQ(snapshot.history.at("dup").last_failure, 260);
}

TEST(ApiErrorTest, UsesTheStatusBodyReasonAndMessage) {
  std::string forbidden =
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
          "message":"cronjobs.batch is forbidden: User \"system:serviceaccount:monitoring:cron-watch\" cannot list resource \"cronjobs\" in API group \"batch\" at the cluster scope",
          "reason":"Forbidden","details":{"group":"batch","kind":"cronjobs"},"code":403})";
  EXPECT_EQ(
      DescribeApiError(403, forbidden),
      "HTTP 403 Forbidden: cronjobs.batch is forbidden: User "
      "\"system:serviceaccount:monitoring:cron-watch\" cannot list resource \"cronjobs\" in "
      "API group \"batch\" at the cluster scope (grant get, list and watch on cronjobs and jobs in "
      "API group batch; see examples/kubernetes/)");
  EXPECT_EQ(StatusReason(forbidden), "Forbidden");
  EXPECT_EQ(DescribeApiError(401, R"({"kind":"Status","message":"Unauthorized",
                                      "reason":"Unauthorized","code":401})"),
            "HTTP 401 Unauthorized (the token or client certificate was refused)");
  EXPECT_EQ(StatusReason(R"({"kind":"Status","reason":"Expired","code":410})"), "Expired");
}

TEST(ApiErrorTest, NonStatusBodiesAreQuotedBrieflyAndFlattened) {
  EXPECT_EQ(DescribeApiError(502, "<html>\n  <body>Bad gateway</body>\n</html>\n"),
            "HTTP 502: <html> <body>Bad gateway</body> </html> ");
  EXPECT_EQ(DescribeApiError(500, ""), "HTTP 500");
  EXPECT_EQ(DescribeApiError(503, std::string(500, 'x')).size(),
            std::string("HTTP 503: ").size() + 120);
  EXPECT_EQ(StatusReason("not json"), "");
  EXPECT_EQ(StatusReason(R"({"kind":"CronJobList","reason":"Expired"})"), "");
}

}  // namespace
}  // namespace schedwatch::kubernetes

namespace schedwatch::kubernetes {
namespace {

TEST(KubeObjectsHostileTest, DeeplyNestedValuesInAnItemDoNotCrash) {
  // 100,000 levels inside fields the reader keeps (labels) and skips (spec.jobTemplate).
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::string body = R"({"kind":"CronJobList","metadata":{},"items":[{"metadata":{"name":"a",)"
                     R"("namespace":"n","uid":"u","labels":{"schedwatch.io/role":)" +
                     deep + R"(}},"spec":{"schedule":"* * * * *","jobTemplate":)" + deep +
                     R"(}}]})";
  auto page = ParseCronJobList(body);
  ASSERT_TRUE(page.ok()) << page.error();
  EXPECT_TRUE(page->items.empty());
  EXPECT_EQ(page->problems.size(), 1u);
}

}  // namespace
}  // namespace schedwatch::kubernetes
