// The kubernetes source's list-then-watch caches against the in-process API server
// (fake_transport.h): events, bookmarks, 410 (ERROR event and HTTP status), compaction, a
// stalled watch, a watch the server ends, a cache that is not synced, and absences confirmed
// by the API server rather than the cache. Watches run on the source's own threads: every
// assertion waits (bounded) for what it asserts.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "schedwatch/platform/clock.h"
#include "schedwatch/timefmt.h"
#include "sources/absence.h"
#include "sources/kubernetes/kubernetes_source.h"
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

constexpr const char* kToken = "k8s-watch-token-0123456789abcdef";
const fs::path kFixtures = fs::path(SCHEDWATCH_TEST_DIR) / "sources/kubernetes/fixtures";
const std::vector<std::string> kRoles = {"backup", "report", "cleanup"};

Json FixtureItems(const char* name) { return Json::parse(ReadFile(kFixtures / name))["items"]; }

Json Find(const Json& items, const std::string& name) {
  for (const auto& item : items) {
    if (item.is_object() && item.contains("metadata") && item["metadata"].is_object() &&
        item["metadata"].value("name", "") == name) {
      return item;
    }
  }
  return Json();
}

// Waits up to 20 s for `condition`, looking every 5 ms.
template <typename Condition>
bool WaitFor(Condition condition) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < until) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

class KubernetesWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cronjobs_ = FixtureItems("cronjob-list.json");
    jobs_ = FixtureItems("job-list.json");
    server_ = std::make_unique<FakeKubernetes>(
        Json{{"token", kToken}, {"cronjobs", cronjobs_}, {"jobs", jobs_}}, &clock_);
    WriteFile(directory_.path() / "kubeconfig",
              "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
              "contexts:\n- name: test\n  context: {cluster: fake, user: watcher}\n"
              "clusters:\n- name: fake\n  cluster:\n    server: " +
                  std::string(FakeKubernetes::kUrl) +
                  "\n    insecure-skip-tls-verify: true\n"
                  "users:\n- name: watcher\n  user:\n    token: " +
                  kToken + "\n");
    auto decoded = testing::DecodeSourceBlock(
        "prod", "kubernetes", {{"kubeconfig", {(directory_.path() / "kubeconfig").string()}}});
    ASSERT_TRUE(decoded.ok()) << decoded.error();
    spec_ = std::move(*decoded);
    for (const auto& role : kRoles) {
      JobSpec job;
      job.role = role;
      job.source = "prod";
      job_specs_.push_back(job);
    }
  }

  std::unique_ptr<Source> Make() {
    SourceOptions options;
    options.spec = &spec_;
    options.shard = shard_;
    for (const auto& job : job_specs_) {
      if (shard_.Owns(job.role)) options.jobs.push_back(&job);
    }
    Tuning tuning;
    tuning.transport = server_->Factory();
    tuning.clock = &clock_;
    tuning.watch_tuning.stalled_after = std::chrono::seconds(180);
    auto source = MakeTunedSource(options, std::move(tuning));
    EXPECT_TRUE(source.ok()) << source.error();
    return source.ok() ? std::move(*source) : nullptr;
  }

  Result<SourceSnapshot> List(Source& source) {
    static const std::atomic<bool> never{false};
    return source.List({1714560000, &never});
  }

  // The refresher's two reads (sources/absence.h), with no delay between them.
  AbsenceReads Refresh(Source& source) {
    return ConfirmAbsence(
        kRoles, [&] { return List(source); }, [] { return true; });
  }

  // A Job that started at 00:30 on 3 May 2024 and succeeded at 00:39.
  static void Succeed(Json& job) {
    job["status"] = {{"startTime", "2024-05-03T00:30:02Z"},
                     {"completionTime", "2024-05-03T00:39:00Z"},
                     {"succeeded", 1},
                     {"conditions",
                      {{{"type", "Complete"},
                        {"status", "True"},
                        {"lastTransitionTime", "2024-05-03T00:39:00Z"}}}}};
  }

  // Requests that were lists (not watches) of `path`, and watches of it.
  int Lists(const std::string& path) const { return CountRequests(path, false); }
  int Watches(const std::string& path) const { return CountRequests(path, true); }
  int CountRequests(const std::string& path, bool watch) const {
    int count = 0;
    for (const auto& request : server_->Requests()) {
      bool is_watch = request["query"].contains("watch");
      if (request["path"] == path && is_watch == watch) ++count;
    }
    return count;
  }
  Json LastWatch(const std::string& path) const {
    Json last;
    for (const auto& request : server_->Requests()) {
      if (request["path"] == path && request["query"].contains("watch")) last = request;
    }
    return last;
  }

  static const LiveObject* Object(const SourceSnapshot& snapshot, const std::string& id) {
    for (const auto& object : snapshot.objects) {
      if (object.id() == id) return &object;
    }
    return nullptr;
  }

  // Lists until `check` holds for a snapshot (the watch applies events on its own thread).
  template <typename Check>
  bool ListUntil(Source& source, Check check) {
    return WaitFor([&] {
      auto snapshot = List(source);
      return snapshot.ok() && check(*snapshot);
    });
  }

  static constexpr const char* kCronJobs = "/apis/batch/v1/cronjobs";
  static constexpr const char* kOpsJobs = "/apis/batch/v1/namespaces/ops/jobs";

  TempDir directory_;
  platform::FakeClock clock_;
  Json cronjobs_, jobs_;
  std::unique_ptr<FakeKubernetes> server_;
  SourceSpec spec_;
  std::vector<JobSpec> job_specs_;
  ShardAssignment shard_;
};

TEST_F(KubernetesWatchTest, ListsOnceThenWatchesFromTheListsResourceVersion) {
  auto source = Make();
  auto first = List(*source);
  ASSERT_TRUE(first.ok()) << first.error();
  ASSERT_TRUE(WaitFor([&] { return server_->OpenWatches() == 3; }))
      << "CronJobs cluster-wide, Jobs in ops and analytics";
  Json watch = LastWatch(kCronJobs);
  EXPECT_EQ(watch["query"]["allowWatchBookmarks"], "true");
  EXPECT_EQ(watch["query"]["timeoutSeconds"], "300");
  EXPECT_EQ(watch["query"]["labelSelector"], "schedwatch.io/role");
  EXPECT_EQ(watch["query"]["resourceVersion"], "884214");
  EXPECT_EQ(watch["authorization"], std::string("Bearer ") + kToken);

  for (int i = 0; i < 3; ++i) {
    auto again = List(*source);
    ASSERT_TRUE(again.ok()) << again.error();
    EXPECT_EQ(again->objects.size(), first->objects.size());
    EXPECT_EQ(again->history.at("backup").last_failure, first->history.at("backup").last_failure);
    EXPECT_EQ(again->problems.size(), first->problems.size());
  }
  EXPECT_EQ(Lists(kCronJobs), 1);
  EXPECT_EQ(Lists(kOpsJobs), 1);
}

TEST_F(KubernetesWatchTest, ACacheKeepsNothingOfAPageThatTurnsOutMalformed) {
  Json ghost = Find(cronjobs_, "db-backup");
  ghost["metadata"]["name"] = "ghost";
  ghost["metadata"]["uid"] = "ghost-uid";
  // The ghost streams in whole before the page breaks; the retry's page does not hold it.
  server_->SetConfig(Json{{"token", kToken},
                          {"cronjobs", cronjobs_},
                          {"jobs", jobs_},
                          {"faults",
                           {{{"path", kCronJobs},
                             {"raw", R"({"kind":"CronJobList","items":[)" + ghost.dump() + ",{"},
                             {"times", 1}}}}});
  auto source = Make();
  auto first = List(*source);
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_EQ(Object(*first, "ops/ghost"), nullptr);
  EXPECT_NE(Object(*first, "ops/db-backup"), nullptr);
  EXPECT_EQ(Lists(kCronJobs), 2);
}

TEST_F(KubernetesWatchTest, ACacheCountsMillionsOfUnreadableItemsWithoutKeepingThem) {
  std::string page = R"({"kind":"CronJobList","metadata":{"resourceVersion":"884214"},"items":[)";
  for (const auto& item : cronjobs_) page += item.dump() + ",";
  for (int i = 0; i < 1000000; ++i) page += i ? ",1" : "1";
  page += "]}";
  server_->SetConfig(Json{{"token", kToken},
                          {"cronjobs", cronjobs_},
                          {"jobs", jobs_},
                          {"faults", {{{"path", kCronJobs}, {"raw", page}, {"times", 1}}}}});
  auto source = Make();
  auto first = List(*source);
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_NE(Object(*first, "ops/db-backup"), nullptr);
  std::size_t malformed = 0;
  bool counted = false;
  for (const auto& problem : first->problems) {
    malformed += problem.reason == "malformed_object";
    counted |=
        problem.message.find("more unreadable cronjobs in the last list") != std::string::npos;
  }
  EXPECT_LE(malformed, kMaxListedItemProblems + 1);
  EXPECT_TRUE(counted);
}

TEST_F(KubernetesWatchTest, ADeletedCronJobIsMissingOnceTheServerConfirms) {
  auto source = Make();
  ASSERT_TRUE(Refresh(*source).snapshot.ok());
  server_->Remove("cronjobs", "5b1c2a9e-0001-4c61-9a0e-2f7b8c1d4e01");  // ops/db-backup
  AbsenceReads reads;
  ASSERT_TRUE(WaitFor([&] {
    reads = Refresh(*source);
    return reads.snapshot.ok() && reads.confirmed_absent.count("backup") > 0;
  }));
  EXPECT_EQ(reads.reads, 2);
  EXPECT_EQ(reads.confirmed_absent, std::set<std::string>{"backup"});
  // The second read asked the API server for the role's label, not the cache.
  auto requests = server_->Requests();
  bool confirmed_by_server = false;
  for (const auto& request : requests) {
    if (request["path"] == kCronJobs && !request["query"].contains("watch") &&
        request["query"].value("labelSelector", "") == "schedwatch.io/role in (backup)") {
      confirmed_by_server = true;
    }
  }
  EXPECT_TRUE(confirmed_by_server);
  EXPECT_EQ(Lists(kCronJobs), 2) << "the first list and the confirming one";
}

TEST_F(KubernetesWatchTest, AnAbsenceTheServerDoesNotConfirmIsNotMissing) {
  JobSpec audit_job = job_specs_[0];
  audit_job.role = "audit";
  job_specs_.push_back(audit_job);
  std::vector<std::string> roles = kRoles;
  roles.push_back("audit");
  auto source = Make();
  AbsenceReads reads = ConfirmAbsence(
      roles, [&] { return List(*source); }, [] { return true; });
  ASSERT_TRUE(reads.snapshot.ok()) << reads.snapshot.error();
  EXPECT_EQ(reads.confirmed_absent, std::set<std::string>{"audit"});
  ASSERT_TRUE(WaitFor([&] { return server_->OpenWatches() == 3; }));
  // The CronJob is created while the watch brings nothing: the cache lacks it, the server not.
  server_->Stall(true);
  Json audit = Find(cronjobs_, "db-backup");
  audit["metadata"]["name"] = "audit";
  audit["metadata"]["uid"] = "5b1c2a9e-0099-4c61-9a0e-2f7b8c1d4e99";
  audit["metadata"]["labels"]["schedwatch.io/role"] = "audit";
  server_->Put("cronjobs", audit);
  reads = ConfirmAbsence(
      roles, [&] { return List(*source); }, [] { return true; });
  ASSERT_TRUE(reads.snapshot.ok()) << reads.snapshot.error();
  EXPECT_EQ(reads.reads, 2);
  EXPECT_EQ(reads.absent_in_first_read, std::set<std::string>{"audit"});
  EXPECT_TRUE(reads.confirmed_absent.empty());
  EXPECT_NE(Object(*reads.snapshot, "ops/audit"), nullptr);
}

TEST_F(KubernetesWatchTest, ASuspendedCronJobIsSeenWithinARefresh) {
  auto source = Make();
  ASSERT_TRUE(List(*source).ok());
  Json backup = Find(cronjobs_, "db-backup");
  backup["spec"]["suspend"] = true;
  server_->Put("cronjobs", backup);
  EXPECT_TRUE(ListUntil(*source, [&](const SourceSnapshot& snapshot) {
    const LiveObject* object = Object(snapshot, "ops/db-backup");
    return object != nullptr && !object->enabled;
  }));
  EXPECT_EQ(Lists(kCronJobs), 1);
}

TEST_F(KubernetesWatchTest, ANewJobsSuccessIsSeenWithinARefresh) {
  auto source = Make();
  auto first = List(*source);
  ASSERT_TRUE(first.ok());
  Json job = jobs_[0];
  job["metadata"]["name"] = "db-backup-29000000";
  job["metadata"]["uid"] = "a1000000-0099-4000-8000-000000000099";
  job["metadata"]["creationTimestamp"] = "2024-05-03T00:30:00Z";
  Succeed(job);
  server_->Put("jobs", job);
  EXPECT_TRUE(ListUntil(*source, [&](const SourceSnapshot& snapshot) {
    return snapshot.history.at("backup").last_success == ParseRfc3339("2024-05-03T00:39:00Z");
  }));
  EXPECT_EQ(Lists(kOpsJobs), 1);
}

// A shard's Job cache drops the Jobs of CronJobs that are not its own: a CronJob that becomes its
// own after its Jobs were dropped (a new role label, or its Job's event came first) has its Jobs
// listed again, or their runs would stay unseen.
TEST_F(KubernetesWatchTest, AShardListsAgainTheJobsItDroppedOfACronJobNowItsOwn) {
  shard_ = ShardAssignment{ShardAssignment::Of("backup", 2), 2};  // so it watches ops' Jobs
  std::string role;
  for (int i = 0; role.empty(); ++i) {
    if (shard_.Owns("moved-" + std::to_string(i))) role = "moved-" + std::to_string(i);
  }
  auto source = Make();
  auto first = List(*source);
  ASSERT_TRUE(first.ok()) << first.error();
  ASSERT_TRUE(WaitFor([&] { return server_->OpenWatches() >= 2; }));
  const std::size_t cached = ReportWatches(*source)->jobs;

  const std::string uid = "7c2d0000-0099-4000-8000-000000000099";
  Json job = jobs_[0];
  job["metadata"]["name"] = "moved-29000000";
  job["metadata"]["uid"] = "a1000000-0098-4000-8000-000000000098";
  job["metadata"]["ownerReferences"][0]["uid"] = uid;
  Succeed(job);
  std::uint64_t bytes = ReportWatches(*source)->counts.bytes;
  server_->Put("jobs", job);
  // Its CronJob is none of the shard's yet: dropped as it comes.
  ASSERT_TRUE(WaitFor([&] { return ReportWatches(*source)->counts.bytes > bytes; }));
  EXPECT_EQ(ReportWatches(*source)->jobs, cached);

  Json cronjob = Find(cronjobs_, "cleanup");
  cronjob["metadata"]["name"] = "moved";
  cronjob["metadata"]["uid"] = uid;
  cronjob["metadata"]["labels"]["schedwatch.io/role"] = role;
  server_->Put("cronjobs", cronjob);
  EXPECT_TRUE(ListUntil(*source, [&](const SourceSnapshot& snapshot) {
    auto history = snapshot.history.find(role);
    return history != snapshot.history.end() &&
           history->second.last_success == ParseRfc3339("2024-05-03T00:39:00Z");
  }));
  EXPECT_EQ(ReportWatches(*source)->job_relists, 1);
  EXPECT_EQ(ReportWatches(*source)->jobs, cached + 1);
  EXPECT_EQ(Lists(kOpsJobs), 2);
  EXPECT_EQ(ReportWatches(*source)->counts.failed, 0) << "listed again, not failed";
}

TEST_F(KubernetesWatchTest, AnExpiredWatchListsAgain) {
  auto source = Make();
  ASSERT_TRUE(List(*source).ok());
  ASSERT_TRUE(WaitFor([&] { return server_->OpenWatches() == 3; }));
  // Compacted past the watch's resourceVersion, then the watch ends: the next watch from that
  // version gets an ERROR 410 event, and the next refresh lists again.
  Json backup = Find(cronjobs_, "db-backup");
  backup["spec"]["schedule"] = "45 3 * * *";
  server_->Stall(true);
  server_->Put("cronjobs", backup);
  server_->Compact();
  server_->Stall(false);
  server_->CloseWatches();
  EXPECT_TRUE(WaitFor([&] { return ReportWatches(*source)->counts.expired >= 3; }));
  EXPECT_TRUE(ListUntil(*source, [&](const SourceSnapshot& snapshot) {
    const LiveObject* object = Object(snapshot, "ops/db-backup");
    return object != nullptr && object->schedule() == "45 3 * * *";
  }));
  EXPECT_EQ(Lists(kCronJobs), 2);
  EXPECT_EQ(Lists(kOpsJobs), 2);
}

TEST_F(KubernetesWatchTest, AWatchRefusedWith410ListsAgain) {
  server_->SetConfig({{"token", kToken},
                      {"cronjobs", cronjobs_},
                      {"jobs", jobs_},
                      {"faults",
                       {{{"watch", true},
                         {"path", kCronJobs},
                         {"times", 1},
                         {"status", 410},
                         {"reason", "Expired"},
                         {"message", "too old resource version"}}}}});
  auto source = Make();
  ASSERT_TRUE(List(*source).ok());
  ASSERT_TRUE(WaitFor([&] { return ReportWatches(*source)->counts.expired == 1; }));
  ASSERT_TRUE(List(*source).ok());
  EXPECT_EQ(Lists(kCronJobs), 2);
  EXPECT_TRUE(WaitFor([&] { return Watches(kCronJobs) == 2; }));
}

TEST_F(KubernetesWatchTest, AStalledWatchIsRestartedFromItsResourceVersion) {
  auto source = Make();
  ASSERT_TRUE(List(*source).ok());
  ASSERT_TRUE(WaitFor([&] { return server_->OpenWatches() == 3; }));
  server_->Stall(true);
  Json backup = Find(cronjobs_, "db-backup");
  backup["spec"]["schedule"] = "50 3 * * *";
  server_->Put("cronjobs", backup);
  std::string version = LastWatch(kCronJobs)["query"]["resourceVersion"];
  clock_.Advance(std::chrono::seconds(181));  // three bookmark intervals and then some
  ASSERT_TRUE(WaitFor([&] { return ReportWatches(*source)->counts.stalled >= 3; }));
  ASSERT_TRUE(WaitFor([&] { return Watches(kCronJobs) >= 2; }));
  EXPECT_EQ(LastWatch(kCronJobs)["query"]["resourceVersion"], version);
  server_->Stall(false);
  EXPECT_TRUE(ListUntil(*source, [&](const SourceSnapshot& snapshot) {
    const LiveObject* object = Object(snapshot, "ops/db-backup");
    return object != nullptr && object->schedule() == "50 3 * * *";
  }));
  EXPECT_EQ(Lists(kCronJobs), 1) << "a stall restarts the watch, it does not list";
}

TEST_F(KubernetesWatchTest, AWatchTheServerEndsResumesFromTheLastResourceVersion) {
  auto source = Make();
  ASSERT_TRUE(List(*source).ok());
  Json backup = Find(cronjobs_, "db-backup");
  backup["spec"]["schedule"] = "55 3 * * *";
  server_->Put("cronjobs", backup);
  ASSERT_TRUE(ListUntil(*source, [&](const SourceSnapshot& snapshot) {
    const LiveObject* object = Object(snapshot, "ops/db-backup");
    return object != nullptr && object->schedule() == "55 3 * * *";
  }));
  server_->Bookmark();
  server_->CloseWatches();
  ASSERT_TRUE(WaitFor([&] { return Watches(kCronJobs) >= 2; }));
  // Read after the count: read before it, it could still be the first watch.
  Json resumed = LastWatch(kCronJobs);
  // The bookmark's version (the Put's plus one), not the list's: nothing is replayed.
  EXPECT_EQ(resumed["query"]["resourceVersion"], "884216");
  EXPECT_EQ(ReportWatches(*source)->counts.expired, 0);
  ASSERT_TRUE(List(*source).ok());
  EXPECT_EQ(Lists(kCronJobs), 1);
  EXPECT_EQ(Lists(kOpsJobs), 1);
}

TEST_F(KubernetesWatchTest, ACacheThatIsNotSyncedIsUnknownNeverEmpty) {
  auto source = Make();
  ASSERT_TRUE(List(*source).ok());
  ASSERT_TRUE(WaitFor([&] { return server_->OpenWatches() == 3; }));
  // The API server goes away: the watches fail, the caches are no longer synced, and a read
  // that cannot list again fails as a whole instead of serving what the cache last held. (While
  // only the Jobs' caches are unsynced, the read is the CronJobs without history.)
  server_->SetConfig({{"token", kToken}, {"unreachable", true}});
  ASSERT_TRUE(WaitFor([&] { return ReportWatches(*source)->synced == 0; }));
  Result<SourceSnapshot> read = List(*source);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().find("Connection refused"), std::string::npos) << read.error();
  server_->SetConfig({{"token", kToken}, {"cronjobs", cronjobs_}, {"jobs", jobs_}});
  EXPECT_TRUE(ListUntil(*source, [](const SourceSnapshot& snapshot) {
    return Object(snapshot, "ops/db-backup") != nullptr;
  }));
}

// A Job cache that cannot sync is a history that cannot be read: the CronJobs' cache still is
// the list, without any history, until the Jobs can be listed.
TEST_F(KubernetesWatchTest, AJobCacheThatCannotSyncLeavesTheCronJobsWithoutHistory) {
  server_->SetConfig(
      {{"token", kToken},
       {"cronjobs", cronjobs_},
       {"jobs", jobs_},
       {"faults", {{{"path", kOpsJobs}, {"status", 403}, {"reason", "Forbidden"}}}}});
  auto source = Make();
  for (int read_number : {1, 2}) {  // the Job cache is still not synced at the second
    auto read = List(*source);
    ASSERT_TRUE(read.ok()) << read.error();
    EXPECT_NE(Object(*read, "ops/db-backup"), nullptr);
    EXPECT_TRUE(read->history.empty()) << read_number;
    EXPECT_NE(read->history_error.find("403"), std::string::npos) << read->history_error;
  }
  server_->SetConfig({{"token", kToken}, {"cronjobs", cronjobs_}, {"jobs", jobs_}});
  EXPECT_TRUE(ListUntil(*source, [](const SourceSnapshot& snapshot) {
    return snapshot.history_error.empty() && !snapshot.history.empty();
  }));
}

TEST_F(KubernetesWatchTest, DestroyingTheSourceEndsItsWatchesAtOnce) {
  auto source = Make();
  ASSERT_TRUE(List(*source).ok());
  ASSERT_TRUE(WaitFor([&] { return server_->OpenWatches() == 3; }));
  source.reset();  // joins the watch threads: returns only once every watch has ended
  EXPECT_EQ(server_->OpenWatches(), 0);
}

}  // namespace
}  // namespace schedwatch::kubernetes
