#include "reconcile/reconcile.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "reconcile/ledger.h"
#include "sources/catalog.h"
#include "tests/test_util.h"

namespace schedwatch {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

constexpr std::int64_t kNow = 1796040000;  // 2026-11-30T12:00:00Z

// A host rooted in a temporary directory: cron.d files, templates, a spec over them.
class ReconcileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root() / "etc/cron.d");
    WriteFile(root() / "etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
    WriteFile(root() / "var/log/syslog", "");
    WriteFile(dir_.path() / "templates/retry.cron",
              "# schedwatch: role=retry spec_version=7\n*/10 * * * * root /usr/local/bin/retry\n");
    WriteFile(dir_.path() / "templates/unmarked.cron", "*/5 * * * * root /usr/local/bin/gate\n");
    WriteFile(dir_.path() / "spec.yaml", fmt::format(R"(version: 1
sources:
  host: {{type: crontab, root: {}, paths: [/etc/cron.d], syslog: /var/log/syslog}}
jobs:
  - {{role: retry, source: host, schedule: "*/10 * * * *", spec_version: "7", template: templates/retry.cron}}
  - {{role: gate, source: host, schedule: "*/5 * * * *", spec_version: "3", template: templates/unmarked.cron}}
  - {{role: twice, source: host, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: paused, source: host, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: changed, source: host, schedule: "0 * * * *", spec_version: "2"}}
  - {{role: fine, source: host, schedule: "0 * * * *", spec_version: "1"}}
)",
                                                     root().string()));
    // What the scheduler holds: a duplicate, a suspended entry, a drifted one, a healthy one.
    WriteFile(root() / "etc/cron.d/others",
              "# schedwatch: role=twice spec_version=1\n0 * * * * root /bin/twice\n"
              "# schedwatch: role=twice spec_version=1\n0 * * * * root /bin/twice --again\n"
              "# schedwatch: role=paused spec_version=1\n#0 * * * * root /bin/paused\n"
              "# schedwatch: role=changed spec_version=1\n0 * * * * root /bin/changed\n"
              "# schedwatch: role=fine spec_version=1\n0 * * * * root /bin/fine\n");
    chmod((root() / "etc/cron.d/others").c_str(), 0644);
    auto spec = LoadSpecFile((dir_.path() / "spec.yaml").string());
    ASSERT_TRUE(spec.ok()) << spec.error();
    spec_ = std::move(*spec);
  }

  fs::path root() const { return dir_.path() / "root"; }

  ReconcileOptions Options(bool apply) {
    ReconcileOptions options;
    options.apply = apply;
    options.ledger_file = (dir_.path() / "ledger.json").string();
    options.lock_file = (dir_.path() / "reconcile.lock").string();
    options.confirm_delay = std::chrono::milliseconds(10);
    options.verify_interval = std::chrono::milliseconds(10);
    options.clock = [] { return kNow; };
    return options;
  }

  std::map<std::string, ReconcileRow> Rows(const ReconcileReport& report) {
    std::map<std::string, ReconcileRow> rows;
    for (const auto& row : report.rows) rows[row.role] = row;
    return rows;
  }

  TempDir dir_;
  Spec spec_;
};

TEST_F(ReconcileTest, DryRunSaysWhatItWouldDoAndWritesNothing) {
  std::string before = ReadFile(root() / "etc/cron.d/others");
  ReconcileReport report = Reconcile(spec_, Options(false));
  auto rows = Rows(report);
  EXPECT_EQ(rows["retry"].condition, "missing");
  EXPECT_EQ(rows["retry"].action, "would create");
  EXPECT_EQ(rows["gate"].action,
            "skipped: template refused: it must hold exactly one entry under a \"# schedwatch: "
            "role=gate spec_version=3\" marker, found 0");
  EXPECT_EQ(rows["twice"].action, "skipped: duplicate");
  EXPECT_EQ(rows["paused"].action, "skipped: inactive, enable explicitly");
  EXPECT_EQ(rows["changed"].action, "skipped: drift");
  EXPECT_EQ(rows["fine"].action, "verified");
  EXPECT_EQ(report.ExitCode(), 1);
  EXPECT_FALSE(fs::exists(root() / "etc/cron.d/schedwatch-retry"));
  EXPECT_FALSE(fs::exists(dir_.path() / "ledger.json"));
  EXPECT_EQ(ReadFile(root() / "etc/cron.d/others"), before);
}

TEST_F(ReconcileTest, ApplyCreatesOnlyTheMissingJobVerifiesItAndWritesTheLedger) {
  std::string before = ReadFile(root() / "etc/cron.d/others");
  ReconcileReport report = Reconcile(spec_, Options(true));
  auto rows = Rows(report);
  EXPECT_EQ(rows["retry"].action, "created");
  EXPECT_FALSE(rows["retry"].needs_person);
  fs::path created = root() / "etc/cron.d/schedwatch-retry";
  ASSERT_TRUE(fs::exists(created));
  EXPECT_EQ(ReadFile(created), ReadFile(dir_.path() / "templates/retry.cron"));
  struct stat info {};
  stat(created.c_str(), &info);
  EXPECT_EQ(info.st_mode & 07777, 0644u);
  // Duplicates, drift and suspended entries are untouched, byte for byte.
  EXPECT_EQ(ReadFile(root() / "etc/cron.d/others"), before);
  // Nothing else was written into cron.d.
  int files = 0;
  for (const auto& entry : fs::directory_iterator(root() / "etc/cron.d")) files += !!entry.exists();
  EXPECT_EQ(files, 2);
  auto ledger = ReadLedger((dir_.path() / "ledger.json").string());
  ASSERT_TRUE(ledger.ok()) << ledger.error();
  EXPECT_EQ(ledger->entries["retry"].id, "/etc/cron.d/schedwatch-retry:2");  // as the host sees it
  EXPECT_EQ(ledger->entries["retry"].verified, "2026-11-30T12:00:00Z");
  EXPECT_EQ(ledger->entries["fine"].id, "/etc/cron.d/others:10");
  EXPECT_EQ(ledger->entries.count("twice"), 0u);

  // A second run has nothing to create.
  auto again = Rows(Reconcile(spec_, Options(true)));
  EXPECT_EQ(again["retry"].action, "verified");
}

TEST_F(ReconcileTest, AFileAKilledRunLeftWithTwoLinksIsFinished) {
  // An older version killed between link and unlink: cron ignores the file (two links), the
  // role is missing, and the name is taken. The next run recognises its own work and finishes
  // it; the temporaries such runs left are removed, nothing else.
  fs::path cron_d = root() / "etc/cron.d";
  fs::path target = cron_d / "schedwatch-retry";
  WriteFile(target, ReadFile(dir_.path() / "templates/retry.cron"));
  chmod(target.c_str(), 0644);
  fs::create_hard_link(target, cron_d / ".schedwatch-retry.4242.1.tmp");
  WriteFile(cron_d / ".schedwatch-retry.4242.2.tmp", "half a fi");
  WriteFile(dir_.path() / "passwd", "root:x:0:0::/root:/bin/sh\n");
  fs::create_symlink(dir_.path() / "passwd", cron_d / ".schedwatch-gone.1.1.tmp");
  ASSERT_EQ(Rows(Reconcile(spec_, Options(false)))["retry"].condition, "missing");

  ReconcileReport report = Reconcile(spec_, Options(true));
  EXPECT_EQ(Rows(report)["retry"].action, "created");
  EXPECT_EQ(fs::hard_link_count(target), 1u);
  EXPECT_EQ(ReadFile(target), ReadFile(dir_.path() / "templates/retry.cron"));
  EXPECT_FALSE(fs::exists(cron_d / ".schedwatch-retry.4242.1.tmp"));
  EXPECT_FALSE(fs::exists(cron_d / ".schedwatch-retry.4242.2.tmp"));
  EXPECT_TRUE(fs::is_symlink(cron_d / ".schedwatch-gone.1.1.tmp"));
  EXPECT_EQ(ReadFile(dir_.path() / "passwd"), "root:x:0:0::/root:/bin/sh\n");
  EXPECT_EQ(Rows(Reconcile(spec_, Options(true)))["retry"].action, "verified");
}

TEST_F(ReconcileTest, ATwoLinkFileThatIsNotTheTemplatesIsLeftAlone) {
  fs::path cron_d = root() / "etc/cron.d";
  fs::path target = cron_d / "schedwatch-retry";
  WriteFile(target, "# schedwatch: role=retry spec_version=7\n*/10 * * * * root /bin/other\n");
  fs::create_hard_link(target, cron_d / ".schedwatch-retry.4242.1.tmp");
  auto rows = Rows(Reconcile(spec_, Options(true)));
  EXPECT_EQ(rows["retry"].action,
            fmt::format("skipped: {} exists but is not this role's job", target.string()));
  EXPECT_EQ(fs::hard_link_count(target), 2u);
}

TEST_F(ReconcileTest, AnUnreadableLedgerIsNotOverwritten) {
  const std::string typo = "{\"version\": 1, \"roles\": {\"fine\": {\"id\": \"x\",}}}\n";
  WriteFile(dir_.path() / "ledger.json", typo);
  auto rows = Rows(Reconcile(spec_, Options(true)));
  EXPECT_EQ(rows["retry"].action, "created (ledger not written)");
  EXPECT_TRUE(rows["retry"].needs_person);
  EXPECT_EQ(rows["fine"].action, "verified (ledger not written)");
  EXPECT_EQ(ReadFile(dir_.path() / "ledger.json"), typo);
}

TEST_F(ReconcileTest, ObjectCreatedBySomeoneElseBeforeTheWriteIsNotDuplicated) {
  // A source whose third read (taken under the lock, just before writing) sees the job.
  struct Racing : Source {
    int reads = 0;
    Result<SourceSnapshot> List(const ListContext&) override {
      SourceSnapshot snapshot;
      if (++reads >= 3) snapshot.objects.push_back({"other", "retry", "*/10 * * * *", "", "7"});
      return snapshot;
    }
  };
  ReconcileOptions options = Options(true);
  options.make_source = [](const SourceOptions&) -> Result<std::unique_ptr<Source>> {
    return std::unique_ptr<Source>(std::make_unique<Racing>());
  };
  auto rows = Rows(Reconcile(spec_, options));
  EXPECT_EQ(rows["retry"].action, "skipped: appeared before it was created");
  EXPECT_FALSE(fs::exists(root() / "etc/cron.d/schedwatch-retry"));
}

TEST_F(ReconcileTest, AnExistingFileOfTheSameNameIsNeverReplaced) {
  // Someone wrote schedwatch-retry after the last read: the link fails instead of replacing it.
  struct Blind : Source {
    Result<SourceSnapshot> List(const ListContext&) override { return SourceSnapshot{}; }
  };
  WriteFile(root() / "etc/cron.d/schedwatch-retry", "# not ours\n");
  ReconcileOptions options = Options(true);
  options.make_source = [](const SourceOptions&) -> Result<std::unique_ptr<Source>> {
    return std::unique_ptr<Source>(std::make_unique<Blind>());
  };
  auto rows = Rows(Reconcile(spec_, options));
  EXPECT_EQ(rows["retry"].action,
            fmt::format("skipped: {}/etc/cron.d/schedwatch-retry exists but is not this role's job",
                        root().string()));
  EXPECT_TRUE(rows["retry"].needs_person);
  EXPECT_EQ(ReadFile(root() / "etc/cron.d/schedwatch-retry"), "# not ours\n");
}

TEST_F(ReconcileTest, NameTakenByTheRightJobIsAcceptedAfterAReRead) {
  // Someone wrote the very file between the read under the lock and the write; the re-read
  // after the refused link shows it is the role's job as specified.
  struct Late : Source {
    int reads = 0;
    Result<SourceSnapshot> List(const ListContext&) override {
      SourceSnapshot snapshot;
      if (++reads >= 4) {
        snapshot.objects.push_back(
            {"/etc/cron.d/schedwatch-retry:2", "retry", "*/10 * * * *", "", "7"});
      }
      return snapshot;
    }
  };
  WriteFile(root() / "etc/cron.d/schedwatch-retry", "# theirs\n");
  ReconcileOptions options = Options(true);
  options.make_source = [](const SourceOptions&) -> Result<std::unique_ptr<Source>> {
    return std::unique_ptr<Source>(std::make_unique<Late>());
  };
  auto rows = Rows(Reconcile(spec_, options));
  EXPECT_EQ(rows["retry"].action, "skipped: appeared before it was created");
  EXPECT_FALSE(rows["retry"].needs_person);
  EXPECT_EQ(ReadFile(root() / "etc/cron.d/schedwatch-retry"), "# theirs\n");
  auto ledger = ReadLedger((dir_.path() / "ledger.json").string());
  ASSERT_TRUE(ledger.ok()) << ledger.error();
  EXPECT_EQ(ledger->entries["retry"].id, "/etc/cron.d/schedwatch-retry:2");
}

TEST_F(ReconcileTest, UnreadableSourceIsSkippedAsUnknown) {
  ReconcileOptions options = Options(true);
  options.make_source = [](const SourceOptions&) -> Result<std::unique_ptr<Source>> {
    struct Down : Source {
      Result<SourceSnapshot> List(const ListContext&) override {
        return Error{"permission denied"};
      }
    };
    return std::unique_ptr<Source>(std::make_unique<Down>());
  };
  auto report = Reconcile(spec_, options);
  auto rows = Rows(report);
  EXPECT_EQ(rows["retry"].condition, "unknown");
  EXPECT_EQ(rows["retry"].action, "skipped: source unknown (permission denied)");
  EXPECT_EQ(report.ExitCode(), 1);
  EXPECT_FALSE(fs::exists(root() / "etc/cron.d/schedwatch-retry"));
}

TEST_F(ReconcileTest, BackgroundReconcilerRepairsWhatIsHandedOver) {
  BackgroundReconciler background(Options(true));
  background.Submit(std::make_shared<const Spec>(spec_));
  fs::path ledger = dir_.path() / "ledger.json";
  for (int i = 0; i < 200 && !fs::exists(ledger); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(fs::exists(ledger));
  EXPECT_TRUE(fs::exists(root() / "etc/cron.d/schedwatch-retry"));
  EXPECT_EQ(ReadLedger(ledger.string())->entries.count("retry"), 1u);
}

TEST_F(ReconcileTest, ShuttingDownEndsTheRunBeforeItWrites) {
  ReconcileOptions options = Options(true);
  options.confirm_delay = std::chrono::hours(1);  // would hold the destructor for an hour
  {
    BackgroundReconciler background(options);
    background.Submit(std::make_shared<const Spec>(spec_));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(fs::exists(root() / "etc/cron.d/schedwatch-retry"));
  EXPECT_FALSE(fs::exists(dir_.path() / "ledger.json"));
}

TEST_F(ReconcileTest, TwoReconcilersAtOnceCreateOnce) {
  // Two processes race on the same host; the lock and the read under it leave one creation.
  ReconcileOptions options = Options(true);
  std::vector<pid_t> children;
  for (int i = 0; i < 2; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      auto rows = Rows(Reconcile(spec_, options));
      _exit(rows["retry"].action == "created" ? 10 : 20);
    }
    children.push_back(pid);
  }
  int created = 0, skipped = 0;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    created += WEXITSTATUS(status) == 10;
    skipped += WEXITSTATUS(status) == 20;
  }
  EXPECT_EQ(created, 1);
  EXPECT_EQ(skipped, 1);
  EXPECT_TRUE(fs::exists(root() / "etc/cron.d/schedwatch-retry"));
}

TEST_F(ReconcileTest, ALockInADirectoryOtherUsersCanWriteIsNotTaken) {
  // /tmp, the old default: any local user could create the lock first and hold it.
  fs::path shared = dir_.path() / "shared";
  fs::create_directory(shared);
  chmod(shared.c_str(), 01777);
  ReconcileOptions options = Options(true);
  options.lock_file = (shared / "reconcile.lock").string();
  ReconcileReport report = Reconcile(spec_, options);
  EXPECT_TRUE(report.lock_unavailable);
  EXPECT_FALSE(report.lock_taken);
  auto rows = Rows(report);
  EXPECT_NE(rows["retry"].action.find("is writable by other users (mode 1777)"), std::string::npos)
      << rows["retry"].action;
  EXPECT_FALSE(fs::exists(root() / "etc/cron.d/schedwatch-retry"));
  EXPECT_FALSE(fs::exists(shared / "reconcile.lock"));

  chmod(shared.c_str(), 0700);
  report = Reconcile(spec_, options);
  EXPECT_FALSE(report.lock_unavailable);
  EXPECT_TRUE(report.lock_taken);
  EXPECT_EQ(Rows(report)["retry"].action, "created");
}

// A first run: the state directory of the lock and the ledger is made, mode 0700.
TEST_F(ReconcileTest, AMissingStateDirectoryIsMadeWhereItsParentIsTrusted) {
  ReconcileOptions options = Options(true);
  fs::path state = dir_.path() / "state";
  options.lock_file = (state / "reconcile.lock").string();
  options.ledger_file = (dir_.path() / "ledger-state/ledger.json").string();
  mode_t previous = umask(0022);
  ReconcileReport report = Reconcile(spec_, options);
  umask(previous);
  EXPECT_EQ(Rows(report)["retry"].action, "created");
  EXPECT_TRUE(report.lock_taken);
  for (const fs::path& made : {state, dir_.path() / "ledger-state"}) {
    struct stat info {};
    ASSERT_EQ(lstat(made.c_str(), &info), 0) << made;
    EXPECT_TRUE(S_ISDIR(info.st_mode)) << made;
    EXPECT_EQ(info.st_mode & 07777, 0700u) << made;
  }
  EXPECT_TRUE(fs::exists(dir_.path() / "ledger-state/ledger.json"));
}

// Where the parent is not trusted, nothing is made and the message names the one command.
TEST_F(ReconcileTest, AStateDirectoryIsNotMadeWhereOthersCouldRedirectIt) {
  fs::path real = dir_.path() / "real";
  fs::create_directory(real);
  chmod(real.c_str(), 0755);
  fs::create_directory_symlink(real, dir_.path() / "link");
  fs::path shared = dir_.path() / "shared";
  fs::create_directory(shared);
  chmod(shared.c_str(), 01777);
  fs::path theirs = dir_.path() / "theirs";
  fs::create_directory(theirs);
  chmod(theirs.c_str(), 0755);
  bool as_root = geteuid() == 0;
  if (as_root) {
    ASSERT_EQ(chown(theirs.c_str(), 65534, 65534), 0);
  }
  WriteFile(dir_.path() / "in-the-way", "");
  struct Case {
    fs::path state;
    std::string why;
  };
  std::vector<Case> cases = {
      {dir_.path() / "link/state",
       "its parent " + (dir_.path() / "link").string() + " is a symbolic link"},
      {shared / "state",
       "its parent " + shared.string() + " is writable by other users (mode 1777)"},
      {dir_.path() / "in-the-way", "is a file, not a directory"},
      {dir_.path() / "missing/state",
       "its parent " + (dir_.path() / "missing").string() + ": No such file or directory"},
  };
  if (as_root) {
    cases.push_back({theirs / "state", "its parent " + theirs.string() +
                                           " belongs to uid 65534, neither root nor this user"});
  }
  for (const auto& c : cases) {
    ReconcileOptions options = Options(true);
    options.lock_file = (c.state / "reconcile.lock").string();
    ReconcileReport report = Reconcile(spec_, options);
    std::string action = Rows(report)["retry"].action;
    EXPECT_TRUE(report.lock_unavailable) << c.state;
    EXPECT_NE(action.find(c.why), std::string::npos) << action;
    std::string command =
        as_root ? "install -d -m 0700 " + c.state.string() : "sudo install -d -m 0700 -o ";
    EXPECT_NE(action.find(command), std::string::npos) << action;
    EXPECT_FALSE(fs::exists(root() / "etc/cron.d/schedwatch-retry")) << c.state;
  }
  EXPECT_FALSE(fs::exists(real / "state"));
  EXPECT_FALSE(fs::exists(shared / "state"));
  EXPECT_FALSE(fs::exists(theirs / "state"));
  EXPECT_TRUE(fs::is_regular_file(dir_.path() / "in-the-way"));
}

TEST_F(ReconcileTest, TheDefaultLockIsInTheStateDirectory) {
  const char* saved = std::getenv("STATE_DIRECTORY");
  std::string before = saved != nullptr ? saved : "";
  setenv("STATE_DIRECTORY", "/var/lib/schedwatch-a:/var/lib/other", 1);
  EXPECT_EQ(DefaultReconcileLockFile(), "/var/lib/schedwatch-a/reconcile.lock");
  unsetenv("STATE_DIRECTORY");
  EXPECT_EQ(DefaultReconcileLockFile(), "/var/lib/schedwatch/reconcile.lock");
  EXPECT_EQ(ReconcileOptions{}.lock_file, "/var/lib/schedwatch/reconcile.lock");
  if (saved != nullptr) setenv("STATE_DIRECTORY", before.c_str(), 1);
}

TEST_F(ReconcileTest, BackgroundReconcilerTellsWhetherItCouldTakeTheLock) {
  fs::path shared = dir_.path() / "shared";
  fs::create_directory(shared);
  chmod(shared.c_str(), 01777);
  ReconcileOptions options = Options(true);
  options.lock_file = (shared / "reconcile.lock").string();
  std::mutex mutex;
  std::vector<bool> outcomes;
  BackgroundReconciler background(options);
  background.OnLockOutcome([&](bool unavailable) {
    std::lock_guard<std::mutex> lock(mutex);
    outcomes.push_back(unavailable);
  });
  background.Submit(std::make_shared<const Spec>(spec_));
  auto seen = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    return outcomes;
  };
  for (int i = 0; i < 200 && seen().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(seen(), std::vector<bool>{true});
  background.OnLockOutcome(nullptr);
}

}  // namespace
}  // namespace schedwatch
