// reconcile and a repairer's unfinished creation (a run killed after writing, before the object
// was live: a systemd timer written and not started reads `inactive`): the next run calls Create
// again, which finishes it, and says so; a role without one is only reported.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "reconcile/reconcile.h"
#include "sources/catalog.h"
#include "tests/test_util.h"

namespace schedwatch {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

// Says `paused` was left unfinished; finishing it enables its cron entry.
class FinishingRepairer : public Repairer {
 public:
  FinishingRepairer(fs::path file, int* creates) : file_(std::move(file)), creates_(creates) {}
  Result<bool> Validate(const JobSpec&, const std::string&) override { return true; }
  Result<Creation> Create(const JobSpec& job, const std::string&) override {
    ++*creates_;
    std::string text = ReadFile(file_);
    text.replace(text.find("#0 * * * * root /bin/" + job.role), 1, "");
    WriteFile(file_, text);
    return Creation{file_.string()};
  }
  bool Unfinished(const JobSpec& job) override { return job.role == "paused"; }

 private:
  fs::path file_;
  int* creates_;
};

class ReconcileUnfinishedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.path() / "root/etc/cron.d");
    WriteFile(dir_.path() / "root/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
    WriteFile(dir_.path() / "root/var/log/syslog", "");
    WriteFile(dir_.path() / "job.cron", "");
    WriteFile(cron(),
              "# schedwatch: role=paused spec_version=1\n#0 * * * * root /bin/paused\n"
              "# schedwatch: role=stopped spec_version=1\n#0 * * * * root /bin/stopped\n");
    WriteFile(dir_.path() / "spec.yaml", fmt::format(R"(version: 1
sources:
  host: {{type: crontab, root: {}, paths: [/etc/cron.d], syslog: /var/log/syslog}}
jobs:
  - {{role: paused, source: host, schedule: "0 * * * *", spec_version: "1", template: job.cron}}
  - {{role: stopped, source: host, schedule: "0 * * * *", spec_version: "1", template: job.cron}}
)",
                                                     (dir_.path() / "root").string()));
    auto spec = LoadSpecFile((dir_.path() / "spec.yaml").string());
    ASSERT_TRUE(spec.ok()) << spec.error();
    spec_ = std::move(*spec);
  }

  fs::path cron() const { return dir_.path() / "root/etc/cron.d/jobs"; }

  std::map<std::string, ReconcileRow> Run(bool apply) {
    ReconcileOptions options;
    options.apply = apply;
    options.lock_file = (dir_.path() / "reconcile.lock").string();
    options.confirm_delay = std::chrono::milliseconds(10);
    options.verify_interval = std::chrono::milliseconds(10);
    options.clock = [] { return 1796040000; };
    options.make_repairer = [this](const SourceSpec&) -> Result<std::unique_ptr<Repairer>> {
      return std::unique_ptr<Repairer>(std::make_unique<FinishingRepairer>(cron(), &creates_));
    };
    std::map<std::string, ReconcileRow> rows;
    for (auto& row : Reconcile(spec_, options).rows) rows[row.role] = row;
    return rows;
  }

  TempDir dir_;
  Spec spec_;
  int creates_ = 0;
};

TEST_F(ReconcileUnfinishedTest, TheNextRunFinishesItAndSaysSo) {
  auto rows = Run(false);
  EXPECT_EQ(rows["paused"].condition, "inactive");
  EXPECT_EQ(rows["paused"].action, "would finish an interrupted creation");
  EXPECT_EQ(rows["stopped"].action, "skipped: inactive, enable explicitly");
  EXPECT_EQ(creates_, 0);

  rows = Run(true);
  EXPECT_EQ(rows["paused"].action, "finished an interrupted creation");
  EXPECT_FALSE(rows["paused"].needs_person);
  EXPECT_EQ(rows["stopped"].action, "skipped: inactive, enable explicitly");
  EXPECT_TRUE(rows["stopped"].needs_person);
  EXPECT_EQ(creates_, 1);
  EXPECT_NE(ReadFile(cron()).find("\n0 * * * * root /bin/paused\n"), std::string::npos);
}

}  // namespace
}  // namespace schedwatch
