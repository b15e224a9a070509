// GitHubActionsSource over a fake transport: pagination, conditional requests, the refresh
// floor, rate limits, errors, and token handling. Real HTTP is covered by github_e2e_test.py.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "schedwatch/platform/clock.h"
#include "schedwatch/timefmt.h"
#include "sources/catalog.h"
#include "sources/github_actions/github_actions_source.h"
#include "tests/fixtures/canned_http.h"
#include "tests/sources/source_block.h"
#include "tests/test_util.h"

namespace schedwatch {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RequestHeader;
using testing::TempDir;
using testing::WriteFile;

constexpr std::int64_t kNow = 1796040000;  // 2026-11-30T12:00:00Z
const fs::path kFixtures = fs::path(SCHEDWATCH_TEST_DIR) / "sources/github_actions/fixtures";
const std::string kApi = "https://api.test";
const std::string kRepo = kApi + "/repos/acme/widgets";
const std::string kWorkflows = kRepo + "/actions/workflows?per_page=100";
const std::string kWorkflowsPage2 = kApi + "/repositories/1/actions/workflows?per_page=100&page=2";
const std::string kListing = kRepo + "/contents/.github/workflows?ref=main";
const std::string kNightlyFile = kRepo + "/contents/.github/workflows/nightly.yml?ref=main";
const std::string kCleanupFile = kRepo + "/contents/.github/workflows/cleanup.yml?ref=main";
const std::string kNightlyRuns = kRepo + "/actions/workflows/61234567/runs?event=schedule";
const std::string kCleanupRuns = kRepo + "/actions/workflows/61234999/runs?event=schedule";
const std::string kRepoRuns = kRepo + "/actions/runs?event=schedule&per_page=100";
const std::string kRepoRunsPage2 =
    kApi + "/repositories/1/actions/runs?event=schedule&per_page=100&page=2";
const std::string kRunningRuns =
    kRepo + "/actions/runs?event=schedule&status=in_progress&per_page=100";

// Answers by URL, with ETags and If-None-Match like GitHub's; records every request.
testing::CannedHttp FakeGitHub() {
  testing::CannedHttp fake({404, R"({"message":"Not Found"})", {}});
  fake.etags = true;
  return fake;
}

std::string WorkflowsJson(const std::string& items) {
  return R"({"total_count":9,"workflows":[)" + items + "]}";
}

class GitHubSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(dir_.path() / "token", "ghp_secretTOKEN\n");
    fake_.routes[kRepo] = {200, ReadFile(kFixtures / "repository.json"), {}};
    fake_.routes[kRepo].body = R"({"id":1,"full_name":"acme/widgets","default_branch":"main"})";
    fake_.routes[kWorkflows] = {
        200,
        WorkflowsJson(R"({"id":61234567,"name":"Nightly","path":".github/workflows/nightly.yml",
                          "state":"active"},
                         {"id":61235001,"name":"Old","path":".github/workflows/old.yml",
                          "state":"deleted"})"),
        {{"link",
          "<" + kWorkflowsPage2 + ">; rel=\"next\", <" + kWorkflowsPage2 + ">; rel=\"last\""}}};
    fake_.routes[kWorkflowsPage2] = {
        200,
        WorkflowsJson(R"({"id":61234999,"name":"Cleanup","path":".github/workflows/cleanup.yml",
                          "state":"disabled_inactivity"})"),
        {}};
    fake_.routes[kListing] = {200, ReadFile(kFixtures / "contents_listing.json"), {}};
    fake_.routes[kNightlyFile] = {200, ReadFile(kFixtures / "nightly.yml"), {}};
    fake_.routes[kCleanupFile] = {200, ReadFile(kFixtures / "no_schedule.yml"), {}};
    fake_.routes[kNightlyRuns + "&per_page=20"] = {200, ReadFile(kFixtures / "runs_page.json"), {}};
    fake_.routes[kCleanupRuns + "&per_page=20"] = {
        200, R"({"total_count":0,"workflow_runs":[]})", {}};
    // The repository's scheduled runs: the nightly ones; cleanup has none.
    fake_.routes[kRepoRuns] = {200, ReadFile(kFixtures / "runs_page.json"), {}};
  }

  // A source for acme/widgets with the nightly and cleanup roles (and `extra_jobs`).
  std::unique_ptr<GitHubActionsSource> Make(const std::string& extra_settings = "",
                                            const std::string& extra_jobs = "",
                                            bool conditional = true, std::uint32_t total_shards = 1,
                                            std::uint32_t shard_ordinal = 0) {
    std::string text =
        fmt::format(R"(version: 1
sources:
  ci:
    type: github_actions
    repository: acme/widgets
    api_url: {}/
    token_file: {}
{}jobs:
  - {{role: nightly, source: ci, workflow: nightly.yml, schedule: "0 3 * * *", spec_version: "7"}}
  - {{role: cleanup, source: ci, workflow: .github/workflows/cleanup.yml, schedule: "0 4 * * 0",
     spec_version: "1"}}
{})",
                    kApi, (dir_.path() / "token").string(), extra_settings, extra_jobs);
    auto parsed = ParseSpec(text, (dir_.path() / "spec.yaml").string(), BuiltInCatalog());
    EXPECT_TRUE(parsed.ok()) << parsed.error();
    spec_ = std::make_unique<Spec>(std::move(*parsed));
    SourceOptions options;
    options.spec = &spec_->sources.at("ci");
    for (const auto& job : spec_->jobs) options.jobs.push_back(&job);
    options.shard.total = total_shards;
    options.shard.ordinal = shard_ordinal;
    auto source = GitHubActionsSource::Create(options, {fake_.Send(), conditional, &clock_});
    EXPECT_TRUE(source.ok()) << source.error();
    return std::move(*source);
  }

  Result<SourceSnapshot> List(GitHubActionsSource& source, std::int64_t now) {
    return source.List(ListContext{now, &cancelled_});
  }

  static const LiveObject* Object(const SourceSnapshot& snapshot, const std::string& role) {
    for (const auto& object : snapshot.objects) {
      if (object.role() == role) return &object;
    }
    return nullptr;
  }

  TempDir dir_;
  testing::CannedHttp fake_ = FakeGitHub();
  platform::FakeClock clock_;  // the retry backoffs take no time
  std::unique_ptr<Spec> spec_;
  std::atomic<bool> cancelled_{false};
};

TEST_F(GitHubSourceTest, ReadsEveryPageAndMapsWorkflows) {
  auto source = Make();
  auto snapshot = List(*source, kNow);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  ASSERT_EQ(snapshot->objects.size(), 2u);  // the deleted workflow is no object
  const LiveObject* nightly = Object(*snapshot, "nightly");
  ASSERT_NE(nightly, nullptr);
  EXPECT_EQ(nightly->id(), "61234567");
  EXPECT_EQ(nightly->schedule(), "0 3 * * *");
  EXPECT_EQ(nightly->timezone(), "UTC");
  EXPECT_EQ(nightly->spec_version(), "7");
  EXPECT_TRUE(nightly->enabled);
  const LiveObject* cleanup = Object(*snapshot, "cleanup");
  ASSERT_NE(cleanup, nullptr);
  EXPECT_FALSE(cleanup->enabled);
  EXPECT_EQ(cleanup->schedule(), "");
  EXPECT_EQ(snapshot->history["nightly"].last_success, ParseRfc3339("2024-04-28T03:21:30Z"));
  EXPECT_EQ(snapshot->history["nightly"].running_since, ParseRfc3339("2024-04-26T03:10:00Z"));
  EXPECT_EQ(snapshot->history["cleanup"].last_started, std::nullopt);
  EXPECT_EQ(snapshot->problems.size(), 3u);  // the fixture's malformed runs

  // The repository's runs once, not a request per workflow: its one page lists every run.
  EXPECT_EQ(fake_.UrlsSince(0),
            (std::vector<std::string>{kRepo, kWorkflows, kWorkflowsPage2, kRepoRuns, kListing,
                                      kNightlyFile, kCleanupFile}));
  const HttpRequest& first = fake_.requests.front();
  EXPECT_EQ(RequestHeader(first, "Accept"), "application/vnd.github+json");
  EXPECT_EQ(RequestHeader(first, "Authorization"), "Bearer ghp_secretTOKEN");
  EXPECT_EQ(RequestHeader(first, "X-GitHub-Api-Version"), "2022-11-28");
  EXPECT_EQ(RequestHeader(first, "User-Agent"), "schedwatch/" SCHEDWATCH_VERSION);
  EXPECT_EQ(RequestHeader(first, "If-None-Match"), "");
  EXPECT_EQ(RequestHeader(fake_.requests[5], "Accept"), "application/vnd.github.raw+json");
  EXPECT_EQ(source->last_read_stats().requests, 7);
}

TEST_F(GitHubSourceTest, LaterReadsAreConditionalAnd304ReusesTheAnswer) {
  auto source = Make("    min_interval: 1s\n");
  auto first = List(*source, kNow);
  ASSERT_TRUE(first.ok());
  std::size_t before = fake_.requests.size();
  auto second = List(*source, kNow + 60);  // past the floor the first read's cost set
  ASSERT_TRUE(second.ok()) << second.error();
  // The unchanged files are not asked for again: the listing's blob shas vouch for them.
  ASSERT_EQ(fake_.requests.size() - before, 5u);
  for (std::size_t i = before; i < fake_.requests.size(); ++i) {
    EXPECT_NE(RequestHeader(fake_.requests[i], "If-None-Match"), "") << fake_.requests[i].url;
  }
  EXPECT_EQ(source->last_read_stats().requests, 5);
  EXPECT_EQ(source->last_read_stats().not_modified, 5);
  // Counted for the metrics by outcome.
  auto counts = source->RequestCounts();
  ASSERT_TRUE(counts.has_value());
  EXPECT_EQ(counts->by_outcome, (std::map<std::string, std::uint64_t>{{"200", 7}, {"304", 5}}));
  EXPECT_EQ(second->objects.size(), first->objects.size());
  EXPECT_EQ(Object(*second, "nightly")->schedule(), "0 3 * * *");
  EXPECT_EQ(second->history["nightly"].last_success, first->history["nightly"].last_success);
  EXPECT_EQ(second->problems.size(), first->problems.size());
}

TEST_F(GitHubSourceTest, WithoutConditionalRequestsEverythingIsRefetched) {
  auto source = Make("    min_interval: 1s\n", "", /*conditional=*/false);
  ASSERT_TRUE(List(*source, kNow).ok());
  std::size_t before = fake_.requests.size();
  ASSERT_TRUE(List(*source, kNow + 60).ok());
  EXPECT_EQ(fake_.requests.size() - before, 5u);
  for (std::size_t i = before; i < fake_.requests.size(); ++i) {
    EXPECT_EQ(RequestHeader(fake_.requests[i], "If-None-Match"), "");
  }
  EXPECT_EQ(source->last_read_stats().not_modified, 0);
}

TEST_F(GitHubSourceTest, ChangedBlobShaRefetchesTheFile) {
  auto source = Make("    min_interval: 1s\n");
  ASSERT_TRUE(List(*source, kNow).ok());
  std::string& listing = fake_.routes[kListing].body;
  listing.replace(listing.find("9d7e4410"), 8, "00000000");
  std::string& file = fake_.routes[kNightlyFile].body;
  file.replace(file.find("spec_version=7"), 14, "spec_version=8");
  std::size_t before = fake_.requests.size();
  auto snapshot = List(*source, kNow + 60);
  ASSERT_TRUE(snapshot.ok());
  auto urls = fake_.UrlsSince(before);
  EXPECT_EQ(std::count(urls.begin(), urls.end(), kNightlyFile), 1);
  EXPECT_EQ(Object(*snapshot, "nightly")->spec_version(), "8");
}

TEST_F(GitHubSourceTest, TheFloorServesTheLastReadAgain) {
  auto source = Make();  // min_interval defaults to 60s
  ASSERT_TRUE(List(*source, kNow).ok());
  std::size_t after_first = fake_.requests.size();
  auto cached = List(*source, kNow + 59);
  ASSERT_TRUE(cached.ok());
  EXPECT_EQ(cached->objects.size(), 2u);
  EXPECT_EQ(fake_.requests.size(), after_first);
  ASSERT_TRUE(List(*source, kNow + 60).ok());
  EXPECT_GT(fake_.requests.size(), after_first);
}

TEST_F(GitHubSourceTest, AnAbsentRoleGetsOneConfirmingReRead) {
  auto source =
      Make("", R"(  - {role: ghost, source: ci, workflow: ghost.yml, schedule: "0 1 * * *",
                 spec_version: "1"})");
  auto first = List(*source, kNow);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(Object(*first, "ghost"), nullptr);
  std::size_t after_first = fake_.requests.size();
  ASSERT_TRUE(List(*source, kNow).ok());  // the refresher's confirming re-read
  std::size_t after_confirm = fake_.requests.size();
  EXPECT_GT(after_confirm, after_first);
  ASSERT_TRUE(List(*source, kNow + 10).ok());  // next refresh, within the floor
  ASSERT_TRUE(List(*source, kNow + 10).ok());  // and its confirmation
  EXPECT_EQ(fake_.requests.size(), after_confirm);
}

TEST_F(GitHubSourceTest, PrimaryRateLimitStopsRequestsUntilTheReset) {
  auto source = Make();
  fake_.routes[kWorkflowsPage2] = {
      403,
      R"({"message":"API rate limit exceeded for user ID 1234.","documentation_url":"x"})",
      {{"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", std::to_string(kNow + 600)}}};
  auto limited = List(*source, kNow);
  ASSERT_FALSE(limited.ok());
  EXPECT_EQ(limited.error(),
            "GET /repositories/1/actions/workflows: rate limited until 2026-11-30T12:10:00Z (403 "
            "primary limit exhausted: API rate limit exceeded for user ID 1234.)");
  std::size_t sent = fake_.requests.size();
  auto blocked = List(*source, kNow + 120);
  ASSERT_FALSE(blocked.ok());
  EXPECT_EQ(blocked.error(), "rate limited until 2026-11-30T12:10:00Z (no request sent)");
  EXPECT_EQ(fake_.requests.size(), sent);
  fake_.routes[kWorkflowsPage2].status = 200;
  fake_.routes[kWorkflowsPage2].body = WorkflowsJson("");
  EXPECT_TRUE(List(*source, kNow + 600).ok());
}

TEST_F(GitHubSourceTest, AnswerLeavingNoQuotaBlocksTheRestOfTheRead) {
  auto source = Make();
  fake_.routes[kRepo].headers = {{"x-ratelimit-remaining", "0"},
                                 {"x-ratelimit-reset", std::to_string(kNow + 300)}};
  auto snapshot = List(*source, kNow);
  ASSERT_FALSE(snapshot.ok());  // never a partial list
  EXPECT_EQ(snapshot.error(), "rate limited until 2026-11-30T12:05:00Z (no request sent)");
  EXPECT_EQ(fake_.requests.size(), 1u);
}

TEST_F(GitHubSourceTest, SecondaryLimitHonoursRetryAfter) {
  auto source = Make("    min_interval: 1s\n");
  fake_.routes[kRepo].status = 429;
  fake_.routes[kRepo].headers = {{"retry-after", "30"}};
  fake_.routes[kRepo].body = R"({"message":"You have exceeded a secondary rate limit."})";
  auto limited = List(*source, kNow);
  ASSERT_FALSE(limited.ok());
  EXPECT_NE(limited.error().find("rate limited until 2026-11-30T12:00:30Z (429 secondary limit"),
            std::string::npos)
      << limited.error();
  ASSERT_FALSE(List(*source, kNow + 10).ok());
  EXPECT_EQ(fake_.requests.size(), 1u);
  fake_.routes[kRepo] = {200, R"({"default_branch":"main"})", {}};
  EXPECT_TRUE(List(*source, kNow + 30).ok());
}

// A wait the server cannot mean blocks the source for an hour at most, not until 2058, and a
// garbage reset still prints as a date.
TEST_F(GitHubSourceTest, AHugeRetryAfterOrResetBlocksForAnHourAtMost) {
  auto source = Make("    min_interval: 1s\n");
  fake_.routes[kRepo].status = 429;
  fake_.routes[kRepo].headers = {{"retry-after", "1000000000000"}};
  fake_.routes[kRepo].body = R"({"message":"You have exceeded a secondary rate limit."})";
  auto limited = List(*source, kNow);
  ASSERT_FALSE(limited.ok());
  EXPECT_EQ(limited.error(),
            "GET /repos/acme/widgets: rate limited until 2026-11-30T13:00:00Z (429 secondary "
            "limit, a longer wait asked for, capped at 3600s: You have exceeded a secondary rate "
            "limit.)");
  EXPECT_EQ(List(*source, kNow + 3599).error(),
            "rate limited until 2026-11-30T13:00:00Z (no request sent)");
  fake_.routes[kRepo] = {
      200,
      R"({"default_branch":"main"})",
      {{"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", "999999999999999999"}}};
  auto drained = List(*source, kNow + 3600);
  ASSERT_FALSE(drained.ok()) << "the answer left no quota: the rest of the read waits";
  EXPECT_EQ(drained.error(), "rate limited until 2026-11-30T14:00:00Z (no request sent)");
  fake_.routes[kRepo] = {200, R"({"default_branch":"main"})", {}};
  EXPECT_TRUE(List(*source, kNow + 7200).ok()) << "an hour later the reads go on";
}

TEST_F(GitHubSourceTest, PermissionDenialIsNotARateLimit) {
  auto source = Make("    min_interval: 1s\n");
  fake_.routes[kWorkflows] = {403,
                              R"({"message":"Resource not accessible by integration"})",
                              {{"x-ratelimit-remaining", "4999"}}};
  auto denied = List(*source, kNow);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error(),
            "GET /repos/acme/widgets/actions/workflows: 403 forbidden: Resource not accessible "
            "by integration (check the token's permissions)");
  std::size_t sent = fake_.requests.size();
  EXPECT_FALSE(List(*source, kNow + 60).ok());
  EXPECT_GT(fake_.requests.size(), sent);  // not blocked: asked again
}

TEST_F(GitHubSourceTest, UnauthorizedAndNotFoundAreErrorsWithoutTheToken) {
  auto source = Make("    min_interval: 1s\n");
  fake_.routes[kRepo] = {401, R"({"message":"Bad credentials"})", {}};
  auto unauthorized = List(*source, kNow);
  ASSERT_FALSE(unauthorized.ok());
  EXPECT_EQ(unauthorized.error(),
            "GET /repos/acme/widgets: 401 unauthorized: Bad credentials (check the token)");
  fake_.routes.erase(kRepo);
  auto missing = List(*source, kNow + 60);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(),
            "GET /repos/acme/widgets: 404 not found (can this token see acme/widgets? private "
            "repositories answer 404 without access)");
  // Even a server that echoes the token does not get it into an error.
  fake_.routes[kRepo] = {500, R"({"message":"Bearer ghp_secretTOKEN rejected"})", {}};
  auto echoed = List(*source, kNow + 120);
  ASSERT_FALSE(echoed.ok());
  EXPECT_EQ(echoed.error(),
            "GET /repos/acme/widgets: HTTP 500: Bearer [redacted] rejected (gave up after 3 "
            "attempts)");
}

TEST_F(GitHubSourceTest, ATokenEchoedAtTheEndOfALongMessageIsRedactedBeforeItIsCut) {
  auto source = Make("    min_interval: 1s\n");
  const std::string token = "ghp_secretTOKEN";
  // GitHub's message is cut at 200 characters; the token straddles the cut.
  for (std::size_t pad : {180u, 190u, 195u}) {
    fake_.routes[kRepo] = {
        401, R"({"message":")" + std::string(pad, 'x') + " Bearer " + token + R"("})", {}};
    auto echoed = List(*source, kNow + static_cast<std::int64_t>(pad));
    ASSERT_FALSE(echoed.ok());
    for (std::size_t length = 8; length <= token.size(); ++length) {
      EXPECT_EQ(echoed.error().find(token.substr(0, length)), std::string::npos)
          << "a " << length << "-character prefix of the token leaked: " << echoed.error();
    }
  }
}

// Issue #34, item 9: a token echoed split, cut or upper-cased leaves no run of 8 of its
// characters in any case.
TEST_F(GitHubSourceTest, ATokenEchoedSplitOrUpperCasedIsRedacted) {
  auto source = Make("    min_interval: 1s\n");
  const std::string token = "ghp_secretTOKEN";
  const std::vector<std::string> echoes = {"ghp_secr...etTOKEN ghp_secretTOK", "GHP_SECRETTOKEN",
                                           "x secretTO y"};
  std::int64_t at = kNow;
  for (long status : {401L, 403L, 500L}) {
    for (const auto& echo : echoes) {
      fake_.routes[kRepo] = {status, R"({"message":"Bad credentials: )" + echo + R"("})", {}};
      auto echoed = List(*source, at += 60);
      ASSERT_FALSE(echoed.ok());
      std::string lower = echoed.error();
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      for (std::size_t start = 0; start + 8 <= token.size(); ++start) {
        std::string piece = token.substr(start, 8);
        for (char& c : piece) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        EXPECT_EQ(lower.find(piece), std::string::npos) << status << ": " << echoed.error();
      }
    }
  }
}

// Issue #34, item 5: a page of more items than GitHub's per_page maximum is refused; an item
// nested too deep is a problem, never built.
TEST_F(GitHubSourceTest, HostilePagesAreRefusedOrTheirItemsCounted) {
  auto source = Make();
  std::string runs = R"({"total_count":101,"workflow_runs":[0)";
  for (int i = 0; i < 100; ++i) runs += ",0";
  fake_.routes[kRepoRuns] = {200, runs + "]}", {}};
  // The runs are the history: a refused page leaves the workflows standing without it.
  auto refused = List(*source, kNow);
  ASSERT_TRUE(refused.ok()) << refused.error();
  EXPECT_EQ(refused->objects.size(), 2u);
  EXPECT_NE(
      refused->history_error.find("the answer holds more than 100 workflow runs, more than a page"),
      std::string::npos)
      << refused->history_error;
  auto deep = github::ParseRunPage(
      R"({"workflow_runs":[)" + std::string(100000, '[') + std::string(100000, ']') +
          R"(,{"status":"queued","created_at":"2026-11-30T00:00:00Z"}]})",
      "runs");
  ASSERT_TRUE(deep.ok()) << deep.error();
  EXPECT_EQ(deep->runs.size(), 1u);
  ASSERT_EQ(deep->problems.size(), 1u);
  EXPECT_EQ(deep->problems[0].message, "runs: workflow_runs[0]: not read: it is nested too deep");
  // Members besides the list are counted through, however deep, never built.
  auto skipped = github::ParseRunPage(R"({"total_count":)" + std::string(1u << 20, '[') +
                                          std::string(1u << 20, ']') + R"(,"workflow_runs":[]})",
                                      "runs");
  ASSERT_TRUE(skipped.ok()) << skipped.error();
  EXPECT_EQ(skipped->listed, 0u);
}

// The workflows are the list; their runs are the history. Runs that cannot be read (a 502 that
// stays, garbage) leave the workflows standing, without any history.
TEST_F(GitHubSourceTest, RunsThatCannotBeReadLeaveTheWorkflowsWithoutHistory) {
  auto source = Make();
  fake_.routes[kRepoRuns] = {502, "<html>Bad gateway</html>", {}};
  auto snapshot = List(*source, kNow);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(snapshot->objects.size(), 2u);
  EXPECT_TRUE(snapshot->history.empty());
  EXPECT_EQ(snapshot->history_error,
            "GET /repos/acme/widgets/actions/runs: HTTP 502 (gave up after 3 attempts)");
  auto counts = source->RequestCounts();
  EXPECT_EQ(counts->by_outcome["5xx"], 3u) << "every attempt counts";
  EXPECT_EQ(counts->by_outcome.count("200"), 1u);

  auto garbled = Make();
  fake_.routes[kRepoRuns] = {200, R"({"workflow_runs": 7})", {}};
  snapshot = List(*garbled, kNow);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(snapshot->objects.size(), 2u);
  EXPECT_TRUE(snapshot->history.empty());
  EXPECT_NE(snapshot->history_error.find("/actions/runs"), std::string::npos)
      << snapshot->history_error;
}

std::vector<const SourceProblem*> ProblemsOf(const SourceSnapshot& snapshot,
                                             const std::string& reason) {
  std::vector<const SourceProblem*> found;
  for (const auto& problem : snapshot.problems) {
    if (problem.reason == reason) found.push_back(&problem);
  }
  return found;
}

// GitHub's 5xx used to be an error at once: a read failed on one passing 503.
TEST_F(GitHubSourceTest, ServerErrorsAreRetriedWithBackoffAndTheRecoveryCounted) {
  auto source = Make();
  fake_.first[kRepo] = {{503, R"({"message":"Service unavailable"})", {}}, {502, "", {}}};
  auto snapshot = List(*source, kNow);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(snapshot->objects.size(), 2u);
  auto retried = ProblemsOf(*snapshot, "server_error");
  ASSERT_EQ(retried.size(), 2u);
  EXPECT_TRUE(retried[0]->recovered);
  EXPECT_EQ(retried[0]->message,
            "GET /repos/acme/widgets: HTTP 503: Service unavailable; retrying");
  EXPECT_EQ(retried[1]->message, "GET /repos/acme/widgets: HTTP 502; retrying");
  EXPECT_EQ(clock_.sleeps(), (std::vector<platform::Clock::Duration>{std::chrono::seconds(1),
                                                                     std::chrono::seconds(2)}));
  EXPECT_EQ(source->last_read_stats().requests, static_cast<int>(fake_.requests.size()))
      << "the retries count as requests";
  // Within min_interval the same outcome is given again, without the retries: they happened once.
  std::size_t requests = fake_.requests.size();
  auto again = List(*source, kNow + 1);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(fake_.requests.size(), requests) << "no request within min_interval";
  EXPECT_TRUE(ProblemsOf(*again, "server_error").empty());
}

TEST_F(GitHubSourceTest, ConnectionFailuresAreRetriedButNotTlsFailures) {
  auto source = Make("    min_interval: 1s\n");
  fake_.first[kRepo] = {{0, "", {}}};
  auto snapshot = List(*source, kNow);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  auto retried = ProblemsOf(*snapshot, "transport_error");
  ASSERT_EQ(retried.size(), 1u);
  EXPECT_EQ(retried[0]->message, "GET /repos/acme/widgets: connection refused; retrying");

  fake_.failure = HttpFailure::kTls;
  fake_.first[kRepo] = {{0, "", {}}, {0, "", {}}};
  std::size_t before = fake_.requests.size();
  auto tls = List(*source, kNow + 60);
  ASSERT_FALSE(tls.ok());
  EXPECT_EQ(tls.error(), "GET /repos/acme/widgets: connection refused");
  EXPECT_EQ(fake_.requests.size(), before + 1) << "a TLS failure is not retried";
}

TEST_F(GitHubSourceTest, CancellationDuringABackoffEndsTheReadAtOnce) {
  auto source = Make();
  fake_.first[kRepo] = {{503, "", {}}};
  clock_.set_on_sleep([this](platform::Clock::Duration) { cancelled_ = true; });
  auto snapshot = List(*source, kNow);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error(), "GET /repos/acme/widgets: cancelled");
  EXPECT_EQ(fake_.requests.size(), 1u) << "no request after the cancelled backoff";
}

TEST_F(GitHubSourceTest, GarbledAnswerIsAnError) {
  auto source = Make();
  fake_.routes[kWorkflows].body = "{\"workflows\": 7}";
  auto snapshot = List(*source, kNow);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error(),
            "GET /repos/acme/widgets/actions/workflows: the answer has no \"workflows\" list");
}

// A next link back to a page already read is a circle: the first repeat fails the read
// (not the 100-page bound, and not the timeout).
TEST_F(GitHubSourceTest, ANextLinkBackToAnEarlierPageFailsTheRead) {
  auto source = Make();
  fake_.routes[kWorkflowsPage2].headers = {{"link", "<" + kWorkflows + ">; rel=\"next\""}};
  auto snapshot = List(*source, kNow);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error(),
            "GET /repos/acme/widgets/actions/workflows: the next link of workflows page 2 leads "
            "back to an earlier page; the list never completes");
  std::size_t workflow_pages = 0;
  for (const auto& request : fake_.requests) {
    workflow_pages += request.url.find("/actions/workflows?") != std::string::npos;
  }
  EXPECT_EQ(workflow_pages, 2u);
}

// A list of workflows of which nothing can be read is a failed read, never "no workflows"; one
// readable item on another page makes the rest problems.
TEST_F(GitHubSourceTest, AWorkflowListOfNothingReadableFailsTheRead) {
  fake_.routes[kWorkflows].body = R"({"total_count":9,"workflows":[{"id":1}]})";
  fake_.routes[kWorkflowsPage2].body = R"({"total_count":9,"workflows":[{"id":"x"},null]})";
  auto snapshot = List(*Make(), kNow);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error(),
            "GET /repos/acme/widgets/actions/workflows: none of the 3 items of \"workflows\" can "
            "be read (first: workflows page 1: workflows[0]: expected an object with integer id, "
            "string path and state)");
  fake_.routes[kWorkflowsPage2].body = R"({"total_count":9,"workflows":null})";
  EXPECT_FALSE(List(*Make(), kNow).ok());
  fake_.routes[kWorkflowsPage2].body = WorkflowsJson(
      R"({"id":61234999,"name":"Cleanup","path":".github/workflows/cleanup.yml","state":"active"})");
  auto partly = List(*Make(), kNow);
  ASSERT_TRUE(partly.ok()) << partly.error();
  // The workflow item, and the run item that names no workflow (it could be cleanup's); the
  // malformed runs of nightly, which no longer is listed, are none of this spec's business.
  ASSERT_EQ(partly->problems.size(), 2u);
  EXPECT_EQ(partly->problems[1].message, "scheduled runs page 1: workflow_runs[9]: not an object");
  // Every shard of a spec reads the whole list of workflows: its unreadable items are counted by
  // shard 0 alone, once in the fleet. The runs pages are read for the shard's own workflows.
  auto second_shard = List(*Make("", "", true, 2, 1), kNow);
  ASSERT_TRUE(second_shard.ok()) << second_shard.error();
  ASSERT_EQ(second_shard->problems.size(), 1u);
  EXPECT_EQ(second_shard->problems[0].message, partly->problems[1].message);
  auto first_shard = List(*Make("", "", true, 2, 0), kNow);
  ASSERT_TRUE(first_shard.ok()) << first_shard.error();
  EXPECT_EQ(first_shard->problems.size(), 2u);
}

TEST_F(GitHubSourceTest, NextLinkToAnotherOriginIsRefused) {
  auto source = Make();
  fake_.routes[kWorkflows].headers["link"] = "<https://elsewhere.test/steal?page=2>; rel=\"next\"";
  auto snapshot = List(*source, kNow);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error(),
            "GET /repos/acme/widgets/actions/workflows: the next-page link leaves "
            "https://api.test");
  for (const auto& request : fake_.requests)
    EXPECT_EQ(request.url.find("elsewhere"), std::string::npos);
}

TEST_F(GitHubSourceTest, TokenFileIsReReadWhenItChanges) {
  auto source = Make("    min_interval: 1s\n");
  ASSERT_TRUE(List(*source, kNow).ok());
  WriteFile(dir_.path() / "token", "ghp_rotatedTOKEN2\n");
  std::size_t before = fake_.requests.size();
  ASSERT_TRUE(List(*source, kNow + 60).ok());
  ASSERT_GT(fake_.requests.size(), before);
  EXPECT_EQ(RequestHeader(fake_.requests[before], "Authorization"), "Bearer ghp_rotatedTOKEN2");
  // Answers cached under the old token are not revalidated with the new one.
  EXPECT_EQ(RequestHeader(fake_.requests[before], "If-None-Match"), "");
  fs::remove(dir_.path() / "token");
  auto gone = List(*source, kNow + 120);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error(), fmt::format("cannot read token file {}: No such file or directory",
                                      (dir_.path() / "token").string()));
  WriteFile(dir_.path() / "token", "two\nlines\n");
  auto bad = List(*source, kNow + 180);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "the token holds blanks or control characters; it must be one line");
}

TEST_F(GitHubSourceTest, TokenFromTheEnvironment) {
  SourceSpec spec = *testing::DecodeSourceBlock("ci", "github_actions",
                                                {{"repository", {"acme/widgets"}},
                                                 {"api_url", {kApi}},
                                                 {"token_env", {"SCHEDWATCH_GH_TEST_TOKEN"}},
                                                 {"min_interval", {"1s"}}});
  auto source = GitHubActionsSource::Create({&spec, {}, {}}, {fake_.Send(), true});
  ASSERT_TRUE(source.ok()) << source.error();
  unsetenv("SCHEDWATCH_GH_TEST_TOKEN");
  auto unset = (*source)->List({kNow, nullptr});
  ASSERT_FALSE(unset.ok());
  EXPECT_EQ(unset.error(), "environment variable SCHEDWATCH_GH_TEST_TOKEN (token_env) is not set");
  setenv("SCHEDWATCH_GH_TEST_TOKEN", "ghp_fromENV", 1);
  ASSERT_TRUE((*source)->List({kNow + 1, nullptr}).ok());
  EXPECT_EQ(RequestHeader(fake_.requests.back(), "Authorization"), "Bearer ghp_fromENV");
  unsetenv("SCHEDWATCH_GH_TEST_TOKEN");
  // Both token keys, or an api_url that is not HTTP, are refused with the spec: see
  // source_descriptors_test.cc.
}

TEST_F(GitHubSourceTest, CancelledReadIsNotRemembered) {
  auto source = Make();
  cancelled_ = true;
  auto cancelled = List(*source, kNow);
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.error(), "cancelled");
  EXPECT_TRUE(fake_.requests.empty());
  cancelled_ = false;
  EXPECT_TRUE(List(*source, kNow).ok());
  EXPECT_FALSE(fake_.requests.empty());
}

TEST_F(GitHubSourceTest, ConfiguredBranchSkipsTheRepositoryAndIsTheRef) {
  auto source = Make("    branch: release/2.x\n");
  std::string listing = kRepo + "/contents/.github/workflows?ref=release%2F2.x";
  fake_.routes[listing] = fake_.routes[kListing];
  fake_.routes[kRepo + "/contents/.github/workflows/nightly.yml?ref=release%2F2.x"] =
      fake_.routes[kNightlyFile];
  fake_.routes[kRepo + "/contents/.github/workflows/cleanup.yml?ref=release%2F2.x"] =
      fake_.routes[kCleanupFile];
  auto snapshot = List(*source, kNow);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  auto urls = fake_.UrlsSince(0);
  EXPECT_EQ(std::count(urls.begin(), urls.end(), kRepo), 0);
  EXPECT_EQ(std::count(urls.begin(), urls.end(), listing), 1);
  EXPECT_EQ(Object(*snapshot, "nightly")->schedule(), "0 3 * * *");
}

TEST_F(GitHubSourceTest, FileAbsentFromTheBranchIsAProblemAndDrift) {
  auto source = Make();
  fake_.routes[kListing].body = "[]";
  auto snapshot = List(*source, kNow);
  ASSERT_TRUE(snapshot.ok());
  auto urls = fake_.UrlsSince(0);
  EXPECT_EQ(std::count(urls.begin(), urls.end(), kNightlyFile), 0);  // the listing says so
  const LiveObject* nightly = Object(*snapshot, "nightly");
  ASSERT_NE(nightly, nullptr);
  EXPECT_EQ(nightly->schedule(), "");
  bool reported = false;
  for (const auto& problem : snapshot->problems) {
    reported |= problem.reason == "file_not_found" &&
                problem.message == ".github/workflows/nightly.yml: not found on branch main";
  }
  EXPECT_TRUE(reported);
}

TEST_F(GitHubSourceTest, MalformedFileIsAProblemTheRestWorks) {
  auto source = Make();
  fake_.routes[kNightlyFile].body = ReadFile(kFixtures / "not_yaml.yml");
  auto snapshot = List(*source, kNow);
  ASSERT_TRUE(snapshot.ok());
  EXPECT_EQ(Object(*snapshot, "nightly")->schedule(), "");
  EXPECT_FALSE(Object(*snapshot, "cleanup")->enabled);
  EXPECT_TRUE(std::any_of(snapshot->problems.begin(), snapshot->problems.end(), [](auto& p) {
    return p.reason == "malformed_object" &&
           p.message.rfind(".github/workflows/nightly.yml: not YAML: ", 0) == 0;
  }));
}

std::string RunJson(std::int64_t workflow_id, const std::string& path, const std::string& status,
                    const std::string& conclusion, const std::string& started,
                    const std::string& updated) {
  return fmt::format(
      R"({{"id":{0}{1},"workflow_id":{0},"path":"{2}","event":"schedule","status":"{3}",)"
      R"("conclusion":{4},"created_at":"{5}","run_started_at":"{5}","updated_at":"{6}"}})",
      workflow_id, started.substr(8, 2), path, status,
      conclusion.empty() ? "null" : "\"" + conclusion + "\"", started, updated);
}

std::string RunsJson(const std::vector<std::string>& runs) {
  std::string items;
  for (const auto& run : runs) items += (items.empty() ? "" : ",") + run;
  return R"({"total_count":300,"workflow_runs":[)" + items + "]}";
}

const std::string kNightlyPath = ".github/workflows/nightly.yml";
const std::string kCleanupPath = ".github/workflows/cleanup.yml";

// The repository's runs are attributed by workflow_id, whatever page they are on; the pages end
// with the list (fewer than GitHub's 1,000), so no workflow is asked for by itself.
TEST_F(GitHubSourceTest, RunsOfTheRepositoryAreAttributedByWorkflowAcrossPages) {
  auto source = Make();
  fake_.routes[kRepoRuns] = {
      200,
      RunsJson({RunJson(61234567, kNightlyPath, "in_progress", "", "2026-11-30T03:00:10Z",
                        "2026-11-30T03:00:15Z"),
                RunJson(61234567, kNightlyPath, "completed", "failure", "2026-11-29T03:00:10Z",
                        "2026-11-29T03:05:00Z"),
                RunJson(99999999, ".github/workflows/other.yml", "completed", "success",
                        "2026-11-29T02:00:10Z", "2026-11-29T02:01:00Z")}),
      {{"link", "<" + kRepoRunsPage2 + ">; rel=\"next\""}}};
  fake_.routes[kRepoRunsPage2] = {
      200,
      RunsJson({RunJson(61234999, kCleanupPath, "completed", "success", "2026-11-29T04:00:10Z",
                        "2026-11-29T04:02:00Z"),
                RunJson(61234567, kNightlyPath, "completed", "success", "2026-11-28T03:00:10Z",
                        "2026-11-28T03:04:00Z")}),
      {}};
  auto snapshot = List(*source, kNow);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(snapshot->history["nightly"].running_since, ParseRfc3339("2026-11-30T03:00:10Z"));
  EXPECT_EQ(snapshot->history["nightly"].last_failure, ParseRfc3339("2026-11-29T03:05:00Z"));
  EXPECT_EQ(snapshot->history["nightly"].last_success, ParseRfc3339("2026-11-28T03:04:00Z"));
  // Cleanup's only run is on page 2, and the other workflow's success is nobody's.
  EXPECT_EQ(snapshot->history["cleanup"].last_success, ParseRfc3339("2026-11-29T04:02:00Z"));
  EXPECT_EQ(snapshot->history["cleanup"].last_started, ParseRfc3339("2026-11-29T04:00:10Z"));
  auto urls = fake_.UrlsSince(0);
  EXPECT_EQ(std::count(urls.begin(), urls.end(), kRepoRunsPage2), 1);
  for (const auto& url : urls) {
    EXPECT_EQ(url.find("/actions/workflows/"), std::string::npos) << url;
    EXPECT_EQ(url.find("status="), std::string::npos) << url;
  }
}

// When one workflow is left without a success, a page more costs more than asking for it: it
// gets one status=success query, and the runs still going are asked for once.
TEST_F(GitHubSourceTest, AWorkflowWithoutASuccessOnThePagesReadIsAskedForByItself) {
  auto source = Make();
  fake_.routes[kRepoRuns] = {200,
                             RunsJson({RunJson(61234567, kNightlyPath, "completed", "failure",
                                               "2026-11-30T03:00:10Z", "2026-11-30T03:05:00Z"),
                                       RunJson(61234999, kCleanupPath, "completed", "success",
                                               "2026-11-29T04:00:10Z", "2026-11-29T04:02:00Z")}),
                             {{"link", "<" + kRepoRunsPage2 + ">; rel=\"next\""}}};
  // A run of nightly hung since before the pages read, under its newer runs.
  fake_.routes[kRunningRuns] = {200,
                                RunsJson({RunJson(61234567, kNightlyPath, "in_progress", "",
                                                  "2026-11-20T03:00:10Z", "2026-11-20T03:00:15Z")}),
                                {}};
  fake_.routes[kNightlyRuns + "&status=success&per_page=1"] = {
      200,
      RunsJson({RunJson(61234567, kNightlyPath, "completed", "success", "2026-11-01T03:00:10Z",
                        "2026-11-01T03:04:00Z")}),
      {}};
  auto snapshot = List(*source, kNow);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(snapshot->history["nightly"].last_failure, ParseRfc3339("2026-11-30T03:05:00Z"));
  EXPECT_EQ(snapshot->history["nightly"].last_success, ParseRfc3339("2026-11-01T03:04:00Z"));
  EXPECT_EQ(snapshot->history["nightly"].running_since, ParseRfc3339("2026-11-20T03:00:10Z"));
  EXPECT_EQ(snapshot->history["cleanup"].last_success, ParseRfc3339("2026-11-29T04:02:00Z"));
  auto urls = fake_.UrlsSince(0);
  EXPECT_EQ(std::vector<std::string>(urls.begin() + 3, urls.end() - 3),
            (std::vector<std::string>{kRepoRuns, kRunningRuns,
                                      kNightlyRuns + "&status=success&per_page=1"}));
}

// A workflow with no run on the pages read gets its own newest page, as before, and a success
// query only when that page holds none and is not the last.
TEST_F(GitHubSourceTest, AWorkflowWithoutARunOnThePagesReadGetsItsOwnNewestPage) {
  auto source = Make();
  fake_.routes[kRepoRuns] = {200,
                             RunsJson({RunJson(61234567, kNightlyPath, "completed", "success",
                                               "2026-11-30T03:00:10Z", "2026-11-30T03:05:00Z")}),
                             {{"link", "<" + kRepoRunsPage2 + ">; rel=\"next\""}}};
  fake_.routes[kRunningRuns] = {200, RunsJson({}), {}};
  fake_.routes[kCleanupRuns + "&per_page=20"] = {
      200,
      RunsJson({RunJson(61234999, kCleanupPath, "completed", "failure", "2026-09-06T04:00:10Z",
                        "2026-09-06T04:02:00Z")}),
      {{"link", "<" + kCleanupRuns + "&per_page=20&page=2>; rel=\"next\""}}};
  fake_.routes[kCleanupRuns + "&status=success&per_page=1"] = {
      200,
      RunsJson({RunJson(61234999, kCleanupPath, "completed", "success", "2026-08-30T04:00:10Z",
                        "2026-08-30T04:01:00Z")}),
      {}};
  auto snapshot = List(*source, kNow);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(snapshot->history["cleanup"].last_failure, ParseRfc3339("2026-09-06T04:02:00Z"));
  EXPECT_EQ(snapshot->history["cleanup"].last_success, ParseRfc3339("2026-08-30T04:01:00Z"));
  auto urls = fake_.UrlsSince(0);
  EXPECT_EQ(std::vector<std::string>(urls.begin() + 3, urls.end() - 3),
            (std::vector<std::string>{kRepoRuns, kRunningRuns, kCleanupRuns + "&per_page=20",
                                      kCleanupRuns + "&status=success&per_page=1"}));
}

// N workflows cost their workflow pages and the repository's run pages, not N requests: 250
// workflows whose newest runs fill three pages of runs.
TEST_F(GitHubSourceTest, RequestsForManyWorkflowsGrowByPagesNotByWorkflows) {
  constexpr int kCount = 250;
  std::vector<std::string> workflow_items, runs;
  std::string listing = "[";
  std::string jobs;
  for (int i = 0; i < kCount; ++i) {
    std::string path = fmt::format(".github/workflows/w{:03d}.yml", i);
    workflow_items.push_back(
        fmt::format(R"({{"id":{},"name":"w","path":"{}","state":"active"}})", 1000 + i, path));
    runs.push_back(RunJson(1000 + i, path, "completed", "success",
                           fmt::format("2026-11-30T0{}:{:02d}:00Z", 9 - i / 60 % 10, 59 - i % 60),
                           "2026-11-30T10:00:00Z"));
    listing += fmt::format(R"({}{{"path":"{}","sha":"s{}"}})", i ? "," : "", path, i);
    fake_.routes[kRepo + "/contents/" + path + "?ref=main"] = {
        200, "on:\n  schedule:\n    - cron: \"0 3 * * *\"\n", {}};
    jobs += fmt::format(
        "  - {{role: r{0}, source: ci, workflow: w{0:03d}.yml, schedule: \"0 3 * * *\", "
        "spec_version: \"1\"}}\n",
        i);
  }
  listing += "]";
  // Three pages of 100 workflows (GitHub's largest), three of 100 runs.
  const std::string workflows_base = kApi + "/repositories/1/actions/workflows?per_page=100";
  const std::string runs_base = kApi + "/repositories/1/actions/runs?event=schedule&per_page=100";
  fake_.routes.erase(kWorkflowsPage2);
  for (int page = 0; page < 3; ++page) {
    auto slice = [&](const std::vector<std::string>& items) {
      std::string joined;
      for (int i = page * 100; i < std::min(kCount, page * 100 + 100); ++i) {
        joined += (joined.empty() ? "" : ",") + items[i];
      }
      return joined;
    };
    std::map<std::string, std::string> next;
    if (page < 2) {
      next["link"] = fmt::format("<{}&page={}>; rel=\"next\"", workflows_base, page + 2);
    }
    fake_.routes[page == 0 ? kWorkflows : fmt::format("{}&page={}", workflows_base, page + 1)] = {
        200, WorkflowsJson(slice(workflow_items)), next};
    if (page < 2) next["link"] = fmt::format("<{}&page={}>; rel=\"next\"", runs_base, page + 2);
    fake_.routes[page == 0 ? kRepoRuns : fmt::format("{}&page={}", runs_base, page + 1)] = {
        200, R"({"total_count":250,"workflow_runs":[)" + slice(runs) + "]}", next};
  }
  fake_.routes[kListing] = {200, listing, {}};
  auto source = Make("", jobs);
  auto cold = List(*source, kNow);
  ASSERT_TRUE(cold.ok()) << cold.error();
  // Repository, 3 workflow pages, 3 run pages, the listing, 250 files (first read only).
  EXPECT_EQ(source->last_read_stats().requests, 1 + 3 + 3 + 1 + kCount);
  EXPECT_EQ(cold->history["r249"].last_success, ParseRfc3339("2026-11-30T10:00:00Z"));
  EXPECT_EQ(cold->history["r249"].last_started, ParseRfc3339("2026-11-30T05:50:00Z"));
  auto warm = List(*source, kNow + 3600);
  ASSERT_TRUE(warm.ok()) << warm.error();
  EXPECT_EQ(source->last_read_stats().requests, 1 + 3 + 3 + 1);
  EXPECT_EQ(source->last_read_stats().not_modified, 1 + 3 + 3 + 1);
}

// The floor between real reads follows the last read's cost and the limit GitHub states: with
// x-ratelimit-limit 60 (anonymous), a read of 7 charged requests may come every 840 s at most
// (half of 60 an hour), whatever min_interval says.
// x-ratelimit-limit 60 an hour: ours is 30, refilled at 30 an hour (one every 120 s). Reads of
// charged requests (no conditional requests) go at min_interval while the bucket holds another
// like the last, then wait until it does.
TEST_F(GitHubSourceTest, TheBudgetFloorSpacesReadsByTheirCost) {
  for (auto& [url, route] : fake_.routes) {
    route.headers["x-ratelimit-limit"] = "60";
    route.headers["x-ratelimit-remaining"] = "53";
  }
  auto source = Make("    min_interval: 1s\n", "", /*conditional=*/false);
  std::int64_t spent = 0;
  int read = 0;
  for (; read < 10; ++read) {
    std::size_t sent = fake_.requests.size();
    ASSERT_TRUE(List(*source, kNow + read).ok());
    std::int64_t cost = source->last_read_stats().requests;
    EXPECT_EQ(fake_.requests.size(), sent + static_cast<std::size_t>(cost));
    spent += cost;
    double left = 30.0 - static_cast<double>(spent) + read * 30.0 / 3600;
    if (left >= static_cast<double>(cost)) {
      EXPECT_EQ(source->ReadFloor(), 1) << "read " << read;
      continue;
    }
    auto wait =
        static_cast<std::int64_t>(std::ceil((static_cast<double>(cost) - left) * 120 - 1e-6));
    EXPECT_EQ(source->ReadFloor(), wait);
    EXPECT_EQ(source->RequestCounts()->read_floor_seconds, wait);
    EXPECT_EQ(source->RequestCounts()->rate_limit_remaining, 53);
    std::size_t before = fake_.requests.size();
    ASSERT_TRUE(List(*source, kNow + read + wait - 1).ok());
    EXPECT_EQ(fake_.requests.size(), before) << "within the floor: the last read again";
    ASSERT_TRUE(List(*source, kNow + read + wait).ok());
    EXPECT_GT(fake_.requests.size(), before);
    break;
  }
  EXPECT_GE(read, 2) << "the first reads fit the bucket";
  EXPECT_LT(read, 10) << "the bucket ran short";
}

// 304s are free of the primary limit with a token: only the secondary limit (half of 900 points
// a minute: 7 x 60 / 450 s) and min_interval pace the reads.
TEST_F(GitHubSourceTest, ReadsAnswered304CostNoBudget) {
  for (auto& [url, route] : fake_.routes) route.headers["x-ratelimit-limit"] = "60";
  auto source = Make("    min_interval: 1s\n");
  for (int read = 0; read < 10; ++read) {
    ASSERT_TRUE(List(*source, kNow + 2 * read).ok());
    EXPECT_EQ(source->ReadFloor(), 1) << "read " << read;
  }
  EXPECT_EQ(source->last_read_stats().not_modified, source->last_read_stats().requests);
}

// Without x-ratelimit-limit the primary limit is taken as 5,000 an hour, half of it ours: read
// as often as the floor lets for two hours, a source spends its bucket (2,500) and two hours of
// refill, no more. A shard of 4 (four exporters reading with one token) spends a quarter of that.
TEST_F(GitHubSourceTest, AnUnstatedLimitIsTakenAsATokensFiveThousandSharedByTheShards) {
  for (std::uint32_t shards : {1u, 4u}) {
    auto source = Make("    min_interval: 1s\n", "", /*conditional=*/false, shards);
    std::int64_t spent = 0;
    for (std::int64_t now = kNow; now < kNow + 7200;
         now += std::max<std::int64_t>(1, source->ReadFloor())) {
      ASSERT_TRUE(List(*source, now).ok());
      spent += source->last_read_stats().requests;
    }
    const double share = 2500.0 / shards;
    EXPECT_LE(static_cast<double>(spent), 3 * share) << shards << " shards";
    // Each floor rounded up to a whole second leaves some refill unspent.
    EXPECT_GT(static_cast<double>(spent), 2 * share) << shards << " shards";
  }
}
}  // namespace
}  // namespace schedwatch

namespace schedwatch {
namespace {

// GitHub's own guard is the workflow's `concurrency:` group; require_concurrency flags its absence.
TEST_F(GitHubSourceTest, RequiredConcurrencyGroupMissingIsAProblem) {
  auto source =
      Make("", R"(  - {role: guarded, source: ci, workflow: nightly.yml, schedule: "0 3 * * *",
     spec_version: "7", require_concurrency: true}
)");
  auto snapshot = List(*source, kNow);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  std::vector<std::string> flagged;
  for (const auto& problem : snapshot->problems) {
    if (problem.reason == "workflow_without_concurrency") flagged.push_back(problem.message);
  }
  EXPECT_EQ(flagged, (std::vector<std::string>{
                         ".github/workflows/nightly.yml: no workflow-level concurrency: group, so "
                         "two runs of role guarded may overlap (add e.g. `concurrency: {group: "
                         "guarded}`)"}));  // only for the role that asks

  fake_.routes[kNightlyFile].body =
      "concurrency:\n  group: nightly\n" + ReadFile(kFixtures / "nightly.yml");
  auto fresh =
      Make("", R"(  - {role: guarded, source: ci, workflow: nightly.yml, schedule: "0 3 * * *",
     spec_version: "7", require_concurrency: true}
)");
  snapshot = List(*fresh, kNow);
  ASSERT_TRUE(snapshot.ok());
  EXPECT_TRUE(std::none_of(snapshot->problems.begin(), snapshot->problems.end(),
                           [](auto& p) { return p.reason == "workflow_without_concurrency"; }));
}

}  // namespace
}  // namespace schedwatch
