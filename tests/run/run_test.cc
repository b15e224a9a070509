// schedwatch_run's pieces on fixtures: the record format (written, read back, refused), what
// records say as history, the flock guard, and how a Lease read from the API server is judged.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "run/guard.h"
#include "run/record_writer.h"
#include "sources/run_record.h"

namespace schedwatch {
namespace {

namespace fs = std::filesystem;

std::string TempDir(const std::string& name) {
  std::string dir =
      fs::temp_directory_path() / fmt::format("schedwatch-run-test-{}-{}", getpid(), name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

RunRecord Finished(double start, double end, int exit_code) {
  RunRecord record;
  record.role = "backup";
  record.state = RunRecord::State::kFinished;
  record.host = "web1";
  record.pid = 4242;
  record.start = start;
  record.end = end;
  record.exit_code = exit_code;
  record.guard = "flock";
  return record;
}

TEST(RunRecordTest, RoundTrips) {
  RunRecord record = Finished(1767225600.25, 1767225612.75, 3);
  std::string text = RenderRunRecord(record);
  EXPECT_EQ(text,
            "{\"format\":1,\"role\":\"backup\",\"state\":\"finished\",\"host\":\"web1\",\"pid\":"
            "4242,\"start\":1767225600.25,\"end\":1767225612.75,\"duration_seconds\":12.5,"
            "\"exit_code\":3,\"guard\":\"flock\"}\n");
  auto parsed = ParseRunRecord(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->role, "backup");
  EXPECT_EQ(parsed->exit_code, 3);
  EXPECT_DOUBLE_EQ(*parsed->Duration(), 12.5);
  EXPECT_EQ(RunRecordFileName(record), "00001767225600250000-4242.json");
}

TEST(RunRecordTest, RefusesWhatIsNotARecord) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "not JSON (0 bytes)"},
      {"{\"ghp_SECRET", "not JSON (12 bytes)"},
      {"[]", "not a JSON object"},
      {R"({"format":2,"role":"a","state":"running","start":1})", "format is not 1"},
      {R"({"format":1,"role":"../etc","state":"running","start":1})",
       "\"role\" is not a role name"},
      {R"({"format":1,"role":"a","state":"done","start":1})",
       "\"state\" is not running, finished, skipped or not_run"},
      {R"({"format":1,"role":"a","state":"running"})", "missing \"start\""},
      {R"({"format":1,"role":"a","state":"running","start":"x"})", "\"start\" is not a number"},
      {R"({"format":1,"role":"a","state":"running","start":1e300})", "\"start\" is out of range"},
      {R"({"format":1,"role":"a","state":"running","start":-1})", "\"start\" is out of range"},
      {R"({"format":1,"role":"a","state":"finished","start":5,"end":4,"exit_code":0})",
       "\"end\" is before \"start\""},
      {R"({"format":1,"role":"a","state":"finished","start":5,"end":6})",
       "a finished run has exactly one of \"exit_code\" and \"signal\""},
      {R"({"format":1,"role":"a","state":"finished","start":5})", "a finished run has no \"end\""},
      {R"({"format":1,"role":"a","state":"finished","start":5,"end":6,"exit_code":256})",
       "\"exit_code\" is out of range"},
      {R"({"format":1,"role":"a","state":"running","start":5,"exit_code":0})",
       "a running record has no exit status"},
      {R"({"format":1,"role":"a","state":"running","start":5,"extra":1})",
       "an unknown key of 5 bytes"},
      {R"({"format":1,"role":"a","state":"running","start":5,"pid":1.5})",
       "\"pid\" is not an integer"},
  };
  for (const auto& [text, message] : cases) {
    auto parsed = ParseRunRecord(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.error(), message) << text;
  }
  EXPECT_FALSE(ParseRunRecord(std::string(kMaxRunRecordBytes + 1, ' ')).ok());
}

TEST(RunRecordTest, SummaryOfRunsSkipsAndACrash) {
  std::vector<std::pair<std::string, RunRecord>> records;
  records.emplace_back("a", Finished(1000.5, 1010.25, 0));
  RunRecord skipped;
  skipped.role = "backup";
  skipped.state = RunRecord::State::kSkipped;
  skipped.start = 1000.7;
  skipped.end = 1000.8;
  skipped.guard = "flock";
  records.emplace_back("b", skipped);
  RunRecord failed = Finished(2000, 2003.5, 0);
  failed.exit_code.reset();
  failed.signal = 9;
  records.emplace_back("c", failed);
  auto summary = SummarizeRunRecords(records);
  EXPECT_EQ(summary.history.last_started, 2000);
  EXPECT_EQ(summary.history.last_success, 1010);
  EXPECT_EQ(summary.history.last_failure, 2003);
  EXPECT_FALSE(summary.history.running_since);
  EXPECT_DOUBLE_EQ(*summary.last_duration, 3.5);
  EXPECT_EQ(summary.last_signal, 9);
  EXPECT_EQ(summary.skipped, 1);
  EXPECT_EQ(summary.guarded, true);

  // A wrapper killed with -9 leaves "running"; while nothing follows, it is running (and hung
  // after max_runtime) ...
  RunRecord crashed;
  crashed.role = "backup";
  crashed.start = 3000;
  crashed.guard = "flock";
  records.emplace_back("d", crashed);
  summary = SummarizeRunRecords(records);
  EXPECT_EQ(summary.history.running_since, 3000);
  // ... and once the next guarded run started, it cannot have been running: it failed.
  records.emplace_back("e", Finished(4000, 4001, 0));
  summary = SummarizeRunRecords(records);
  EXPECT_FALSE(summary.history.running_since);
  EXPECT_EQ(summary.history.last_failure, 4000);
  EXPECT_EQ(summary.history.last_success, 4001);
  // A run without its guard says nothing about the one before.
  records.back().second.guard_error = "cannot lock";
  summary = SummarizeRunRecords(records);
  EXPECT_EQ(summary.history.running_since, 3000);
  EXPECT_EQ(summary.guarded, false);
}

TEST(RunRecordTest, DirectoryReadCountsBadRecordsOnce) {
  std::string dir = TempDir("read");
  RunRecord good = Finished(1000, 1001, 0);
  ASSERT_TRUE(run::WriteRunRecord(dir, good).ok());
  std::ofstream(dir + "/00000000000000000001-1.json") << "{not json";
  RunRecord other = Finished(1002, 1003, 0);
  other.role = "other";
  ASSERT_TRUE(run::WriteRunRecord(dir, other).ok());
  mkfifo((dir + "/fifo.json").c_str(), 0644);            // never waited on
  std::ofstream(dir + "/checkpoint") << "1767225600\n";  // not a record: ignored
  RunRecordCache cache;
  auto read = ReadRunRecords(dir, "backup", &cache);
  ASSERT_EQ(read.records.size(), 1u);
  EXPECT_EQ(read.records[0].second.start, 1000);
  ASSERT_EQ(read.problems.size(), 3u);
  for (const auto& problem : read.problems) EXPECT_EQ(problem.reason, "bad_run_record");
  EXPECT_NE(read.problems[0].message.find("00000000000000000001-1.json: not JSON"),
            std::string::npos);
  EXPECT_NE(read.problems[1].message.find("another role, in the directory of \"backup\""),
            std::string::npos);
  EXPECT_NE(read.problems[2].message.find("fifo.json: not a regular file"), std::string::npos);
  EXPECT_EQ(read.new_problems.size(), 3u);
  // Unchanged files are not read again but stay problems while they are there, counted once
  // (a bad record used to vanish from the page after one refresh); the good one is still
  // there (from the cache).
  auto again = ReadRunRecords(dir, "backup", &cache);
  ASSERT_EQ(again.problems.size(), 3u);
  for (const auto& problem : again.problems) EXPECT_TRUE(problem.counted_before);
  EXPECT_EQ(again.problems[1].message, read.problems[1].message);
  EXPECT_TRUE(again.new_problems.empty());
  ASSERT_EQ(again.records.size(), 1u);
  EXPECT_EQ(again.records[0].second.start, 1000);
  // A bad file rewritten is read and reported again.
  std::ofstream(dir + "/00000000000000000001-1.json.new") << "[]";
  fs::rename(dir + "/00000000000000000001-1.json.new", dir + "/00000000000000000001-1.json");
  again = ReadRunRecords(dir, "backup", &cache);
  ASSERT_EQ(again.new_problems.size(), 1u);
  EXPECT_NE(again.new_problems[0].find("not a JSON object"), std::string::npos);
  // Removed, the problem is gone.
  fs::remove(dir + "/00000000000000000001-1.json");
  EXPECT_EQ(ReadRunRecords(dir, "backup", &cache).problems.size(), 2u);
  EXPECT_TRUE(ReadRunRecords(dir + "/absent", "backup", nullptr).problems.empty());
  fs::remove_all(dir);
}

TEST(RecordWriterTest, ReplacesTheStartRecordAndPrunesTheOldest) {
  std::string dir = TempDir("write");
  RunRecord record = Finished(1000, 1001, 0);
  record.state = RunRecord::State::kRunning;
  record.end.reset();
  record.exit_code.reset();
  ASSERT_TRUE(run::WriteRunRecord(dir, record).ok());
  record = Finished(1000, 1001, 0);
  ASSERT_TRUE(run::WriteRunRecord(dir, record).ok());
  auto read = ReadRunRecords(dir, "backup", nullptr);
  ASSERT_EQ(read.records.size(), 1u);
  EXPECT_EQ(read.records[0].second.state, RunRecord::State::kFinished);
  for (int i = 1; i <= 5; ++i)
    ASSERT_TRUE(run::WriteRunRecord(dir, Finished(1000 + i * 10, 1001 + i * 10, 0)).ok());
  run::PruneRunRecords(dir, 3);
  read = ReadRunRecords(dir, "backup", nullptr);
  ASSERT_EQ(read.records.size(), 3u);
  EXPECT_EQ(read.records[0].second.start, 1030);  // the three newest
  std::vector<std::string> hidden;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string()[0] == '.') hidden.push_back(entry.path().filename());
  }
  // No temporary files; only the spare the next start record may need on a full disk.
  EXPECT_EQ(hidden, std::vector<std::string>{run::kSpareName});
  EXPECT_EQ(fs::file_size(dir + "/" + run::kSpareName), run::kReservedRecordBytes);
  fs::remove_all(dir);
}

TEST(FlockGuardTest, SecondCopyFindsItHeldUntilReleased) {
  std::string dir = TempDir("flock") + "/locks";
  run::FlockGuard first(dir, "backup", "web1_1");
  run::FlockGuard second(dir, "backup", "web1_2");
  run::FlockGuard other_role(dir, "report", "web1_3");
  ASSERT_TRUE(first.Acquire()->acquired);
  auto held = second.Acquire();
  ASSERT_TRUE(held.ok());
  EXPECT_FALSE(held->acquired);
  EXPECT_EQ(held->held_by, "web1_1");
  EXPECT_TRUE(other_role.Acquire()->acquired);
  first.Release();
  EXPECT_TRUE(second.Acquire()->acquired);
  // A directory that cannot be made is an error, not "held".
  run::FlockGuard broken("/proc/no/such/dir", "backup", "x");
  EXPECT_FALSE(broken.Acquire().ok());
}

TEST(LeaseTest, JudgedByRenewTimeAndDuration) {
  const double now = 1767225600;
  auto lease = [](const std::string& spec) {
    return R"({"metadata":{"name":"schedwatch-backup","resourceVersion":"17",)"
           R"("labels":{"schedwatch.io/role":"backup"}},"spec":)" +
           spec + "}";
  };
  auto held =
      run::ReadLease(lease(R"({"holderIdentity":"pod-a_7","leaseDurationSeconds":60,)"
                           R"("renewTime":"2026-01-01T00:00:00.000000Z","leaseTransitions":2})"),
                     now + 30);
  ASSERT_TRUE(held.ok()) << held.error();
  EXPECT_EQ(held->state, run::LeaseView::State::kHeld);
  EXPECT_EQ(held->holder, "pod-a_7");
  EXPECT_EQ(held->resource_version, "17");
  EXPECT_EQ(held->role, "backup");
  EXPECT_EQ(held->transitions, 2);
  auto expired = run::ReadLease(lease(R"({"holderIdentity":"pod-a_7","leaseDurationSeconds":60,)"
                                      R"("renewTime":"2026-01-01T00:00:00.000000Z"})"),
                                now + 62);
  EXPECT_EQ(expired->state, run::LeaseView::State::kExpired);
  EXPECT_EQ(run::ReadLease(lease(R"({"holderIdentity":null})"), now)->state,
            run::LeaseView::State::kFree);
  // Without a readable renewal, a holder is never taken over.
  EXPECT_EQ(run::ReadLease(lease(R"({"holderIdentity":"x","leaseDurationSeconds":60})"), now + 1e6)
                ->state,
            run::LeaseView::State::kHeld);
  EXPECT_FALSE(run::ReadLease(R"({"metadata":{}})", now).ok());
  EXPECT_FALSE(run::ReadLease("nope", now).ok());

  EXPECT_EQ(run::LeaseName("Nightly_Report"), "schedwatch-nightly-report");
  EXPECT_EQ(run::MicroTime(1767225600.5), "2026-01-01T00:00:00.500000Z");
  std::string body =
      run::LeaseBody("schedwatch-backup", "ops", "backup", "pod-b_9", 60, now, now + 1, 3, "17");
  auto mine = run::ReadLease(body, now + 2);
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(mine->holder, "pod-b_9");
  EXPECT_EQ(mine->state, run::LeaseView::State::kHeld);
  EXPECT_EQ(mine->resource_version, "17");
  EXPECT_EQ(run::ReadLease(
                run::LeaseBody("schedwatch-backup", "ops", "backup", "", 60, 0, 0, 3, "18"), now)
                ->state,
            run::LeaseView::State::kFree);
}

}  // namespace
}  // namespace schedwatch
