// `discover` on a real systemd 252's timers (the fixtures systemd_capture took from the manager
// the real-systemd test boots, with Debian's own timers): the draft and report (golden), marked
// timers keeping their roles, monotonic timers, disabled and masked ones as comments, the
// X-Schedwatch- lines to add.
#include <gtest/gtest.h>

#include <filesystem>

#include "exporter/commands/discover.h"
#include "sources/catalog.h"
#include "sources/systemd/systemd_discoverer.h"
#include "tests/sources/systemd/systemd_fixtures.h"
#include "tests/test_util.h"

namespace schedwatch::systemd {
namespace {

const std::filesystem::path kGolden =
    std::filesystem::path(SCHEDWATCH_TEST_DIR) / "golden/discover";
constexpr std::int64_t kNow = 1796183200;  // just after the fixture was captured

TimersRead FixtureRead(const nlohmann::json& manager = fixtures::LoadJson()) {
  TimersRead read;
  read.manager = fixtures::Load(manager);
  read.markers = fixtures::Markers();  // Debian's own timers have none
  for (const auto& entry : fixtures::ReadExport(fixtures::kDirectory + "journal.export")) {
    read.journal.Apply(entry);
  }
  read.monotonic_to_wall = fixtures::kMonotonicToWall;
  read.timezone = "Europe/Berlin";  // as if the manager's /etc/localtime said so
  return read;
}

Spec Parse(const std::string& text) {
  auto spec = ParseSpec(text, "spec.yaml", BuiltInCatalog());
  EXPECT_TRUE(spec) << spec.error();
  return spec ? std::move(*spec) : Spec{};
}

DiscoverOutcome DiscoverFixture(const Spec& spec, const std::string& merge_into = "",
                                const nlohmann::json& manager = fixtures::LoadJson()) {
  DiscoverRequest request;
  request.spec = &spec;
  request.now = kNow;
  request.merge_into = merge_into;
  request.draft_sources = "  host:\n    type: systemd\n";
  request.make_discoverer = [manager](const SourceOptions&) -> Result<std::unique_ptr<Discoverer>> {
    TimersReader read = [manager](const ListContext&) -> Result<TimersRead> {
      return FixtureRead(manager);
    };
    return std::unique_ptr<Discoverer>(
        std::make_unique<SystemdDiscoverer>(std::move(read), "/etc/systemd/system"));
  };
  return Discover(request);
}

const char kHostOnly[] = "version: 1\nsources:\n  host:\n    type: systemd\njobs: []\n";

TEST(SystemdDiscoverGolden, RealManagersTimersDraftAndReport) {
  Spec sources = Parse(kHostOnly);
  DiscoverOutcome outcome = DiscoverFixture(sources);
  EXPECT_EQ(outcome.exit_code, 0) << outcome.report;
  testing::ExpectGolden(outcome.spec_text, kGolden / "systemd-draft.yaml");
  testing::ExpectGolden(outcome.report, kGolden / "systemd-report.txt");

  Spec draft = Parse(outcome.spec_text);
  const JobSpec* ok = draft.FindJob("ok");
  ASSERT_NE(ok, nullptr) << outcome.spec_text;
  EXPECT_EQ(ok->spec_version, "3");  // its marker's, from the drop-in
  EXPECT_EQ(ok->schedule.text(), "*-*-* *:*:00/10");
  EXPECT_EQ(ok->timezone, "Europe/Berlin");
  const JobSpec* mono = draft.FindJob("mono");
  ASSERT_NE(mono, nullptr) << outcome.spec_text;
  EXPECT_TRUE(mono->schedule.is_monotonic());
  EXPECT_EQ(mono->stale_after, 2 * 15 + 30 * 60);  // 2 × OnUnitActiveSec=15s + max_runtime
  EXPECT_NE(outcome.spec_text.find("# OnUnitActiveSec=15s, OnActiveSec=2s"), std::string::npos);
  // Debian's own monotonic timer: a job with a suggested role, and a drop-in for its marker.
  const JobSpec* tmpfiles = draft.FindJob("systemd-tmpfiles-clean");
  ASSERT_NE(tmpfiles, nullptr) << outcome.spec_text;
  EXPECT_TRUE(tmpfiles->schedule.is_monotonic());
  EXPECT_EQ(*tmpfiles->stale_after, 2 * 86400 + 60);  // max_runtime 1m, from its one run
  EXPECT_NE(
      outcome.report.find("systemd-tmpfiles-clean.timer: create the drop-in /etc/systemd/system/"
                          "systemd-tmpfiles-clean.timer.d/schedwatch.conf"),
      std::string::npos)
      << outcome.report;
  EXPECT_NE(outcome.report.find("  [Unit]\n  X-Schedwatch-Role=apt-daily\n"
                                "  X-Schedwatch-Spec-Version=1\n"),
            std::string::npos)
      << outcome.report;
  // Disabled and masked timers are comments, not jobs.
  EXPECT_EQ(draft.FindJob("off"), nullptr);
  EXPECT_EQ(draft.FindJob("masked"), nullptr);
  EXPECT_NE(outcome.spec_text.find("# not a job (host): masked.timer: timer masked"),
            std::string::npos);
  EXPECT_NE(outcome.spec_text.find("# not a job (host): off.timer: timer disabled"),
            std::string::npos);
  // Marked timers ask for no marker.
  EXPECT_EQ(outcome.report.find("ok.timer:"), std::string::npos) << outcome.report;
}

TEST(SystemdDiscover, RunOnTheDraftAddsNothing) {
  Spec sources = Parse(kHostOnly);
  DiscoverOutcome first = DiscoverFixture(sources);
  Spec draft = Parse(first.spec_text);
  DiscoverOutcome second = DiscoverFixture(draft, first.spec_text);
  EXPECT_EQ(second.exit_code, 0) << second.report;
  EXPECT_NE(second.report.find("nothing to add"), std::string::npos) << second.report;
  EXPECT_EQ(second.spec_text, first.spec_text);
}

TEST(SystemdDiscover, TwoTimersClaimingOneRoleMakeOneJob) {
  Spec sources = Parse(kHostOnly);
  DiscoverRequest request;
  // fail.timer's marker says role "ok" too.
  auto read = FixtureRead();
  read.markers["fail.timer"].role = "ok";
  request.spec = &sources;
  request.now = kNow;
  request.draft_sources = "  host:\n    type: systemd\n";
  request.make_discoverer = [read](const SourceOptions&) -> Result<std::unique_ptr<Discoverer>> {
    return std::unique_ptr<Discoverer>(std::make_unique<SystemdDiscoverer>(
        [read](const ListContext&) -> Result<TimersRead> { return read; }, "/etc/systemd/system"));
  };
  DiscoverOutcome outcome = Discover(request);
  EXPECT_EQ(outcome.exit_code, 0) << outcome.report;
  EXPECT_NE(outcome.spec_text.find(
                "# not a job (host): ok.timer: its marker claims role ok, as fail.timer does"),
            std::string::npos)
      << outcome.spec_text;
}

TEST(SystemdDiscover, MonotonicTimerThatNeverRepeatsIsNoJob) {
  nlohmann::json manager = fixtures::LoadJson();
  for (auto& timer : manager["timers"]) {
    if (timer["name"] == "mono.timer") {
      timer["kind"]["TimersMonotonic"] = nlohmann::json::array(
          {"a(stt)",
           nlohmann::json::array({nlohmann::json::array({"OnBootUSec", 900000000u, 0u})})});
    }
  }
  Spec sources = Parse(kHostOnly);
  DiscoverOutcome outcome = DiscoverFixture(sources, "", manager);
  EXPECT_EQ(outcome.exit_code, 0) << outcome.report;
  EXPECT_EQ(Parse(outcome.spec_text).FindJob("mono"), nullptr);
  EXPECT_NE(outcome.spec_text.find("# not a job (host): mono.timer: no repeating trigger"),
            std::string::npos)
      << outcome.spec_text;
}

TEST(SystemdDiscover, AReadThatFailsIsSaid) {
  Spec sources = Parse(kHostOnly);
  DiscoverRequest request;
  request.spec = &sources;
  request.draft_sources = "  host:\n    type: systemd\n";
  request.make_discoverer = [](const SourceOptions&) -> Result<std::unique_ptr<Discoverer>> {
    return std::unique_ptr<Discoverer>(std::make_unique<SystemdDiscoverer>(
        [](const ListContext&) -> Result<TimersRead> {
          return Error{"cannot connect to the bus: No such file or directory"};
        },
        "/etc/systemd/system"));
  };
  DiscoverOutcome outcome = Discover(request);
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_NE(outcome.report.find("source \"host\" (systemd): not read: cannot connect to the bus"),
            std::string::npos)
      << outcome.report;
}

}  // namespace
}  // namespace schedwatch::systemd
