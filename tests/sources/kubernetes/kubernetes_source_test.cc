// The kubernetes source through its transport seam, against an in-process API server
// (fake_transport.h) and a fake clock: pagination, expired continue tokens, auth failures,
// retries, timeouts, cancellation and the connection settings, through Source::List. Real TLS
// is the end-to-end tests' (exporter_kubernetes_test.py) and the HTTP client's.
#include "sources/kubernetes/kubernetes_source.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "schedwatch/platform/clock.h"
#include "schedwatch/timefmt.h"
#include "sources/kubernetes/kube_config.h"
#include "tests/sources/kubernetes/fake_transport.h"
#include "tests/sources/source_block.h"
#include "tests/test_util.h"

namespace schedwatch::kubernetes {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::FakeKubernetes;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

constexpr const char* kToken = "k8s-test-token-0123456789abcdef";
const fs::path kFixtures = fs::path(SCHEDWATCH_TEST_DIR) / "sources/kubernetes/fixtures";

Json FixtureItems(const char* name) { return Json::parse(ReadFile(kFixtures / name))["items"]; }

// The fixtures' CronJobs and Jobs, served to clients holding kToken.
Json World() {
  return {{"token", kToken},
          {"cronjobs", FixtureItems("cronjob-list.json")},
          {"jobs", FixtureItems("job-list.json")}};
}

std::vector<std::string> Reasons(const SourceSnapshot& snapshot) {
  std::vector<std::string> reasons;
  for (const auto& problem : snapshot.problems) reasons.push_back(problem.reason);
  return reasons;
}

std::size_t Count(const std::vector<std::string>& values, const std::string& value) {
  return static_cast<std::size_t>(std::count(values.begin(), values.end(), value));
}

// PEM texts only as far as the transport seam: nothing here speaks TLS.
constexpr const char* kCaPem = "fake CA PEM\n";
constexpr const char* kCaPemBase64 = "ZmFrZSBDQSBQRU0K";
constexpr const char* kClientCertPem = "fake client certificate PEM\n";
constexpr const char* kClientCertPemBase64 = "ZmFrZSBjbGllbnQgY2VydGlmaWNhdGUgUEVNCg==";
constexpr const char* kClientKeyPem = "fake client key PEM\n";
constexpr const char* kClientKeyPemBase64 = "ZmFrZSBjbGllbnQga2V5IFBFTQo=";

class KubernetesSourceTest : public ::testing::Test {
 protected:
  void Serve(const Json& config) { server_ = std::make_unique<FakeKubernetes>(config, &clock_); }

  // A kubeconfig for the server: the CA by path (relative, as kubeconfigs often have it).
  std::string Kubeconfig(const std::string& user = std::string("      token: ") + kToken + "\n",
                         const std::string& cluster = "") {
    WriteFile(directory_.path() / "ca.crt", kCaPem);
    std::string path = (directory_.path() / "kubeconfig").string();
    WriteFile(path,
              "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
              "contexts:\n- name: test\n  context: {cluster: fake, user: watcher}\n"
              "clusters:\n- name: fake\n  cluster:\n    server: " +
                  std::string(FakeKubernetes::kUrl) + "\n" +
                  (cluster.empty() ? "    certificate-authority: ca.crt\n" : cluster) +
                  "users:\n- name: watcher\n  user:\n" + user);
    return path;
  }

  std::unique_ptr<Source> Make(std::map<std::string, std::vector<std::string>> settings) {
    auto decoded = testing::DecodeSourceBlock("prod", "kubernetes", settings);
    EXPECT_TRUE(decoded.ok()) << decoded.error();
    if (!decoded.ok()) return nullptr;
    spec_ = std::move(*decoded);
    SourceOptions options;
    options.spec = &spec_;
    options.shard = shard_;
    // The server may be replaced between reads: the seam asks for the current one.
    Tuning tuning;
    tuning.transport = [this](const TlsOptions& tls) { return server_->Factory()(tls); };
    tuning.clock = &clock_;
    tuning.watch = watch_;
    tuning.watch_tuning = watch_tuning_;
    auto source = MakeTunedSource(options, std::move(tuning));
    EXPECT_TRUE(source.ok()) << source.error();
    return source.ok() ? std::move(*source) : nullptr;
  }
  std::unique_ptr<Source> MakeWithKubeconfig(
      std::map<std::string, std::vector<std::string>> more = {}) {
    more["kubeconfig"] = {Kubeconfig()};
    return Make(std::move(more));
  }

  Result<SourceSnapshot> List(Source& source, const std::atomic<bool>* cancelled = nullptr) {
    static const std::atomic<bool> never{false};
    ListContext context;
    context.now = 1714560000;
    context.cancelled = cancelled != nullptr ? cancelled : &never;
    return source.List(context);
  }

  std::vector<std::string> Paths() const {
    std::vector<std::string> paths;
    for (const auto& request : server_->Requests()) paths.push_back(request["path"]);
    return paths;
  }

  TempDir directory_;
  // The tests of lists list at every read; those of watches (kubernetes_watch_test.cc) watch.
  bool watch_ = false;
  WatchTuning watch_tuning_;
  platform::FakeClock clock_;  // backoffs and slow answers take no time
  std::unique_ptr<FakeKubernetes> server_;
  SourceSpec spec_;
  ShardAssignment shard_;
};

// Each shard keeps its roles' CronJobs and their Jobs, listed or watched: together the shards
// hold what one exporter does, each object once.
TEST_F(KubernetesSourceTest, AShardKeepsItsRolesCronJobsAndJobsOnly) {
  Serve(World());
  for (bool watch : {false, true}) {
    watch_ = watch;
    std::multiset<std::string> whole, shards;
    std::map<std::string, std::size_t> whole_history;
    {
      shard_ = ShardAssignment{};
      auto source = MakeWithKubeconfig();
      auto snapshot = List(*source);
      ASSERT_TRUE(snapshot.ok()) << snapshot.error();
      for (const auto& object : snapshot->objects) whole.insert(std::string(object.id()));
      for (const auto& [role, history] : snapshot->history) whole_history[role] = 1;
    }
    std::size_t history_roles = 0, cached_jobs = 0;
    for (std::uint32_t k = 0; k < 2; ++k) {
      shard_ = ShardAssignment{k, 2};
      auto source = MakeWithKubeconfig();
      auto snapshot = List(*source);
      ASSERT_TRUE(snapshot.ok()) << snapshot.error();
      for (const auto& object : snapshot->objects) {
        EXPECT_TRUE(shard_.Owns(object.role())) << object.role() << " on shard " << k;
        shards.insert(std::string(object.id()));
      }
      for (const auto& [role, history] : snapshot->history) {
        EXPECT_TRUE(shard_.Owns(role)) << role;
        ++history_roles;
      }
      if (watch) cached_jobs += ReportWatches(*source)->jobs;
    }
    EXPECT_EQ(whole.size(), 4u);
    EXPECT_EQ(shards, whole) << (watch ? "watched" : "listed");
    EXPECT_EQ(history_roles, whole_history.size());
    // The readable Jobs of the labelled CronJobs (backup's 3, report's 2, cleanup's 3), each
    // cached by its own shard only: not every CronJob's Jobs in its namespaces by each (14).
    if (watch) {
      EXPECT_EQ(cached_jobs, 8u);
    }
  }
}

TEST_F(KubernetesSourceTest, ListsEveryPageAndMapsObjectsAndHistory) {
  Serve(World());
  auto source = MakeWithKubeconfig({{"page_size", {"2"}}});
  auto snapshot = List(*source);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();

  std::map<std::string, LiveObject> objects;
  for (const auto& object : snapshot->objects) objects[std::string(object.id())] = object;
  ASSERT_EQ(objects.size(), 4u);
  EXPECT_EQ(objects["ops/db-backup"].role(), "backup");
  EXPECT_EQ(objects["ops/db-backup"].timezone(), "Europe/Berlin");
  EXPECT_EQ(objects["analytics/report-hourly"].timezone(), "UTC");
  EXPECT_FALSE(objects["ops/cleanup"].enabled);
  const RunHistory& backup = snapshot->history.at("backup");
  EXPECT_EQ(backup.last_success, ParseRfc3339("2024-05-01T00:41:12Z"));
  EXPECT_EQ(backup.last_failure, ParseRfc3339("2024-05-02T01:30:03Z"));
  EXPECT_EQ(snapshot->history.at("report").running_since, ParseRfc3339("2024-05-01T09:00:04Z"));

  // The label selector leaves out unlabelled items; labelled malformed ones are problems.
  auto reasons = Reasons(*snapshot);
  EXPECT_EQ(reasons.size(), 8u);
  EXPECT_EQ(Count(reasons, "malformed_object"), 8u);

  auto requests = server_->Requests();
  ASSERT_FALSE(requests.empty());
  int cronjob_pages = 0;
  for (const auto& request : requests) {
    EXPECT_EQ(request["authorization"], std::string("Bearer ") + kToken);
    EXPECT_EQ(request["accept"], "application/json");
    EXPECT_EQ(request["query"]["limit"], "2");
    if (request["path"] == "/apis/batch/v1/cronjobs") {
      ++cronjob_pages;
      EXPECT_EQ(request["query"]["labelSelector"], "schedwatch.io/role");
    }
  }
  EXPECT_EQ(cronjob_pages, 5) << "10 labelled CronJobs in pages of 2";
  // Labelled CronJobs live in two namespaces: their Jobs are listed there only.
  auto paths = Paths();
  EXPECT_EQ(Count(paths, "/apis/batch/v1/namespaces/analytics/jobs"), 1u);
  EXPECT_GE(Count(paths, "/apis/batch/v1/namespaces/ops/jobs"), 2u);
  EXPECT_EQ(Count(paths, "/apis/batch/v1/jobs"), 0u);
}

TEST_F(KubernetesSourceTest, ListedNamespacesOnly) {
  Serve(World());
  auto source = MakeWithKubeconfig({{"namespaces", {"analytics"}}});
  auto snapshot = List(*source);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  ASSERT_EQ(snapshot->objects.size(), 1u);
  EXPECT_EQ(snapshot->objects[0].id(), "analytics/report-hourly");
  EXPECT_EQ(Paths(), (std::vector<std::string>{"/apis/batch/v1/namespaces/analytics/cronjobs",
                                               "/apis/batch/v1/namespaces/analytics/jobs"}));
}

TEST_F(KubernetesSourceTest, ManyNamespacesGetOneClusterWideJobList) {
  Json world = World();
  for (int i = 0; i < 6; ++i) {
    world["cronjobs"].push_back({{"metadata",
                                  {{"name", "c"},
                                   {"namespace", "team-" + std::to_string(i)},
                                   {"uid", "uid-team-" + std::to_string(i)},
                                   {"labels", {{"schedwatch.io/role", "t" + std::to_string(i)}}}}},
                                 {"spec", {{"schedule", "@daily"}}}});
  }
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig());
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(snapshot->objects.size(), 10u);
  EXPECT_EQ(Paths(), (std::vector<std::string>{"/apis/batch/v1/cronjobs", "/apis/batch/v1/jobs"}));
}

TEST_F(KubernetesSourceTest, NoLabelledCronJobsNoJobList) {
  Serve({{"token", kToken}, {"cronjobs", FixtureItems("cronjob-list-reference-sample.json")}});
  auto snapshot = List(*MakeWithKubeconfig());
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_TRUE(snapshot->objects.empty());
  EXPECT_EQ(Paths(), std::vector<std::string>{"/apis/batch/v1/cronjobs"});
}

TEST_F(KubernetesSourceTest, AnExpiredContinueTokenRestartsTheListWithoutDuplicates) {
  Json world = World();
  world["faults"] = {{{"path", "/apis/batch/v1/cronjobs"},
                      {"continue", true},
                      {"status", 410},
                      {"reason", "Expired"},
                      {"message", "The provided continue parameter is too old"},
                      {"times", 1}}};
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig({{"page_size", {"3"}}}));
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(snapshot->objects.size(), 4u);
  auto reasons = Reasons(*snapshot);
  EXPECT_EQ(Count(reasons, "list_restarted"), 1u);
  EXPECT_EQ(Count(reasons, "malformed_object"), 8u) << "problems of the abandoned pages dropped";
  auto paths = Paths();
  EXPECT_EQ(Count(paths, "/apis/batch/v1/cronjobs"), 6u) << "a page, the 410, then all 4 pages";
}

TEST_F(KubernetesSourceTest, ContinueTokensThatKeepExpiringFailTheList) {
  Json world = World();
  world["faults"] = {{{"continue", true}, {"status", 410}, {"reason", "Expired"}}};
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig({{"page_size", {"3"}}}));
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error(),
            "GET /apis/batch/v1/cronjobs: the continue token expired 4 times; the list never "
            "completed");
  EXPECT_EQ(Count(Paths(), "/apis/batch/v1/cronjobs"), 8u);
}

// A server that hands out a continue token again would be followed in a circle until the
// timeout (225 requests in 10 s): the first repeat fails the list.
TEST_F(KubernetesSourceTest, AContinueTokenThatRepeatsFailsTheListAtOnce) {
  Json world = World();
  world["faults"] = {{{"path", "/apis/batch/v1/cronjobs"},
                      {"continue", true},
                      {"raw", R"({"kind":"CronJobList","metadata":{"continue":"c2FtZQ=="},
                                  "items":[]})"}}};
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig({{"page_size", {"3"}}}));
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error(),
            "GET /apis/batch/v1/cronjobs: page 3 repeats the continue token of an earlier page; "
            "the list never completes");
  EXPECT_EQ(Count(Paths(), "/apis/batch/v1/cronjobs"), 3u)
      << "the first page, the page giving the token, the page giving it again";
}

// items: null (and a page of nothing readable) is a failed read, retried, then unknown: never
// an empty list whose roles would be missing.
TEST_F(KubernetesSourceTest, NullItemsFailTheListInsteadOfEmptyingIt) {
  Json world = World();
  world["faults"] = {{{"path", "/apis/batch/v1/cronjobs"},
                      {"raw", R"({"kind":"CronJobList","metadata":{},"items":null})"}}};
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig());
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error(),
            "GET /apis/batch/v1/cronjobs: a CronJobList has items: null, not a list (gave up "
            "after 3 attempts)");
  // Every item unreadable, over all pages of the list (whatever the page size): no list.
  world = World();
  Json nameless = {{"metadata", {{"namespace", "ops"}, {"labels", {{"schedwatch.io/role", "q"}}}}}};
  world["cronjobs"] = {nameless, nameless};
  Serve(world);
  auto garbage = List(*MakeWithKubeconfig({{"page_size", {"2"}}}));
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.error(),
            "GET /apis/batch/v1/cronjobs: none of the 2 cronjobs listed can be read (first: "
            "CronJobList item 0: metadata.name is missing)");
  world["cronjobs"].push_back({{"metadata",
                                {{"name", "fine"},
                                 {"namespace", "ops"},
                                 {"uid", "u"},
                                 {"labels", {{"schedwatch.io/role", "r"}}}}},
                               {"spec", {{"schedule", "@daily"}}}});
  Serve(world);
  auto some = List(*MakeWithKubeconfig({{"page_size", {"2"}}}));
  ASSERT_TRUE(some.ok()) << some.error();
  EXPECT_EQ(some->objects.size(), 1u);
  EXPECT_EQ(Count(Reasons(*some), "malformed_object"), 2u);
}

// One answer of 512 MiB once took the exporter's RSS to 510 MiB: an answer past 64 MiB fails
// the read (roles unknown) and is not retried.
TEST_F(KubernetesSourceTest, AnAnswerPastTheCapFailsTheReadNotTheProcess) {
  Json world = World();
  // 64 MiB of small items: each readable on its own, the answer past the cap on bytes received.
  std::string huge = R"({"kind":"CronJobList","metadata":{},"items":[)";
  const std::string padding(4000, 'x');
  for (int i = 0; huge.size() <= (std::size_t{64} << 20); ++i) {
    huge += fmt::format(R"({}{{"metadata":{{"name":"pad-{}"}},"padding":"{}"}})", i ? "," : "", i,
                        padding);
  }
  huge += "]}";
  world["faults"] = {{{"path", "/apis/batch/v1/cronjobs"}, {"raw", huge}}};
  huge.clear();
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig());
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error(),
            "GET /apis/batch/v1/cronjobs: the answer is larger than 67108864 bytes");
  EXPECT_EQ(Paths().size(), 1u) << "not retried";
}

TEST_F(KubernetesSourceTest, APageLargeBesidesItsItemsFailsTheReadNotRetried) {
  Json world = World();
  std::string large = R"({"kind":"CronJobList","metadata":{},"items":[],"padding":")" +
                      std::string(std::size_t{2} << 20, 'x') + "\"}";
  world["faults"] = {{{"path", "/apis/batch/v1/cronjobs"}, {"raw", large}}};
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig());
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error(),
            "GET /apis/batch/v1/cronjobs: a CronJobList has more than 1048576 bytes besides its "
            "items");
  EXPECT_EQ(Paths().size(), 1u) << "not retried";
}

TEST_F(KubernetesSourceTest, MillionsOfUnreadableItemsAreCountedNotKept) {
  Json world = World();
  // One-byte items, each a problem: kept one message each, 2 MiB made over 200 MiB.
  std::string page = R"({"kind":"CronJobList","metadata":{},"items":[)";
  for (const auto& item : world["cronjobs"]) page += item.dump() + ",";
  for (int i = 0; i < 1000000; ++i) page += i ? ",1" : "1";
  page += "]}";
  world["faults"] = {{{"path", "/apis/batch/v1/cronjobs"}, {"raw", page}}};
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig());
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(snapshot->objects.size(), 4u);
  std::vector<std::string> reasons = Reasons(*snapshot);
  EXPECT_LE(Count(reasons, "malformed_object"), kMaxListedItemProblems);
  bool tallied = false;
  for (const auto& problem : snapshot->problems) {
    tallied |= problem.message.rfind("problems like this one (100 listed): CronJobList item", 0) !=
               std::string::npos;
    tallied |= problem.message.find("1000") != std::string::npos &&
               problem.message.find("problems like this one") != std::string::npos;
  }
  EXPECT_TRUE(tallied);
}

TEST_F(KubernetesSourceTest, ItemsOfAPageThatTurnsOutMalformedNeverCount) {
  Json world = World();
  Json ghost = world["cronjobs"][0];
  ghost["metadata"]["name"] = "ghost";
  ghost["metadata"]["uid"] = "ghost-uid";
  // The ghost streams in whole before the page breaks; the retry's page does not hold it.
  world["faults"] = {{{"path", "/apis/batch/v1/cronjobs"},
                      {"raw", R"({"kind":"CronJobList","items":[)" + ghost.dump() + ",{oops"},
                      {"times", 1}}};
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig());
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(Count(Reasons(*snapshot), "malformed_json"), 1u);
  ASSERT_EQ(snapshot->objects.size(), 4u);
  for (const auto& object : snapshot->objects)
    EXPECT_EQ(object.id().find("ghost"), std::string::npos);
}

TEST_F(KubernetesSourceTest, ForbiddenIsAnErrorWithTheStatusMessage) {
  Json world = World();
  world["faults"] = {
      {{"status", 403},
       {"reason", "Forbidden"},
       {"message",
        "cronjobs.batch is forbidden: User \"system:serviceaccount:monitoring:schedwatch\" "
        "cannot list resource \"cronjobs\" in API group \"batch\" at the cluster scope"}}};
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig());
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(
      snapshot.error(),
      "GET /apis/batch/v1/cronjobs: HTTP 403 Forbidden: cronjobs.batch is forbidden: User "
      "\"system:serviceaccount:monitoring:schedwatch\" cannot list resource \"cronjobs\" in "
      "API group \"batch\" at the cluster scope (grant get, list and watch on cronjobs and jobs in "
      "API group batch; see examples/kubernetes/)");
  EXPECT_EQ(Count(Paths(), "/apis/batch/v1/cronjobs"), 1u) << "4xx is not retried";
}

TEST_F(KubernetesSourceTest, UnauthorizedIsAnErrorAndTheTokenStaysOut) {
  Json world = World();
  world["token"] = "another-token";
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig());
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error(),
            "GET /apis/batch/v1/cronjobs: HTTP 401 Unauthorized (the token or client certificate "
            "was refused)");
}

TEST_F(KubernetesSourceTest, ATokenEchoedByTheServerIsRedacted) {
  Json world = World();
  world["faults"] = {{{"status", 403},
                      {"reason", "Forbidden"},
                      {"message", std::string("token ") + kToken + " is not allowed"}}};
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig());
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().find(kToken), std::string::npos) << snapshot.error();
  EXPECT_NE(snapshot.error().find("token [redacted] is not allowed"), std::string::npos);
}

// No prefix of `secret` of 8 characters or more appears in `text`.
void ExpectNoPrefixOf(const std::string& secret, const std::string& text) {
  for (std::size_t length = 8; length <= secret.size(); ++length) {
    EXPECT_EQ(text.find(secret.substr(0, length)), std::string::npos)
        << "a " << length << "-character prefix of the token leaked: " << text;
  }
}

TEST_F(KubernetesSourceTest, ATokenEchoedAtTheEndOfALongMessageIsRedactedBeforeItIsCut) {
  // The message is cut at 300 characters; the token straddles the cut. It used to be cut
  // first, and the redaction then no longer found the whole token.
  for (std::size_t pad : {280u, 290u, 295u}) {
    Json world = World();
    world["faults"] = {{{"status", 401},
                        {"reason", "Unauthorized"},
                        {"message", std::string(pad, 'x') + " Bearer " + kToken}}};
    Serve(world);
    auto snapshot = List(*MakeWithKubeconfig());
    ASSERT_FALSE(snapshot.ok());
    ExpectNoPrefixOf(kToken, snapshot.error());
  }
}

TEST(RedactSecretTest, ReplacesEveryOccurrenceAndTheJsonEscapedForm) {
  EXPECT_EQ(RedactSecret("a s3cret-token b s3cret-token", "s3cret-token"),
            "a [redacted] b [redacted]");
  EXPECT_EQ(RedactSecret(R"({"m":"ab\/cd+ef=="})", "ab/cd+ef=="), R"({"m":"[redacted]"})");
  EXPECT_EQ(RedactSecret("nothing", ""), "nothing");
  EXPECT_EQ(RedactSecret("aaaa", "aa"), "[redacted][redacted]");
}

TEST_F(KubernetesSourceTest, ServerErrorsAreRetriedThenCounted) {
  Json world = World();
  world["faults"] = {{{"path", "/apis/batch/v1/namespaces/ops/jobs"},
                      {"status", 500},
                      {"reason", "InternalError"},
                      {"times", 2}}};
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig());
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(Count(Reasons(*snapshot), "server_error"), 2u);
  EXPECT_EQ(snapshot->objects.size(), 4u);
  EXPECT_EQ(snapshot->problems[0].message,
            "GET /apis/batch/v1/namespaces/ops/jobs: HTTP 500 InternalError: an error on the "
            "server has prevented the request; retrying");
}

TEST_F(KubernetesSourceTest, PersistentServerErrorsFailAfterThreeAttempts) {
  Json world = World();
  world["faults"] = {{{"status", 503}, {"reason", "ServiceUnavailable"}, {"message", "etcd"}}};
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig());
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error(),
            "GET /apis/batch/v1/cronjobs: HTTP 503 ServiceUnavailable: etcd (gave up after 3 "
            "attempts)");
  EXPECT_EQ(Paths().size(), 3u);
}

TEST_F(KubernetesSourceTest, AFailureHalfWayIsAnErrorNeverAPartialList) {
  Json world = World();
  world["faults"] = {{{"path", "/apis/batch/v1/cronjobs"},
                      {"continue", true},
                      {"status", 403},
                      {"reason", "Forbidden"},
                      {"message", "cronjobs.batch is forbidden"}}};
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig({{"page_size", {"2"}}}));
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().rfind("GET /apis/batch/v1/cronjobs: HTTP 403 Forbidden: "
                                   "cronjobs.batch is forbidden",
                                   0),
            0u)
      << snapshot.error();
}

// The CronJobs are the list; their Jobs are the history. Jobs that cannot be listed (half way,
// a 500 that stays, garbage) leave the CronJobs standing and no history at all: not a partial
// one, and not the CronJobs' own status times, which cannot show a failure.
TEST_F(KubernetesSourceTest, JobsThatCannotBeListedLeaveTheCronJobsWithoutHistory) {
  const Json faults[] = {
      {{"path", "/apis/batch/v1/namespaces/ops/jobs"},
       {"continue", true},
       {"status", 403},
       {"reason", "Forbidden"},
       {"message", "jobs.batch is forbidden"}},
      {{"path", "/apis/batch/v1/namespaces/ops/jobs"},
       {"status", 500},
       {"reason", "InternalError"}},
      {{"path", "/apis/batch/v1/namespaces/analytics/jobs"}, {"raw", "{\"items\": [nul"}},
  };
  for (const Json& fault : faults) {
    Json world = World();
    world["faults"] = {fault};
    Serve(world);
    auto snapshot = List(*MakeWithKubeconfig({{"page_size", {"2"}}}));
    ASSERT_TRUE(snapshot.ok()) << snapshot.error();
    EXPECT_EQ(snapshot->objects.size(), 4u) << fault.dump();
    EXPECT_TRUE(snapshot->history.empty()) << fault.dump();
    EXPECT_EQ(
        snapshot->history_error.rfind("the CronJobs' Jobs: GET /apis/batch/v1/namespaces/", 0), 0u)
        << snapshot->history_error;
    EXPECT_EQ(snapshot->history_error.find(kToken), std::string::npos);
  }
}

TEST_F(KubernetesSourceTest, MalformedJsonIsRetriedAndCounted) {
  Json world = World();
  world["faults"] = {
      {{"path", "/apis/batch/v1/cronjobs"}, {"raw", "{\"kind\":\"CronJobL"}, {"times", 1}}};
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig());
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(Count(Reasons(*snapshot), "malformed_json"), 1u);
  EXPECT_EQ(snapshot->objects.size(), 4u);
}

TEST_F(KubernetesSourceTest, PersistentlyMalformedJsonFailsTheList) {
  Json world = World();
  world["faults"] = {{{"path", "/apis/batch/v1/cronjobs"}, {"raw", "<html>proxy error</html>"}}};
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig());
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(
      snapshot.error().rfind("GET /apis/batch/v1/cronjobs: malformed JSON in a CronJobList: ", 0),
      0u)
      << snapshot.error();
  EXPECT_NE(snapshot.error().find("(gave up after 3 attempts)"), std::string::npos);
}

TEST_F(KubernetesSourceTest, RateLimitingHonoursRetryAfter) {
  Json world = World();
  world["faults"] = {{{"path", "/apis/batch/v1/cronjobs"},
                      {"status", 429},
                      {"reason", "TooManyRequests"},
                      {"message", "Too many requests, please try again later."},
                      {"headers", {{"Retry-After", "1"}}},
                      {"times", 1}}};
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig());
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(clock_.sleeps(), std::vector<platform::Clock::Duration>{std::chrono::seconds(1)});
  EXPECT_EQ(Count(Reasons(*snapshot), "rate_limited"), 1u);
}

TEST_F(KubernetesSourceTest, RetryAfterBeyondTheTimeoutFailsAtOnce) {
  Json world = World();
  world["faults"] = {{{"status", 429},
                      {"reason", "TooManyRequests"},
                      {"message", "slow down"},
                      {"headers", {{"Retry-After", "30"}}}}};
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig({{"timeout", {"3s"}}}));
  ASSERT_FALSE(snapshot.ok());
  EXPECT_TRUE(clock_.sleeps().empty());
  EXPECT_EQ(snapshot.error(),
            "GET /apis/batch/v1/cronjobs: HTTP 429 TooManyRequests: slow down (Retry-After 30s "
            "is beyond the timeout)");
}

TEST_F(KubernetesSourceTest, ASlowAnswerPastTheTimeoutFails) {
  Json world = World();
  world["faults"] = {{{"path", "/apis/batch/v1/cronjobs"}, {"delay", 6}}};
  Serve(world);
  auto start = clock_.Now();
  auto snapshot = List(*MakeWithKubeconfig({{"timeout", {"2s"}}}));
  auto elapsed = clock_.Now() - start;
  ASSERT_FALSE(snapshot.ok());
  EXPECT_LT(elapsed, std::chrono::milliseconds(2500));
  EXPECT_NE(snapshot.error().find("timed out"), std::string::npos) << snapshot.error();
}

TEST_F(KubernetesSourceTest, CancellationStopsBetweenPages) {
  Serve(World());
  auto source = MakeWithKubeconfig({{"page_size", {"1"}}});
  std::atomic<bool> cancelled{false};
  server_->OnRequest([&](std::size_t count) {
    if (count == 2) cancelled = true;  // the refresh gives up while the second page is read
  });
  auto snapshot = List(*source, &cancelled);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error(), "GET /apis/batch/v1/cronjobs: cancelled");
  EXPECT_EQ(Paths().size(), 2u);
}

TEST_F(KubernetesSourceTest, CancellationDuringABackoffEndsTheReadAtOnce) {
  Json world = World();
  world["faults"] = {{{"status", 503}, {"reason", "ServiceUnavailable"}, {"times", 1}}};
  Serve(world);
  auto source = MakeWithKubeconfig();
  std::atomic<bool> cancelled{false};
  clock_.set_on_sleep([&](platform::Clock::Duration) { cancelled = true; });
  auto snapshot = List(*source, &cancelled);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error(), "GET /apis/batch/v1/cronjobs: cancelled");
  EXPECT_EQ(Paths().size(), 1u);
}

TEST_F(KubernetesSourceTest, UnreachableServerFailsAfterBoundedRetries) {
  Json world = World();
  world["unreachable"] = true;
  Serve(world);
  auto source = Make({{"kubeconfig", {Kubeconfig()}}, {"timeout", {"5s"}}});
  auto snapshot = List(*source);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(Paths().size(), 3u);
  EXPECT_EQ(clock_.sleeps(), (std::vector<platform::Clock::Duration>{
                                 std::chrono::milliseconds(200), std::chrono::milliseconds(400)}));
  EXPECT_NE(snapshot.error().find("(gave up after 3 attempts)"), std::string::npos)
      << snapshot.error();
}

TEST_F(KubernetesSourceTest, ClientCertificateAndCaDataFromTheKubeconfig) {
  Json world = World();
  world.erase("token");
  world["client_cert_pem"] = kClientCertPem;
  Serve(world);
  std::string user = std::string("    client-certificate-data: ") + kClientCertPemBase64 +
                     "\n    client-key-data: " + kClientKeyPemBase64 + "\n";
  std::string cluster = std::string("    certificate-authority-data: ") + kCaPemBase64 + "\n";
  auto source = Make({{"kubeconfig", {Kubeconfig(user, cluster)}}});
  auto snapshot = List(*source);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(snapshot->objects.size(), 4u);
  ASSERT_EQ(server_->Tls().size(), 1u);
  const TlsOptions tls = server_->Tls()[0];
  EXPECT_EQ(tls.ca_pem, kCaPem);
  EXPECT_EQ(tls.client_cert_pem, kClientCertPem);
  EXPECT_EQ(tls.client_key_pem, kClientKeyPem);
  EXPECT_FALSE(tls.insecure_skip_verify);
  EXPECT_EQ(server_->Requests()[0]["authorization"], "");
}

TEST_F(KubernetesSourceTest, TheServerIsVerifiedUnlessTheKubeconfigSaysOtherwise) {
  Serve(World());
  WriteFile(directory_.path() / "other.crt", "another CA\n");
  std::string token = std::string("    token: ") + kToken + "\n";
  ASSERT_TRUE(
      List(*Make({{"kubeconfig", {Kubeconfig(token, "    certificate-authority: other.crt\n")}}}))
          .ok());
  ASSERT_EQ(server_->Tls().size(), 1u);
  EXPECT_EQ(server_->Tls()[0].ca_file, (directory_.path() / "other.crt").string())
      << "relative to the kubeconfig";
  EXPECT_FALSE(server_->Tls()[0].insecure_skip_verify);

  auto insecure =
      List(*Make({{"kubeconfig", {Kubeconfig(token, "    insecure-skip-tls-verify: true\n")}}}));
  ASSERT_TRUE(insecure.ok()) << insecure.error();
  ASSERT_EQ(server_->Tls().size(), 2u);
  EXPECT_TRUE(server_->Tls()[1].insecure_skip_verify);
}

TEST_F(KubernetesSourceTest, TheTokenFileIsReadAtEveryListAndTheKubeconfigWhenItChanges) {
  Json world = World();
  world["token"] = "first";
  Serve(world);
  WriteFile(directory_.path() / "token", "first\n");
  auto source = Make({{"kubeconfig", {Kubeconfig("    tokenFile: token\n")}}});
  ASSERT_TRUE(List(*source).ok());

  world["token"] = "second";
  server_->SetConfig(world);
  WriteFile(directory_.path() / "token", "second\n");
  auto rotated = List(*source);
  ASSERT_TRUE(rotated.ok()) << rotated.error();
  EXPECT_EQ(server_->Requests().back()["authorization"], "Bearer second");

  // A kubeconfig edited to use an exec plugin: refused from the next list on.
  WriteFile(directory_.path() / "kubeconfig",
            ReadFile(directory_.path() / "kubeconfig") +
                "    exec: {command: gke-gcloud-auth-plugin, apiVersion: v1}\n");
  auto plugin = List(*source);
  ASSERT_FALSE(plugin.ok());
  EXPECT_NE(plugin.error().find("exec credential plugins are not supported"), std::string::npos)
      << plugin.error();
}

TEST_F(KubernetesSourceTest, InClusterOverIpv6WithTheServiceAccountDirectory) {
  Serve(World());
  fs::path account = directory_.path() / "serviceaccount";
  fs::create_directories(account);
  WriteFile(account / "ca.crt", kCaPem);
  WriteFile(account / "token", std::string(kToken) + "\n");
  WriteFile(account / "namespace", "monitoring\n");
  setenv("KUBERNETES_SERVICE_HOST", "::1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
  setenv(kServiceAccountDirVariable, account.c_str(), 1);
  auto source = Make({{"in_cluster", {"true"}}});
  auto snapshot = List(*source);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  unsetenv(kServiceAccountDirVariable);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_EQ(snapshot->objects.size(), 4u);
  EXPECT_EQ(server_->Requests()[0]["host"], "https://[::1]:6443");
  EXPECT_EQ(server_->Requests()[0]["authorization"], std::string("Bearer ") + kToken);
  EXPECT_EQ(server_->Tls()[0].ca_file, (account / "ca.crt").string());
}

TEST_F(KubernetesSourceTest, ProblemsAreCappedPerReason) {
  Json world = World();
  for (int i = 0; i < 150; ++i) {
    world["cronjobs"].push_back({{"metadata",
                                  {{"name", fmt::format("broken-{:03}", i)},
                                   {"namespace", "zz"},
                                   {"uid", fmt::format("uid-broken-{}", i)},
                                   {"labels", {{"schedwatch.io/role", "broken"}}}}},
                                 {"spec", {{"schedule", 7}}}});
  }
  Serve(world);
  auto snapshot = List(*MakeWithKubeconfig());
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  auto reasons = Reasons(*snapshot);
  EXPECT_EQ(Count(reasons, "malformed_object"), 100u) << "158 malformed, 100 listed";
  EXPECT_EQ(snapshot->problems[0].message.rfind("158 problems like this one (100 listed): ", 0), 0u)
      << snapshot->problems[0].message;
}

TEST_F(KubernetesSourceTest, InClusterOutsideAPodIsAClearError) {
  unsetenv("KUBERNETES_SERVICE_HOST");
  auto snapshot = List(*Make({{"in_cluster", {"true"}}}));
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error(),
            "in_cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set; is "
            "schedwatch running in a pod?");
}

// Bad settings never reach the source: the spec that holds them is refused (as `check` does).
TEST_F(KubernetesSourceTest, BadSettingsAreRefusedWithTheSpec) {
  auto decoded = testing::DecodeSourceBlock("prod", "kubernetes", {{"page_size", {"-1"}}});
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.error(),
            "/spec/spec.yaml:3:39: sources.prod.page_size: expected a whole number from 1 to "
            "10000, got the value \"-1\"");
  // Settings of another type are refused, not misread.
  SourceSpec other = *testing::DecodeSourceBlock("prod", "file", "path: x.yaml");
  SourceOptions options;
  options.spec = &other;
  EXPECT_FALSE(MakeKubernetesSource(options).ok());
}

}  // namespace
}  // namespace schedwatch::kubernetes
