// Unit files as reconcile creates them: only under their final name, complete, never over a
// name that is taken (a file, a link, a mask), and the temporaries of a killed run removed.
#include "sources/systemd/unit_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "tests/test_util.h"

namespace schedwatch::systemd {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

std::vector<std::string> Names(const fs::path& directory) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(directory)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class UnitFiles : public ::testing::TestWithParam<bool> {
 protected:
  std::string dir() const { return dir_.path().string(); }
  TempDir dir_;
};

TEST_P(UnitFiles, CreatedCompleteWithItsModeAndNothingElse) {
  mode_t umask_before = umask(077);
  auto placed = CreateUnitFile(dir(), "a.timer", "[Timer]\nOnCalendar=daily\n", GetParam());
  umask(umask_before);
  ASSERT_TRUE(placed) << placed.error();
  EXPECT_EQ(*placed, Placed::kCreated);
  EXPECT_EQ(ReadFile(dir_.path() / "a.timer"), "[Timer]\nOnCalendar=daily\n");
  struct stat st {};
  ASSERT_EQ(stat((dir_.path() / "a.timer").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(st.st_nlink, 1u);  // no second name left behind
  EXPECT_EQ(Names(dir_.path()), std::vector<std::string>{"a.timer"});
}

TEST_P(UnitFiles, ATakenNameIsNeverReplacedNorFollowed) {
  WriteFile(dir_.path() / "file.timer", "theirs");
  ASSERT_EQ(symlink("/dev/null", (dir_.path() / "masked.timer").c_str()), 0);
  ASSERT_EQ(symlink("elsewhere.timer", (dir_.path() / "dangling.timer").c_str()), 0);
  for (const char* name : {"file.timer", "masked.timer", "dangling.timer"}) {
    auto placed = CreateUnitFile(dir(), name, "ours", GetParam());
    ASSERT_TRUE(placed) << placed.error();
    EXPECT_EQ(*placed, Placed::kTaken) << name;
  }
  EXPECT_EQ(ReadFile(dir_.path() / "file.timer"), "theirs");
  EXPECT_EQ(fs::read_symlink(dir_.path() / "masked.timer"), "/dev/null");
  EXPECT_FALSE(fs::exists(dir_.path() / "elsewhere.timer"));
  EXPECT_EQ(Names(dir_.path()),
            (std::vector<std::string>{"dangling.timer", "file.timer", "masked.timer"}));
}

INSTANTIATE_TEST_SUITE_P(UnnamedAndNamedTemporary, UnitFiles, ::testing::Bool());

TEST(UnitFilesCleanUp, OnlyTheTemporariesOfGoneProcessesAreRemoved) {
  TempDir dir;
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  std::string stale = ".schedwatch-" + std::to_string(gone) + ".a.service.tmp";
  std::string live = ".schedwatch-" + std::to_string(getppid()) + ".a.timer.tmp";
  WriteFile(dir.path() / stale, "[Serv");
  WriteFile(dir.path() / live, "[Timer]");
  WriteFile(dir.path() / ".schedwatch-notapid.tmp", "");
  WriteFile(dir.path() / ".schedwatch-4294967297.a.timer.tmp", "");  // no pid_t: kept
  WriteFile(dir.path() / ".schedwatch.a.timer.creating", "");
  WriteFile(dir.path() / "a.timer", "");
  // A link of that name is no temporary of ours: not followed, not removed.
  ASSERT_EQ(
      symlink("a.timer",
              (dir.path() / (".schedwatch-" + std::to_string(gone) + ".b.timer.tmp")).c_str()),
      0);
  EXPECT_EQ(RemoveStaleTemporaries(dir.path().string()), 1);
  EXPECT_FALSE(fs::exists(dir.path() / stale));
  EXPECT_EQ(Names(dir.path()).size(), 6u);
  EXPECT_EQ(RemoveStaleTemporaries(dir.path().string() + "/none"), 0);
}

TEST(UnitFilesMask, WhatTheManagerTakesForAMask) {
  TempDir dir;
  std::string d = dir.path().string();
  ASSERT_EQ(symlink("/dev/null", (dir.path() / "link.timer").c_str()), 0);
  WriteFile(dir.path() / "empty.timer", "");
  WriteFile(dir.path() / "unit.timer", "[Timer]\n");
  ASSERT_EQ(symlink("unit.timer", (dir.path() / "alias.timer").c_str()), 0);
  EXPECT_TRUE(IsMask(d, "link.timer"));
  EXPECT_TRUE(IsMask(d, "empty.timer"));
  EXPECT_FALSE(IsMask(d, "unit.timer"));
  EXPECT_FALSE(IsMask(d, "alias.timer"));
  EXPECT_FALSE(IsMask(d, "absent.timer"));
  EXPECT_EQ(IntentPath("/etc/systemd/system", "a.timer"),
            "/etc/systemd/system/.schedwatch.a.timer.creating");
}

}  // namespace
}  // namespace schedwatch::systemd
