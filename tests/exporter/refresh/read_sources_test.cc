#include "exporter/refresh/read_sources.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace schedwatch {
namespace {

constexpr std::int64_t kNow = 1796040000;

// A source that answers at once, or, while `hang` is set, only once its read is cancelled and
// it is not `deaf` to that.
class FakeSource : public Source {
 public:
  Result<SourceSnapshot> List(const ListContext& context) override {
    ++lists;
    running = true;
    while (hang.load() && (deaf.load() || !context.cancelled->load())) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    bool cancelled = context.cancelled->load();
    running = false;
    ++returned;
    if (cancelled) return Error{"cancelled"};
    SourceSnapshot snapshot;
    for (const auto& role : present) {
      LiveObject object;
      object.set_id(role);
      object.set_role(role);
      snapshot.objects.push_back(object);
    }
    return snapshot;
  }

  std::atomic<bool> hang{false};
  std::atomic<bool> deaf{false};
  std::atomic<bool> running{false};
  std::atomic<int> lists{0};
  std::atomic<int> returned{0};
  std::vector<std::string> present;
};

std::shared_ptr<SourceRunner> Runner(const std::string& name, std::shared_ptr<FakeSource> source,
                                     std::vector<std::string> roles,
                                     std::chrono::milliseconds timeout) {
  auto runner = std::make_shared<SourceRunner>();
  runner->name = name;
  runner->type = "fake";
  runner->timeout = timeout;
  runner->source = std::move(source);
  runner->desired_roles = std::move(roles);
  return runner;
}

// Waits (bounded) until `done` holds.
template <typename Predicate>
bool WaitFor(Predicate done) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

TEST(ReadSourcesTest, EverySourceIsReadAndAbsencesAreConfirmed) {
  auto fine = std::make_shared<FakeSource>();
  fine->present = {"gate", "retry"};
  auto thin = std::make_shared<FakeSource>();
  thin->present = {"report"};
  SourceReaders readers;
  auto reads =
      readers.ReadAll({Runner("fine", fine, {"gate", "retry"}, std::chrono::seconds(20)),
                       Runner("thin", thin, {"report", "export"}, std::chrono::seconds(20))},
                      kNow, std::chrono::milliseconds(1));
  ASSERT_EQ(reads.size(), 2u);
  EXPECT_EQ(reads[0].runner->name, "fine");
  ASSERT_TRUE(reads[0].reads.snapshot.ok());
  EXPECT_EQ(reads[0].reads.reads, 1);
  EXPECT_EQ(fine->lists.load(), 1);
  ASSERT_TRUE(reads[1].reads.snapshot.ok());
  EXPECT_EQ(reads[1].reads.reads, 2);
  EXPECT_EQ(thin->lists.load(), 2);
  EXPECT_EQ(reads[1].reads.confirmed_absent, (std::set<std::string>{"export"}));
  EXPECT_FALSE(reads[0].timed_out);
}

TEST(ReadSourcesTest, AHungSourceTimesOutAloneAndIsNotReadTwiceAtOnce) {
  auto fine = std::make_shared<FakeSource>();
  fine->present = {"gate"};
  auto stuck = std::make_shared<FakeSource>();
  stuck->hang = true;
  std::vector<std::shared_ptr<SourceRunner>> runners = {
      Runner("fine", fine, {"gate"}, std::chrono::seconds(20)),
      Runner("stuck", stuck, {"retry"}, std::chrono::milliseconds(200))};
  SourceReaders readers;
  auto reads = readers.ReadAll(runners, kNow, std::chrono::milliseconds(1));
  EXPECT_TRUE(reads[0].reads.snapshot.ok());
  ASSERT_FALSE(reads[1].reads.snapshot.ok());
  EXPECT_TRUE(reads[1].timed_out);
  EXPECT_EQ(reads[1].reads.snapshot.error(), "no answer within 0.2s");

  // The timed-out read was cancelled; it returns, and its worker and its source are free again.
  ASSERT_TRUE(WaitFor([&] { return !runners[1]->busy->load(); }));
  EXPECT_EQ(stuck->returned.load(), 1);
  stuck->hang = false;
  reads = readers.ReadAll(runners, kNow, std::chrono::milliseconds(1));
  EXPECT_TRUE(reads[1].reads.snapshot.ok());
  // Workers are reused, not started per refresh: at most one per concurrent read (one may have
  // served both when the fine read ended before the stuck one was handed out).
  EXPECT_GE(readers.WorkerCount(), 1u);
  EXPECT_LE(readers.WorkerCount(), 2u);
}

TEST(ReadSourcesTest, AReadStillRunningIsReportedNotStartedAgain) {
  auto stuck = std::make_shared<FakeSource>();
  stuck->hang = true;
  auto runner = Runner("stuck", stuck, {"retry"}, std::chrono::milliseconds(100));
  SourceReaders readers;
  // Busy as a read that outlived its refresh would leave it.
  runner->busy->store(true);
  auto reads = readers.ReadAll({runner}, kNow, std::chrono::milliseconds(1));
  ASSERT_FALSE(reads[0].reads.snapshot.ok());
  EXPECT_EQ(reads[0].reads.snapshot.error(), "the previous read has not finished yet");
  EXPECT_EQ(stuck->lists.load(), 0);
}

TEST(ReadSourcesTest, ShutdownCancelsAndJoinsAReadNobodyWaitsFor) {
  auto stuck = std::make_shared<FakeSource>();
  stuck->hang = true;
  stuck->deaf = true;  // a read slow to notice that the refresh cancelled it
  {
    SourceReaders readers;
    auto reads = readers.ReadAll({Runner("stuck", stuck, {"retry"}, std::chrono::milliseconds(50))},
                                 kNow, std::chrono::milliseconds(1));
    EXPECT_TRUE(reads[0].timed_out);
    // Still inside List: the refresh gave up on it, the read goes on.
    EXPECT_EQ(stuck->returned.load(), 0);
    stuck->deaf = false;
  }
  // The destructor cancelled the read and joined its worker: List has returned (a detached
  // thread could still be inside it).
  EXPECT_EQ(stuck->returned.load(), 1);
  EXPECT_FALSE(stuck->running.load());
}

TEST(ReadSourcesTest, ShutdownEndsARefreshWaitingForASource) {
  auto stuck = std::make_shared<FakeSource>();
  stuck->hang = true;
  SourceReaders readers;
  std::vector<SourceRead> reads;
  std::thread refresh([&] {
    reads = readers.ReadAll({Runner("stuck", stuck, {"retry"}, std::chrono::hours(1))}, kNow,
                            std::chrono::milliseconds(1));
  });
  ASSERT_TRUE(WaitFor([&] { return stuck->running.load(); }));
  readers.Shutdown();  // an hour-long timeout does not hold it
  refresh.join();
  ASSERT_EQ(reads.size(), 1u);
  ASSERT_FALSE(reads[0].reads.snapshot.ok());
  EXPECT_EQ(reads[0].reads.snapshot.error(), "cancelled");

  // Reads asked for after shutdown fail at once.
  stuck->hang = false;
  reads = readers.ReadAll({Runner("late", stuck, {"retry"}, std::chrono::hours(1))}, kNow,
                          std::chrono::milliseconds(1));
  EXPECT_EQ(reads[0].reads.snapshot.error(), "shutting down");
}

}  // namespace
}  // namespace schedwatch
