// The status page, its timeline and the JSON API, rendered from fixture state at a fixed time.
// Golden files: tests/golden/status/ (SCHEDWATCH_UPDATE_GOLDEN=1 rewrites them).
#include "exporter/pages/status_page.h"

#include <gtest/gtest.h>

#include <regex>

#include "exporter/pages/timeline.h"
#include "exporter/refresh/run_history.h"
#include "sources/catalog.h"
#include "tests/test_util.h"

namespace schedwatch {
namespace {

namespace fs = std::filesystem;
const fs::path kGolden = fs::path(SCHEDWATCH_TEST_DIR) / "golden" / "status";
constexpr std::int64_t kNow = 1767268800;  // 2026-01-01T12:00:00Z
constexpr std::int64_t kMinute = 60;

Run Ran(std::int64_t started_ago, std::optional<std::int64_t> finished_ago, Run::Outcome outcome) {
  Run run;
  run.started = kNow - started_ago;
  if (finished_ago) run.finished = kNow - *finished_ago;
  run.outcome = outcome;
  return run;
}

struct Fixture {
  std::shared_ptr<Spec> spec;
  RefreshResult result;
  RunHistoryStore store;

  // What each role's source showed: objects and runs.
  struct Seen {
    Seen(std::vector<LiveObject> objects = {}, std::vector<Run> runs = {},
         bool confirmed_absent = false, std::optional<std::int64_t> progress = std::nullopt,
         std::optional<std::string> ledger = std::nullopt)
        : objects(std::move(objects)),
          runs(std::move(runs)),
          confirmed_absent(confirmed_absent),
          progress(progress),
          ledger(std::move(ledger)) {}
    std::vector<LiveObject> objects;
    std::vector<Run> runs;
    bool confirmed_absent;
    std::optional<std::int64_t> progress;
    std::optional<std::string> ledger;
  };

  Fixture() {
    auto parsed = ParseSpec(R"(version: 1
defaults: {max_runtime: 30m}
sources:
  demo: {type: file, path: live.yaml}
  partner: {type: file, path: partner.yaml}
jobs:
  - {role: backup, source: demo, schedule: "0 2 * * *", timezone: Europe/Berlin, spec_version: "4", template: backup.yaml}
  - {role: billing, source: demo, schedule: "*/5 * * * *", spec_version: "1", stale_after: 15m,
     labels: {team: payments, tier: "1"}}
  - {role: export, source: demo, schedule: "0 * * * *", spec_version: "5"}
  - {role: gate, source: demo, schedule: "*/5 * * * *", spec_version: "3"}
  - role: ingest
    source: demo
    schedule: "0 */6 * * *"
    spec_version: "9"
    progress: {file: ingest.checkpoint, stale_after: 1h}
  - {role: partner-feed, source: partner, schedule: "15 * * * *", spec_version: "1"}
  - {role: retry, source: demo, schedule: "*/10 * * * *", timezone: Asia/Seoul, spec_version: "7", max_runtime: 5m,
     labels: {team: payments}}
  - {role: sync, source: demo, schedule: "0 */2 * * *", spec_version: "2"}
)",
                            "/specs/spec.yaml", BuiltInCatalog());
    EXPECT_TRUE(parsed.ok()) << parsed.error();
    spec = std::make_shared<Spec>(std::move(*parsed));
    result.spec = spec;
    result.time = kNow;
    result.complete = true;
    SourceStatus demo;
    demo.name = "demo";
    demo.type = "file";
    demo.up = true;
    demo.history_up = true;
    demo.last_sync = kNow;
    demo.objects = 8;
    SourceStatus partner;
    partner.name = "partner";
    partner.type = "file";
    partner.error = "cannot read /specs/partner.yaml: No such file or directory";
    result.sources = {demo, partner};

    using O = Run::Outcome;
    std::map<std::string, Seen> seen;
    seen["backup"] = {{{"demo/backup", "backup", "0 2 * * *", "Europe/Berlin", "3", true}},
                      {Ran(34 * 3600, 34 * 3600 - 15 * kMinute, O::kSucceeded),
                       Ran(10 * 3600, 10 * 3600 - 14 * kMinute, O::kSucceeded)},
                      false,
                      std::nullopt,
                      std::string("demo/backup")};
    seen["billing"] = {{{"demo/billing", "billing", "*/5 * * * *", "", "1", true}},
                       {Ran(20 * kMinute, 19 * kMinute, O::kSucceeded),
                        Ran(3 * kMinute, std::nullopt, O::kRunning)}};
    seen["export"] = {{{"demo/export", "export", "0 * * * *", "", "5", true}},
                      {Ran(180 * kMinute, 175 * kMinute, O::kSucceeded),
                       Ran(120 * kMinute, 115 * kMinute, O::kFailed),
                       Ran(45 * kMinute, std::nullopt, O::kRunning)}};
    seen["gate"] = {{{"demo/gate", "gate", "*/5 * * * *", "", "3", true}},
                    {Ran(3 * kMinute, 2 * kMinute, O::kSucceeded)}};
    seen["ingest"] = {{{"demo/ingest", "ingest", "0 */6 * * *", "", "9", true}},
                      {Ran(2 * kMinute, 1 * kMinute, O::kSucceeded)},
                      false,
                      kNow - 3 * 3600};
    seen["retry"] = {{},
                     {Ran(120 * kMinute, 119 * kMinute, O::kSucceeded)},
                     true,
                     std::nullopt,
                     std::string("demo/retry")};
    seen["sync"] = {{{"demo/sync", "sync", "0 */2 * * *", "", "2", true},
                     {"demo/sync-copy", "sync", "0 */2 * * *", "", "2", false}},
                    {Ran(125 * kMinute, 124 * kMinute, O::kSucceeded),
                     Ran(5 * kMinute, 4 * kMinute, O::kFailed)}};
    for (const auto& job : spec->jobs) {
      RoleObservation observation;
      observation.source_up = job.source == "demo";
      observation.desired_since = kNow - 7 * 24 * 3600;
      const Seen& s = seen[job.role];
      observation.objects = s.objects;
      observation.absence_confirmed = s.confirmed_absent;
      for (const Run& run : s.runs) observation.history.Add(run);
      observation.last_progress = s.progress;
      observation.ledger_id = s.ledger;
      RoleResult role;
      role.job = &job;
      std::vector<Run> runs;
      role.status = Classify(job, observation, kNow, std::nullopt, &runs);
      store.Add(role, runs);
      role.objects = observation.source_up ? observation.objects : std::vector<LiveObject>{};
      result.roles.push_back(std::move(role));
    }
    result.roles.SortByRole();
    store.Finish(result, RoleOrder(*result.spec));
  }

  const RoleResult& Role(const std::string& name) const {
    for (const auto& role : result.roles) {
      if (role.job->role == name) return role;
    }
    throw std::runtime_error("no role " + name);
  }
};

std::vector<std::string> RowOrder(const std::string& html) {
  std::vector<std::string> roles;
  std::regex row("<tr data-role=\"([^\"]+)\"");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), row); it != std::sregex_iterator();
       ++it) {
    roles.push_back((*it)[1]);
  }
  return roles;
}

std::size_t Occurrences(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

TEST(StatusPageTest, GoldenOverviewRolePagesJsonAndTimelines) {
  Fixture fixture;
  testing::ExpectGolden(RenderStatusHtml(fixture.result), kGolden / "overview.html");
  testing::ExpectGolden(*RenderRoleHtml(fixture.result, "backup"), kGolden / "role-backup.html");
  testing::ExpectGolden(*RenderRoleHtml(fixture.result, "export"), kGolden / "role-export.html");
  testing::ExpectGolden(
      nlohmann::json::parse(*RenderRoleJson(fixture.result, "export")).dump(2) + "\n",
      kGolden / "role-export.json");
  const RoleResult& sync = fixture.Role("sync");
  testing::ExpectGolden(
      RenderTimelineSvg(*sync.job, sync.runs.get(), kNow, TimelineSize::kLarge) + "\n",
      kGolden / "timeline-sync.svg");
  testing::ExpectGolden(
      RenderTimelineSvg(*sync.job, sync.runs.get(), kNow, TimelineSize::kSparkline) + "\n",
      kGolden / "sparkline-sync.svg");
  std::string text =
      RenderExplainText(nlohmann::json::parse(*RenderRoleJson(fixture.result, "retry")));
  testing::ExpectGolden(text, kGolden / "explain-retry.txt");
}

TEST(StatusPageTest, EachConditionComesWithTheSentenceThatProvesIt) {
  Fixture fixture;
  auto reasons = [&](const std::string& role) {
    std::map<std::string, std::string> out;
    for (const auto& reason :
         ExplainConditions(fixture.Role(role), &fixture.result.sources[1], kNow)) {
      out[std::string(ConditionName(reason.condition))] = reason.text;
    }
    return out;
  };
  EXPECT_EQ(reasons("billing").at("stale"), "last success 19m ago, more than stale_after 15m");
  EXPECT_EQ(reasons("export").at("hung"),
            "a run started 45m ago (2026-01-01T11:15:00+00:00) and has not finished: 45m "
            "running, more than max_runtime 30m");
  EXPECT_EQ(reasons("retry").at("missing"),
            "no live object in source demo in two reads of the same refresh");
  EXPECT_EQ(reasons("backup").at("drift"), "demo/backup has spec_version \"3\", the spec \"4\"");
  EXPECT_EQ(reasons("sync").at("duplicate"),
            "2 live objects hold the role: demo/sync, demo/sync-copy");
  EXPECT_EQ(reasons("sync").at("failing"),
            "the latest finished run failed 4m ago; last success 2h4m ago");
  EXPECT_EQ(reasons("ingest").at("stalled"),
            "success is fresh, but the progress checkpoint is from 3h ago, more than its "
            "stale_after 1h");
  EXPECT_EQ(reasons("partner-feed").at("unknown"),
            "source partner could not be listed: cannot read /specs/partner.yaml: No such "
            "file or directory; nothing else is claimed");
  EXPECT_NE(reasons("retry")
                .at("not_started")
                .find("2 fire times (2026-01-01T20:40:00+09:00, "
                      "2026-01-01T20:50:00+09:00) passed"),
            std::string::npos)
      << reasons("retry").at("not_started");
  // Each reason links the runbook anchor rulegen links.
  std::string page = *RenderRoleHtml(fixture.result, "billing");
  EXPECT_NE(page.find("https://github.com/schedwatch/schedwatch/blob/main/docs/"
                      "runbook.md#schedwatchjobsuccessstale"),
            std::string::npos);
}

TEST(StatusPageTest, ThresholdsSayWhereTheyCameFrom) {
  Fixture fixture;
  std::map<std::string, std::string> origin;
  for (const auto& t : Thresholds(*fixture.Role("retry").job)) origin[t.name] = t.origin;
  EXPECT_EQ(origin["max_runtime"], "set on the job");
  EXPECT_EQ(origin["start_grace"], "built-in default");
  EXPECT_EQ(origin["stale_after"], "derived: 2 × period + max_runtime (2 × 10m + 5m)");
  origin.clear();
  for (const auto& t : Thresholds(*fixture.Role("billing").job)) origin[t.name] = t.origin;
  EXPECT_EQ(origin["stale_after"], "set on the job");
  EXPECT_EQ(origin["max_runtime"], "spec defaults");
}

TEST(StatusPageTest, OverviewPutsProblemsFirstAndCountsEachCondition) {
  Fixture fixture;
  std::string html = RenderStatusHtml(fixture.result);
  // unknown, missing, duplicate, drift, hung, failing, stale, stalled, ok: the table's order.
  EXPECT_EQ(RowOrder(html), (std::vector<std::string>{"partner-feed", "retry", "sync", "backup",
                                                      "export", "billing", "ingest", "gate"}));
  EXPECT_NE(html.find("data-condition=\"missing\" href=\"?condition=missing\">missing <b>1</b>"),
            std::string::npos);
  EXPECT_NE(html.find("<option value=\"ok\">ok (1)</option>"), std::string::npos);
}

TEST(StatusPageTest, OverviewFiltersByConditionSourceAndName) {
  Fixture fixture;
  OverviewFilter filter;
  filter.condition = "stale";
  EXPECT_EQ(RowOrder(RenderStatusHtml(fixture.result, {}, filter)),
            (std::vector<std::string>{"retry", "export", "billing"}));
  filter = {};
  filter.source = "partner";
  EXPECT_EQ(RowOrder(RenderStatusHtml(fixture.result, {}, filter)),
            (std::vector<std::string>{"partner-feed"}));
  filter = {};
  filter.query = "IN";  // any case
  EXPECT_EQ(RowOrder(RenderStatusHtml(fixture.result, {}, filter)),
            (std::vector<std::string>{"billing", "ingest"}));
  filter = {};
  filter.limit = 2;
  std::string limited = RenderStatusHtml(fixture.result, {}, filter);
  EXPECT_EQ(RowOrder(limited), (std::vector<std::string>{"partner-feed", "retry"}));
  EXPECT_NE(limited.find("6 more: narrow the filters or <a href=\"?limit=all\">show all</a>"),
            std::string::npos);
  filter = {};
  filter.label = "team=payments";
  std::string by_team = RenderStatusHtml(fixture.result, {}, filter);
  EXPECT_EQ(RowOrder(by_team), (std::vector<std::string>{"retry", "billing"}));
  EXPECT_NE(by_team.find("name=\"label\" placeholder=\"team=db\" autocomplete=\"off\" "
                         "value=\"team=payments\""),
            std::string::npos);
  EXPECT_NE(by_team.find("<small class=\"labels\">team=payments, tier=1</small>"),
            std::string::npos);
  filter.label = "tier";  // any value
  EXPECT_EQ(RowOrder(RenderStatusHtml(fixture.result, {}, filter)),
            (std::vector<std::string>{"billing"}));
  filter.label = "team=platform";
  EXPECT_TRUE(RowOrder(RenderStatusHtml(fixture.result, {}, filter)).empty());
  filter = {};
  filter.condition = "no-such-condition";  // ignored, like an empty one
  EXPECT_EQ(RowOrder(RenderStatusHtml(fixture.result, {}, filter)).size(), 8u);
}

TEST(StatusPageTest, TimelineDrawsEveryRunLabelledAndTheFireTimes) {
  Fixture fixture;
  const RoleResult& role = fixture.Role("export");
  std::string svg = RenderTimelineSvg(*role.job, role.runs.get(), kNow, TimelineSize::kLarge);
  EXPECT_EQ(Occurrences(svg, "<g class=\"run "), 3u);
  EXPECT_EQ(Occurrences(svg, "<g class=\"run succeeded\"><title>succeeded: started"), 1u);
  EXPECT_EQ(Occurrences(svg, "<g class=\"run failed\"><title>failed: started"), 1u);
  EXPECT_EQ(Occurrences(svg, "<g class=\"run hung\"><title>hung: started"), 1u);
  // Hourly from 12:00 yesterday (the window's start) to 14:00 (2 hours after now).
  EXPECT_EQ(Occurrences(svg, "<line class=\"fire\""), 27u);
  EXPECT_EQ(Occurrences(svg, "<line class=\"now\""), 1u);
  EXPECT_EQ(Occurrences(svg, "class=\"max-runtime\""), 3u);
  // A five-minute schedule has too many ticks for the picture: the latest ones still show.
  const RoleResult& gate = fixture.Role("gate");
  std::string dense = RenderTimelineSvg(*gate.job, gate.runs.get(), kNow, TimelineSize::kLarge);
  EXPECT_NE(dense.find("class=\"dense\""), std::string::npos);
  EXPECT_EQ(Occurrences(dense, "<line class=\"fire\""), 3u);
  std::string spark = RenderTimelineSvg(*gate.job, gate.runs.get(), kNow, TimelineSize::kSparkline);
  EXPECT_EQ(Occurrences(spark, "<line class=\"fire\""), 0u);
  EXPECT_EQ(Occurrences(spark, "<rect class=\"run succeeded\""), 1u);
  // No run at all still draws a picture.
  EXPECT_NE(RenderTimelineSvg(*gate.job, nullptr, kNow, TimelineSize::kLarge).find("</svg>"),
            std::string::npos);
}

TEST(StatusPageTest, TimelineWindowIsADayOrTwoPeriodsAtMostTwoMonths) {
  Fixture fixture;
  const JobSpec& hourly = *fixture.Role("export").job;
  EXPECT_EQ(kNow - TimelineWindowFor(hourly, kNow).start, 24 * 3600);
  JobSpec weekly = hourly;
  weekly.period = 7 * 24 * 3600;
  EXPECT_EQ(kNow - TimelineWindowFor(weekly, kNow).start, 14 * 24 * 3600);
  weekly.period = 4 * 365 * 24 * 3600;
  EXPECT_EQ(kNow - TimelineWindowFor(weekly, kNow).start, 62 * 24 * 3600);
}

TEST(StatusPageTest, EscapesEveryFieldThatCameFromOutside) {
  Fixture fixture;
  const std::string evil = "x<script>alert(1)</script>&\"'";
  // Role names are restricted by the spec loader; the renderers do not rely on it.
  std::string role_name = "a<b&\"c'";
  for (auto& job : fixture.spec->jobs) {
    if (job.role == "sync") {
      job.role = role_name;
      auto alerting = std::make_shared<JobAlerting>();
      alerting->labels = {{"team", evil}};
      job.alerting = alerting;
    }
  }
  for (std::size_t i = 0; i < fixture.result.roles.size(); ++i) {
    RoleResult& role = fixture.result.roles.Mutable(i);
    std::vector<LiveObject> objects(role.objects.begin(), role.objects.end());
    for (auto& object : objects) {
      object.set_id(evil + std::string(object.id()));
      object.set_schedule(evil);
      object.set_timezone(evil);
      object.set_spec_version(evil);
    }
    role.objects = std::move(objects);
  }
  fixture.result.sources[1].error = evil;
  fixture.result.roles.SortByRole();
  std::vector<std::string> pages = {RenderStatusHtml(fixture.result)};
  for (const auto& role : fixture.result.roles) {
    pages.push_back(*RenderRoleHtml(fixture.result, role.job->role));
  }
  for (const auto& page : pages) {
    EXPECT_EQ(page.find("<script>"), std::string::npos);
    EXPECT_EQ(page.find("a<b"), std::string::npos);
    EXPECT_EQ(page.find("&\"'"), std::string::npos);
  }
  std::string all = pages[0] + pages[1];
  EXPECT_NE(pages[0].find("x&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;&#39;"),
            std::string::npos);
  EXPECT_NE(pages[0].find("data-role=\"a&lt;b&amp;&quot;c&#39;\""), std::string::npos);
  EXPECT_NE(pages[0].find("href=\"roles/a%3Cb%26%22c%27\""), std::string::npos);
  // The JSON keeps them as they are, as strings.
  auto json = nlohmann::json::parse(*RenderRoleJson(fixture.result, role_name));
  EXPECT_EQ(json["role"], role_name);
  EXPECT_EQ(json["objects"][0]["schedule"], evil);
  EXPECT_EQ(json["labels"]["team"], evil);
  EXPECT_NE(json["reasons"][0]["reason"].get<std::string>().find(evil), std::string::npos);
  auto status = nlohmann::json::parse(RenderStatusJson(fixture.result));
  nlohmann::json partner;
  for (const auto& role : status["roles"]) {
    if (role["role"] == "partner-feed") partner = role;
  }
  EXPECT_EQ(partner["reasons"][0]["reason"].get<std::string>(),
            "source partner could not be listed: " + evil + "; nothing else is claimed");
}

TEST(StatusPageTest, PagesCarryNoInlineScriptOrStyle) {
  Fixture fixture;
  std::regex inline_script("<script(?![^>]*\\ssrc=)", std::regex::ECMAScript);
  std::regex handler("\\son[a-z]+=", std::regex::icase);
  for (const std::string& page :
       {RenderStatusHtml(fixture.result), *RenderRoleHtml(fixture.result, "export")}) {
    EXPECT_FALSE(std::regex_search(page, inline_script));
    EXPECT_FALSE(std::regex_search(page, handler));
    EXPECT_EQ(page.find("style="), std::string::npos);
    EXPECT_EQ(page.find("<style"), std::string::npos);
    EXPECT_NE(page.find("<script src=\""), std::string::npos);
  }
  EXPECT_EQ(std::string(kStatusPagePolicy).find("unsafe"), std::string::npos);
  EXPECT_FALSE(RenderRoleHtml(fixture.result, "no-such-role"));
  EXPECT_FALSE(RenderRoleJson(fixture.result, "no-such-role"));
}

// The roles are written one at a time into the document: the bytes are what dumping it as one
// document gives (keys sorted, no spaces), with every role, with some, and with none.
TEST(StatusPageTest, JsonIsWrittenAsOneDocumentWouldBe) {
  Fixture fixture;
  for (std::string_view label : {"", "team=payments", "team=nobody"}) {
    std::string json = RenderStatusJson(fixture.result, {}, label);
    auto parsed = nlohmann::json::parse(json);
    EXPECT_EQ(parsed.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), json) << label;
    EXPECT_EQ(parsed["roles"].size(), label.empty() ? 8u : label == "team=payments" ? 2u : 0u);
  }
}

TEST(StatusPageTest, JsonShowsAndFiltersByTheSpecsLabels) {
  Fixture fixture;
  auto all = nlohmann::json::parse(RenderStatusJson(fixture.result));
  ASSERT_EQ(all["roles"].size(), 8u);
  for (const auto& role : all["roles"]) {
    if (role["role"] == "billing") {
      EXPECT_EQ(role["labels"], (nlohmann::json{{"team", "payments"}, {"tier", "1"}}));
    } else if (role["role"] == "gate") {
      EXPECT_EQ(role["labels"], nlohmann::json::object());
    }
  }
  auto payments = nlohmann::json::parse(RenderStatusJson(fixture.result, {}, "team=payments"));
  std::vector<std::string> roles;
  for (const auto& role : payments["roles"]) roles.push_back(role["role"]);
  EXPECT_EQ(roles, (std::vector<std::string>{"billing", "retry"}));
  EXPECT_EQ(payments["sources"].size(), 2u);  // the sources stay whole
  auto role = nlohmann::json::parse(*RenderRoleJson(fixture.result, "retry"));
  EXPECT_EQ(role["labels"]["team"], "payments");
  std::string page = *RenderRoleHtml(fixture.result, "retry");
  EXPECT_NE(page.find("<dt>labels</dt><dd id=\"labels\">team=payments</dd>"), std::string::npos);
  EXPECT_EQ(RenderRoleHtml(fixture.result, "gate")->find("<dt>labels</dt>"), std::string::npos);
}

// sync's runs: a success, then a failure. With failure_threshold 3 the page and the JSON say that
// failing was judged from fewer runs than that.
TEST(StatusPageTest, RolePageAndJsonSayHowManyRunsFailingWasJudgedFrom) {
  Fixture fixture;
  JobAlerting alerting;
  alerting.failure_threshold = 3;
  alerting.recovery_threshold = 2;
  for (auto& job : fixture.spec->jobs) {
    if (job.role == "sync") job.alerting = std::make_shared<const JobAlerting>(alerting);
  }
  std::string page = *RenderRoleHtml(fixture.result, "sync");
  EXPECT_NE(page.find("<p id=\"failing-history\">failing: failure_threshold 3, "
                      "recovery_threshold 2, judged from 2 finished runs: fewer than "
                      "failure_threshold"),
            std::string::npos);
  auto json = nlohmann::json::parse(*RenderRoleJson(fixture.result, "sync"));
  EXPECT_EQ(json["failing_judged_from"], (nlohmann::json{{"failure_threshold", 3},
                                                         {"recovery_threshold", 2},
                                                         {"finished_runs", 2},
                                                         {"short_history", true}}));
  // Roles without thresholds carry neither.
  EXPECT_EQ(RenderRoleHtml(fixture.result, "gate")->find("failing-history"), std::string::npos);
  EXPECT_FALSE(nlohmann::json::parse(*RenderRoleJson(fixture.result, "gate"))
                   .contains("failing_judged_from"));
}

// gate is in a window that closes in an hour, sync has one tomorrow: the role page, its chip and
// the JSON say which is open and which is next.
TEST(StatusPageTest, RolePageAndJsonShowOpenAndNextMaintenanceWindows) {
  Fixture fixture;
  const std::int64_t now = fixture.result.time;
  auto window = [](std::int64_t from, std::int64_t to) {
    MaintenanceWindow window;
    window.fixed = {from, to};
    window.text = "the database move";
    JobAlerting alerting;
    alerting.maintenance.push_back(window);
    return std::make_shared<const JobAlerting>(alerting);
  };
  for (auto& job : fixture.spec->jobs) {
    if (job.role == "gate") job.alerting = window(now - 600, now + 3600);
    if (job.role == "sync") job.alerting = window(now + 86400, now + 90000);
  }
  for (std::size_t i = 0; i < fixture.result.roles.size(); ++i) {
    RoleResult& role = fixture.result.roles.Mutable(i);
    if (role.job->role == "gate") role.status.maintenance_until = now + 3600;
  }
  std::string gate = *RenderRoleHtml(fixture.result, "gate");
  EXPECT_NE(gate.find("<b id=\"maintenance-open\">Open until"), std::string::npos);
  EXPECT_NE(gate.find("<span id=\"maintenance-next\">none</span>"), std::string::npos);
  EXPECT_NE(gate.find("data-maintenance=\"open\""), std::string::npos);
  EXPECT_NE(gate.find("<li><code>the database move</code></li>"), std::string::npos);
  auto gate_json = nlohmann::json::parse(*RenderRoleJson(fixture.result, "gate"));
  EXPECT_EQ(gate_json["maintenance"]["open_until"], now + 3600);
  EXPECT_TRUE(gate_json["maintenance"]["next"].is_null());

  std::string sync = *RenderRoleHtml(fixture.result, "sync");
  EXPECT_NE(sync.find("No window is open."), std::string::npos);
  EXPECT_EQ(sync.find("data-maintenance="), std::string::npos);
  auto sync_json = nlohmann::json::parse(*RenderRoleJson(fixture.result, "sync"));
  EXPECT_TRUE(sync_json["maintenance"]["open_until"].is_null());
  EXPECT_EQ(sync_json["maintenance"]["next"],
            (nlohmann::json{{"from", now + 86400}, {"to", now + 90000}}));
  // A role without windows has no section and no key.
  EXPECT_EQ(RenderRoleHtml(fixture.result, "export")->find("id=\"maintenance\""),
            std::string::npos);
  EXPECT_FALSE(
      nlohmann::json::parse(*RenderRoleJson(fixture.result, "export")).contains("maintenance"));
}

TEST(StatusPageTest, StatusJsonCarriesRunsAndReasons) {
  Fixture fixture;
  auto json = nlohmann::json::parse(RenderStatusJson(fixture.result));
  const nlohmann::json* exported = nullptr;
  for (const auto& role : json["roles"]) {
    if (role["role"] == "export") exported = &role;
  }
  ASSERT_NE(exported, nullptr);
  ASSERT_EQ((*exported)["runs"].size(), 3u);
  EXPECT_EQ((*exported)["runs"][0]["outcome"], "hung");  // newest first
  EXPECT_EQ((*exported)["runs"][1]["outcome"], "failed");
  EXPECT_EQ((*exported)["runs"][1]["duration_seconds"], 300);
  EXPECT_EQ((*exported)["runs"][1]["from"], "snapshot /specs/live.yaml");
  EXPECT_EQ((*exported)["reasons"][0]["condition"], "hung");
  EXPECT_EQ((*exported)["reasons"][0]["runbook"],
            "https://github.com/schedwatch/schedwatch/blob/main/docs/runbook.md#schedwatchjobhung");
  PageOptions options;
  options.runbook_url = "https://wiki.example/runbook";
  auto custom = nlohmann::json::parse(*RenderRoleJson(fixture.result, "export", options));
  EXPECT_EQ(custom["reasons"][0]["runbook"], "https://wiki.example/runbook#schedwatchjobhung");
}

// explain reads another exporter's answer: missing members and wrong types print as unknown.
TEST(StatusPageTest, ExplainOfAnAnswerOfOtherShapesDoesNotThrow) {
  for (const char* answer : {"[]", "null", "{}", R"({"now": "x", "source_type": 5, "template": [],
           "reasons": [{"held": "yes"}, 3], "objects": {"id": 1}, "runs": [null],
           "thresholds": "many", "conditions": 7})"}) {
    SCOPED_TRACE(answer);
    std::string text;
    EXPECT_NO_THROW(text = RenderExplainText(nlohmann::json::parse(answer)));
    EXPECT_NE(text.find("1. desired"), std::string::npos);
  }
}

TEST(StatusPageTest, ExplainPrintsNoRawControlCharactersFromLiveData) {
  nlohmann::json role = {
      {"role", "evil\x1b[2J\x1b]0;title\x07"},
      {"source", "demo"},
      {"conditions", {"drift"}},
      {"reasons",
       {{{"condition", "drift"},
         {"reason",
          "schedule \xe2\x80\xae"
          "exe.txt"},
         {"action", "check\r\nfake line"},
         {"runbook", "x"}}}},
      {"objects",
       {{{"id",
          "obj\xc2\x9b"
          "31m"},
         {"enabled", true},
         {"schedule", "\x7f"},
         {"timezone", "bad\xff"},
         {"spec_version", "1"}}}},
  };
  std::string text = RenderExplainText(role);
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    EXPECT_TRUE(byte == '\n' || (byte >= 0x20 && byte != 0x7f)) << "raw byte " << int(byte);
  }
  EXPECT_EQ(text.find("\xe2\x80\xae"), std::string::npos);
  EXPECT_EQ(text.find("\xc2\x9b"), std::string::npos);
  EXPECT_NE(text.find("evil\\x1b[2J\\x1b]0;title\\x07"), std::string::npos) << text;
  EXPECT_NE(text.find("schedule \\u202eexe.txt"), std::string::npos) << text;
  EXPECT_NE(text.find("check\\x0d\\x0afake line"), std::string::npos) << text;
  EXPECT_NE(text.find("obj\\u009b31m"), std::string::npos) << text;
  EXPECT_NE(text.find("bad\\xff"), std::string::npos) << text;
}

TEST(StatusPageTest, TerminalSafeKeepsPrintableTextAndEscapesTheRest) {
  EXPECT_EQ(TerminalSafe("backup — nightly ✓ 日本"), "backup — nightly ✓ 日本");
  EXPECT_EQ(TerminalSafe(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(TerminalSafe("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u2066x\\u2069");
  EXPECT_EQ(TerminalSafe("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(TerminalSafe("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(TerminalSafe("\xe2\x80"), "\\xe2\\x80");           // cut short
}

}  // namespace
}  // namespace schedwatch
