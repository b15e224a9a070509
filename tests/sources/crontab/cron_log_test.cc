// Cron's log lines (syslog files and journal JSON) turned into runs, on fixture text. The
// syslog fixture's formats were taken from the real daemon's output through rsyslog; journal.json
// was written by `journalctl -o json` from a journal made with systemd-journal-remote.
#include "sources/crontab/cron_log.h"

#include <date/tz.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>

#include "schedwatch/timefmt.h"
#include "tests/test_util.h"

namespace schedwatch::crontab {
namespace {

const std::string kFixtures = std::string(SCHEDWATCH_TEST_DIR) + "/sources/crontab/fixtures/";

std::int64_t Time(const char* rfc3339) { return *ParseRfc3339(rfc3339); }

struct Parsed {
  CronLogState state;
  CronLogBatch batch;
  std::size_t consumed = 0;
};

Parsed ParseText(const std::string& text, CronLogOptions options = {}) {
  Parsed parsed;
  if (options.now == 0) options.now = Time("2026-11-30T12:00:00Z");
  parsed.consumed = ParseSyslog(text, options, parsed.state, parsed.batch);
  return parsed;
}

const CronRun* FindRun(const std::vector<CronRun>& runs, const std::string& command) {
  for (const auto& run : runs) {
    if (run.command == command) return &run;
  }
  return nullptr;
}

TEST(CronLogTest, Rfc3339Fixture) {
  std::string text = testing::ReadFile(kFixtures + "syslog-rfc3339.log");
  Parsed parsed = ParseText(text);
  EXPECT_EQ(parsed.consumed, text.size());
  const auto& finished = parsed.batch.finished;
  ASSERT_EQ(finished.size(), 4u);

  const CronRun* retry = FindRun(finished, "/usr/local/bin/retry --queue main");
  ASSERT_NE(retry, nullptr);
  EXPECT_EQ(retry->user, "root");
  EXPECT_EQ(retry->job_pid, 17208);
  EXPECT_EQ(retry->started, Time("2026-11-30T10:48:01Z"));
  EXPECT_EQ(retry->finished, Time("2026-11-30T10:48:01Z"));
  EXPECT_FALSE(retry->failed);

  const CronRun* exit3 = FindRun(finished, "sh -c \"exit 3\"");
  ASSERT_NE(exit3, nullptr);
  EXPECT_TRUE(exit3->failed);

  const CronRun* killed = FindRun(finished, "/usr/local/bin/killed");
  ASSERT_NE(killed, nullptr);
  EXPECT_TRUE(killed->failed);

  const CronRun* backup = FindRun(finished, "/usr/local/bin/pg-backup --full");
  ASSERT_NE(backup, nullptr);
  EXPECT_EQ(backup->user, "backup");
  EXPECT_EQ(*backup->finished - backup->started, 89);

  ASSERT_EQ(parsed.state.pending.size(), 1u);
  EXPECT_EQ(parsed.state.pending.at(17400).command, "/usr/local/bin/still-running");

  // Other programs, the daemon, pam_unix and info lines are not problems; these are.
  EXPECT_EQ(parsed.batch.problems.Count(Reason::kUnmatchedLine), 1u);  // END of a run begun earlier
  EXPECT_EQ(parsed.batch.problems.Count(Reason::kGarbledLine),
            3u);  // unterminated, CRON[abc], time
  EXPECT_EQ(parsed.batch.problems.Total(), 4u);
}

TEST(CronLogTest, BinaryGarbage) {
  std::string text = testing::ReadFile(kFixtures + "garbage.log");
  Parsed parsed = ParseText(text);
  EXPECT_EQ(parsed.consumed, text.size());
  EXPECT_TRUE(parsed.batch.finished.empty());
  // Only the cron line with garbage in it counts; another program's garbage is not ours.
  EXPECT_EQ(parsed.batch.problems.Total(), 1u);
  EXPECT_EQ(parsed.batch.problems.Count(Reason::kGarbledLine), 1u);
  std::vector<SourceProblem> problems;
  parsed.batch.problems.AppendTo(problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].message,
            "cron message \"(root) CMD ([17298] \\xff\\xfe\"");  // valid UTF-8, quoted
}

TEST(CronLogTest, OldStyleTimesTakeTheYearAndZoneOfTheHost) {
  std::string text = testing::ReadFile(kFixtures + "syslog-bsd.log");
  CronLogOptions options;
  options.zone = date::locate_zone("Europe/Berlin");
  options.now = Time("2027-01-01T00:10:00+01:00");
  Parsed parsed = ParseText(text, options);
  ASSERT_EQ(parsed.batch.finished.size(), 2u);
  EXPECT_EQ(parsed.batch.finished[0].started, Time("2026-12-31T23:59:01+01:00"));
  EXPECT_EQ(parsed.batch.finished[1].started, Time("2027-01-01T00:05:01+01:00"));
  // Without -L 8 a CMD line says when a run started, nothing more.
  ASSERT_EQ(parsed.batch.started_only.size(), 1u);
  EXPECT_EQ(parsed.batch.started_only[0].started, Time("2027-01-01T00:06:01+01:00"));
  EXPECT_EQ(parsed.batch.problems.Count(Reason::kCronLogLevel), 1u);
  EXPECT_EQ(parsed.batch.problems.Count(Reason::kGarbledLine), 1u);  // Feb 30

  EXPECT_EQ(ParseSyslogTime("Jun 15 12:00:00", Time("2027-01-01T00:00:00Z"), nullptr),
            Time("2026-06-15T12:00:00Z"));
  EXPECT_EQ(ParseSyslogTime("Jan  2 00:00:00", Time("2027-01-01T00:00:00Z"), nullptr),
            Time("2027-01-02T00:00:00Z"));  // a day ahead: clock skew, same year
  EXPECT_EQ(ParseSyslogTime("Foo  2 00:00:00", 0, nullptr), std::nullopt);
}

TEST(CronLogTest, PartialLinesWaitForTheirEnd) {
  const std::string line =
      "2026-11-30T10:48:01.698917+00:00 vm CRON[17205]: (root) CMD ([17208] /bin/true)\n";
  CronLogOptions options;
  options.now = Time("2026-11-30T12:00:00Z");
  CronLogState state;
  CronLogBatch batch;
  EXPECT_EQ(ParseSyslog(line.substr(0, 40), options, state, batch), 0u);
  EXPECT_EQ(ParseSyslog(line, options, state, batch), line.size());
  EXPECT_EQ(state.pending.size(), 1u);
}

TEST(CronLogTest, VeryLongLinesAreSkipped) {
  const std::string end =
      "2026-11-30T10:48:02+00:00 vm CRON[17205]: (root) END ([17208] /bin/true)\n";
  const std::string start =
      "2026-11-30T10:48:01+00:00 vm CRON[17205]: (root) CMD ([17208] /bin/true)\n";
  std::string long_cron =
      "2026-11-30T10:48:01+00:00 vm CRON[9]: (root) CMD ([10] " + std::string(100000, 'x') + ")\n";
  std::string long_other =
      "2026-11-30T10:48:01+00:00 vm app[9]: " + std::string(200000, 'y') + "\n";
  Parsed parsed = ParseText(start + long_other + long_cron + end);
  ASSERT_EQ(parsed.batch.finished.size(), 1u);
  EXPECT_EQ(parsed.batch.problems.Count(Reason::kGarbledLine), 1u);

  // The same, arriving in pieces smaller than the line: the rest is skipped as it comes.
  CronLogOptions options;
  options.now = Time("2026-11-30T12:00:00Z");
  CronLogState state;
  CronLogBatch batch;
  std::string text = start + long_cron + end;
  std::size_t offset = 0, piece = 70000;
  std::string buffer;
  while (offset < text.size()) {
    buffer += text.substr(offset, piece);
    offset += piece;
    buffer.erase(0, ParseSyslog(buffer, options, state, batch));
    EXPECT_LE(buffer.size(), options.max_line_bytes + 1);
  }
  EXPECT_EQ(batch.finished.size(), 1u);
  EXPECT_EQ(batch.problems.Count(Reason::kGarbledLine), 1u);
}

TEST(CronLogTest, PendingRunsAreBounded) {
  std::string text;
  for (int pid = 100; pid < 110; ++pid) {
    text += fmt::format("2026-11-30T10:{}:00+00:00 vm CRON[{}]: (root) CMD ([{}] /bin/job)\n",
                        pid - 50, pid, pid + 1000);
  }
  CronLogOptions options;
  options.max_pending = 4;
  Parsed parsed = ParseText(text, options);
  EXPECT_EQ(parsed.state.pending.size(), 4u);
  EXPECT_EQ(parsed.state.pending.count(109), 1u);  // the oldest were forgotten
  EXPECT_EQ(parsed.state.pending.count(100), 0u);
  EXPECT_EQ(parsed.batch.problems.Count(Reason::kPendingOverflow), 6u);
}

// The runs by start (which finds the oldest to forget) hold exactly the pending runs, through
// starts, a PID started again before its END, ends and forgetting.
TEST(CronLogTest, PendingRunsByStartFollowThePendingRuns) {
  std::string text;
  auto line = [&text](int minute, int pid, const char* word, int job) {
    text += fmt::format("2026-11-30T10:{:02}:00+00:00 vm CRON[{}]: (root) {} ([{}] /bin/job)\n",
                        minute, pid, word, job);
  };
  line(1, 100, "CMD", 1100);
  line(2, 101, "CMD", 1101);
  line(3, 100, "CMD", 1102);  // started again: the run of minute 1 is gone
  line(4, 102, "CMD", 1103);
  line(5, 103, "CMD", 1104);  // the fourth: the oldest (101, minute 2) is forgotten
  line(6, 102, "END", 1103);
  line(7, 104, "CMD", 1105);
  CronLogOptions options;
  options.max_pending = 3;
  Parsed parsed = ParseText(text, options);
  std::set<std::pair<std::int64_t, long>> expected;
  for (const auto& [pid, run] : parsed.state.pending) expected.emplace(run.started, pid);
  EXPECT_EQ(parsed.state.pending_by_start, expected);
  EXPECT_EQ(parsed.state.pending.count(101), 0u);
  EXPECT_EQ(parsed.state.pending.at(100).started, Time("2026-11-30T10:03:00Z"));
  EXPECT_EQ(parsed.state.pending.size(), 3u);  // 100, 103, 104
  EXPECT_EQ(parsed.batch.problems.Count(Reason::kPendingOverflow), 1u);
  ASSERT_EQ(parsed.batch.finished.size(), 1u);
}

TEST(CronLogTest, ErrorLineMustNameTheRunsJob) {
  Parsed parsed = ParseText(
      "2026-11-30T10:48:01+00:00 vm CRON[5]: (root) CMD ([6] /bin/job)\n"
      "2026-11-30T10:48:02+00:00 vm CRON[5]: (CRON) error (grandchild #7 failed with exit "
      "status 1)\n"
      "2026-11-30T10:48:03+00:00 vm CRON[5]: (root) END ([6] /bin/job)\n");
  ASSERT_EQ(parsed.batch.finished.size(), 1u);
  EXPECT_FALSE(parsed.batch.finished[0].failed);
  EXPECT_EQ(parsed.batch.problems.Count(Reason::kUnmatchedLine), 1u);
}

TEST(CronLogTest, JournalJsonFixture) {
  std::string text = testing::ReadFile(kFixtures + "journal.json");
  CronLogOptions options;
  options.now = Time("2026-11-30T12:00:00Z");
  CronLogState state;
  CronLogBatch batch;
  std::string cursor;
  EXPECT_EQ(ParseJournalJson(text, options, state, batch, &cursor), text.size());
  ASSERT_EQ(batch.finished.size(), 3u);
  const CronRun* retry = FindRun(batch.finished, "/usr/local/bin/retry --queue main");
  ASSERT_NE(retry, nullptr);
  EXPECT_TRUE(retry->failed);
  EXPECT_EQ(retry->started, 1780221601);
  const CronRun* backup = FindRun(batch.finished, "/usr/local/bin/pg-backup --full");
  ASSERT_NE(backup, nullptr);
  EXPECT_FALSE(backup->failed);
  EXPECT_EQ(*backup->finished, 1780221665);
  // A MESSAGE that is not UTF-8 comes as an array of bytes.
  EXPECT_NE(FindRun(batch.finished, "/usr/local/bin/gate \xff\xfe"), nullptr);
  EXPECT_EQ(batch.problems.Count(Reason::kUnmatchedLine), 1u);
  EXPECT_EQ(batch.problems.Total(), 1u);
  EXPECT_THAT(cursor, ::testing::StartsWith("s="));
  EXPECT_THAT(cursor, ::testing::HasSubstr(";i=c;"));  // the 12th entry

  CronLogBatch garbled;
  std::string bad = "{\"MESSAGE\": \"(root) CMD ([1] x)\"}\nnot json\n[1,2]\n{\"truncated\n";
  EXPECT_EQ(ParseJournalJson(bad, options, state, garbled, &cursor),
            bad.size() - std::string("{\"truncated\n").size() + 12);
  EXPECT_EQ(garbled.problems.Count(Reason::kGarbledLine), 4u);
}

}  // namespace
}  // namespace schedwatch::crontab
