// Whatever a watched job or a snapshot holds must never crash or blind the watcher: a bad
// checkpoint is a counted problem with progress unknown, a malformed snapshot a failed read.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>

#include "exporter/pages/status_page.h"
#include "exporter/refresh/checkpoint.h"
#include "exporter/refresh/refresher.h"
#include "exporter/state/state.h"
#include "sources/catalog.h"
#include "sources/file/file_source.h"
#include "tests/exporter/refresh/published_util.h"
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
            "checkpoint at line 1 (19 bytes), column 1: a number of 19 digits, out of range "
            "(Unix seconds up to 253402300799)");
  EXPECT_EQ(ParseCheckpoint("  253402300800").error(),
            "checkpoint at line 1 (14 bytes), column 3: a number of 12 digits, out of range "
            "(Unix seconds up to 253402300799)");
  EXPECT_FALSE(ParseCheckpoint(std::string(5000, '9')).ok());
  EXPECT_EQ(ParseCheckpoint("-5").error(),
            "checkpoint at line 1 (2 bytes), column 1: neither Unix seconds nor an RFC 3339 time "
            "from 1970 to 9999 (the text is not shown)");
  EXPECT_EQ(ParseCheckpoint("1969-12-31T23:59:59Z").error(),
            "checkpoint at line 1 (20 bytes), column 1: neither Unix seconds nor an RFC 3339 time "
            "from 1970 to 9999 (the text is not shown)");
  EXPECT_EQ(
      ParseCheckpoint(std::string("\x01\xff garbage that goes on and on and on and on")).error(),
      "checkpoint at line 1 (44 bytes), column 1: neither Unix seconds nor an RFC 3339 time "
      "from 1970 to 9999 (the text is not shown)");
}

// A job's user who links a checkpoint, a snapshot or a run record to a file only root may read
// (a token, /etc/shadow) must not see a byte of it on any page, in the metrics or in the log:
// messages say what was wrong, where and how large, never what the file held.
TEST(SecretTest, NoByteOfAFileThatFailedToParseReachesPagesMetricsOrLogs) {
  const std::string secret = "ghp_SECRETTOKEN0123456789";
  TempDir dir;
  WriteFile(dir.path() / "spec.yaml", R"(version: 1
sources:
  items: {type: file, path: items.yaml, runs_dir: runs}
  shadow: {type: file, path: shadow.yaml}
  alias: {type: file, path: alias.yaml}
jobs:
  - role: ingest
    source: items
    schedule: "*/10 * * * *"
    spec_version: "1"
    progress: {file: ingest.checkpoint, stale_after: 1h}
  - {role: other, source: items, schedule: "*/10 * * * *", spec_version: "1", progress: {file: other.checkpoint, stale_after: 1h}}
  - {role: s, source: shadow, schedule: "*/10 * * * *", spec_version: "1"}
  - {role: a, source: alias, schedule: "*/10 * * * *", spec_version: "1"}
)");
  WriteFile(dir.path() / "items.yaml",
            "objects:\n"
            "  - {id: i, role: ingest, schedule: '*/10 * * * *', spec_version: '1'}\n"
            "  - {id: j, role: x, schedule: 's', enabled: " +
                secret +
                "}\n"
                "  - {id: k, role: x, schedule: [" +
                secret +
                "]}\n"
                "  - " +
                secret +
                "\n"
                "runs:\n"
                "  - {role: ingest, started: " +
                secret +
                ", result: success}\n"
                "  - {role: ingest, started: -1m, result: " +
                secret +
                "}\n"
                "progress:\n"
                "  - {role: other, time: " +
                secret + "}\n");
  WriteFile(dir.path() / "shadow.yaml", "root:*:20228:0:99999:7:::" + secret + "\n");
  WriteFile(dir.path() / "alias.yaml", "objects: [*" + secret + "]\n");
  WriteFile(dir.path() / "ingest.checkpoint", secret + "\n");
  WriteFile(dir.path() / "other.checkpoint", "99999999999999999999" + secret + "\n");
  fs::create_directories(dir.path() / "runs" / "ingest");
  WriteFile(dir.path() / "runs" / "ingest" / "1.json", "{\"" + secret + "\": 1}");
  WriteFile(dir.path() / "runs" / "ingest" / "2.json", secret);
  WriteFile(dir.path() / "runs" / "ingest" / "3.json",
            R"({"format": 1, "role": ")" + secret + R"(", "state": "running", "start": 1})");
  ::testing::internal::CaptureStderr();
  auto refresher = MakeRefresher(dir.path() / "spec.yaml");
  refresher->RefreshOnce();
  refresher->RefreshOnce();
  std::string log = ::testing::internal::GetCapturedStderr();
  auto published = refresher->Current();
  std::vector<std::string> reasons;
  for (const auto& source : published->result.sources) {
    for (const auto& problem : source.problems) reasons.push_back(problem.reason);
    if (!source.error.empty()) reasons.push_back("error");
  }
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "bad_checkpoint"), 2);
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "bad_run_record"), 3);
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "malformed_object"), 6);
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "error"), 2);  // shadow, alias
  for (const std::string& output : std::vector<std::string>{
           published->metrics.str(), RenderStatusHtml(published->result),
           RenderStatusJson(published->result), *RenderRoleHtml(published->result, "ingest"),
           *RenderRoleJson(published->result, "ingest"), log}) {
    EXPECT_EQ(output.find("SECRETTOKEN"), std::string::npos) << output;
    EXPECT_EQ(output.find("20228"), std::string::npos) << output;
  }
  EXPECT_NE(log.find("list failed"), std::string::npos) << log;
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
                ": checkpoint at line 1 (19 bytes), column 1: a number of 19 digits, out of "
                "range (Unix seconds up to 253402300799)");
  EXPECT_TRUE(Has(published->metrics,
                  R"(schedwatch_source_errors_total{reason="bad_checkpoint",source="s"} 2)"));
  EXPECT_EQ(published->metrics.find("schedwatch_job_last_progress_timestamp_seconds{"),
            std::string::npos);

  // Fixed by the job: progress is known again.
  WriteFile(dir.path() / "ingest.checkpoint", "2026-11-30T11:00:00Z\n");
  refresher->RefreshOnce();
  EXPECT_EQ(Role(*refresher->Current(), "ingest").status.last_progress, kNow - 3600);
}

// Job files are read with their source: a FIFO planted as a checkpoint or a run record is a
// counted problem at once, never a read that waits for a writer (the source's timeout is an
// hour here, so a wait would show as the test's own timeout).
TEST(JobFilesTest, AFifoCheckpointOrRunRecordIsAProblemNotAWait) {
  TempDir dir;
  WriteFile(dir.path() / "spec.yaml", R"(version: 1
sources: {s: {type: file, path: live.yaml, timeout: 1h}}
jobs:
  - {role: ingest, source: s, schedule: "*/10 * * * *", spec_version: "1",
     progress: {file: ingest.checkpoint, stale_after: 1h}, runs_dir: runs}
)");
  WriteFile(dir.path() / "live.yaml",
            "objects: [{id: i, role: ingest, schedule: '*/10 * * * *', spec_version: '1'}]\n");
  ASSERT_EQ(mkfifo((dir.path() / "ingest.checkpoint").c_str(), 0600), 0);
  fs::create_directories(dir.path() / "runs" / "ingest");
  ASSERT_EQ(mkfifo((dir.path() / "runs" / "ingest" / "1.json").c_str(), 0600), 0);
  auto refresher = MakeRefresher(dir.path() / "spec.yaml");
  refresher->RefreshOnce();
  auto published = refresher->Current();
  EXPECT_FALSE(Role(*published, "ingest").status.last_progress.has_value());
  EXPECT_EQ(Role(*published, "ingest").status.registered_objects, 1);
  const SourceStatus& source = Source(*published, "s");
  EXPECT_TRUE(source.up);
  std::vector<std::string> messages;
  for (const auto& problem : source.problems)
    messages.push_back(problem.reason + ": " + problem.message);
  EXPECT_EQ(messages, (std::vector<std::string>{
                          "bad_checkpoint: role ingest: cannot read " +
                              (dir.path() / "ingest.checkpoint").string() +
                              ": it is a FIFO, not a regular file",
                          "bad_run_record: " + (dir.path() / "runs" / "ingest").string() +
                              "/1.json: not a regular file"}));
}

// A source whose list fails leaves its roles unknown, never missing, however their own files
// read: the checkpoint is not read at all (a bad one would be no problem of this read), the run
// records are, and what they say is shown.
TEST(JobFilesTest, ASourceThatCannotBeListedLeavesItsRolesUnknownNotMissing) {
  TempDir dir;
  WriteFile(dir.path() / "spec.yaml", R"(version: 1
sources: {s: {type: file, path: live.yaml, runs_dir: runs}}
jobs:
  - {role: ingest, source: s, schedule: "*/10 * * * *", spec_version: "1",
     progress: {file: ingest.checkpoint, stale_after: 1h}}
  - {role: gone, source: s, schedule: "*/10 * * * *", spec_version: "1"}
)");
  WriteFile(dir.path() / "ingest.checkpoint", "not a time\n");
  fs::create_directories(dir.path() / "runs" / "ingest");
  WriteFile(dir.path() / "runs" / "ingest" / "00000000001796039880000000-7.json",
            R"({"format": 1, "role": "ingest", "state": "finished", "start": 1796039880, )"
            R"("end": 1796039940, "exit_code": 4, "guard": "flock"})");
  auto refresher = MakeRefresher(dir.path() / "spec.yaml");
  refresher->RefreshOnce();
  auto published = refresher->Current();
  const SourceStatus& source = Source(*published, "s");
  EXPECT_FALSE(source.up);
  EXPECT_TRUE(source.problems.empty());
  for (const char* role : {"ingest", "gone"}) {
    EXPECT_EQ(Role(*published, role).status.ConditionList(), "unknown") << role;
  }
  EXPECT_EQ(Role(*published, "ingest").Records().run_records, 1);
  EXPECT_EQ(Role(*published, "ingest").Records().last_exit_code, 4);
  EXPECT_FALSE(Has(published->metrics,
                   R"(schedwatch_source_errors_total{reason="bad_checkpoint",source="s"} 1)"));
}

TEST(SnapshotTest, MalformedOrIncompleteSnapshotIsAFailedRead) {
  const std::map<std::string, std::string> cases = {
      {"objects: 5\n",
       "1:10: objects is a string of 1 byte, not a list (a scheduler with nothing "
       "is objects: [])"},
      {"{}\n", "1:1: no objects list (a scheduler with nothing is objects: [])"},
      {"runs: []\n", "1:1: no objects list (a scheduler with nothing is objects: [])"},
      {"objects:\n",
       "1:9: objects is nothing (null), not a list (a scheduler with nothing is "
       "objects: [])"},
      {"objects: {a: 1}\n",
       "1:10: objects is a mapping, not a list (a scheduler with nothing "
       "is objects: [])"},
      {"objects: []\nruns: 5\n", "2:7: runs is a string of 1 byte, not a list"},
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
