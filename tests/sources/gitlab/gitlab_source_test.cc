// The gitlab source: its pure mapping on fixture text shaped like GitLab's documented answers,
// and GitLabSource over an in-process transport (pagination by Link and by x-next-page, error
// bodies, rate limits, the token). Real HTTPS is covered by gitlab_e2e_test.py.
#include "sources/gitlab/gitlab_source.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "schedwatch/platform/clock.h"
#include "schedwatch/timefmt.h"
#include "sources/catalog.h"
#include "sources/gitlab/gitlab_mapping.h"
#include "sources/problems.h"
#include "sources/token.h"
#include "tests/fixtures/canned_http.h"
#include "tests/test_util.h"

namespace schedwatch {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

constexpr std::int64_t kNow = 1796040000;  // 2026-11-30T12:00:00Z
const fs::path kFixtures = fs::path(SCHEDWATCH_TEST_DIR) / "sources/gitlab/fixtures";
const std::string kApi = "https://gitlab.test/api/v4";
const std::string kProject = kApi + "/projects/acme%2Fwidgets";
const std::string kPage1 = kProject + "/pipeline_schedules?per_page=100&page=1";
const std::string kPage2 = kProject + "/pipeline_schedules?per_page=100&page=2";
const std::string kToken = "glpat-secretTOKEN0123456789";

std::string Pipelines(int id) {
  return fmt::format("{}/pipeline_schedules/{}/pipelines?per_page=20&sort=desc", kProject, id);
}

class GitLabSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(dir_.path() / "token", kToken + "\n");
    fake_.routes[kPage1] = {200,
                            ReadFile(kFixtures / "schedules_page1.json"),
                            {{"x-next-page", "2"}, {"x-page", "1"}, {"x-per-page", "100"}}};
    fake_.routes[kPage2] = {200, ReadFile(kFixtures / "schedules_page2.json"), {{"x-page", "2"}}};
    fake_.routes[Pipelines(13)] = {200, ReadFile(kFixtures / "pipelines_nightly.json"), {}};
    fake_.routes[Pipelines(14)] = {200, "[]", {}};
    fake_.routes[Pipelines(21)] = {200, "[]", {}};
  }

  std::unique_ptr<GitLabSource> Make(const std::string& extra_settings = "",
                                     ShardAssignment shard = {}) {
    std::string text = fmt::format(R"(version: 1
sources:
  ci:
    type: gitlab
    project: acme/widgets
    api_url: {}/
    token_file: {}
    ref: main
{}jobs:
  - {{role: nightly, source: ci, schedule: "0 3 * * *", timezone: Europe/Berlin, spec_version: "7"}}
  - {{role: cleanup, source: ci, schedule: "0 4 * * 0", spec_version: "1"}}
  - {{role: report, source: ci, schedule: "30 6 * * 1-5", timezone: America/Los_Angeles,
     spec_version: "2", ref: release}}
  - {{role: ghost, source: ci, schedule: "0 2 * * *", spec_version: "1"}}
)",
                                   kApi, (dir_.path() / "token").string(), extra_settings);
    auto parsed = ParseSpec(text, (dir_.path() / "spec.yaml").string(), BuiltInCatalog());
    EXPECT_TRUE(parsed.ok()) << parsed.error();
    spec_ = std::make_unique<Spec>(std::move(*parsed));
    SourceOptions options;
    options.spec = &spec_->sources.at("ci");
    for (const auto& job : spec_->jobs) options.jobs.push_back(&job);
    options.shard = shard;
    auto source = GitLabSource::Create(options, {fake_.Send(), &clock_});
    EXPECT_TRUE(source.ok()) << source.error();
    return std::move(*source);
  }

  Result<SourceSnapshot> List(GitLabSource& source) {
    return source.List(ListContext{kNow, &cancelled_});
  }

  static std::vector<const LiveObject*> Objects(const SourceSnapshot& snapshot,
                                                const std::string& role) {
    std::vector<const LiveObject*> found;
    for (const auto& object : snapshot.objects) {
      if (object.role() == role) found.push_back(&object);
    }
    return found;
  }

  static std::string Problems(const SourceSnapshot& snapshot) {
    std::string text;
    for (const auto& problem : snapshot.problems)
      text += problem.reason + ": " + problem.message + "\n";
    return text;
  }

  TempDir dir_;
  testing::CannedHttp fake_{{404, R"({"message":"404 Not found"})", {}}};  // as GitLab
  platform::FakeClock clock_;
  std::atomic<bool> cancelled_{false};
  std::unique_ptr<Spec> spec_;
};

TEST_F(GitLabSourceTest, ReadsMarkedSchedulesOverTwoPagesByXNextPage) {
  auto source = Make();
  auto snapshot = List(*source);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  ASSERT_EQ(Objects(*snapshot, "nightly").size(), 1u);
  const LiveObject& nightly = *Objects(*snapshot, "nightly")[0];
  EXPECT_EQ(nightly.id(), "13");
  EXPECT_EQ(nightly.schedule(), "0 3 * * *");
  EXPECT_EQ(nightly.timezone(), "Europe/Berlin");
  EXPECT_EQ(nightly.spec_version(), "7");
  EXPECT_TRUE(nightly.enabled);
  EXPECT_EQ(nightly.other_drift(), "");  // refs/heads/main is main
  EXPECT_FALSE(Drifted(spec_->jobs[0], nightly));
  // The unmarked schedule 15 is not ours; the ghost role has no schedule.
  EXPECT_EQ(snapshot->objects.size(), 3u);
  EXPECT_TRUE(Objects(*snapshot, "ghost").empty());
  // A Rails zone name is its IANA zone; the ref the job names is the schedule's.
  const LiveObject& report = *Objects(*snapshot, "report")[0];
  EXPECT_EQ(report.timezone(), "America/Los_Angeles");
  EXPECT_FALSE(Drifted(spec_->jobs[2], report));
  // The requests: two pages, then each marked schedule's pipelines; the token as a bearer.
  ASSERT_GE(fake_.requests.size(), 2u);
  EXPECT_EQ(fake_.requests[0].url, kPage1);
  EXPECT_EQ(fake_.requests[1].url, kPage2);
  bool bearer = false;
  for (const auto& [name, value] : fake_.requests[0].headers) {
    bearer |= name == "Authorization" && value == "Bearer " + kToken;
  }
  EXPECT_TRUE(bearer);
}

TEST_F(GitLabSourceTest, FollowsALinkHeaderToo) {
  const std::string next = kProject + "/pipeline_schedules?id=acme%2Fwidgets&page=2&per_page=100";
  fake_.routes[kPage1].headers = {
      {"link", "<" + next + ">; rel=\"next\", <" + kPage1 + ">; rel=\"first\""}};
  fake_.routes[next] = fake_.routes[kPage2];
  auto source = Make();
  auto snapshot = List(*source);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(Objects(*snapshot, "report").size(), 1u);
  EXPECT_EQ(fake_.requests[1].url, next);
}

TEST_F(GitLabSourceTest, APageThatLeadsBackFailsTheRead) {
  fake_.routes[kPage2].headers = {{"x-next-page", "1"}};
  fake_.routes[kPage1].headers = {{"link", "<" + kPage2 + ">; rel=\"next\""}};
  auto source = Make();
  auto snapshot = List(*source);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_NE(snapshot.error().find("never completes"), std::string::npos) << snapshot.error();
}

TEST_F(GitLabSourceTest, AnEndlessListStopsAtAHundredPages) {
  // Each page names the next one, for ever: the read gives up instead of following.
  for (int page = 1; page <= 101; ++page) {
    fake_.routes[fmt::format("{}/pipeline_schedules?per_page=100&page={}", kProject, page)] = {
        200, "[]", {{"x-next-page", std::to_string(page + 1)}}};
  }
  auto source = Make();
  auto snapshot = List(*source);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error(), "more than 100 pages of pipeline schedules");
  EXPECT_EQ(fake_.requests.size(), 100u);
}

TEST_F(GitLabSourceTest, AnAnswerThatIsNoListFailsTheReadWithoutACrash) {
  const std::vector<std::string> bodies = {"<html>Sign in</html>", "null", "{\"message\":\"x\"}",
                                           "", std::string(1 << 20, '[')};
  for (const std::string& body : bodies) {
    fake_.requests.clear();
    fake_.routes[kPage1] = {200, body, {}};
    auto source = Make();
    auto snapshot = List(*source);
    ASSERT_FALSE(snapshot.ok()) << body.substr(0, 40);
    EXPECT_NE(snapshot.error().find("GET /api/v4/projects/acme%2Fwidgets/pipeline_schedules: "),
              std::string::npos)
        << snapshot.error();
  }
}

TEST_F(GitLabSourceTest, ANextLinkToAnotherOriginIsRefused) {
  fake_.routes[kPage1].headers = {{"link", "<https://evil.test/steal?page=2>; rel=\"next\""}};
  auto source = Make();
  auto snapshot = List(*source);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_NE(snapshot.error().find("leaves https://gitlab.test"), std::string::npos)
      << snapshot.error();
  for (const auto& request : fake_.requests) EXPECT_EQ(request.url.find("evil"), std::string::npos);
}

TEST_F(GitLabSourceTest, DeactivatedScheduleSaysItsOwnerIsBlocked) {
  auto source = Make();
  auto snapshot = List(*source);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  const LiveObject& cleanup = *Objects(*snapshot, "cleanup")[0];
  EXPECT_FALSE(cleanup.enabled);
  std::string problems = Problems(*snapshot);
  EXPECT_NE(problems.find("schedule_deactivated: pipeline schedule 14 (role cleanup) is "
                          "inactive: its owner former is blocked"),
            std::string::npos)
      << problems;
  // Listed again while it stands, counted once.
  auto again = List(*source);
  ASSERT_TRUE(again.ok());
  bool counted_before = false;
  for (const auto& problem : again->problems) {
    if (problem.reason == "schedule_deactivated") counted_before = problem.counted_before;
  }
  EXPECT_TRUE(counted_before);
}

TEST_F(GitLabSourceTest, MalformedItemsAndMarkersAreProblemsNotFailures) {
  auto source = Make();
  auto snapshot = List(*source);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  std::string problems = Problems(*snapshot);
  EXPECT_NE(problems.find("malformed_marker: pipeline schedule 22: marker has no role=..."),
            std::string::npos)
      << problems;
  EXPECT_NE(problems.find("malformed_object: schedules page 2: pipeline schedule #3 on the page: "
                          "lacks id, cron, ref or active"),
            std::string::npos)
      << problems;
  EXPECT_NE(problems.find("pipeline 9002 has an unknown status \"teleported\""), std::string::npos)
      << problems;
}

// Every shard of a spec reads the project's whole list of schedules: its unreadable items and
// markers are counted by shard 0 alone, once in the fleet. A schedule's pipelines are read by the
// shard of its role, whose problems they are.
TEST_F(GitLabSourceTest, TheSharedListsProblemsAreCountedByShardZeroOnly) {
  for (std::uint32_t ordinal : {0u, 1u}) {
    auto snapshot = List(*Make("", ShardAssignment{ordinal, 2}));
    ASSERT_TRUE(snapshot.ok()) << snapshot.error();
    std::string problems = Problems(*snapshot);
    EXPECT_EQ(problems.find("malformed_marker: pipeline schedule 22") != std::string::npos,
              ordinal == 0)
        << ordinal << ": " << problems;
    EXPECT_EQ(problems.find("malformed_object: schedules page 2") != std::string::npos,
              ordinal == 0)
        << ordinal << ": " << problems;
    EXPECT_NE(problems.find("pipeline 9002 has an unknown status"), std::string::npos)
        << ordinal << ": " << problems;
  }
}

TEST_F(GitLabSourceTest, AListOfNothingReadableIsUnknownNotEmpty) {
  fake_.routes[kPage1] = {200, R"([{"id": 1}, 5, null])", {}};
  auto source = Make();
  auto snapshot = List(*source);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_NE(snapshot.error().find("none of the 3 pipeline schedules can be read"),
            std::string::npos)
      << snapshot.error();
}

TEST_F(GitLabSourceTest, PipelinesInEveryStatusMakeTheHistory) {
  auto source = Make();
  auto snapshot = List(*source);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  const RunHistory& history = snapshot->history.at("nightly");
  EXPECT_EQ(history.last_started, ParseRfc3339("2026-11-30T02:00:41Z"));  // running
  EXPECT_EQ(history.running_since, ParseRfc3339("2026-11-30T02:00:41Z"));
  EXPECT_EQ(history.last_failure, ParseRfc3339("2026-11-29T02:12:00Z"));  // failed
  EXPECT_EQ(history.last_success, ParseRfc3339("2026-11-27T02:10:41Z"));  // success
  // canceled and skipped started, and say nothing of success or failure.
  for (const auto& run : history.runs) {
    EXPECT_NE(run.started, ParseRfc3339("2026-11-28T02:00:41Z"));
    EXPECT_NE(run.started, ParseRfc3339("2026-11-26T02:00:41Z"));
  }
}

TEST_F(GitLabSourceTest, DriftInCronZoneRefAndSpecVersion) {
  fake_.routes[kPage2].body = R"([
    {"id": 21, "description": "[schedwatch: role=report spec_version=1]", "ref": "main",
     "cron": "30 7 * * 1-5", "cron_timezone": "Tokyo", "active": true}])";
  auto source = Make();
  auto snapshot = List(*source);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  const LiveObject& report = *Objects(*snapshot, "report")[0];
  EXPECT_EQ(report.other_drift(), "runs on ref main, the spec says release");
  EXPECT_EQ(report.timezone(), "Asia/Tokyo");
  EXPECT_TRUE(Drifted(spec_->jobs[2], report));
  // Each difference alone is drift.
  for (int change = 0; change < 4; ++change) {
    LiveObject one = report;
    one.set_other_drift("");
    one.set_schedule(change == 0 ? "30 7 * * 1-5" : "30 6 * * mon-fri");
    one.set_timezone(change == 1 ? "Asia/Tokyo" : "America/Los_Angeles");
    one.set_spec_version(change == 2 ? "1" : "2");
    if (change == 3) one.set_other_drift("runs on ref main, the spec says release");
    EXPECT_TRUE(Drifted(spec_->jobs[2], one)) << change;
  }
  LiveObject same = report;
  same.set_other_drift("");
  same.set_schedule("30 6 * * mon-fri");
  same.set_timezone("America/Los_Angeles");
  same.set_spec_version("2");
  EXPECT_FALSE(Drifted(spec_->jobs[2], same));
}

TEST_F(GitLabSourceTest, TwoSchedulesWithOneRoleAreBothReported) {
  fake_.routes[kPage2].body = R"([
    {"id": 21, "description": "[schedwatch: role=nightly spec_version=7]", "ref": "main",
     "cron": "0 3 * * *", "cron_timezone": "Europe/Berlin", "active": true}])";
  fake_.routes[Pipelines(21)] = {200, "[]", {}};
  auto source = Make();
  auto snapshot = List(*source);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(Objects(*snapshot, "nightly").size(), 2u);
}

TEST_F(GitLabSourceTest, ADeletedScheduleIsAbsentAndItsPipelines404Tolerated) {
  fake_.routes[Pipelines(13)] = {404, R"({"message":"404 Pipeline Schedule Not Found"})", {}};
  auto source = Make();
  auto snapshot = List(*source);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_TRUE(snapshot->history.at("nightly").runs.empty());
}

// The schedules are the list; their pipelines are the history. Pipelines that cannot be read
// (a 500 that stays, garbage, an error page echoing the token) leave the schedules standing,
// without any history, and no further pipelines are asked for.
TEST_F(GitLabSourceTest, PipelinesThatCannotBeReadLeaveTheSchedulesWithoutHistory) {
  const std::vector<testing::CannedAnswer> answers = {
      {500, R"({"message":"500 Internal Server Error"})", {}},
      {200, "[{\"id\": 1, \"status\": ", {}},
      {502, "upstream said Bearer " + kToken, {}},
  };
  for (const auto& answer : answers) {
    fake_.requests.clear();
    fake_.routes[Pipelines(13)] = answer;
    auto source = Make();
    auto snapshot = List(*source);
    ASSERT_TRUE(snapshot.ok()) << snapshot.error();
    EXPECT_EQ(Objects(*snapshot, "nightly").size(), 1u) << answer.status;
    EXPECT_FALSE(Objects(*snapshot, "report").empty()) << answer.status;
    EXPECT_TRUE(snapshot->history.empty()) << answer.status;
    EXPECT_NE(snapshot->history_error.find("/pipeline_schedules/13/pipelines"), std::string::npos)
        << snapshot->history_error;
    EXPECT_EQ(snapshot->history_error.find(kToken), std::string::npos) << snapshot->history_error;
    for (const auto& request : fake_.requests) {
      EXPECT_EQ(request.url.find("/pipeline_schedules/21/pipelines"), std::string::npos);
    }
  }
}

TEST_F(GitLabSourceTest, ErrorAnswersAreWordedFromGitLabsBodies) {
  struct Case {
    long status;
    std::string body;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {401, R"({"message":"401 Unauthorized"})",
       "GET /api/v4/projects/acme%2Fwidgets/pipeline_schedules: 401 unauthorized: 401 "
       "Unauthorized (check the token: expired, revoked or mistyped)"},
      {403,
       R"({"error":"insufficient_scope","error_description":"The request requires higher privileges than provided by the access token.","scope":"api read_api"})",
       "403 forbidden: The request requires higher privileges than provided by the access "
       "token. (scope api read_api needed) (the token needs the read_api scope"},
      {404, R"({"message":"404 Project Not Found"})",
       "404 not found: 404 Project Not Found (does the project exist"},
      {502, "<html><body><h1>502 Bad Gateway</h1></body></html>",
       "HTTP 502 (gave up after 3 attempts)"},
  };
  for (const auto& c : cases) {
    fake_.requests.clear();
    fake_.routes[kPage1] = {c.status, c.body, {}};
    auto source = Make();
    auto snapshot = List(*source);
    ASSERT_FALSE(snapshot.ok()) << c.status;
    EXPECT_NE(snapshot.error().find(c.expected), std::string::npos) << snapshot.error();
    EXPECT_EQ(fake_.requests.size(), c.status >= 500 ? 3u : 1u) << c.status;
  }
}

TEST_F(GitLabSourceTest, A429WaitsItsRetryAfterAndIsARecoveredProblem) {
  fake_.first[kPage1] = {
      {429, "Retry later\n", {{"retry-after", "2"}, {"ratelimit-remaining", "0"}}}};
  auto source = Make();
  auto snapshot = List(*source);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  ASSERT_EQ(clock_.sleeps().size(), 1u);
  EXPECT_EQ(clock_.sleeps()[0], std::chrono::seconds(2));
  std::string problems = Problems(*snapshot);
  EXPECT_NE(problems.find("rate_limited: GET /api/v4/projects/acme%2Fwidgets/pipeline_schedules: "
                          "HTTP 429; retrying"),
            std::string::npos)
      << problems;
  auto counts = source->RequestCounts();
  ASSERT_TRUE(counts.has_value());
  EXPECT_EQ(counts->by_outcome.at("429"), 1u);
}

TEST_F(GitLabSourceTest, NoQuotaLeftBlocksRequestsUntilTheReset) {
  fake_.routes[kPage1].headers["ratelimit-remaining"] = "0";
  fake_.routes[kPage1].headers["ratelimit-reset"] = std::to_string(kNow + 40);
  auto source = Make();
  auto first = List(*source);
  ASSERT_FALSE(first.ok());  // the second page is not asked for
  EXPECT_NE(first.error().find("rate limited until 2026-11-30T12:00:40Z"), std::string::npos)
      << first.error();
  std::size_t sent = fake_.requests.size();
  auto again = source->List(ListContext{kNow + 10, &cancelled_});
  EXPECT_FALSE(again.ok());
  EXPECT_EQ(fake_.requests.size(), sent);
  auto later = source->List(ListContext{kNow + 41, &cancelled_});
  EXPECT_GT(fake_.requests.size(), sent);
}

TEST_F(GitLabSourceTest, TheTokenNeverReachesAMessage) {
  // A proxy that echoes the Authorization header in its error page, in JSON and in plain text.
  fake_.routes[kPage1] = {401, R"({"message":"401 Unauthorized: Bearer )" + kToken + R"("})", {}};
  auto source = Make();
  auto snapshot = List(*source);
  ASSERT_FALSE(snapshot.ok());
  for (std::size_t length = 8; length <= kToken.size(); ++length) {
    EXPECT_EQ(snapshot.error().find(kToken.substr(6, length - 6 + 1)), std::string::npos)
        << snapshot.error();
  }
  EXPECT_NE(snapshot.error().find("[redacted]"), std::string::npos) << snapshot.error();
  fake_.routes[kPage1] = {503, "upstream said " + kToken, {}};
  auto again = List(*source);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().find(kToken), std::string::npos) << again.error();
}

// Issue #34, item 9: any run of 8 of the token's characters, in any case, is a piece of it.
std::string TokenPiece(const std::string& text, const std::string& token) {
  auto lower = [](std::string value) {
    for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return value;
  };
  std::string haystack = lower(text), needle = lower(token);
  for (std::size_t at = 0; at + 8 <= needle.size(); ++at) {
    if (haystack.find(needle.substr(at, 8)) != std::string::npos) return needle.substr(at, 8);
  }
  return {};
}

TEST_F(GitLabSourceTest, ATokenEchoedSplitOrUpperCasedIsRedacted) {
  std::string upper = kToken;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::vector<std::string> echoes = {
      kToken.substr(0, 12) + "..." + kToken.substr(12) + kToken.substr(12),  // split, repeated
      upper,                                                                 // upper-cased
      "secretTO and " + kToken.substr(14, 9) + " and KEN01234",              // runs of 8+
      "Bearer%20" + kToken.substr(0, 10) + "%" + kToken.substr(10),          // cut by an escape
  };
  auto source = Make();
  for (long status : {401L, 403L, 503L}) {
    for (const auto& echo : echoes) {
      fake_.routes[kPage1] = {status, R"({"message":"401 Unauthorized: )" + echo + R"("})", {}};
      auto snapshot = List(*source);
      ASSERT_FALSE(snapshot.ok());
      EXPECT_EQ(TokenPiece(snapshot.error(), kToken), "") << status << ": " << snapshot.error();
      EXPECT_NE(snapshot.error().find("[redacted]"), std::string::npos) << snapshot.error();
    }
  }
  // A 503 retried past is a recovered problem, worded from the body too.
  fake_.first[kPage1] = {{503, R"({"message":"no: )" + upper + R"("})", {}}};
  fake_.routes[kPage1] = {200, "[]", {}};
  fake_.routes.erase(kPage2);
  auto recovered = List(*source);
  ASSERT_TRUE(recovered.ok()) << recovered.error();
  ASSERT_FALSE(recovered->problems.empty());
  EXPECT_EQ(TokenPiece(Problems(*recovered), kToken), "") << Problems(*recovered);
}

TEST(RedactTokenTest, RunsOfEightOrMoreInAnyCase) {
  const std::string token = "glpat-secretTOKEN0123456789";
  EXPECT_EQ(RedactToken("a glpat-secretTOKEN0123456789 b", token), "a [redacted] b");
  EXPECT_EQ(RedactToken("GLPAT-SECRET...SECRETtoken0123", token), "[redacted]...[redacted]");
  EXPECT_EQ(RedactToken("x TOKEN012 y", token), "x [redacted] y");
  // Seven characters are no piece: ordinary words stay.
  EXPECT_EQ(RedactToken("use a glpat- token: TOKEN01", token), "use a glpat- token: TOKEN01");
  EXPECT_EQ(RedactToken("anything", "short"), "anything");
  // A short secret (a database or Redis password) is hidden where it stands whole.
  EXPECT_EQ(RedactToken("pw Hunter2 or hunter2?", "hunter2"), "pw [redacted] or [redacted]?");
  EXPECT_EQ(RedactToken("", token), "");
}

TEST_F(GitLabSourceTest, AJobTokenIsRefusedWithAClearMessage) {
  WriteFile(dir_.path() / "token", "glcbt-64_abcdefABCDEF0123456789\n");
  auto source = Make();
  auto snapshot = List(*source);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_NE(snapshot.error().find("CI/CD job token (glcbt-), which cannot read pipeline "
                                  "schedules"),
            std::string::npos)
      << snapshot.error();
  EXPECT_EQ(snapshot.error().find("abcdef"), std::string::npos);
  EXPECT_TRUE(fake_.requests.empty());
}

// Issue #34, item 5: a hostile answer costs a count, never a DOM or a message per item.
const std::string kValidSchedule =
    R"({"id":13,"description":"Nightly [schedwatch: role=nightly spec_version=7]",)"
    R"("ref":"main","cron":"0 3 * * *","cron_timezone":"Europe/Berlin","active":true})";

TEST_F(GitLabSourceTest, APageOfMoreItemsThanPerPageIsRefused) {
  // 16 MiB of one schedule and 8 M zeros: GitLab never sends more than per_page=100 items.
  std::string page = "[" + kValidSchedule;
  while (page.size() + 2 < (16u << 20)) page += ",0";
  fake_.routes[kPage1] = {200, page + "]", {}};
  auto source = Make();
  auto snapshot = List(*source);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error(),
            "GET /api/v4/projects/acme%2Fwidgets/pipeline_schedules: the answer holds more than "
            "100 pipeline schedules, more than a page");
  // 101 items are refused too; 100 are a page.
  std::string hundred = "[" + kValidSchedule;
  for (int i = 1; i < 100; ++i) hundred += ",0";
  fake_.routes[kPage1] = {200, hundred + ",0]", {}};
  EXPECT_FALSE(List(*source).ok());
  fake_.routes[kPage1] = {200, hundred + "]", {}};
  fake_.routes.erase(kPage2);
  auto full = List(*source);
  ASSERT_TRUE(full.ok()) << full.error();
  EXPECT_EQ(Objects(*full, "nightly").size(), 1u);
}

TEST_F(GitLabSourceTest, UnreadableItemsPastTheCapAreCountedNotListed) {
  // Three full pages: one schedule and 299 unreadable items.
  for (int page = 1; page <= 3; ++page) {
    std::string body = "[";
    for (int i = 0; i < 100; ++i) {
      body += i > 0 ? "," : "";
      body += page == 1 && i == 0 ? kValidSchedule : "0";
    }
    fake_.routes[fmt::format("{}/pipeline_schedules?per_page=100&page={}", kProject, page)] = {
        200, body + "]", {{"x-next-page", page < 3 ? std::to_string(page + 1) : ""}}};
  }
  fake_.routes[Pipelines(13)] = {200, "[]", {}};
  auto source = Make();
  auto snapshot = List(*source);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(Objects(*snapshot, "nightly").size(), 1u);
  std::size_t listed = 0;
  for (const auto& problem : snapshot->problems) listed += problem.reason == "malformed_object";
  EXPECT_EQ(listed, ProblemSink::kDefaultCap);
  EXPECT_NE(Problems(*snapshot).find("malformed_object: 299 problems like this one (100 listed): "
                                     "schedules page 1: pipeline schedule #2 on the page: not an "
                                     "object"),
            std::string::npos)
      << Problems(*snapshot).substr(0, 400);
}

TEST_F(GitLabSourceTest, DeeplyNestedItemsAreProblemsNotBuilt) {
  // 16 MiB: one schedule, then 8 M nested arrays (a DOM of 648 MB if built).
  std::string page = "[" + kValidSchedule + ",";
  std::size_t depth = ((16u << 20) - page.size()) / 2;
  page.append(depth, '[');
  page.append(depth, ']');
  fake_.routes[kPage1] = {200, page + "]", {}};
  fake_.routes.erase(kPage2);
  auto source = Make();
  auto snapshot = List(*source);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(Objects(*snapshot, "nightly").size(), 1u);
  EXPECT_NE(Problems(*snapshot).find("malformed_object: schedules page 1: pipeline schedule #2 on "
                                     "the page: it is nested too deep"),
            std::string::npos)
      << Problems(*snapshot);
  // An item of too many values is not built either; an item 32 deep still is.
  std::string wide = R"({"id":1,"x":[0)";
  for (int i = 0; i < 10000; ++i) wide += ",0";
  wide += "]}";
  std::string nested = R"({"id":14,"description":"x","ref":"main","cron":"0 4 * * 0",)"
                       R"("active":true,"extra":)" +
                       std::string(31, '[') + std::string(31, ']') + "}";
  fake_.routes[kPage1] = {200, "[" + kValidSchedule + "," + wide + "," + nested + "]", {}};
  auto again = List(*source);
  ASSERT_TRUE(again.ok()) << again.error();
  std::string problems = Problems(*again);
  EXPECT_NE(problems.find("pipeline schedule #2 on the page: it holds too many values"),
            std::string::npos)
      << problems;
  EXPECT_EQ(problems.find("pipeline schedule #3"), std::string::npos) << problems;
}

TEST_F(GitLabSourceTest, APipelinePageOfMoreThanPerPageIsRefused) {
  std::string page = "[";
  for (int i = 1; i <= 21; ++i) {
    page += fmt::format(R"({}{{"id":{},"status":"success","created_at":"2026-11-30T03:00:00Z"}})",
                        i > 1 ? "," : "", 9000 + i);
  }
  fake_.routes[Pipelines(13)] = {200, page + "]", {}};
  auto source = Make();
  // The pipelines are the history: a refused page leaves the schedules standing without it.
  auto snapshot = List(*source);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_FALSE(snapshot->objects.empty());
  EXPECT_TRUE(snapshot->history.empty());
  EXPECT_NE(
      snapshot->history_error.find("the answer holds more than 20 pipelines, more than a page"),
      std::string::npos)
      << snapshot->history_error;
}

// Issue #34, item 8: past GitLab's own 255-character limits a schedule is no schedule GitLab
// wrote: a malformed_object, never kept, never quoted.
TEST_F(GitLabSourceTest, TextsPastGitLabsLimitsAreMalformedObjects) {
  auto schedule = [](int id, const std::string& description, const std::string& ref,
                     const std::string& cron) {
    return fmt::format(R"({{"id":{},"description":"{}","ref":"{}","cron":"{}","active":true}})", id,
                       description, ref, cron);
  };
  const std::string marker = "[schedwatch: role=nightly spec_version=7]";
  const std::string huge_cron = "0 3 * * *" + std::string((14u << 20) - 9, ' ');
  const std::string long_description = std::string(256 - marker.size(), 'd') + marker;
  // 255 characters are GitLab's limit, counted in characters: 255 two-byte ones are fine.
  std::string accented;
  for (int i = 0; i < 255 - 1 - static_cast<int>(marker.size()); ++i) accented += "\u00e9";
  fake_.routes[kPage1] = {200,
                          "[" + schedule(31, "Big " + marker, "main", huge_cron) + "," +
                              schedule(32, marker, std::string(256, 'r'), "0 3 * * *") + "," +
                              schedule(33, long_description, "main", "0 3 * * *") + "," +
                              schedule(34, std::string(255 - marker.size(), 'd') + marker,
                                       std::string(255, 'r'), "0 3 * * *") +
                              "," + schedule(35, accented + " " + marker, "main", "0 3 * * *") +
                              "]",
                          {}};
  fake_.routes.erase(kPage2);
  for (int id : {34, 35}) fake_.routes[Pipelines(id)] = {200, "[]", {}};
  auto source = Make();
  auto snapshot = List(*source);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  std::string problems = Problems(*snapshot);
  EXPECT_NE(problems.find("pipeline schedule #1 on the page: its cron is longer than 255 "
                          "characters"),
            std::string::npos)
      << problems.substr(0, 2000);
  EXPECT_NE(problems.find("#2 on the page: its ref is longer than 255 characters"),
            std::string::npos)
      << problems.substr(0, 2000);
  EXPECT_NE(problems.find("#3 on the page: its description is longer than 255 characters"),
            std::string::npos)
      << problems.substr(0, 2000);
  EXPECT_LT(problems.size(), 2000u);
  std::vector<std::string> ids;
  for (const auto* object : Objects(*snapshot, "nightly")) ids.emplace_back(object->id());
  EXPECT_EQ(ids, (std::vector<std::string>{"34", "35"}));
  for (const auto& object : snapshot->objects) EXPECT_LT(object.schedule().size(), 256u);
}

TEST(GitLabMappingTest, DescriptionMarkers) {
  auto marked = gitlab::DescriptionMarker("Nightly [schedwatch: role=nightly spec_version=3] x");
  ASSERT_TRUE(marked.has_value());
  ASSERT_TRUE(marked->ok()) << marked->error();
  EXPECT_EQ((*marked)->role, "nightly");
  EXPECT_EQ((*marked)->spec_version, "3");
  auto alone = gitlab::DescriptionMarker("schedwatch: role=a");
  ASSERT_TRUE(alone.has_value() && alone->ok());
  EXPECT_EQ((*alone)->role, "a");
  EXPECT_FALSE(gitlab::DescriptionMarker("Nightly export").has_value());
  auto open = gitlab::DescriptionMarker("x [schedwatch: role=a");
  ASSERT_TRUE(open.has_value());
  EXPECT_FALSE(open->ok());
  EXPECT_EQ(gitlab::DescriptionWithMarker("Nightly export", {"nightly", "3"}),
            "Nightly export [schedwatch: role=nightly spec_version=3]");
  auto round = gitlab::DescriptionMarker(gitlab::DescriptionWithMarker("", {"r", "1"}));
  ASSERT_TRUE(round.has_value() && round->ok());
  EXPECT_EQ((*round)->role, "r");
}

TEST(GitLabMappingTest, TimeZonesAsGitLabAcceptsThem) {
  EXPECT_EQ(gitlab::IanaZone("Pacific Time (US & Canada)"), "America/Los_Angeles");
  EXPECT_EQ(gitlab::IanaZone("UTC"), "Etc/UTC");
  EXPECT_EQ(gitlab::IanaZone(""), "UTC");
  EXPECT_EQ(gitlab::IanaZone("Asia/Seoul"), "Asia/Seoul");
  EXPECT_EQ(gitlab::IanaZone("Mars/Olympus_Mons"), "");
  EXPECT_EQ(gitlab::IanaZone("pacific time (us & canada)"), "");  // exact names only
}

TEST(GitLabMappingTest, AnErrorBodyIsReadWithinBounds) {
  EXPECT_EQ(gitlab::ErrorMessage(R"({"message":{"base":["is invalid"]}})"),
            R"({"base":["is invalid"]})");
  // 16 MiB of values, or of nesting, in an error body: nothing worded from it, nothing built.
  std::string zeros = R"({"message":[0)";
  while (zeros.size() < (16u << 20)) zeros += ",0";
  EXPECT_EQ(gitlab::ErrorMessage(zeros + "]}"), "");
  EXPECT_EQ(gitlab::ErrorMessage(R"({"message":)" + std::string(1u << 20, '[') +
                                 std::string(1u << 20, ']') + "}"),
            "");
}

TEST(GitLabMappingTest, NextPageFromXNextPage) {
  const std::string url = kProject + "/pipeline_schedules?per_page=100&page=1";
  EXPECT_EQ(gitlab::NextPageUrl(url, {{"x-next-page", "2"}}),
            kProject + "/pipeline_schedules?per_page=100&page=2");
  EXPECT_EQ(gitlab::NextPageUrl(url, {{"x-next-page", ""}}), "");
  EXPECT_EQ(gitlab::NextPageUrl(url, {}), "");
  EXPECT_EQ(gitlab::NextPageUrl(kProject + "/x?per_page=5", {{"x-next-page", "3"}}),
            kProject + "/x?per_page=5&page=3");
  EXPECT_EQ(gitlab::NextPageUrl(url, {{"x-next-page", "1"}}), url);  // the loop guard's to say
}

// A pipeline is named by its id and web_url: its exemplar's run_id and run_url.
TEST(GitlabPipelines, NamedByIdAndWebUrl) {
  auto page = gitlab::ParsePipelinePage(
      R"([{"id":4711,"status":"success","created_at":"2024-05-01T03:00:00Z",)"
      R"("updated_at":"2024-05-01T03:05:00Z","web_url":"https://gitlab.example/p/-/pipelines/4711"}])",
      "schedule 13");
  ASSERT_TRUE(page.ok()) << page.error();
  RunHistory history;
  gitlab::AddPipeline(history, page->pipelines.at(0));
  ASSERT_EQ(history.runs.size(), 1u);
  ASSERT_TRUE(history.runs[0].identity);
  EXPECT_EQ(history.runs[0].identity->id, "4711");
  EXPECT_EQ(history.runs[0].identity->url, "https://gitlab.example/p/-/pipelines/4711");
}

}  // namespace
}  // namespace schedwatch
