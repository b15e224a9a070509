// The journal's run messages (captured from a real systemd 252) assembled into runs.
#include "sources/systemd/unit_journal.h"

#include <gtest/gtest.h>

#include "tests/sources/systemd/systemd_fixtures.h"

namespace schedwatch::systemd {
namespace {

using fixtures::ReadExport;

std::string fmt_id(int i) {
  std::string id(32, '0');
  id.back() = static_cast<char>('0' + i);
  return id;
}

const std::string kFixture =
    std::string(SCHEDWATCH_TEST_DIR) + "/sources/systemd/fixtures/journal.export";

TEST(UnitJournal, RealMessagesMakeRunsByInvocation) {
  std::size_t skipped = 0;
  auto entries = ReadExport(kFixture, &skipped);
  ASSERT_GT(entries.size(), 30u);
  EXPECT_EQ(skipped, 0u);
  JournalRuns runs;
  for (const auto& entry : entries) runs.Apply(entry);

  const auto* ok = runs.RunsOf("ok.service");
  ASSERT_NE(ok, nullptr);
  ASSERT_GE(ok->size(), 2u);
  for (const auto& run : *ok) {
    // The newest may have started without its end in the capture.
    if (&run == &ok->back() && run.run.outcome == Run::Outcome::kRunning) continue;
    EXPECT_EQ(run.run.outcome, Run::Outcome::kSucceeded) << run.invocation_id;
    ASSERT_TRUE(run.run.finished);
    EXPECT_LE(run.run.started, *run.run.finished);
    EXPECT_LE(*run.run.finished - run.run.started, 1);
  }

  const auto* fail = runs.RunsOf("fail.service");
  ASSERT_NE(fail, nullptr);
  const JournalRun& failed = fail->front();
  EXPECT_EQ(failed.run.outcome, Run::Outcome::kFailed);
  EXPECT_EQ(failed.failure, "exit-code, status 3");

  const auto* mono = runs.RunsOf("mono.service");
  ASSERT_NE(mono, nullptr);
  EXPECT_EQ(mono->back().failure, "signal, killed 9");

  // A run the journal shows started and not ended is left to the service's properties.
  const auto* hung = runs.RunsOf("hung.service");
  ASSERT_NE(hung, nullptr);
  EXPECT_EQ(hung->back().run.outcome, Run::Outcome::kRunning);
  EXPECT_TRUE(runs.HistoryOf("hung.service").runs.empty());

  RunHistory history = runs.HistoryOf("fail.service");
  EXPECT_TRUE(history.last_failure);
  // Each run named by its invocation id (its exemplar's run_id).
  ASSERT_FALSE(history.runs.empty());
  ASSERT_TRUE(history.runs.back().identity);
  EXPECT_EQ(history.runs.back().identity->id, fail->back().invocation_id);
  EXPECT_FALSE(history.last_success);
  // Without the newest invocation (the properties report it): one run fewer.
  RunHistory without = runs.HistoryOf("fail.service", fail->back().invocation_id);
  EXPECT_EQ(without.runs.size() + 1, history.runs.size());
}

TEST(UnitJournal, EntriesWithoutWhatEveryRunMessageHasAreRefused) {
  std::string why;
  EXPECT_FALSE(EntryFromFields({"MESSAGE=hello"}, 1, &why));
  EXPECT_EQ(why, "no UNIT");
  EXPECT_FALSE(EntryFromFields(
      {"UNIT=a.service", "INVOCATION_ID=xyz", "MESSAGE_ID=7d4958e842da4a758f6c1cdc7b36dcc5"}, 1,
      &why));
  EXPECT_EQ(why, "no INVOCATION_ID of 32 hex digits");
  EXPECT_FALSE(EntryFromFields({"UNIT=a.service", "INVOCATION_ID=0123456789abcdef0123456789abcdef",
                                "MESSAGE_ID=7d4958e842da4a758f6c1cdc7b36dcc5"},
                               0, &why));
  EXPECT_EQ(why, "no time");
  auto entry = EntryFromFields({"UNIT=a.service", "INVOCATION_ID=0123456789abcdef0123456789abcdef",
                                "MESSAGE_ID=7d4958e842da4a758f6c1cdc7b36dcc5", "garbage"},
                               1796180670199692, &why);
  ASSERT_TRUE(entry);
  EXPECT_EQ(entry->time, 1796180670);
}

TEST(UnitJournal, KeepsTheNewestRunsPerUnit) {
  JournalRuns runs(3);
  for (int i = 0; i < 10; ++i) {
    JournalEntry start{1000 + i * 10, "a.service", fmt_id(i), std::string(kJobStarted), "", "", ""};
    JournalEntry end{
        1001 + i * 10, "a.service", fmt_id(i), std::string(kUnitSucceeded), "", "", ""};
    runs.Apply(start);
    runs.Apply(end);
  }
  const auto* kept = runs.RunsOf("a.service");
  ASSERT_NE(kept, nullptr);
  ASSERT_EQ(kept->size(), 3u);
  EXPECT_EQ(kept->front().run.started, 1070);
  EXPECT_EQ(kept->back().run.finished, 1091);
}

}  // namespace
}  // namespace schedwatch::systemd
