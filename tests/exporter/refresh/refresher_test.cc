#include "exporter/refresh/refresher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <vector>

#include "exporter/pages/explain.h"
#include "exporter/pages/status_page.h"
#include "exporter/state/state.h"
#include "schedwatch/platform/clock.h"
#include "schedwatch/timefmt.h"
#include "sources/catalog.h"
#include "sources/run_record.h"
#include "tests/exporter/refresh/published_util.h"
#include "tests/test_util.h"

namespace schedwatch {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::Role;
using testing::Source;
using testing::TempDir;
using testing::WriteFile;

constexpr std::int64_t kNow = 1796040000;  // 2026-11-30T12:00:00Z
const fs::path kSourceDir = SCHEDWATCH_SOURCE_DIR;

std::unique_ptr<Refresher> MakeRefresher(const std::string& config_file,
                                         const std::string& ledger_file = "",
                                         std::int64_t now = kNow, ShardAssignment shard = {}) {
  auto spec = LoadSpecFile(config_file);
  EXPECT_TRUE(spec.ok()) << spec.error();
  RefresherOptions options;
  options.config_file = config_file;
  options.ledger_file = ledger_file;
  options.confirm_delay = std::chrono::milliseconds(50);
  options.source_timeout = std::chrono::seconds(5);
  options.clock = [now] { return now; };
  options.shard = shard;
  auto refresher = Refresher::Create(options, std::make_shared<const Spec>(std::move(*spec)));
  EXPECT_TRUE(refresher.ok()) << refresher.error();
  return std::move(*refresher);
}

// A refresher of `config_file` on `clock`, whose wall clock a test may step.
std::unique_ptr<Refresher> MakeRefresherOn(const fs::path& config_file, platform::Clock& clock) {
  auto spec = LoadSpecFile(config_file.string());
  EXPECT_TRUE(spec.ok()) << spec.error();
  RefresherOptions options;
  options.config_file = config_file.string();
  options.confirm_delay = std::chrono::milliseconds(1);
  options.time = &clock;
  auto refresher = Refresher::Create(options, std::make_shared<const Spec>(std::move(*spec)));
  EXPECT_TRUE(refresher.ok()) << refresher.error();
  return std::move(*refresher);
}

// The lines that change from build to build or run to run.
std::string Normalize(std::string metrics) {
  for (const char* label : {"revision", "branch", "compiler", "platform"}) {
    metrics = std::regex_replace(metrics, std::regex(std::string(label) + "=\"[^\"]*\""),
                                 std::string(label) + "=\"" + label + "\"");
  }
  metrics =
      std::regex_replace(metrics, std::regex("([{,])version=\"[0-9.]+\""), "$1version=\"VERSION\"");
  return std::regex_replace(
      metrics, std::regex("(schedwatch_source_sync_duration_seconds\\{[^}]*\\}) [0-9.e+-]+"),
      "$1 DURATION");
}

TEST(RefresherTest, ExampleMetricsMatchTheGoldenFile) {
  auto refresher = MakeRefresher((kSourceDir / "examples/desired-state.yaml").string(),
                                 (kSourceDir / "examples/ledger.json").string());
  refresher->RefreshOnce();
  testing::ExpectGolden(Normalize(refresher->Current()->metrics),
                        kSourceDir / "tests/golden/example-metrics.txt");
}

// OpenMetrics: counters' families without _total, _created from the exporter's start, # UNIT.
TEST(RefresherTest, ExampleOpenMetricsMatchTheGoldenFile) {
  auto refresher = MakeRefresher((kSourceDir / "examples/desired-state.yaml").string(),
                                 (kSourceDir / "examples/ledger.json").string());
  refresher->RefreshOnce();
  testing::ExpectGolden(Normalize(refresher->Current()->openmetrics),
                        kSourceDir / "tests/golden/example-metrics.om.txt");
}

TEST(RefresherTest, ExampleShowsEveryConditionOnce) {
  auto refresher = MakeRefresher((kSourceDir / "examples/desired-state.yaml").string(),
                                 (kSourceDir / "examples/ledger.json").string());
  refresher->RefreshOnce();
  auto published = refresher->Current();
  std::map<std::string, std::string> expected{{"retry", "missing,not_started,stale"},
                                              {"gate", "ok"},
                                              {"nightly-report", "inactive"},
                                              {"cleanup", "duplicate"},
                                              {"backup", "drift"},
                                              {"digest", "not_started"},
                                              {"export", "hung"},
                                              {"sync", "failing"},
                                              {"billing", "stale"},
                                              {"ingest", "stalled"},
                                              {"partner-feed", "unknown"}};
  for (const auto& [role, conditions] : expected) {
    EXPECT_EQ(Role(*published, role).status.ConditionList(), conditions) << role;
  }
  EXPECT_EQ(Source(*published, "demo").unowned_objects, 1);
  EXPECT_FALSE(Source(*published, "partner").up);
}

// Three shards of the example: each role, with the conditions one exporter gives it, on exactly
// one shard; the unowned object counted once; every shard says which it is.
TEST(RefresherTest, ShardsOfTheExampleShowEachRoleOnce) {
  auto whole = MakeRefresher((kSourceDir / "examples/desired-state.yaml").string(),
                             (kSourceDir / "examples/ledger.json").string());
  whole->RefreshOnce();
  std::map<std::string, std::string> expected;
  for (const auto& role : whole->Current()->result.roles) {
    expected[role.job->role] = role.status.ConditionList();
  }
  ASSERT_EQ(expected.size(), 11u);
  std::map<std::string, std::string> seen;
  int unowned = 0;
  for (std::uint32_t k = 0; k < 3; ++k) {
    auto shard =
        MakeRefresher((kSourceDir / "examples/desired-state.yaml").string(),
                      (kSourceDir / "examples/ledger.json").string(), kNow, ShardAssignment{k, 3});
    shard->RefreshOnce();
    auto published = shard->Current();
    for (const auto& role : published->result.roles) {
      EXPECT_EQ(ShardAssignment::Of(role.job->role, 3), k) << role.job->role;
      EXPECT_TRUE(seen.emplace(role.job->role, role.status.ConditionList()).second)
          << role.job->role << " on two shards";
    }
    unowned += Source(*published, "demo").unowned_objects;
    const std::string& metrics = published->metrics;
    auto has = [&metrics](const std::string& line) {
      return metrics.find("\n" + line + "\n") != std::string::npos;
    };
    EXPECT_TRUE(has(fmt::format("schedwatch_exporter_shard_ordinal {}", k)));
    EXPECT_TRUE(has("schedwatch_exporter_total_shards 3"));
    EXPECT_TRUE(has("schedwatch_exporter_spec_roles 11"));
    EXPECT_TRUE(
        has(fmt::format("schedwatch_exporter_shard_roles {}", published->result.roles.size())));
    // Another shard's role is not this one's to show, and the page says which shard it is.
    for (const auto& [role, conditions] : expected) {
      if (ShardAssignment::Of(role, 3) != k) {
        EXPECT_EQ(metrics.find("role=\"" + role + "\""), std::string::npos) << role;
      }
    }
    auto json = nlohmann::json::parse(RenderStatusJson(published->result));
    EXPECT_EQ(json["shard"]["ordinal"], k);
    EXPECT_EQ(json["shard"]["total"], 3);
    EXPECT_EQ(json["shard"]["spec_roles"], 11);
    EXPECT_EQ(json["shard"]["roles"], published->result.roles.size());
  }
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(unowned, 1) << "old-migration, counted by the shard its name hashes to";
}

// A reload keeps the shard: the new spec's roles are split as the first one's were.
TEST(RefresherTest, AReloadedSpecIsShardedToo) {
  TempDir dir;
  auto spec_text = [](int roles) {
    std::string text = "version: 1\nsources: {s: {type: file, path: live.yaml}}\njobs:\n";
    for (int i = 0; i < roles; ++i) {
      text += fmt::format(
          "  - {{role: r{}, source: s, schedule: \"*/5 * * * *\", spec_version: \"1\"}}\n", i);
    }
    return text;
  };
  WriteFile(dir.path() / "spec.yaml", spec_text(20));
  WriteFile(dir.path() / "live.yaml", "objects: []\n");
  auto refresher =
      MakeRefresher((dir.path() / "spec.yaml").string(), "", kNow, ShardAssignment{1, 3});
  auto owned = [](int roles) {
    int count = 0;
    for (int i = 0; i < roles; ++i) count += ShardAssignment::Of("r" + std::to_string(i), 3) == 1;
    return count;
  };
  refresher->RefreshOnce();
  EXPECT_EQ(refresher->Current()->result.roles.size(), static_cast<std::size_t>(owned(20)));
  WriteFile(dir.path() / "spec.yaml", spec_text(50));
  ASSERT_TRUE(refresher->Reload().ok());
  refresher->RefreshOnce();
  auto published = refresher->Current();
  EXPECT_EQ(published->result.roles.size(), static_cast<std::size_t>(owned(50)));
  for (const auto& role : published->result.roles) {
    EXPECT_EQ(ShardAssignment::Of(role.job->role, 3), 1u) << role.job->role;
    EXPECT_EQ(role.status.ConditionList(), "missing") << role.job->role;
  }
  EXPECT_NE(published->metrics.find("\nschedwatch_exporter_spec_roles 50\n"), std::string::npos);
  EXPECT_NE(
      published->metrics.find(fmt::format("\nschedwatch_exporter_shard_roles {}\n", owned(50))),
      std::string::npos);
}

TEST(RefresherTest, IncidentRetryMissingWhileGateRuns) {
  auto refresher = MakeRefresher((kSourceDir / "examples/desired-state.yaml").string(),
                                 (kSourceDir / "examples/ledger.json").string());
  refresher->RefreshOnce();
  // Held: a refresh running beside the test may publish (and free) the next one meanwhile.
  const std::shared_ptr<const Published> current = refresher->Current();
  const std::string& metrics = current->metrics;
  auto has = [&metrics](const std::string& line) {
    return metrics.find(line + "\n") != std::string::npos;
  };
  EXPECT_TRUE(has(R"(schedwatch_job_registered_objects{role="retry",source="demo"} 0)"));
  EXPECT_TRUE(has(R"(schedwatch_job_condition{role="retry",source="demo",condition="missing"} 1)"));
  EXPECT_TRUE(has(R"(schedwatch_job_ledger_mismatch{role="retry",source="demo"} 1)"));
  EXPECT_TRUE(has(R"(schedwatch_job_registered_objects{role="gate",source="demo"} 1)"));
  EXPECT_TRUE(has(R"(schedwatch_job_condition{role="gate",source="demo",condition="ok"} 1)"));
  EXPECT_TRUE(has(R"(schedwatch_job_ledger_mismatch{role="gate",source="demo"} 0)"));
  // Unknown values are absent, never zero: the unknown source's role has no object count.
  EXPECT_EQ(metrics.find(R"(schedwatch_job_registered_objects{role="partner-feed")"),
            std::string::npos);
  EXPECT_TRUE(has(R"(schedwatch_source_up{source="partner",type="file"} 0)"));
}

TEST(RefresherTest, MissingIsClaimedOnlyAfterTheConfirmingReRead) {
  TempDir dir;
  WriteFile(dir.path() / "spec.yaml", R"(version: 1
sources: {s: {type: file, path: live.yaml}}
jobs:
  - {role: retry, source: s, schedule: "*/10 * * * *", spec_version: "1"}
)");
  // The object appears between the first and the confirming read: a race, not a deletion.
  WriteFile(dir.path() / "live.yaml", "objects: []\n");
  auto spec = LoadSpecFile((dir.path() / "spec.yaml").string());
  RefresherOptions options;
  options.config_file = (dir.path() / "spec.yaml").string();
  options.confirm_delay = std::chrono::milliseconds(800);
  options.clock = [] { return kNow; };
  auto refresher = Refresher::Create(options, std::make_shared<const Spec>(std::move(*spec)));
  ASSERT_TRUE(refresher.ok());
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    WriteFile(dir.path() / "live.yaml",
              "objects: [{id: a, role: retry, schedule: '*/10 * * * *', spec_version: '1'}]\n");
  });
  (*refresher)->RefreshOnce();
  writer.join();
  const RoleResult& retry = Role(*(*refresher)->Current(), "retry");
  EXPECT_FALSE(retry.status.Has(Condition::kMissing));
  EXPECT_EQ(retry.status.registered_objects, 1);

  WriteFile(dir.path() / "live.yaml", "objects: []\n");
  (*refresher)->RefreshOnce();
  EXPECT_TRUE(Role(*(*refresher)->Current(), "retry").status.Has(Condition::kMissing));
}

TEST(RefresherTest, UnchangedObjectsAreSharedWithThePublishedRefresh) {
  TempDir dir;
  WriteFile(dir.path() / "spec.yaml", R"(version: 1
sources: {s: {type: file, path: live.yaml}}
jobs:
  - {role: a, source: s, schedule: "*/10 * * * *", spec_version: "1"}
  - {role: b, source: s, schedule: "*/10 * * * *", spec_version: "1"}
)");
  auto live = [&dir](const char* b_version) {
    WriteFile(dir.path() / "live.yaml",
              fmt::format("objects:\n"
                          "  - {{id: x, role: a, schedule: '*/10 * * * *', spec_version: '1'}}\n"
                          "  - {{id: y, role: b, schedule: '*/10 * * * *', spec_version: '{}'}}\n",
                          b_version));
  };
  live("1");
  auto refresher = MakeRefresher((dir.path() / "spec.yaml").string());
  refresher->RefreshOnce();
  const std::shared_ptr<const Published> first = refresher->Current();
  live("2");  // b's object changes, a's does not
  refresher->RefreshOnce();
  const std::shared_ptr<const Published> second = refresher->Current();
  ASSERT_EQ(Role(*second, "a").objects.size(), 1u);
  EXPECT_EQ(&Role(*second, "a").objects[0], &Role(*first, "a").objects[0]);
  EXPECT_NE(&Role(*second, "b").objects[0], &Role(*first, "b").objects[0]);
  EXPECT_EQ(Role(*first, "b").objects[0].spec_version(), "1");
  EXPECT_EQ(Role(*second, "b").objects[0].spec_version(), "2");
  EXPECT_TRUE(Role(*second, "b").status.Has(Condition::kDrift));
}

// An API server that accepts connections and never answers: a hung read. (A FIFO as a
// snapshot no longer hangs: it is refused at once.) `kubeconfig` points a kubernetes source at it.
class SilentApiServer {
 public:
  explicit SilentApiServer(const fs::path& kubeconfig) {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    EXPECT_EQ(bind(listener_, reinterpret_cast<sockaddr*>(&address), length), 0);
    EXPECT_EQ(listen(listener_, 16), 0);
    EXPECT_EQ(getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length), 0);
    WriteFile(kubeconfig,
              "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
              "contexts: [{name: t, context: {cluster: c, user: u}}]\n"
              "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:" +
                  std::to_string(ntohs(address.sin_port)) +
                  "'}}]\n"
                  "users: [{name: u, user: {token: x}}]\n");
  }
  ~SilentApiServer() {
    for (int connection : accepted_) close(connection);
    close(listener_);
  }
  // Waits (bounded) until a client has connected, and keeps its connection open unanswered.
  bool AcceptOne() {
    pollfd ready{listener_, POLLIN, 0};
    if (poll(&ready, 1, 10000) != 1) return false;
    int connection = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) return false;
    accepted_.push_back(connection);
    return true;
  }

 private:
  int listener_ = -1;
  std::vector<int> accepted_;
};

TEST(RefresherTest, HangingSourceTimesOutAsUnknownAndOthersAreUnaffected) {
  TempDir dir;
  SilentApiServer server(dir.path() / "kubeconfig");
  WriteFile(dir.path() / "live.yaml",
            "objects: [{id: g, role: gate, schedule: '*/5 * * * *', spec_version: '1'}]\n"
            "runs: [{role: gate, started: -3m, finished: -2m, result: success}]\n");
  WriteFile(dir.path() / "spec.yaml", R"(version: 1
sources:
  fine: {type: file, path: live.yaml}
  stuck: {type: kubernetes, kubeconfig: kubeconfig}
jobs:
  - {role: gate, source: fine, schedule: "*/5 * * * *", spec_version: "1"}
  - {role: retry, source: stuck, schedule: "*/10 * * * *", spec_version: "1"}
)");
  auto spec = LoadSpecFile((dir.path() / "spec.yaml").string());
  ASSERT_TRUE(spec.ok()) << spec.error();
  RefresherOptions options;
  options.confirm_delay = std::chrono::milliseconds(50);
  options.source_timeout = std::chrono::seconds(1);
  options.clock = [] { return kNow; };
  auto refresher = Refresher::Create(options, std::make_shared<const Spec>(std::move(*spec)));
  ASSERT_TRUE(refresher.ok()) << refresher.error();
  auto started = std::chrono::steady_clock::now();
  (*refresher)->RefreshOnce();
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_LT(took, std::chrono::seconds(4));  // a bound on the timeout itself, not a benchmark
  auto published = (*refresher)->Current();
  EXPECT_EQ(Role(*published, "retry").status.ConditionList(), "unknown");
  EXPECT_EQ(Role(*published, "gate").status.ConditionList(), "ok");
  EXPECT_EQ(Source(*published, "stuck").error, "no answer within 1s");
  EXPECT_NE(published->metrics.find(
                "schedwatch_source_errors_total{reason=\"timeout\",source=\"stuck\"} 1\n"),
            std::string::npos);

  // The timed-out read was cancelled and stops: a later refresh starts a read of its own (and
  // never piles one on a read still running, which it reports instead).
  std::string error;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (error != "no answer within 1s" && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (*refresher)->RefreshOnce();
    error = Source(*(*refresher)->Current(), "stuck").error;
    EXPECT_TRUE(error == "no answer within 1s" || error == "the previous read has not finished yet")
        << error;
  }
  EXPECT_EQ(error, "no answer within 1s");
}

// Reads run on workers that are joined: stopping cancels a hung read instead of waiting for its
// timeout (an hour here), and no read outlives the refresher.
TEST(RefresherTest, StopCancelsAHungReadAndJoinsIt) {
  TempDir dir;
  SilentApiServer server(dir.path() / "kubeconfig");
  WriteFile(dir.path() / "spec.yaml", R"(version: 1
sources:
  stuck: {type: kubernetes, kubeconfig: kubeconfig, timeout: 1h}
jobs:
  - {role: retry, source: stuck, schedule: "*/10 * * * *", spec_version: "1"}
)");
  auto refresher = MakeRefresher((dir.path() / "spec.yaml").string());
  refresher->Start();
  ASSERT_TRUE(server.AcceptOne());  // the loop's first refresh waits inside the hung read
  refresher->Stop();                // returns once the cancelled read has (ctest's timeout if not)
  // The waiting refresh ended at once, its source unknown.
  auto published = refresher->Current();
  EXPECT_NE(Source(*published, "stuck").error.find("cancelled"), std::string::npos)
      << Source(*published, "stuck").error;
  EXPECT_EQ(Role(*published, "retry").status.ConditionList(), "unknown");
}

TEST(RefresherTest, MalformedSnapshotIsCountedAndNothingCrashes) {
  TempDir dir;
  WriteFile(dir.path() / "spec.yaml", R"(version: 1
sources:
  garbled: {type: file, path: garbled.yaml}
  partial: {type: file, path: partial.yaml}
jobs:
  - {role: a, source: garbled, schedule: "*/5 * * * *", spec_version: "1"}
  - {role: b, source: partial, schedule: "*/5 * * * *", spec_version: "1"}
  - {role: c, source: partial, schedule: "*/5 * * * *", spec_version: "1"}
)");
  WriteFile(dir.path() / "garbled.yaml", std::string("objects: [\x01\x02\xff\xfe", 14));
  WriteFile(dir.path() / "partial.yaml", R"(objects:
  - {id: b1, role: b, schedule: "*/5 * * * *", spec_version: "1"}
  - {id: c1, schedule: "*/5 * * * *"}
  - just a string
runs:
  - {role: b, started: yesterday, result: success}
  - {role: b, started: -3m, result: exploded}
)");
  auto refresher = MakeRefresher((dir.path() / "spec.yaml").string());
  refresher->RefreshOnce();
  auto published = refresher->Current();
  EXPECT_FALSE(Source(*published, "garbled").up);
  EXPECT_EQ(Role(*published, "a").status.ConditionList(), "unknown");
  const SourceStatus& partial = Source(*published, "partial");
  EXPECT_TRUE(partial.up);
  ASSERT_EQ(partial.problems.size(), 4u);
  EXPECT_EQ(partial.problems[0].message, "line 3: objects[1]: role is missing");
  EXPECT_EQ(partial.problems[1].message,
            "line 4: objects[2] is a string of 13 bytes, not a mapping");
  EXPECT_EQ(partial.problems[2].message,
            "line 6: runs[0]: started (9 bytes) is neither RFC 3339 nor relative like -15m");
  EXPECT_EQ(partial.problems[3].message,
            "line 7: runs[1]: result (8 bytes) is not success, failure or running");
  EXPECT_EQ(Role(*published, "b").status.registered_objects, 1);
  EXPECT_NE(
      published->metrics.find(
          "schedwatch_source_errors_total{reason=\"malformed_object\",source=\"partial\"} 4\n"),
      std::string::npos);
  EXPECT_NE(published->metrics.find("schedwatch_source_up{source=\"garbled\",type=\"file\"} 0\n"),
            std::string::npos);
}

// When each role was first desired is kept by role across a reload that reorders the jobs, a
// new role is desired from the reload, and a step of the wall clock moves them all.
TEST(RefresherTest, AReloadKeepsWhenEachRoleWasFirstDesired) {
  TempDir dir;
  auto spec = [&dir](std::initializer_list<const char*> roles) {
    std::string text = "version: 1\nsources: {s: {type: file, path: live.yaml}}\njobs:\n";
    for (const char* role : roles) {
      text += fmt::format(
          "  - {{role: {}, source: s, schedule: \"*/5 * * * *\", spec_version: \"1\"}}\n", role);
    }
    WriteFile(dir.path() / "spec.yaml", text);
  };
  spec({"a", "b", "c"});
  WriteFile(dir.path() / "live.yaml", "objects: []\n");
  platform::FakeClock clock;
  auto made = MakeRefresherOn(dir.path() / "spec.yaml", clock);
  Refresher& refresher = *made;
  const std::int64_t created = clock.UnixSeconds();
  refresher.RefreshOnce();
  for (const char* role : {"a", "b", "c"}) {
    EXPECT_EQ(Role(*refresher.Current(), role).status.desired_since, created) << role;
  }

  clock.Advance(std::chrono::minutes(10));
  const std::int64_t reloaded = clock.UnixSeconds();
  spec({"d", "c", "aa", "a"});  // b leaves; aa and d come; the rest move
  ASSERT_TRUE(refresher.Reload().ok());
  refresher.RefreshOnce();
  auto published = refresher.Current();
  ASSERT_EQ(published->result.roles.size(), 4u);
  EXPECT_EQ(Role(*published, "a").status.desired_since, created);
  EXPECT_EQ(Role(*published, "c").status.desired_since, created);
  EXPECT_EQ(Role(*published, "aa").status.desired_since, reloaded);
  EXPECT_EQ(Role(*published, "d").status.desired_since, reloaded);

  clock.Advance(std::chrono::seconds(30));
  clock.StepWallClock(std::chrono::hours(1));
  refresher.RefreshOnce();
  published = refresher.Current();
  EXPECT_EQ(Role(*published, "a").status.desired_since, created + 3600);
  EXPECT_EQ(Role(*published, "d").status.desired_since, reloaded + 3600);
}

TEST(RefresherTest, BadReloadKeepsTheLastGoodSpecAndSaysSo) {
  TempDir dir;
  fs::path spec = dir.path() / "spec.yaml";
  WriteFile(dir.path() / "live.yaml", "objects: []\n");
  WriteFile(spec, R"(version: 1
sources: {s: {type: file, path: live.yaml}}
jobs:
  - {role: first, source: s, schedule: "*/5 * * * *", spec_version: "1"}
)");
  auto refresher = MakeRefresher(spec.string());
  refresher->RefreshOnce();
  WriteFile(spec, "version: 1\nsources: {s: {type: file, path: live.yaml}}\njobs: [{role: x}]\n");
  auto reloaded = refresher->Reload();
  ASSERT_FALSE(reloaded.ok());
  EXPECT_EQ(reloaded.error(), spec.string() + ":3:8: jobs[0].source: missing required key\n" +
                                  spec.string() + ":3:8: jobs[0].schedule: missing required key\n" +
                                  spec.string() +
                                  ":3:8: jobs[0].spec_version: missing required key");
  refresher->RefreshOnce();
  auto published = refresher->Current();
  EXPECT_EQ(published->result.roles.size(), 1u);
  EXPECT_EQ(published->result.roles[0].job->role, "first");
  EXPECT_NE(published->metrics.find("schedwatch_exporter_config_last_reload_successful 0\n"),
            std::string::npos);

  WriteFile(spec, R"(version: 1
sources: {s: {type: file, path: live.yaml}}
jobs:
  - {role: first, source: s, schedule: "*/5 * * * *", spec_version: "1"}
  - {role: second, source: s, schedule: "*/5 * * * *", spec_version: "1"}
)");
  ASSERT_TRUE(refresher->Reload().ok());
  refresher->RefreshOnce();
  published = refresher->Current();
  EXPECT_EQ(published->result.roles.size(), 2u);
  EXPECT_NE(published->metrics.find("schedwatch_exporter_config_last_reload_successful 1\n"),
            std::string::npos);
}

TEST(RefresherTest, ReloadDoesNotWaitForARefreshThatWaitsForASource) {
  TempDir dir;
  SilentApiServer server(dir.path() / "kubeconfig");
  WriteFile(dir.path() / "live.yaml", "objects: []\n");
  fs::path spec = dir.path() / "spec.yaml";
  const std::string sources = R"(version: 1
sources:
  fine: {type: file, path: live.yaml}
  stuck: {type: kubernetes, kubeconfig: kubeconfig, timeout: 3s}
jobs:
  - {role: first, source: fine, schedule: "*/5 * * * *", spec_version: "1"}
)";
  WriteFile(spec, sources);
  auto refresher = MakeRefresher(spec.string());
  std::atomic<bool> refreshed{false};
  std::thread refresh([&] {
    refresher->RefreshOnce();
    refreshed = true;
  });
  // The refresh is inside the hung read once the source has connected.
  ASSERT_TRUE(server.AcceptOne());
  WriteFile(spec, sources +
                      "  - {role: second, source: fine, schedule: \"*/5 * * * *\", "
                      "spec_version: \"1\"}\n");
  auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(refresher->Reload().ok());
  WriteFile(spec, "version: 1\nsources: {}\njobs: []\n");
  EXPECT_FALSE(refresher->Reload().ok());
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_FALSE(refreshed.load());  // the reloads did not wait for the refresh
  EXPECT_LT(took, std::chrono::seconds(2));
  // The failed reload shows in the very next scrape, without a refresh.
  // Held: a refresh running beside the test may publish (and free) the next one meanwhile.
  const std::shared_ptr<const Published> current = refresher->Current();
  const std::string& metrics = current->metrics;
  EXPECT_NE(metrics.find("schedwatch_exporter_config_last_reload_successful 0\n"),
            std::string::npos);
  EXPECT_NE(
      metrics.find("schedwatch_exporter_config_last_reload_success_timestamp_seconds 1796040000\n"),
      std::string::npos);
  refresh.join();
  // The good spec of the two takes over at the next refresh.
  refresher->RefreshOnce();
  EXPECT_EQ(refresher->Current()->result.roles.size(), 2u);
}

TEST(RefresherTest, NotReadyAndNoHeartbeatBeforeTheFirstRefresh) {
  auto refresher = MakeRefresher((kSourceDir / "examples/desired-state.yaml").string());
  EXPECT_FALSE(refresher->Ready());
  // Held: a refresh running beside the test may publish (and free) the next one meanwhile.
  const std::shared_ptr<const Published> current = refresher->Current();
  const std::string& metrics = current->metrics;
  EXPECT_EQ(metrics.find("schedwatch_job_"), std::string::npos);
  EXPECT_EQ(metrics.find("schedwatch_exporter_last_cycle_timestamp_seconds"), std::string::npos);
  EXPECT_NE(metrics.find("schedwatch_exporter_build_info"), std::string::npos);
  refresher->RefreshOnce();
  EXPECT_TRUE(refresher->Ready());
  EXPECT_NE(refresher->Current()->metrics.find(
                "schedwatch_exporter_last_cycle_timestamp_seconds 1796040000\n"),
            std::string::npos);
}

// A role checked every 10 minutes, healthy at the fake clock's start: a success two minutes
// ago and a run going for a minute. Times are absolute: a step must not move them.
class ClockStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(dir_.path() / "spec.yaml", R"(version: 1
sources: {s: {type: file, path: live.yaml}}
jobs:
  - {role: tick, source: s, schedule: "*/10 * * * *", spec_version: "1", max_runtime: 5m}
)");
    std::int64_t now = clock_.UnixSeconds();
    WriteSnapshot("  - {role: tick, started: " + FormatRfc3339(now - 180) +
                  ", finished: " + FormatRfc3339(now - 120) + ", result: success}\n" +
                  "  - {role: tick, started: " + FormatRfc3339(now - 60) + ", result: running}\n");
    refresher_ = MakeRefresherOn(dir_.path() / "spec.yaml", clock_);
  }

  void WriteSnapshot(const std::string& runs) {
    WriteFile(dir_.path() / "live.yaml",
              "objects:\n  - {id: t, role: tick, schedule: '*/10 * * * *', spec_version: '1'}\n"
              "runs:\n" +
                  runs);
  }

  std::shared_ptr<const Published> Refresh() {
    refresher_->RefreshOnce();
    return refresher_->Current();
  }

  bool Has(const Published& published, const std::string& line) {
    return published.metrics.find(line + "\n") != std::string::npos;
  }

  TempDir dir_;
  platform::FakeClock clock_;
  std::unique_ptr<Refresher> refresher_;
};

TEST_F(ClockStepTest, StepForwardIsShownAndRaisesNothingByItself) {
  EXPECT_EQ(Role(*Refresh(), "tick").status.ConditionList(), "ok");
  clock_.Advance(std::chrono::seconds(30));
  clock_.StepWallClock(std::chrono::hours(1));
  auto published = Refresh();
  const RoleResult& tick = Role(*published, "tick");
  // Without the step known: not_started, hung and stale, each from the step alone.
  EXPECT_EQ(tick.status.ConditionList(), "ok");
  EXPECT_EQ(tick.status.held.count(), 3u);
  EXPECT_TRUE(Has(*published, "schedwatch_exporter_clock_step_seconds 3600"));
  EXPECT_TRUE(Has(*published, "schedwatch_exporter_clock_step_timestamp_seconds " +
                                  std::to_string(clock_.UnixSeconds())));
  EXPECT_TRUE(
      Has(*published, R"(schedwatch_job_condition{role="tick",source="s",condition="hung"} 0)"));
  auto reasons = ExplainConditions(tick, &Source(*published, "s"), published->result.time);
  ASSERT_EQ(reasons.size(), 3u);
  for (const auto& reason : reasons) {
    EXPECT_TRUE(reason.held);
    EXPECT_NE(reason.text.find("clock moved forward 1h"), std::string::npos) << reason.text;
  }
  auto status = nlohmann::json::parse(RenderStatusJson(published->result));
  EXPECT_EQ(status["clock_step"]["seconds"], 3600);
  EXPECT_EQ(status["roles"][0]["conditions"], nlohmann::json::array({"ok"}));
  EXPECT_EQ(status["roles"][0]["reasons"][0]["held"], true);

  // The hold ends: what is still true by the stepped clock an hour on is raised.
  clock_.Advance(kClockStepHold + std::chrono::seconds(1));
  published = Refresh();
  EXPECT_EQ(Role(*published, "tick").status.ConditionList(), "not_started,hung,stale");
  EXPECT_TRUE(Role(*published, "tick").status.held.none());
  EXPECT_FALSE(published->result.clock_step.has_value());
  EXPECT_TRUE(Has(*published, "schedwatch_exporter_clock_step_seconds 3600"));  // the last step
}

TEST_F(ClockStepTest, StepBackMakesNoRecentRunFutureAndRaisesNothing) {
  EXPECT_EQ(Role(*Refresh(), "tick").status.ConditionList(), "ok");
  clock_.Advance(std::chrono::seconds(30));
  clock_.StepWallClock(-std::chrono::hours(1));
  auto published = Refresh();
  const RoleResult& tick = Role(*published, "tick");
  EXPECT_EQ(tick.status.ConditionList(), "ok");
  EXPECT_TRUE(tick.status.in_future().empty());
  EXPECT_TRUE(tick.status.history.last_success.has_value());
  EXPECT_TRUE(Has(*published, "schedwatch_exporter_clock_step_seconds -3600"));
  EXPECT_EQ(published->metrics.find("run_in_future"), std::string::npos);
  // Back again within the hold: the steps add up to none.
  clock_.StepWallClock(std::chrono::hours(1));
  published = Refresh();
  EXPECT_EQ(Role(*published, "tick").status.ConditionList(), "ok");
  EXPECT_EQ(published->result.clock_step->seconds, 0);
}

TEST_F(ClockStepTest, SmallDriftIsNoStep) {
  Refresh();
  clock_.Advance(std::chrono::seconds(30));
  clock_.StepWallClock(std::chrono::seconds(kClockStepThreshold));
  auto published = Refresh();
  EXPECT_FALSE(published->result.clock_step.has_value());
  EXPECT_EQ(published->metrics.find("schedwatch_exporter_clock_step_seconds"), std::string::npos);
}

// 2099-01-01T00:00:00Z
constexpr std::int64_t k2099 = 4070908800;

TEST_F(ClockStepTest, RunDatedInTheFutureInASnapshotIsACountedProblemNotASuccess) {
  std::int64_t now = clock_.UnixSeconds();
  WriteSnapshot("  - {role: tick, started: " + FormatRfc3339(now - 7200) +
                ", finished: " + FormatRfc3339(now - 7100) + ", result: success}\n" +
                "  - {role: tick, started: 2099-01-01T00:00:00Z, finished: "
                "2099-01-01T00:01:00Z, result: success}\n");
  auto published = Refresh();
  const RoleResult& tick = Role(*published, "tick");
  EXPECT_EQ(tick.status.history.last_success, now - 7100);
  EXPECT_TRUE(Has(*published, R"(schedwatch_job_last_success_timestamp_seconds{role="tick",)"
                              R"(source="s"} )" +
                                  std::to_string(now - 7100)));
  EXPECT_TRUE(
      Has(*published, R"(schedwatch_source_errors_total{reason="run_in_future",source="s"} 1)"));
  const SourceStatus& source = Source(*published, "s");
  ASSERT_EQ(source.problems.size(), 1u);
  EXPECT_EQ(source.problems[0].reason, "run_in_future");
  EXPECT_EQ(source.problems[0].message,
            "role tick: run start 2099-01-01T00:00:00Z later than now (" + FormatRfc3339(now) +
                ") plus the clock skew allowance 5m: not counted as a start or a success");
  // Still there at the next refresh: still listed, not counted again.
  clock_.Advance(std::chrono::seconds(30));
  published = Refresh();
  EXPECT_EQ(Source(*published, "s").problems.size(), 1u);
  EXPECT_TRUE(
      Has(*published, R"(schedwatch_source_errors_total{reason="run_in_future",source="s"} 1)"));
  auto role_json = nlohmann::json::parse(*RenderRoleJson(published->result, "tick"));
  EXPECT_EQ(role_json["in_future"][0]["time"], k2099);
}

TEST(FutureRunRecordTest, RecordDatedInTheFutureIsACountedProblemNotASuccess) {
  TempDir dir;
  WriteFile(dir.path() / "spec.yaml", R"(version: 1
sources: {s: {type: file, path: live.yaml}}
jobs:
  - {role: wrapped, source: s, schedule: "*/10 * * * *", spec_version: "1", runs_dir: runs}
)");
  WriteFile(dir.path() / "live.yaml",
            "objects:\n  - {id: w, role: wrapped, schedule: '*/10 * * * *', spec_version: '1'}\n");
  fs::create_directories(dir.path() / "runs" / "wrapped");
  RunRecord record;
  record.role = "wrapped";
  record.state = RunRecord::State::kFinished;
  record.host = "h";
  record.pid = 7;
  record.start = static_cast<double>(k2099);
  record.end = static_cast<double>(k2099 + 60);
  record.exit_code = 0;
  record.guard = "flock";
  WriteFile(dir.path() / "runs" / "wrapped" / RunRecordFileName(record), RenderRunRecord(record));
  platform::FakeClock clock;
  RefresherOptions options;
  options.config_file = (dir.path() / "spec.yaml").string();
  options.confirm_delay = std::chrono::milliseconds(1);
  options.time = &clock;
  auto spec = LoadSpecFile(options.config_file);
  ASSERT_TRUE(spec.ok()) << spec.error();
  auto refresher = Refresher::Create(options, std::make_shared<const Spec>(std::move(*spec)));
  ASSERT_TRUE(refresher.ok()) << refresher.error();
  (*refresher)->RefreshOnce();
  auto published = (*refresher)->Current();
  const RoleResult& wrapped = Role(*published, "wrapped");
  EXPECT_FALSE(wrapped.status.history.last_success.has_value());
  EXPECT_FALSE(wrapped.status.history.last_started.has_value());
  ASSERT_EQ(wrapped.status.in_future().size(), 1u);
  EXPECT_NE(published->metrics.find(
                R"(schedwatch_source_errors_total{reason="run_in_future",source="s"} 1)"),
            std::string::npos);
  EXPECT_EQ(
      published->metrics.find("schedwatch_job_last_success_timestamp_seconds{role=\"wrapped\""),
      std::string::npos);
  // A day on, the 2099 record keeps the role ok no longer.
  clock.Advance(std::chrono::hours(24));
  (*refresher)->RefreshOnce();
  EXPECT_EQ(Role(*(*refresher)->Current(), "wrapped").status.ConditionList(), "not_started,stale");
}

// schedwatch_job_runs_total through the refresh loop: each finished run once, across refreshes
// and a reload, a running one when it ends; no series for a role whose source shows no run.
TEST(RefresherTest, RunsAreCountedOnceAcrossRefreshesAndAReload) {
  TempDir dir;
  fs::path spec = dir.path() / "spec.yaml";
  const std::string jobs = R"(version: 1
sources: {s: {type: file, path: live.yaml}}
jobs:
  - {role: sync, source: s, schedule: "*/5 * * * *", spec_version: "1", duration_histogram: true}
  - {role: idle, source: s, schedule: "*/5 * * * *", spec_version: "1"}
)";
  WriteFile(spec, jobs);
  auto live = [&](const std::string& last) {
    WriteFile(dir.path() / "live.yaml",
              "objects:\n"
              "  - {id: s/sync, role: sync, schedule: \"*/5 * * * *\", spec_version: \"1\"}\n"
              "  - {id: s/idle, role: idle, schedule: \"*/5 * * * *\", spec_version: \"1\"}\n"
              "runs:\n  - {role: sync, started: " +
                  FormatRfc3339(kNow - 600) + ", finished: " + FormatRfc3339(kNow - 540) +
                  ", result: success}\n  - {role: sync, started: " + FormatRfc3339(kNow - 300) +
                  ", finished: " + FormatRfc3339(kNow - 290) + ", result: failure}\n" + last);
  };
  live("  - {role: sync, started: " + FormatRfc3339(kNow - 60) + ", result: running}\n");
  auto refresher = MakeRefresher(spec.string());
  auto counts = [&] {
    refresher->RefreshOnce();
    std::string metrics(refresher->Current()->metrics);
    std::smatch match;
    std::string out;
    for (const char* outcome : {"success", "failure"}) {
      std::regex line(
          std::string("schedwatch_job_runs_total\\{role=\"sync\",source=\"s\",outcome=\"") +
          outcome + "\"\\} ([0-9]+)\n");
      out += std::regex_search(metrics, match, line) ? match[1].str() : "-";
      out += ' ';
    }
    std::smatch histogram;
    std::regex count(
        "schedwatch_job_run_duration_seconds_count\\{role=\"sync\",source=\"s\"\\} ([0-9]+)\n");
    out += std::regex_search(metrics, histogram, count) ? histogram[1].str() : "-";
    EXPECT_EQ(metrics.find("schedwatch_job_runs_total{role=\"idle\""), std::string::npos);
    return out;
  };
  EXPECT_EQ(counts(), "1 1 2");
  EXPECT_EQ(counts(), "1 1 2");
  WriteFile(spec, jobs + "# reloaded\n");
  ASSERT_TRUE(refresher->Reload().ok());
  EXPECT_EQ(counts(), "1 1 2");
  live("  - {role: sync, started: " + FormatRfc3339(kNow - 60) +
       ", finished: " + FormatRfc3339(kNow - 30) + ", result: success}\n");
  EXPECT_EQ(counts(), "2 1 3");
  EXPECT_EQ(counts(), "2 1 3");
}

// The crontab source shows a run of cron's log once (its reads bring only news); the exporter
// keeps the summaries and runs from then on: across refreshes without news, a read that fails,
// thresholds judged over runs of several reads, and a reload.
TEST(RefresherTest, ALogsRunsAreKeptOnceTheSourceShowedThem) {
  TempDir dir;
  fs::path root = dir.path() / "root";
  WriteFile(root / "etc/passwd", fmt::format("alice:x:{}:100::/home/alice:/bin/sh\n", geteuid()));
  fs::path crontab = root / "var/spool/cron/crontabs/alice";
  WriteFile(crontab,
            "# schedwatch: role=sync spec_version=1\n*/15 * * * * /home/alice/bin/sync\n"
            "# schedwatch: role=report spec_version=1\n0 * * * * /home/alice/bin/report\n");
  chmod(crontab.c_str(), 0600);
  fs::path syslog = root / "var/log/syslog";
  WriteFile(syslog, "");
  int pid = 100;
  auto run = [&](const std::string& command, std::int64_t started, bool failed) {
    std::string text;
    auto line = [&](std::int64_t at, const std::string& message) {
      text += fmt::format("{} vm CRON[{}]: {}\n", FormatRfc3339(at), pid, message);
    };
    line(started, fmt::format("(alice) CMD ([{}] /home/alice/bin/{})", pid + 1, command));
    if (failed) {
      line(started + 5,
           fmt::format("(CRON) error (grandchild #{} failed with exit status 1)", pid + 1));
    }
    line(started + 5, fmt::format("(alice) END ([{}] /home/alice/bin/{})", pid + 1, command));
    pid += 2;
    std::ofstream(syslog, std::ios::app) << text;
  };
  run("sync", kNow - 3600, false);
  run("report", kNow - 3000, false);
  fs::path spec = dir.path() / "spec.yaml";
  const std::string jobs = fmt::format(R"(version: 1
sources:
  cron: {{type: crontab, root: "{}", paths: [/var/spool/cron/crontabs], syslog: /var/log/syslog}}
jobs:
  - {{role: sync, source: cron, schedule: "*/15 * * * *", spec_version: "1", failure_threshold: 2}}
)",
                                       root.string());
  WriteFile(spec, jobs);
  auto refresher = MakeRefresher(spec.string());
  auto sync = [&] {
    refresher->RefreshOnce();
    return Role(*refresher->Current(), "sync");
  };
  EXPECT_EQ(sync().status.history.last_success, kNow - 3595);
  RoleResult role = sync();  // nothing new in the log
  EXPECT_EQ(role.status.history.last_success, kNow - 3595);
  EXPECT_EQ(role.status.history.last_started, kNow - 3600);
  ASSERT_TRUE(role.runs);
  EXPECT_EQ(role.runs->size(), 1u);

  run("sync", kNow - 1800, true);
  role = sync();
  EXPECT_EQ(role.status.history.last_failure, kNow - 1795);
  EXPECT_EQ(role.status.history.last_success, kNow - 3595);
  EXPECT_FALSE(role.status.Has(Condition::kFailing));  // one failure of two
  run("sync", kNow - 900, true);
  role = sync();
  EXPECT_TRUE(role.status.Has(Condition::kFailing));  // the first failure came in a read before
  ASSERT_TRUE(role.runs);
  EXPECT_EQ(role.runs->size(), 3u);

  // The log cannot be read: the crontab still shows the role (registered, not failing any
  // more: unknown), the runs kept stay, and they come back with the log. A run logged just before
  // is read by that read, which is not used: it comes with the next read that has the history.
  run("sync", kNow - 600, false);
  fs::rename(syslog, root / "var/log/syslog.away");
  ASSERT_EQ(mkfifo(syslog.c_str(), 0600), 0);
  role = sync();
  EXPECT_EQ(role.status.ConditionList(), "unknown");
  EXPECT_EQ(role.status.registered_objects, 1);
  EXPECT_FALSE(role.status.history.last_success.has_value());
  ASSERT_TRUE(role.runs);
  EXPECT_EQ(role.runs->size(), 3u);
  EXPECT_EQ(role.run_counts.failed, 2u);
  EXPECT_FALSE(Source(*refresher->Current(), "cron").history_up);
  EXPECT_TRUE(Source(*refresher->Current(), "cron").up);
  fs::remove(syslog);
  fs::rename(root / "var/log/syslog.away", syslog);
  role = sync();
  EXPECT_FALSE(role.status.Has(Condition::kUnknown));
  EXPECT_EQ(role.status.history.last_success, kNow - 595);
  EXPECT_EQ(role.status.history.last_failure, kNow - 895);
  EXPECT_FALSE(role.status.Has(Condition::kFailing));  // recovery_threshold 1: the success
  ASSERT_TRUE(role.runs);
  EXPECT_EQ(role.runs->size(), 4u);
  EXPECT_EQ(role.run_counts.succeeded, 2u);
  EXPECT_EQ(role.run_counts.failed, 2u);

  // A role the spec gains on reload has the runs the log showed before.
  WriteFile(spec,
            jobs + R"(  - {role: report, source: cron, schedule: "0 * * * *", spec_version: "1"}
)");
  ASSERT_TRUE(refresher->Reload().ok());
  refresher->RefreshOnce();
  EXPECT_EQ(Role(*refresher->Current(), "report").status.history.last_success, kNow - 2995);
  EXPECT_EQ(Role(*refresher->Current(), "sync").status.history.last_success, kNow - 595);
  refresher->RefreshOnce();
  EXPECT_EQ(Role(*refresher->Current(), "report").status.history.last_success, kNow - 2995);
}

// Debian 12 without rsyslog: cron logs only to the journal, /var/log/syslog does not exist. The
// crontabs are read whole: every role's existence is judged (registered, missing after two
// reads, inactive, duplicate, drift), only what needs runs is unknown, and the exporter says
// which half of the source it could not read.
TEST(RefresherTest, AnAbsentCronLogLeavesExistenceJudged) {
  TempDir dir;
  fs::path root = dir.path() / "root";
  WriteFile(root / "etc/passwd", fmt::format("alice:x:{}:100::/home/alice:/bin/sh\n", geteuid()));
  fs::path crontab = root / "var/spool/cron/crontabs/alice";
  WriteFile(crontab,
            "# schedwatch: role=present spec_version=1\n*/10 * * * * /bin/present\n"
            "# schedwatch: role=off spec_version=1\n#*/10 * * * * /bin/off\n"
            "# schedwatch: role=twice spec_version=1\n*/10 * * * * /bin/twice\n"
            "# schedwatch: role=twice spec_version=1\n*/10 * * * * /bin/twice-too\n"
            "# schedwatch: role=moved spec_version=1\n*/7 * * * * /bin/moved\n");
  chmod(crontab.c_str(), 0600);
  fs::create_directories(root / "var/log");
  fs::path spec = dir.path() / "spec.yaml";
  std::string jobs;
  for (const char* role : {"present", "off", "twice", "moved", "gone"}) {
    jobs += fmt::format(
        "  - {{role: {}, source: cron, schedule: \"*/10 * * * *\", spec_version: \"1\", "
        "stale_after: 1h}}\n",
        role);
  }
  WriteFile(spec, fmt::format(R"(version: 1
sources:
  cron: {{type: crontab, root: "{}", paths: [/var/spool/cron/crontabs]}}
jobs:
{})",
                              root.string(), jobs));
  // Desired a day before the second refresh: every fire time and stale_after has passed since,
  // without a run seen.
  auto loaded = LoadSpecFile(spec.string());
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  std::int64_t now = kNow - 86400;
  RefresherOptions options;
  options.config_file = spec.string();
  options.confirm_delay = std::chrono::milliseconds(50);
  options.source_timeout = std::chrono::seconds(5);
  options.clock = [&now] { return now; };
  auto created = Refresher::Create(options, std::make_shared<const Spec>(std::move(*loaded)));
  ASSERT_TRUE(created.ok()) << created.error();
  std::unique_ptr<Refresher> refresher = std::move(*created);
  refresher->RefreshOnce();
  now = kNow;
  refresher->RefreshOnce();
  const std::shared_ptr<const Published> published = refresher->Current();
  const std::map<std::string, std::string> expected = {{"present", "unknown"},
                                                       {"off", "unknown,inactive"},
                                                       {"twice", "unknown,duplicate"},
                                                       {"moved", "unknown,drift"},
                                                       {"gone", "unknown,missing"}};
  for (const auto& [role, conditions] : expected) {
    EXPECT_EQ(Role(*published, role).status.ConditionList(), conditions) << role;
  }
  EXPECT_EQ(Role(*published, "present").status.registered_objects, 1);
  EXPECT_EQ(Role(*published, "gone").status.registered_objects, 0);
  const SourceStatus& cron = Source(*published, "cron");
  EXPECT_TRUE(cron.up);
  EXPECT_FALSE(cron.history_up);
  EXPECT_NE(cron.history_error.find("/var/log/syslog: No such file or directory"),
            std::string::npos)
      << cron.history_error;

  const std::string& metrics = published->metrics;
  auto has = [&metrics](const std::string& line) {
    return metrics.find(line + "\n") != std::string::npos;
  };
  EXPECT_TRUE(has(R"(schedwatch_source_up{source="cron",type="crontab"} 1)"));
  EXPECT_TRUE(has(R"(schedwatch_source_history_up{source="cron",type="crontab"} 0)"));
  // Counted at each refresh, as a failed list is.
  EXPECT_TRUE(has(R"(schedwatch_source_errors_total{reason="history_failed",source="cron"} 2)"));
  EXPECT_TRUE(has(R"(schedwatch_job_registered_objects{role="gone",source="cron"} 0)"));
  EXPECT_TRUE(has(R"(schedwatch_job_condition{role="gone",source="cron",condition="missing"} 1)"));
  EXPECT_TRUE(
      has(R"(schedwatch_job_condition{role="present",source="cron",condition="not_started"} 0)"));
  EXPECT_TRUE(has(R"(schedwatch_job_condition{role="present",source="cron",condition="stale"} 0)"));
  EXPECT_EQ(metrics.find("schedwatch_job_last_success_timestamp_seconds{role=\"present\""),
            std::string::npos);

  auto status = nlohmann::json::parse(RenderStatusJson(published->result, PageOptions{}, ""));
  EXPECT_EQ(status["sources"][0]["up"], true);
  EXPECT_EQ(status["sources"][0]["history_up"], false);
  auto reasons = ExplainConditions(Role(*published, "present"), &cron, kNow);
  ASSERT_FALSE(reasons.empty());
  EXPECT_NE(reasons[0].text.find("run history of source cron could not be read"), std::string::npos)
      << reasons[0].text;
  EXPECT_NE(RenderStatusHtml(published->result, PageOptions{}).find("history down"),
            std::string::npos);
  auto page = RenderRoleHtml(published->result, "present", PageOptions{});
  ASSERT_TRUE(page);
  EXPECT_NE(page->find("id=\"history-unknown\""), std::string::npos);
  EXPECT_NE(page->find("data-object="), std::string::npos) << "the objects are shown";
  EXPECT_EQ(page->find("the source could not be listed"), std::string::npos);

  // The log appears: the runs are judged again.
  WriteFile(root / "var/log/syslog", "");
  refresher->RefreshOnce();
  EXPECT_TRUE(Source(*refresher->Current(), "cron").history_up);
  EXPECT_EQ(Role(*refresher->Current(), "present").status.ConditionList(), "not_started,stale");
}

}  // namespace
}  // namespace schedwatch
