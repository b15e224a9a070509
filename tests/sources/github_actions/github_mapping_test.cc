// The pure mapping of GitHub answers and workflow files, on fixtures in fixtures/.
#include "sources/github_actions/github_mapping.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <limits>

#include "schedwatch/timefmt.h"
#include "sources/catalog.h"
#include "tests/test_util.h"

namespace schedwatch::github {
namespace {

const std::filesystem::path kFixtures =
    std::filesystem::path(SCHEDWATCH_TEST_DIR) / "sources/github_actions/fixtures";

std::string Fixture(const std::string& name) {
  std::string text = testing::ReadFile(kFixtures / name);
  EXPECT_FALSE(text.empty()) << name;
  return text;
}

std::int64_t T(const char* rfc3339) { return *ParseRfc3339(rfc3339); }

JobSpec Job(const std::string& schedule, const std::string& timezone = "UTC") {
  auto spec = ParseSpec(fmt::format(R"(version: 1
sources:
  ci: {{type: github_actions, repository: acme/widgets}}
jobs:
  - role: nightly
    source: ci
    workflow: .github/workflows/nightly.yml
    schedule: "{}"
    timezone: {}
    spec_version: "7"
)",
                                    schedule, timezone),
                        "/tmp/spec.yaml", BuiltInCatalog());
  EXPECT_TRUE(spec.ok()) << spec.error();
  return spec->jobs.at(0);
}

WorkflowFile File(const std::string& fixture) {
  auto file = ParseWorkflowFile(Fixture(fixture));
  EXPECT_TRUE(file.ok()) << file.error();
  return file.ok() ? *file : WorkflowFile{};
}

TEST(WorkflowPageTest, KeepsGoodItemsAndReportsMalformedOnes) {
  auto page = ParseWorkflowPage(Fixture("workflows_page.json"));
  ASSERT_TRUE(page.ok()) << page.error();
  ASSERT_EQ(page->workflows.size(), 3u);
  EXPECT_EQ(page->workflows[0].id, 61234567);
  EXPECT_EQ(page->workflows[0].path, ".github/workflows/nightly.yml");
  EXPECT_EQ(page->workflows[0].state, "active");
  EXPECT_EQ(page->workflows[0].name, "Nightly build");
  EXPECT_EQ(page->workflows[1].state, "disabled_inactivity");
  EXPECT_EQ(page->workflows[2].state, "deleted");
  ASSERT_EQ(page->problems.size(), 1u);
  EXPECT_EQ(page->problems[0].reason, "malformed_object");
  EXPECT_EQ(page->problems[0].message,
            "workflows[2]: expected an object with integer id, string path and state");
}

TEST(WorkflowPageTest, AnswersThatAreNotAListAreErrors) {
  EXPECT_EQ(ParseWorkflowPage("<html>").error(), "the answer is not JSON");
  EXPECT_EQ(ParseWorkflowPage(R"({"total_count":0})").error(),
            "the answer has no \"workflows\" list");
  EXPECT_EQ(ParseWorkflowPage("[]").error(), "the answer has no \"workflows\" list");
  auto empty = ParseWorkflowPage(R"({"total_count":0,"workflows":[]})");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->workflows.empty());
}

// null is no list, and a page of nothing readable is no empty list: either would make every
// role look missing. Both are failed reads.
TEST(WorkflowPageTest, NullOrOnlyUnreadableItemsAreErrors) {
  EXPECT_EQ(ParseWorkflowPage(R"({"total_count":3,"workflows":null})").error(),
            "the answer has no \"workflows\" list");
  auto garbage = ParseWorkflowPage(R"({"total_count":2,"workflows":[{"id":"1"},7]})");
  ASSERT_TRUE(garbage.ok()) << "judged over all pages by the source";
  EXPECT_EQ(garbage->listed, 2u);
  EXPECT_EQ(SomethingReadable(garbage->listed, garbage->problems, "workflows").error(),
            "none of the 2 items of \"workflows\" can be read (first: workflows[0]: expected an "
            "object with integer id, string path and state)");
  EXPECT_TRUE(SomethingReadable(0, {}, "workflows").ok());
  EXPECT_EQ(ParseRunPage(R"({"total_count":1,"workflow_runs":null})", "runs of x").error(),
            "the answer has no \"workflow_runs\" list");
  EXPECT_EQ(ParseRunPage(R"({"total_count":1,"workflow_runs":[{"status":"queued"}]})", "runs of x")
                .error(),
            "none of the 1 items of \"workflow_runs\" can be read (first: runs of x: "
            "workflow_runs[0]: neither run_started_at nor created_at is an RFC 3339 time)");
  auto empty = ParseRunPage(R"({"total_count":0,"workflow_runs":[]})", "runs of x");
  ASSERT_TRUE(empty.ok()) << empty.error();
  EXPECT_TRUE(empty->runs.empty());
}

TEST(DirectoryListingTest, AnEntryWithoutAPathProvesNoFileAbsent) {
  auto listing = ParseDirectoryListing(
      R"([{"path":".github/workflows/a.yml","sha":"1"},{"name":"nightly.yml","sha":"2"}])");
  ASSERT_TRUE(listing.ok()) << listing.error();
  EXPECT_FALSE(listing->complete) << "the pathless entry may be the job's file";
  EXPECT_EQ(ParseDirectoryListing(R"([{"sha":"2"},3])").error(),
            "none of the 2 entries of the directory listing has a path");
  EXPECT_TRUE(ParseDirectoryListing("[]")->complete);
}

TEST(RepositoryTest, DefaultBranch) {
  EXPECT_EQ(*ParseDefaultBranch(Fixture("repository.json")), "trunk");
  EXPECT_EQ(ParseDefaultBranch(R"({"default_branch":""})").error(),
            "the repository has no default_branch");
  EXPECT_FALSE(ParseDefaultBranch("null").ok());
}

TEST(DirectoryListingTest, BlobShasByPath) {
  auto listing = ParseDirectoryListing(Fixture("contents_listing.json"));
  ASSERT_TRUE(listing.ok()) << listing.error();
  EXPECT_TRUE(listing->complete);
  EXPECT_EQ(listing->blob_sha_by_path,
            (std::map<std::string, std::string>{
                {".github/workflows/cleanup.yml", "5b1c2a9e00014c619a0e2f7b8c1d4e0100000001"},
                {".github/workflows/nightly.yml", "9d7e441000024f0b8c5571aa30c2b9e700000002"}}));
  EXPECT_FALSE(ParseDirectoryListing(R"({"type":"file"})").ok());
}

TEST(DirectoryListingTest, AThousandEntriesMayBeTruncated) {
  std::string body = "[";
  for (std::size_t i = 0; i < kMaxDirectoryEntries; ++i) {
    body += fmt::format(R"({}{{"path":"w/{}.yml","sha":"{}"}})", i ? "," : "", i, i);
  }
  auto listing = ParseDirectoryListing(body + "]");
  ASSERT_TRUE(listing.ok());
  EXPECT_FALSE(listing->complete);
  EXPECT_EQ(listing->blob_sha_by_path.size(), kMaxDirectoryEntries);
}

TEST(WorkflowFileTest, SchedulesZonesAndMarker) {
  WorkflowFile file = File("nightly.yml");
  ASSERT_EQ(file.schedules.size(), 3u);
  EXPECT_EQ(file.schedules[0].cron, "0 2 * * *");
  EXPECT_EQ(file.schedules[0].timezone, "");
  EXPECT_EQ(file.schedules[0].line, 6);
  EXPECT_EQ(file.schedules[1].cron, "0 3 * * *");
  EXPECT_EQ(file.schedules[1].timezone, "Europe/Berlin");
  EXPECT_EQ(file.spec_version, "7");  // not the 999 inside a string
  EXPECT_TRUE(file.problems.empty());
}

TEST(WorkflowFileTest, QuotedOnKey) {
  WorkflowFile file = File("quoted_on.yml");
  ASSERT_EQ(file.schedules.size(), 1u);
  EXPECT_EQ(file.schedules[0].cron, "*/15 * * * *");
  EXPECT_EQ(file.spec_version, "");
}

TEST(WorkflowFileTest, NoSchedule) {
  WorkflowFile file = File("no_schedule.yml");
  EXPECT_TRUE(file.schedules.empty());
  EXPECT_TRUE(file.problems.empty());
  EXPECT_EQ(file.spec_version, "1");
}

TEST(WorkflowFileTest, MalformedEntriesAreProblemsTheRestIsKept) {
  WorkflowFile file = File("bad_schedule.yml");
  ASSERT_EQ(file.schedules.size(), 2u);
  EXPECT_EQ(file.schedules[0].cron, "0 1 * * *");
  EXPECT_EQ(file.schedules[1].cron, "0 4 * * *");
  EXPECT_EQ(file.spec_version, "4");
  EXPECT_EQ(file.problems, (std::vector<std::string>{"line 5: on.schedule[1] has no cron string",
                                                     "line 6: on.schedule[2] has no cron string"}));
  WorkflowFile not_a_list = File("schedule_not_a_list.yml");
  EXPECT_TRUE(not_a_list.schedules.empty());
  EXPECT_EQ(not_a_list.problems,
            (std::vector<std::string>{"line 3: on.schedule is a mapping, not a list"}));
}

TEST(WorkflowFileTest, NotYamlIsAnError) {
  auto file = ParseWorkflowFile(Fixture("not_yaml.yml"));
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.error().find("3:"), std::string::npos) << file.error();
  auto scalar = ParseWorkflowFile("just text");
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(scalar->problems.size(), 1u);
}

TEST(NormalizeWorkflowPathTest, FileNamesAndLeadingDots) {
  EXPECT_EQ(NormalizeWorkflowPath("retry.yml"), ".github/workflows/retry.yml");
  EXPECT_EQ(NormalizeWorkflowPath("./.github/workflows/retry.yml"), ".github/workflows/retry.yml");
  EXPECT_EQ(NormalizeWorkflowPath("/.github/workflows/retry.yml"), ".github/workflows/retry.yml");
  EXPECT_EQ(NormalizeWorkflowPath(".github/workflows/retry.yml"), ".github/workflows/retry.yml");
}

TEST(LiveObjectTest, PicksTheEntryEquivalentToTheSpec) {
  Workflow workflow{61234567, "Nightly build", ".github/workflows/nightly.yml", "active"};
  WorkflowFile file = File("nightly.yml");

  JobSpec utc = Job("0 3 * * *");
  LiveObject object = MakeLiveObject(workflow, &file, utc);
  EXPECT_EQ(object.id(), "61234567");
  EXPECT_EQ(object.role(), "nightly");
  EXPECT_EQ(object.schedule(), "0 3 * * *");
  EXPECT_EQ(object.timezone(), "UTC");
  EXPECT_EQ(object.spec_version(), "7");
  EXPECT_TRUE(object.enabled);
  EXPECT_FALSE(Drifted(utc, object));

  JobSpec berlin = Job("0 3 * * *", "Europe/Berlin");
  object = MakeLiveObject(workflow, &file, berlin);
  EXPECT_EQ(object.timezone(), "Europe/Berlin");
  EXPECT_FALSE(Drifted(berlin, object));

  // Written differently, same fire times: no drift.
  JobSpec spelled = Job("00 03 * * *");
  EXPECT_FALSE(Drifted(spelled, MakeLiveObject(workflow, &file, spelled)));
}

TEST(LiveObjectTest, NoEquivalentEntryReportsTheFirstAsDrift) {
  Workflow workflow{61234567, "Nightly build", ".github/workflows/nightly.yml", "active"};
  WorkflowFile file = File("nightly.yml");
  JobSpec job = Job("0 5 * * *");
  LiveObject object = MakeLiveObject(workflow, &file, job);
  EXPECT_EQ(object.schedule(), "0 2 * * *");
  EXPECT_TRUE(Drifted(job, object));
}

TEST(LiveObjectTest, DisabledStatesAreNotEnabled) {
  WorkflowFile file = File("nightly.yml");
  for (const char* state : {"disabled_inactivity", "disabled_manually", "disabled_fork"}) {
    Workflow workflow{1, "x", ".github/workflows/nightly.yml", state};
    EXPECT_FALSE(MakeLiveObject(workflow, &file, Job("0 3 * * *")).enabled) << state;
  }
}

TEST(LiveObjectTest, UnreadableOrScheduleLessFileIsDrift) {
  Workflow workflow{1, "x", ".github/workflows/nightly.yml", "active"};
  JobSpec job = Job("0 3 * * *");
  LiveObject unread = MakeLiveObject(workflow, nullptr, job);
  EXPECT_EQ(unread.schedule(), "");
  EXPECT_EQ(unread.timezone(), "UTC");
  EXPECT_TRUE(Drifted(job, unread));
  WorkflowFile no_schedule = File("no_schedule.yml");
  EXPECT_TRUE(Drifted(job, MakeLiveObject(workflow, &no_schedule, job)));
}

TEST(RunPageTest, StatesTimesAndProblems) {
  auto page = ParseRunPage(Fixture("runs_page.json"), "runs of nightly.yml");
  ASSERT_TRUE(page.ok()) << page.error();
  using State = ScheduledRun::State;
  ASSERT_EQ(page->runs.size(), 8u);
  EXPECT_EQ(page->runs[0].state, State::kRunning);
  EXPECT_EQ(page->runs[0].started, T("2024-05-01T03:17:41Z"));
  EXPECT_EQ(page->runs[0].finished, std::nullopt);
  // A re-run: the current attempt's start, not the scheduled creation.
  EXPECT_EQ(page->runs[1].state, State::kFailed);
  EXPECT_EQ(page->runs[1].started, T("2024-04-30T07:45:00Z"));
  EXPECT_EQ(page->runs[1].finished, T("2024-04-30T07:52:31Z"));
  // The run's identity: its exemplar's run_id and run_url.
  ASSERT_TRUE(page->runs[1].identity);
  EXPECT_EQ(page->runs[1].identity->id, "8901112223");
  EXPECT_EQ(page->runs[1].identity->url, "https://github.com/acme/widgets/actions/runs/8901112223");
  EXPECT_EQ(page->runs[2].state, State::kEnded);  // cancelled
  EXPECT_EQ(page->runs[3].state, State::kSucceeded);
  EXPECT_EQ(page->runs[3].finished, T("2024-04-28T03:21:30Z"));
  EXPECT_EQ(page->runs[4].state, State::kFailed);   // timed_out
  EXPECT_EQ(page->runs[5].state, State::kRunning);  // queued, no run_started_at
  EXPECT_EQ(page->runs[5].started, T("2024-04-26T03:10:00Z"));
  EXPECT_EQ(page->runs[6].state, State::kEnded);   // skipped
  EXPECT_EQ(page->runs[7].state, State::kFailed);  // startup_failure
  ASSERT_EQ(page->problems.size(), 3u);
  EXPECT_EQ(page->problems[0].reason, "malformed_object");
  EXPECT_EQ(page->problems[0].message,
            "runs of nightly.yml: workflow_runs[7]: completed without a conclusion");
  EXPECT_EQ(page->problems[1].message,
            "runs of nightly.yml: workflow_runs[8]: neither run_started_at nor created_at is an "
            "RFC 3339 time");
  EXPECT_EQ(page->problems[2].message, "runs of nightly.yml: workflow_runs[9]: not an object");
}

TEST(RunPageTest, HistoryFromThePage) {
  auto page = ParseRunPage(Fixture("runs_page.json"), "runs");
  ASSERT_TRUE(page.ok());
  RunHistory history;
  for (const auto& run : page->runs) AddRun(history, run);
  EXPECT_EQ(history.last_started, T("2024-05-01T03:17:41Z"));
  EXPECT_EQ(history.running_since, T("2024-04-26T03:10:00Z"));  // the oldest still going
  EXPECT_EQ(history.last_success, T("2024-04-28T03:21:30Z"));
  EXPECT_EQ(history.last_failure, T("2024-04-30T07:52:31Z"));
}

TEST(RunPageTest, EndedRunsCountAsStartsOnly) {
  RunHistory history;
  AddRun(history, {100, 160, ScheduledRun::State::kEnded});
  EXPECT_EQ(history.last_started, 100);
  EXPECT_FALSE(history.last_success || history.last_failure || history.running_since);
}

TEST(NextLinkTest, FindsNextAmongRelations) {
  EXPECT_EQ(NextLink("<https://api.github.com/repositories/123/actions/workflows/61234567/runs?"
                     "event=schedule&per_page=100&page=2>; rel=\"next\", "
                     "<https://api.github.com/repositories/123/actions/workflows/61234567/runs?"
                     "event=schedule&per_page=100&page=3>; rel=\"last\""),
            "https://api.github.com/repositories/123/actions/workflows/61234567/runs?"
            "event=schedule&per_page=100&page=2");
  EXPECT_EQ(NextLink("<https://x/a?page=1>; rel=\"first\", <https://x/a?page=2>; rel=\"prev\""),
            "");
  EXPECT_EQ(NextLink("<https://x/a?page=1>; rel=\"prev\", <https://x/a?page=3>; rel=next"),
            "https://x/a?page=3");
  EXPECT_EQ(NextLink("<https://x/a?page=3>; rel=\"next last\""), "https://x/a?page=3");
  EXPECT_EQ(NextLink(""), "");
  EXPECT_EQ(NextLink("garbage <unterminated"), "");
}

TEST(ClassifyFailureTest, PrimaryLimitWaitsForTheReset) {
  std::map<std::string, std::string> headers{{"x-ratelimit-remaining", "0"},
                                             {"x-ratelimit-reset", "1714593000"}};
  ApiFailure failure = ClassifyFailure(
      403, headers, R"({"message":"API rate limit exceeded for user ID 1234."})", 1714590000, 60);
  EXPECT_EQ(failure.kind, ApiFailure::Kind::kRateLimited);
  EXPECT_FALSE(failure.secondary);
  EXPECT_EQ(failure.retry_at, 1714593000);
  EXPECT_EQ(failure.message, "API rate limit exceeded for user ID 1234.");
  EXPECT_EQ(ClassifyFailure(429, headers, "", 1714590000, 60).retry_at, 1714593000);
}

TEST(ClassifyFailureTest, SecondaryLimitHonoursRetryAfterElseBacksOff) {
  std::string body =
      R"({"message":"You have exceeded a secondary rate limit. Please wait a few minutes."})";
  ApiFailure failure = ClassifyFailure(403, {{"retry-after", "30"}}, body, 1000, 60);
  EXPECT_EQ(failure.kind, ApiFailure::Kind::kRateLimited);
  EXPECT_TRUE(failure.secondary);
  EXPECT_EQ(failure.retry_at, 1030);
  failure = ClassifyFailure(403, {{"x-ratelimit-remaining", "4000"}}, body, 1000, 120);
  EXPECT_EQ(failure.kind, ApiFailure::Kind::kRateLimited);
  EXPECT_EQ(failure.retry_at, 1120);
  EXPECT_EQ(ClassifyFailure(429, {}, "", 1000, 60).retry_at, 1060);
}

// A hostile or broken server's wait is capped at the hour GitHub's primary window lasts: one
// 429 with Retry-After: 1000000000000 once left the roles unknown until 2058.
TEST(ClassifyFailureTest, WaitsAreCappedAndHugeNumbersStayBounded) {
  const std::int64_t now = 1796040000;  // 2026-11-30T12:00:00Z
  ApiFailure failure = ClassifyFailure(429, {{"retry-after", "1000000000000"}}, "", now, 60);
  EXPECT_EQ(failure.kind, ApiFailure::Kind::kRateLimited);
  EXPECT_EQ(failure.retry_at, now + 3600);
  EXPECT_TRUE(failure.capped);
  failure = ClassifyFailure(
      403, {{"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", "999999999999999999"}},
      R"({"message":"API rate limit exceeded"})", now, 60);
  EXPECT_EQ(failure.retry_at, now + 3600);
  EXPECT_TRUE(failure.capped);
  failure = ClassifyFailure(429, {{"retry-after", "Fri, 31 Dec 2099 23:59:59 GMT"}}, "", now, 60,
                            std::chrono::seconds(600));
  EXPECT_EQ(failure.retry_at, now + 600) << "the caller's cap";
  failure = ClassifyFailure(429, {{"retry-after", "30"}}, "", now, 60);
  EXPECT_EQ(failure.retry_at, now + 30);
  EXPECT_FALSE(failure.capped);
}

// Every formatted time is a date: an 18-digit number once printed
// "-970-12-03T277798484705281:46:39Z".
TEST(FormatRfc3339Test, AnyNumberFormatsAsADateWithinYears0000To9999) {
  EXPECT_EQ(FormatRfc3339(1796040000), "2026-11-30T12:00:00Z");
  EXPECT_EQ(FormatRfc3339(999999999999999999), "9999-12-31T23:59:59Z");
  EXPECT_EQ(FormatRfc3339(std::numeric_limits<std::int64_t>::max()), "9999-12-31T23:59:59Z");
  EXPECT_EQ(FormatRfc3339(std::numeric_limits<std::int64_t>::min()), "0000-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(-1), "1969-12-31T23:59:59Z");
}

TEST(ClassifyFailureTest, PermissionProblemsAreNotRateLimits) {
  ApiFailure failure = ClassifyFailure(
      403, {{"x-ratelimit-remaining", "4999"}},
      R"({"message":"Resource not accessible by integration","status":"403"})", 1000, 60);
  EXPECT_EQ(failure.kind, ApiFailure::Kind::kForbidden);
  EXPECT_EQ(failure.retry_at, std::nullopt);
  EXPECT_EQ(ClassifyFailure(401, {}, R"({"message":"Bad credentials"})", 0, 60).kind,
            ApiFailure::Kind::kUnauthorized);
  EXPECT_EQ(ClassifyFailure(404, {}, R"({"message":"Not Found"})", 0, 60).kind,
            ApiFailure::Kind::kNotFound);
  EXPECT_EQ(ClassifyFailure(502, {}, "<html>", 0, 60).kind, ApiFailure::Kind::kServer);
}

TEST(ClassifyFailureTest, MessagesAreShortAndPrintable) {
  std::string body = R"({"message":"line one\nline two )" + std::string(300, 'x') + "\"}";
  ApiFailure failure = ClassifyFailure(500, {}, body, 0, 60);
  EXPECT_EQ(failure.message.size(), 203u);
  EXPECT_EQ(failure.message.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace schedwatch::github

namespace schedwatch::github {
namespace {

TEST(GitHubMappingHostileTest, DeeplyNestedAnswersDoNotCrash) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  // A list of lists: each item is a malformed workflow, none is read.
  auto lists = ParseWorkflowPage(R"({"total_count":1,"workflows":)" + deep + "}");
  EXPECT_TRUE(!lists.ok() || lists->workflows.empty());
  auto page = ParseWorkflowPage(R"({"total_count":1,"workflows":[{"id":)" + deep + "}]}");
  EXPECT_TRUE(!page.ok() || page->workflows.empty());
  auto runs = ParseRunPage(R"({"workflow_runs":)" + deep + "}", "runs");
  EXPECT_TRUE(!runs.ok() || runs->runs.empty());
  EXPECT_FALSE(ParseDefaultBranch(deep).ok());
  EXPECT_FALSE(ParseWorkflowFile("on: " + deep).ok());
}

// A job's script (a `run: |` block, a quoted string going on) may print anything: a '#' line in
// it is not a YAML comment, so it cannot fake the spec version.
TEST(WorkflowFileTest, OnlyYamlCommentsAreMarkers) {
  WorkflowFile file = File("marker_in_script.yml");
  EXPECT_EQ(file.spec_version, "7");
  EXPECT_TRUE(file.problems.empty()) << file.problems.front();
  // Without the real comment, the script's line gives no version at all.
  auto scripted = ParseWorkflowFile(
      "on: {schedule: [{cron: '0 3 * * *'}]}\njobs:\n  a:\n    steps:\n      - run: |\n"
      "          # schedwatch: spec_version=999\n");
  ASSERT_TRUE(scripted.ok()) << scripted.error();
  EXPECT_EQ(scripted->spec_version, "");
  // Line ends as libyaml counts them: a CR-only file keeps the block's lines apart.
  auto carriage = ParseWorkflowFile(
      "on: {schedule: [{cron: '0 3 * * *'}]}\rjobs:\r  a:\r    steps:\r      - run: |\r"
      "          # schedwatch: spec_version=999\r# schedwatch: spec_version=4\r");
  ASSERT_TRUE(carriage.ok()) << carriage.error();
  EXPECT_EQ(carriage->spec_version, "4");
  // A comment after a block scalar, back at the left margin, is YAML's again.
  auto after = ParseWorkflowFile(
      "jobs:\n  a:\n    steps:\n      - run: |\n          echo\n\n"
      "# schedwatch: spec_version=5\non: {schedule: [{cron: '0 3 * * *'}]}\n");
  ASSERT_TRUE(after.ok()) << after.error();
  EXPECT_EQ(after->spec_version, "5");
}

TEST(WorkflowFileTest, TwoMarkersThatDisagreeAreAProblemAndGiveNoVersion) {
  auto file = ParseWorkflowFile(
      "# schedwatch: spec_version=7\n# schedwatch: spec_version=7\n"
      "on: {schedule: [{cron: '0 3 * * *'}]}\n# schedwatch: spec_version=8\n");
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(file->spec_version, "");
  EXPECT_EQ(file->problems,
            std::vector<std::string>{"line 4: a second schedwatch marker says spec_version=8, "
                                     "line 1 said 7; no spec version is taken from the file"});
  EXPECT_EQ(file->schedules.size(), 1u);
}

// GitHub's workflow parser refuses a key written twice and a second document, so the workflow
// runs on no schedule: the file is judged the same way, never by its first `on:` alone.
TEST(WorkflowFileTest, FilesGitHubRefusesHaveNoSchedule) {
  auto twice = ParseWorkflowFile(
      "# schedwatch: spec_version=7\non:\n  schedule:\n    - cron: '0 3 * * *'\n"
      "jobs: {}\non:\n  push: {}\n");
  ASSERT_TRUE(twice.ok()) << twice.error();
  EXPECT_TRUE(twice->schedules.empty());
  EXPECT_EQ(twice->spec_version, "");
  EXPECT_EQ(twice->problems,
            std::vector<std::string>{"line 6: GitHub refuses this workflow: key \"on\" is "
                                     "defined twice (first on line 2); it runs on no schedule"});
  auto nested = ParseWorkflowFile(
      "on:\n  schedule:\n    - cron: '0 3 * * *'\n"
      "      cron: '0 4 * * *'\n");
  ASSERT_TRUE(nested.ok());
  EXPECT_TRUE(nested->schedules.empty()) << "a duplicate anywhere refuses the file";
  auto documents = ParseWorkflowFile(
      "on:\n  schedule:\n    - cron: '0 3 * * *'\n---\non:\n  schedule:\n"
      "    - cron: '0 4 * * *'\n");
  ASSERT_TRUE(documents.ok()) << documents.error();
  EXPECT_TRUE(documents->schedules.empty());
  EXPECT_EQ(documents->problems,
            std::vector<std::string>{"line 4: GitHub refuses this workflow: a second YAML "
                                     "document; it runs on no schedule"});
  // An explicit start and end of the one document are fine.
  auto framed = ParseWorkflowFile("---\non: {schedule: [{cron: '0 3 * * *'}]}\n...\n");
  ASSERT_TRUE(framed.ok());
  EXPECT_EQ(framed->schedules.size(), 1u);
  EXPECT_TRUE(framed->problems.empty());
}

TEST(WorkflowFileTest, WorkflowLevelConcurrencyGroup) {
  auto has = [](const std::string& text) { return ParseWorkflowFile(text)->has_concurrency; };
  EXPECT_TRUE(has("concurrency: nightly\non: {schedule: [{cron: '0 3 * * *'}]}\n"));
  EXPECT_TRUE(has("concurrency:\n  group: ${{ github.workflow }}\n  cancel-in-progress: false\n"));
  EXPECT_FALSE(has("on: {schedule: [{cron: '0 3 * * *'}]}\n"));
  EXPECT_FALSE(has("concurrency:\n"));                             // null: none
  EXPECT_FALSE(has("concurrency: {cancel-in-progress: true}\n"));  // no group
  // A job-level group does not keep two workflow runs apart as a whole.
  EXPECT_FALSE(has("jobs:\n  build:\n    concurrency: x\n"));
}

}  // namespace
}  // namespace schedwatch::github
