// The platform's clock, atomic writes and file locks.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "schedwatch/platform/clock.h"
#include "schedwatch/platform/file.h"
#include "schedwatch/platform/file_lock.h"
#include "tests/test_util.h"

namespace schedwatch::platform {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::ReadFile;
using testing::TempDir;

std::vector<std::string> Names(const fs::path& directory) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(directory)) {
    names.push_back(entry.path().filename());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(ClockTest, ARealSleepEndsWhenCancelled) {
  std::atomic<bool> cancelled{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(50));
    cancelled = true;
  });
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(RealClock().SleepFor(seconds(30), &cancelled));
  canceller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
  EXPECT_TRUE(RealClock().SleepFor(milliseconds(1), nullptr));
}

TEST(ClockTest, AFakeClockMovesOnlyWhenSleptOn) {
  FakeClock clock;
  auto start = clock.Now();
  auto wall = clock.UnixSeconds();
  EXPECT_TRUE(clock.SleepFor(seconds(90), nullptr));
  EXPECT_EQ(clock.Now() - start, seconds(90));
  EXPECT_EQ(clock.UnixSeconds() - wall, 90);
  std::atomic<bool> cancelled{true};
  EXPECT_FALSE(clock.SleepFor(seconds(5), &cancelled));
  EXPECT_EQ(clock.Now() - start, seconds(90));
}

TEST(WriteFileAtomicallyTest, ReplacesWithTheExactModeAndLeavesNoTemporary) {
  TempDir dir;
  std::string path = (dir.path() / "ledger.json").string();
  mode_t old_mask = umask(077);
  auto first = WriteFileAtomically(path, "one\n", 0644);
  auto second = WriteFileAtomically(path, "two\n", 0644);
  umask(old_mask);
  ASSERT_TRUE(first.ok()) << first.error();
  ASSERT_TRUE(second.ok()) << second.error();
  EXPECT_TRUE(*second);
  EXPECT_EQ(ReadFile(path), "two\n");
  struct stat info {};
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644u) << "not masked by the umask";
  EXPECT_EQ(Names(dir.path()), std::vector<std::string>{"ledger.json"});
}

TEST(WriteFileAtomicallyTest, KeepLeavesAnExistingFileAlone) {
  TempDir dir;
  std::string path = (dir.path() / "schedwatch-backup").string();
  auto created = WriteFileAtomically(path, "mine\n", 0644, Existing::kKeep);
  ASSERT_TRUE(created.ok()) << created.error();
  EXPECT_TRUE(*created);
  auto again = WriteFileAtomically(path, "theirs\n", 0644, Existing::kKeep);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_FALSE(*again);
  EXPECT_EQ(ReadFile(path), "mine\n");
  EXPECT_EQ(Names(dir.path()), std::vector<std::string>{"schedwatch-backup"});
}

TEST(WriteFileAtomicallyTest, AMissingDirectoryIsAnError) {
  TempDir dir;
  auto written = WriteFileAtomically((dir.path() / "no/such/file").string(), "x");
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.error().find("No such file or directory"), std::string::npos)
      << written.error();
}

TEST(FileLockTest, ASecondHolderIsToldWhoHoldsIt) {
  TempDir dir;
  std::string path = (dir.path() / "role.lock").string();
  auto first = FileLock::TryLock(path);
  ASSERT_TRUE(first.ok()) << first.error();
  ASSERT_NE(first->lock, nullptr);
  first->lock->WriteNote("host-a pid 42\n");
  // flock belongs to the open file description: a second open is a second holder.
  auto second = FileLock::TryLock(path);
  ASSERT_TRUE(second.ok()) << second.error();
  EXPECT_EQ(second->lock, nullptr);
  EXPECT_EQ(second->holder, "host-a pid 42");
  first->lock.reset();
  auto third = FileLock::TryLock(path);
  ASSERT_TRUE(third.ok());
  EXPECT_NE(third->lock, nullptr) << "released when the holder went";
}

TEST(FileLockTest, WaitingGivesUpAfterTheWaitOrWhenCancelled) {
  TempDir dir;
  std::string path = (dir.path() / "reconcile.lock").string();
  auto held = FileLock::TryLock(path);
  ASSERT_TRUE(held.ok() && held->lock);
  FakeClock clock;
  auto start = clock.Now();
  auto waited = FileLock::Lock(path, 0600, seconds(1), nullptr, clock);
  ASSERT_TRUE(waited.ok()) << waited.error();
  EXPECT_EQ(*waited, nullptr);
  EXPECT_EQ(clock.Now() - start, seconds(1));
  EXPECT_EQ(clock.sleeps().size(), 10u) << "polled every 100 ms";

  std::atomic<bool> cancelled{false};
  clock.set_on_sleep([&](Clock::Duration) { cancelled = true; });
  auto cancelled_wait = FileLock::Lock(path, 0600, seconds(60), &cancelled, clock);
  ASSERT_TRUE(cancelled_wait.ok());
  EXPECT_EQ(*cancelled_wait, nullptr);
  EXPECT_EQ(clock.sleeps().size(), 11u);

  held->lock.reset();
  auto free = FileLock::Lock(path, 0600, seconds(1), nullptr, clock);
  ASSERT_TRUE(free.ok());
  EXPECT_NE(*free, nullptr);
}

TEST(FileLockTest, ASymlinkIsNotFollowed) {
  TempDir dir;
  fs::path target = dir.path() / "elsewhere";
  fs::create_symlink(target, dir.path() / "role.lock");
  auto attempt = FileLock::TryLock((dir.path() / "role.lock").string());
  EXPECT_FALSE(attempt.ok());
  EXPECT_FALSE(fs::exists(target));
}

}  // namespace
}  // namespace schedwatch::platform
