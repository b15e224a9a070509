// A job's own file whose read never returns (a checkpoint on a FUSE mount that stopped
// answering, as a hung NFS server does): the read is its source's, so the source's timeout cuts
// it; the refresh goes on with the source's roles unknown, never missing. Needs root (mount).
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "exporter/refresh/refresher.h"
#include "sources/catalog.h"
#include "sources/run_record.h"
#include "tests/exporter/refresh/published_util.h"
#include "tests/fixtures/silent_fuse.h"
#include "tests/test_util.h"

namespace schedwatch {
namespace {

namespace fs = std::filesystem;
using testing::Role;
using testing::SilentFuse;
using testing::Source;
using testing::TempDir;
using testing::WriteFile;

constexpr std::int64_t kNow = 1796040000;  // 2026-11-30T12:00:00Z

TEST(JobFilesReadTest, AHungCheckpointReadIsCutByTheSourceTimeoutAndNothingTurnsMissing) {
  TempDir dir;
  fs::create_directories(dir.path() / "mnt");
  fs::create_directories(dir.path() / "runs" / "wrapped");
  WriteFile(dir.path() / "live.yaml",
            "objects:\n"
            "  - {id: i, role: ingest, schedule: '*/10 * * * *', spec_version: '1'}\n"
            "  - {id: w, role: wrapped, schedule: '*/10 * * * *', spec_version: '1'}\n"
            "  - {id: o, role: other, schedule: '*/10 * * * *', spec_version: '1'}\n");
  WriteFile(dir.path() / "other.yaml",
            "objects: [{id: g, role: gate, schedule: '*/5 * * * *', spec_version: '1'}]\n"
            "runs: [{role: gate, started: -3m, finished: -2m, result: success}]\n");
  RunRecord record;
  record.role = "wrapped";
  record.state = RunRecord::State::kFinished;
  record.pid = 7;
  record.start = kNow - 120;
  record.end = kNow - 60;
  record.exit_code = 3;
  record.guard = "flock";
  WriteFile(dir.path() / "runs" / "wrapped" / RunRecordFileName(record), RenderRunRecord(record));
  WriteFile(dir.path() / "spec.yaml", R"(version: 1
sources:
  jobs: {type: file, path: live.yaml, timeout: 1s}
  fine: {type: file, path: other.yaml, timeout: 1s}
jobs:
  - {role: ingest, source: jobs, schedule: "*/10 * * * *", spec_version: "1",
     progress: {file: mnt/ingest.checkpoint, stale_after: 1h}}
  - {role: wrapped, source: jobs, schedule: "*/10 * * * *", spec_version: "1", runs_dir: runs}
  - {role: other, source: jobs, schedule: "*/10 * * * *", spec_version: "1"}
  - {role: gate, source: fine, schedule: "*/5 * * * *", spec_version: "1"}
)");
  auto spec = LoadSpecFile((dir.path() / "spec.yaml").string());
  ASSERT_TRUE(spec.ok()) << spec.error();
  RefresherOptions options;
  options.confirm_delay = std::chrono::milliseconds(1);
  options.clock = [] { return kNow; };
  auto refresher = Refresher::Create(options, std::make_shared<const Spec>(std::move(*spec)));
  ASSERT_TRUE(refresher.ok()) << refresher.error();

  // No checkpoint yet: progress unknown, the run record read.
  (*refresher)->RefreshOnce();
  EXPECT_EQ(Role(*(*refresher)->Current(), "wrapped").Records().last_exit_code, 3);

  SilentFuse fuse(dir.path() / "mnt");
  ASSERT_EQ(fuse.error(), "");
  auto refreshed = std::async(std::launch::async, [&] { (*refresher)->RefreshOnce(); });
  // Bounded by the source's 1 s timeout; without it the refresh would wait for the mount.
  bool returned = refreshed.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  EXPECT_TRUE(fuse.Asked());
  if (!returned) fuse.Stop();  // lets the stuck refresh end, so the test does
  refreshed.get();
  ASSERT_TRUE(returned) << "the refresh waited for the checkpoint's read";
  auto published = (*refresher)->Current();
  EXPECT_EQ(Source(*published, "jobs").error, "no answer within 1s");
  EXPECT_NE(published->metrics.find(
                "schedwatch_source_errors_total{reason=\"timeout\",source=\"jobs\"} 1\n"),
            std::string::npos);
  for (const char* role : {"ingest", "wrapped", "other"}) {
    EXPECT_EQ(Role(*published, role).status.ConditionList(), "unknown") << role;
  }
  EXPECT_FALSE(Role(*published, "ingest").status.last_progress.has_value());
  // What the last read of the records said stands while they cannot be read.
  EXPECT_EQ(Role(*published, "wrapped").Records().last_exit_code, 3);
  EXPECT_EQ(Role(*published, "gate").status.ConditionList(), "ok");

  // The mount gone (its connection aborted: the stuck read fails at once), the late read
  // returns and the next read knows the roles again.
  fuse.Stop();
  std::string error = "no answer within 1s";
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!error.empty() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    (*refresher)->RefreshOnce();
    error = Source(*(*refresher)->Current(), "jobs").error;
  }
  published = (*refresher)->Current();
  EXPECT_EQ(error, "");
  EXPECT_EQ(Role(*published, "other").status.ConditionList(), "ok");
  EXPECT_EQ(Role(*published, "wrapped").status.ConditionList(), "failing");
}

}  // namespace
}  // namespace schedwatch
