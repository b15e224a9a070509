// Whatever a watched job or a snapshot holds must never crash or blind the watcher: a bad
// checkpoint is a counted problem with progress unknown, a malformed snapshot a failed read.
#include <gtest/gtest.h>

#include "exporter/checkpoint.h"
#include "exporter/refresher.h"
#include "exporter/state.h"
#include "sources/catalog.h"
#include "sources/file/file_source.h"
#include "tests/exporter/published_util.h"
#include "tests/test_util.h"

namespace schedwatch {
namespace {

namespace fs = std::filesystem;
using testing::Role;
using testing::Source;
using testing::TempDir;
using testing::WriteFile;

constexpr std::int64_t kNow = 1796040000;  // 2026-11-30T12:00:00Z

std::unique_ptr<Refresher> MakeRefresher(const fs::path& config_file) {
  auto spec = LoadSpecFile(config_file.string());
  EXPECT_TRUE(spec.ok()) << spec.error();
  RefresherOptions options;
  options.config_file = config_file.string();
  options.confirm_delay = std::chrono::milliseconds(10);
  options.source_timeout = std::chrono::seconds(5);
  options.clock = [] { return kNow; };
  auto refresher = Refresher::Create(options, std::make_shared<const Spec>(std::move(*spec)));
  EXPECT_TRUE(refresher.ok()) << refresher.error();
  return std::move(*refresher);
}

bool Has(const std::string& metrics, const std::string& line) {
  return metrics.find(line + "\n") != std::string::npos;
}

TEST(CheckpointTest, ParsesUnixSecondsAndRfc3339) {
  EXPECT_EQ(**ParseCheckpoint("1796040000\n"), 1796040000);
  EXPECT_EQ(**ParseCheckpoint("  1796040000 \r\nignored second line"), 1796040000);
  EXPECT_EQ(**ParseCheckpoint("2026-11-30T12:00:00Z"), 1796040000);
  EXPECT_EQ(**ParseCheckpoint("2026-11-30T13:00:00+01:00\n"), 1796040000);
  EXPECT_EQ(**ParseCheckpoint("0"), 0);
  EXPECT_EQ(**ParseCheckpoint("253402300799"), 253402300799);  // 9999-12-31T23:59:59Z
  // Empty: a job that only touches the file; its mtime counts.
  EXPECT_FALSE(ParseCheckpoint("")->has_value());
  EXPECT_FALSE(ParseCheckpoint(" \n")->has_value());
}

TEST(CheckpointTest, OutOfRangeAndGarbageAreErrorsNotCrashes) {
  // 19 digits: passed the old length check, then std::stoll threw out_of_range (exit 134).
  EXPECT_EQ(ParseCheckpoint("9999999999999999999\n").error(),
            "checkpoint \"9999999999999999999\" is out of range (Unix seconds up to "
            "253402300799)");
  EXPECT_EQ(ParseCheckpoint("253402300800").error(),
            "checkpoint \"253402300800\" is out of range (Unix seconds up to 253402300799)");
  EXPECT_FALSE(ParseCheckpoint(std::string(5000, '9')).ok());
  EXPECT_EQ(ParseCheckpoint("-5").error(),
            "checkpoint \"-5\" is neither Unix seconds nor an RFC 3339 time from 1970 to 9999");
  EXPECT_EQ(ParseCheckpoint("1969-12-31T23:59:59Z").error(),
            "checkpoint \"1969-12-31T23:59:59Z\" is neither Unix seconds nor an RFC 3339 time "
            "from 1970 to 9999");
  EXPECT_EQ(
      ParseCheckpoint(std::string("\x01\xff garbage that goes on and on and on and on")).error(),
      "checkpoint \"?\xff garbage that goes on and on and on an...\" is neither Unix "
      "seconds nor an RFC 3339 time from 1970 to 9999");
}

TEST(CheckpointTest, ReadIsCappedAndMissingFileIsUnknown) {
  TempDir dir;
  EXPECT_FALSE(ReadCheckpoint((dir.path() / "nope").string())->has_value());
  WriteFile(dir.path() / "big", std::string(kMaxCheckpointBytes + 1, '1'));
  EXPECT_EQ(ReadCheckpoint((dir.path() / "big").string()).error(),
            "cannot read " + (dir.path() / "big").string() +
                ": it is 4097 bytes, more than the limit of 4 KiB");
  fs::create_symlink("/dev/zero", dir.path() / "zero");
  EXPECT_FALSE(ReadCheckpoint((dir.path() / "zero").string()).ok());
}

TEST(CheckpointTest, OverflowingCheckpointIsACountedProblemAndProgressIsUnknown) {
  TempDir dir;
  WriteFile(dir.path() / "spec.yaml", R"(version: 1
sources: {s: {type: file, path: live.yaml}}
jobs:
  - role: ingest
    source: s
    schedule: "*/10 * * * *"
    spec_version: "1"
    progress: {file: ingest.checkpoint, stale_after: 1h}
)");
  WriteFile(dir.path() / "live.yaml",
            "objects: [{id: i, role: ingest, schedule: '*/10 * * * *', spec_version: '1'}]\n");
  WriteFile(dir.path() / "ingest.checkpoint", "9999999999999999999\n");
  auto refresher = MakeRefresher(dir.path() / "spec.yaml");
  refresher->RefreshOnce();  // used to end in std::out_of_range, at every restart
  refresher->RefreshOnce();
  auto published = refresher->Current();
  const RoleResult& role = Role(*published, "ingest");
  EXPECT_FALSE(role.status.last_progress.has_value());
  EXPECT_EQ(role.status.registered_objects, 1);
  const SourceStatus& source = Source(*published, "s");
  EXPECT_TRUE(source.up);
  ASSERT_EQ(source.problems.size(), 1u);
  EXPECT_EQ(source.problems[0].reason, "bad_checkpoint");
  EXPECT_EQ(source.problems[0].message,
            "role ingest: " + (dir.path() / "ingest.checkpoint").string() +
                ": checkpoint \"9999999999999999999\" is out of range (Unix seconds up to "
                "253402300799)");
  EXPECT_TRUE(Has(published->metrics,
                  R"(schedwatch_source_errors_total{reason="bad_checkpoint",source="s"} 2)"));
  EXPECT_EQ(published->metrics.find("schedwatch_job_last_progress_timestamp_seconds{"),
            std::string::npos);

  // Fixed by the job: progress is known again.
  WriteFile(dir.path() / "ingest.checkpoint", "2026-11-30T11:00:00Z\n");
  refresher->RefreshOnce();
  EXPECT_EQ(Role(*refresher->Current(), "ingest").status.last_progress, kNow - 3600);
}

TEST(SnapshotTest, MalformedOrIncompleteSnapshotIsAFailedRead) {
  const std::map<std::string, std::string> cases = {
      {"objects: 5\n",
       "1:10: objects is the value \"5\", not a list (a scheduler with nothing "
       "is objects: [])"},
      {"{}\n", "1:1: no objects list (a scheduler with nothing is objects: [])"},
      {"runs: []\n", "1:1: no objects list (a scheduler with nothing is objects: [])"},
      {"objects:\n",
       "1:9: objects is nothing (null), not a list (a scheduler with nothing is "
       "objects: [])"},
      {"objects: {a: 1}\n",
       "1:10: objects is a mapping, not a list (a scheduler with nothing "
       "is objects: [])"},
      {"objects: []\nruns: 5\n", "2:7: runs is the value \"5\", not a list"},
      {"objects: []\nprogress: {}\n", "2:11: progress is a mapping, not a list"},
      {"- objects: []\n", "1:1: expected a mapping with objects, runs and progress, got a list"},
  };
  for (const auto& [text, error] : cases) {
    auto snapshot = ParseSnapshot(text, kNow);
    ASSERT_FALSE(snapshot.ok()) << text;
    EXPECT_EQ(snapshot.error(), error) << text;
  }
}

TEST(SnapshotTest, EmptyObjectsListIsAValidEmptyScheduler) {
  auto snapshot = ParseSnapshot("objects: []\nruns:\n", kNow);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  EXPECT_TRUE(snapshot->objects.empty());
  EXPECT_TRUE(snapshot->problems.empty());
}

TEST(SnapshotTest, MalformedSnapshotMakesRolesUnknownNotMissing) {
  TempDir dir;
  WriteFile(dir.path() / "spec.yaml", R"(version: 1
sources:
  broken: {type: file, path: broken.yaml}
  empty: {type: file, path: empty.yaml}
jobs:
  - {role: a, source: broken, schedule: "*/5 * * * *", spec_version: "1"}
  - {role: b, source: empty, schedule: "*/5 * * * *", spec_version: "1"}
)");
  WriteFile(dir.path() / "broken.yaml", "objects: 5\n");
  WriteFile(dir.path() / "empty.yaml", "objects: []\n");
  auto refresher = MakeRefresher(dir.path() / "spec.yaml");
  refresher->RefreshOnce();
  auto published = refresher->Current();
  EXPECT_EQ(Role(*published, "a").status.ConditionList(), "unknown");
  EXPECT_FALSE(Source(*published, "broken").up);
  EXPECT_TRUE(Has(published->metrics, R"(schedwatch_source_up{source="broken",type="file"} 0)"));
  EXPECT_TRUE(Has(published->metrics,
                  R"(schedwatch_source_errors_total{reason="list_failed",source="broken"} 1)"));
  // A valid empty list is a real answer: its role is missing.
  EXPECT_EQ(Role(*published, "b").status.ConditionList().rfind("missing", 0), 0u);
}

}  // namespace
}  // namespace schedwatch
