// The systemd repairer's decisions before it calls the manager (whose bus is absent here: a
// creation that gets that far fails at connecting, as it would on a host whose bus is down):
// nothing is written where the operator masked a unit, its own unfinished creation is
// recognised and continued, and what it did not write is never taken for its own.
#include "sources/systemd/systemd_repairer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "sources/catalog.h"
#include "tests/test_util.h"

namespace schedwatch {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

constexpr const char* kTimer =
    "[Unit]\nX-Schedwatch-Role=nightly\nX-Schedwatch-Spec-Version=1\n\n[Timer]\n"
    "OnCalendar=*-*-* 02:00:00\n\n[Install]\nWantedBy=timers.target\n";
constexpr const char* kService = "[Service]\nType=oneshot\nExecStart=/bin/true\n";

class SystemdRepairerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(units());
    WriteFile(dir_.path() / "nightly.timer", kTimer);
    WriteFile(dir_.path() / "nightly.service", kService);
    WriteFile(dir_.path() / "spec.yaml", fmt::format(R"(version: 1
sources:
  box: {{type: systemd, root: {0}, bus_address: "unix:path={0}/no-bus"}}
jobs:
  - {{role: nightly, source: box, schedule: "*-*-* 02:00:00", spec_version: "1", template: nightly.timer}}
)",
                                                     root().string()));
    auto spec = LoadSpecFile((dir_.path() / "spec.yaml").string());
    ASSERT_TRUE(spec.ok()) << spec.error();
    spec_ = std::move(*spec);
    auto repairer = MakeSystemdRepairer(spec_.sources.at("box"));
    ASSERT_TRUE(repairer) << repairer.error();
    repairer_ = std::move(*repairer);
  }

  fs::path root() const { return dir_.path() / "root"; }
  fs::path units() const { return root() / "etc/systemd/system"; }
  fs::path intent() const { return units() / ".schedwatch.nightly.timer.creating"; }
  const JobSpec& job() const { return spec_.jobs.front(); }
  Result<Creation> Create() { return repairer_->Create(job(), kTimer); }

  TempDir dir_;
  Spec spec_;
  std::unique_ptr<Repairer> repairer_;
};

TEST_F(SystemdRepairerTest, NothingIsWrittenWhereTheOperatorMaskedTheTimerOrItsService) {
  ASSERT_EQ(symlink("/dev/null", (units() / "nightly.timer").c_str()), 0);
  auto created = Create();
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error(), "masked by the operator: systemctl unmask nightly.timer");
  EXPECT_EQ(fs::read_symlink(units() / "nightly.timer"), "/dev/null");
  EXPECT_FALSE(fs::exists(units() / "nightly.service"));
  EXPECT_FALSE(fs::exists(intent()));

  // A runtime mask (systemctl mask --runtime) of the service.
  fs::remove(units() / "nightly.timer");
  fs::create_directories(root() / "run/systemd/system");
  ASSERT_EQ(symlink("/dev/null", (root() / "run/systemd/system/nightly.service").c_str()), 0);
  created = Create();
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error(), "masked by the operator: systemctl unmask nightly.service");
  EXPECT_TRUE(fs::is_empty(units()));
}

TEST_F(SystemdRepairerTest, ItsOwnUnfinishedCreationIsContinued) {
  // Killed after the intent and the service: the timer is written next, then the manager is
  // called (no bus here: the intent stays for the next run).
  WriteFile(intent(), "");
  WriteFile(units() / "nightly.service", kService);
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  fs::path stale = units() / fmt::format(".schedwatch-{}.nightly.timer.tmp", gone);
  WriteFile(stale, "[Tim");
  EXPECT_TRUE(repairer_->Unfinished(job()));
  auto created = Create();
  ASSERT_FALSE(created);
  EXPECT_NE(created.error().find("cannot connect"), std::string::npos) << created.error();
  EXPECT_EQ(ReadFile(units() / "nightly.timer"), kTimer);
  EXPECT_EQ(ReadFile(units() / "nightly.service"), kService);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(repairer_->Unfinished(job()));
}

TEST_F(SystemdRepairerTest, WhatItDidNotWriteIsNeverTakenForItsOwn) {
  // A person's copy of the same files, without an intent: taken, not continued.
  WriteFile(units() / "nightly.service", kService);
  EXPECT_FALSE(repairer_->Unfinished(job()));
  auto created = Create();
  ASSERT_TRUE(created) << created.error();
  EXPECT_TRUE(created->already_exists);
  EXPECT_EQ(created->what, (units() / "nightly.service").string());
  EXPECT_FALSE(fs::exists(units() / "nightly.timer"));
  EXPECT_FALSE(fs::exists(intent()));

  // An intent, but the service was changed since: someone else's now; the intent goes.
  WriteFile(intent(), "");
  WriteFile(units() / "nightly.service", "[Service]\nExecStart=/bin/false\n");
  created = Create();
  ASSERT_TRUE(created) << created.error();
  EXPECT_TRUE(created->already_exists);
  EXPECT_EQ(ReadFile(units() / "nightly.service"), "[Service]\nExecStart=/bin/false\n");
  EXPECT_FALSE(fs::exists(units() / "nightly.timer"));
  EXPECT_FALSE(fs::exists(intent()));
  EXPECT_FALSE(repairer_->Unfinished(job()));
}

}  // namespace
}  // namespace schedwatch
