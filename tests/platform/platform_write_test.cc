// The platform's clock, atomic writes and file locks.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "schedwatch/platform/clock.h"
#include "schedwatch/platform/file.h"
#include "schedwatch/platform/file_lock.h"
#include "schedwatch/platform/replace_file.h"
#include "tests/test_util.h"

namespace schedwatch::platform {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

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

TEST(WriteFileAtomicallyTest, KeepNeverShowsTheFileUnderASecondName) {
  // cron ignores a cron.d file with two links: a kill between a link and an unlink left one.
  // Just before the file takes its name there is nothing else in the directory to see.
  TempDir dir;
  std::string path = (dir.path() / "schedwatch-retry").string();
  AtomicWrite how;
  how.existing = Existing::kKeep;
  std::vector<std::string> seen_before;
  how.before_rename = [&]() -> Result<bool> {
    seen_before = Names(dir.path());
    return true;
  };
  auto created = WriteFileAtomically(path, "* * * * * root true\n", how);
  ASSERT_TRUE(created.ok()) << created.error();
  EXPECT_TRUE(*created);
  EXPECT_EQ(seen_before, std::vector<std::string>{});
  struct stat info {};
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_nlink, 1u);
  EXPECT_EQ(info.st_mode & 0777, 0644u);
  EXPECT_EQ(Names(dir.path()), std::vector<std::string>{"schedwatch-retry"});
}

TEST(WriteFileAtomicallyTest, AWritersTemporaryIsNotStaleWhileItWrites) {
  // The temporary is locked while it is written: a cleaner in another run leaves it alone.
  TempDir dir;
  std::string path = (dir.path() / "ledger.json").string();
  AtomicWrite how;
  std::vector<std::string> during;
  Result<std::size_t> removed = std::size_t{0};
  how.before_rename = [&]() -> Result<bool> {
    during = Names(dir.path());
    removed = RemoveStaleTemporaries(dir.path().string(), "ledger.json");
    return true;
  };
  auto written = WriteFileAtomically(path, "{}\n", how);
  ASSERT_TRUE(written.ok()) << written.error();
  ASSERT_TRUE(removed.ok()) << removed.error();
  EXPECT_EQ(*removed, 0u);
  ASSERT_EQ(during.size(), 1u);
  EXPECT_EQ(during[0].rfind(".ledger.json.", 0), 0u) << during[0];
  EXPECT_EQ(Names(dir.path()), std::vector<std::string>{"ledger.json"});
}

TEST(RemoveStaleTemporariesTest, RemovesOnlyItsOwnUnheldTemporaries) {
  TempDir dir;
  auto in = [&](const std::string& name) { return dir.path() / name; };
  WriteFile(in(".schedwatch-a.123.4.tmp"), "killed\n");  // a killed writer's: removed
  WriteFile(in("schedwatch-a"), "* * * * * root a\n");   // not a temporary
  WriteFile(in(".other.1.2.tmp"), "x");                  // another prefix
  WriteFile(in(".schedwatch-b.x.2.tmp"), "x");           // not PID.SEQ
  WriteFile(in(".schedwatch-c.1.2.tmp.orig"), "x");      // not .tmp
  // A link named like a temporary, to a file outside: neither followed nor removed.
  WriteFile(dir.path() / "outside/passwd", "root:x:0:0::/root:/bin/sh\n");
  fs::create_symlink(dir.path() / "outside/passwd", in(".schedwatch-evil.1.1.tmp"));
  // A hard link to a file someone needs, named like a temporary: one of two names, kept.
  fs::create_hard_link(dir.path() / "outside/passwd", in(".schedwatch-hard.1.1.tmp"));
  // Another user's file, a directory and a temporary a live writer holds: kept.
  // (Another user's only when this test may give a file away: as root.)
  const bool root = geteuid() == 0;
  if (root) {
    WriteFile(in(".schedwatch-theirs.1.1.tmp"), "x");
    ASSERT_EQ(chown(in(".schedwatch-theirs.1.1.tmp").c_str(), 65534, 65534), 0);
  }
  fs::create_directory(in(".schedwatch-dir.1.1.tmp"));
  WriteFile(in(".schedwatch-live.1.1.tmp"), "being written");
  UniqueFd held(open(in(".schedwatch-live.1.1.tmp").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_EQ(flock(held.get(), LOCK_EX), 0);

  auto removed = RemoveStaleTemporaries(dir.path().string(), "schedwatch-");
  ASSERT_TRUE(removed.ok()) << removed.error();
  EXPECT_EQ(*removed, 1u);
  std::vector<std::string> kept = {".other.1.2.tmp",
                                   ".schedwatch-b.x.2.tmp",
                                   ".schedwatch-c.1.2.tmp.orig",
                                   ".schedwatch-dir.1.1.tmp",
                                   ".schedwatch-evil.1.1.tmp",
                                   ".schedwatch-hard.1.1.tmp",
                                   ".schedwatch-live.1.1.tmp",
                                   "outside",
                                   "schedwatch-a"};
  if (root) kept.insert(kept.begin() + 7, ".schedwatch-theirs.1.1.tmp");
  EXPECT_EQ(Names(dir.path()), kept);
  EXPECT_EQ(ReadFile(dir.path() / "outside/passwd"), "root:x:0:0::/root:/bin/sh\n");
  held = UniqueFd();
  removed = RemoveStaleTemporaries(dir.path().string(), "schedwatch-");
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 1u) << "released by its writer's end";
  EXPECT_FALSE(fs::exists(in(".schedwatch-live.1.1.tmp")));
}

TEST(FinishInterruptedCreateTest, RemovesTheTemporarysNameOfTheCompleteFile) {
  // What a kill between link and unlink left: the file under its name and the temporary's.
  TempDir dir;
  const std::string text = "# schedwatch: role=rec spec_version=1\n* * * * * root true\n";
  fs::path target = dir.path() / "schedwatch-rec";
  WriteFile(target, text);
  fs::create_hard_link(target, dir.path() / ".schedwatch-rec.4242.1.tmp");
  // Neither another role's file with the same content nor a different text is finished.
  auto other = FinishInterruptedCreate((dir.path() / "schedwatch-re").string(), text);
  ASSERT_TRUE(other.ok()) << other.error();
  EXPECT_FALSE(*other);
  auto differs = FinishInterruptedCreate(target.string(), text + "# more\n");
  ASSERT_TRUE(differs.ok()) << differs.error();
  EXPECT_FALSE(*differs);
  std::string same_size = text;
  same_size.back() = ' ';
  differs = FinishInterruptedCreate(target.string(), same_size);
  ASSERT_TRUE(differs.ok());
  EXPECT_FALSE(*differs);
  EXPECT_EQ(fs::hard_link_count(target), 2u);

  auto finished = FinishInterruptedCreate(target.string(), text);
  ASSERT_TRUE(finished.ok()) << finished.error();
  EXPECT_TRUE(*finished);
  EXPECT_EQ(fs::hard_link_count(target), 1u);
  EXPECT_EQ(ReadFile(target), text);
  EXPECT_EQ(Names(dir.path()), std::vector<std::string>{"schedwatch-rec"});
  finished = FinishInterruptedCreate(target.string(), text);
  ASSERT_TRUE(finished.ok());
  EXPECT_FALSE(*finished) << "one link: nothing to finish";
}

TEST(FinishInterruptedCreateTest, ASecondNameThatIsNotATemporaryIsKept) {
  TempDir dir;
  fs::path target = dir.path() / "schedwatch-rec";
  WriteFile(target, "x\n");
  fs::create_hard_link(target, dir.path() / "backup");
  fs::create_symlink(target, dir.path() / ".schedwatch-rec.1.1.tmp");
  auto finished = FinishInterruptedCreate(target.string(), "x\n");
  ASSERT_TRUE(finished.ok()) << finished.error();
  EXPECT_FALSE(*finished);
  EXPECT_EQ(fs::hard_link_count(target), 2u);
  EXPECT_TRUE(fs::is_symlink(dir.path() / ".schedwatch-rec.1.1.tmp"));
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
