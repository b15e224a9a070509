// discover for crontabs: role suggestions on the lines Debian's packages install, markers
// written into files (and refused where they must be), and what List sees afterwards.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "schedwatch/platform/replace_file.h"
#include "schedwatch/schedule.h"
#include "sources/crontab/crontab_discoverer.h"
#include "tests/sources/source_block.h"
#include "tests/test_util.h"

namespace schedwatch::crontab {
namespace {

namespace fs = std::filesystem;
const fs::path kDebian = fs::path(SCHEDWATCH_TEST_DIR) / "sources/crontab/fixtures/debian";
constexpr std::int64_t kNow = 1767268800;  // 2026-01-01T12:00:00Z

TEST(CrontabSuggestRole, DebianPackagesLines) {
  auto role = [](const std::string& file, const std::string& command) {
    return SuggestRole(file, CrontabKind::kSystem, "root", command);
  };
  EXPECT_EQ(role("/etc/cron.d/sysstat", "command -v debian-sa1 > /dev/null && debian-sa1 1 1"),
            "sysstat-debian-sa1");
  EXPECT_EQ(role("/etc/cron.d/e2scrub_all",
                 "test -e /run/systemd/system || SERVICE_MODE=1 "
                 "/usr/lib/x86_64-linux-gnu/e2fsprogs/e2scrub_all_cron"),
            "e2scrub_all_cron");
  EXPECT_EQ(role("/etc/cron.d/e2scrub_all",
                 "test -e /run/systemd/system || SERVICE_MODE=1 /sbin/e2scrub_all -A -r"),
            "e2scrub_all");
  EXPECT_EQ(role("/etc/cron.d/anacron",
                 "[ -x /etc/init.d/anacron ] && if [ ! -d /run/systemd/system ]; then "
                 "/usr/sbin/invoke-rc.d anacron start >/dev/null; fi"),
            "anacron");
  EXPECT_EQ(role("/etc/cron.d/php",
                 "[ -x /usr/lib/php/sessionclean ] && if [ ! -d /run/systemd/system ]; then "
                 "/usr/lib/php/sessionclean; fi"),
            "php-sessionclean");
  EXPECT_EQ(role("/etc/cron.d/popularity-contest",
                 "test -x /etc/cron.daily/popularity-contest && "
                 "/etc/cron.daily/popularity-contest --crond"),
            "popularity-contest");
  EXPECT_EQ(role("/etc/crontab", "cd / && run-parts --report /etc/cron.hourly"), "cron.hourly");
  EXPECT_EQ(role("/etc/crontab",
                 "test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.daily; }"),
            "cron.daily");
}

TEST(CrontabSuggestRole, WrappersPipesRedirectionsAndUsers) {
  EXPECT_EQ(SuggestRole("/var/spool/cron/crontabs/alice", CrontabKind::kUser, "alice",
                        "/home/alice/bin/sync.sh --all 2>&1 | logger -t sync"),
            "alice-sync");
  EXPECT_EQ(SuggestRole("/etc/cron.d/app", CrontabKind::kSystem, "app",
                        "nice -n 19 ionice -c3 /opt/app/bin/reindex >>/var/log/x 2>&1"),
            "app-reindex");
  EXPECT_EQ(SuggestRole("/etc/cron.d/app", CrontabKind::kSystem, "app",
                        "/usr/bin/php /var/www/artisan schedule:run%input"),
            "app-artisan");
  EXPECT_EQ(SuggestRole("/etc/cron.d/app", CrontabKind::kSystem, "app",
                        "schedwatch_run --role x -- /usr/local/bin/backup"),
            "app-backup");
  EXPECT_EQ(SuggestRole("/etc/cron.d/app", CrontabKind::kSystem, "app", "true"), "app");
  EXPECT_EQ(SuggestRole("/etc/crontab", CrontabKind::kSystem, "root", "  "), "job");
}

TEST(CrontabInsertMarkers, AddsOnlyMarkersAndRefusesWhatItCannotCheck) {
  const std::string text =
      "# keep me\nSHELL=/bin/sh\n\n*/5 * * * * root /bin/a\n0 1 * * * root /bin/b % x\n";
  auto marked = InsertMarkers(text, CrontabKind::kSystem, "", nullptr,
                              {{4, MarkerLine("a", "1")}, {5, MarkerLine("b", "3")}});
  ASSERT_TRUE(marked) << marked.error();
  EXPECT_EQ(*marked,
            "# keep me\nSHELL=/bin/sh\n\n# schedwatch: role=a spec_version=1\n*/5 * * * * root "
            "/bin/a\n# schedwatch: role=b spec_version=3\n0 1 * * * root /bin/b % x\n");
  // Line 1 is a comment, line 2 an environment line: no entry.
  EXPECT_FALSE(
      InsertMarkers(text, CrontabKind::kSystem, "", nullptr, {{1, "# schedwatch: role=x"}}));
  EXPECT_FALSE(
      InsertMarkers(text, CrontabKind::kSystem, "", nullptr, {{2, "# schedwatch: role=x"}}));
  // A file cron does not load is refused as it is.
  EXPECT_FALSE(InsertMarkers("5/10 * * * * root /bin/a\n", CrontabKind::kSystem, "", nullptr,
                             {{1, MarkerLine("a", "1")}}));
  // A marker that would push an entry past cron's 10,003-line limit.
  std::string long_file(10002, '\n');
  long_file += "* * * * * root /bin/last\n";
  auto refused =
      InsertMarkers(long_file, CrontabKind::kSystem, "", nullptr, {{10003, MarkerLine("l", "1")}});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("would not load"), std::string::npos) << refused.error();
}

class CrontabDiscoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = temp_.path() / "root";
    fs::create_directories(root_ / "etc");
    fs::copy(kDebian / "etc", root_ / "etc", fs::copy_options::recursive);
    fs::create_directories(root_ / "var/spool/cron/crontabs");
    // cron wants system crontabs unwritable by group and others; git may have made them so.
    for (const auto& entry : fs::recursive_directory_iterator(root_ / "etc")) {
      if (entry.is_regular_file()) chmod(entry.path().c_str(), 0644);
    }
    testing::WriteFile(root_ / "var/log/syslog",
                       "Jan  1 10:05:01 vm CRON[11]: (root) CMD ([12] command -v debian-sa1 > "
                       "/dev/null && debian-sa1 1 1)\n"
                       "Jan  1 10:05:04 vm CRON[11]: (root) END ([12] command -v debian-sa1 > "
                       "/dev/null && debian-sa1 1 1)\n"
                       "Jan  1 10:15:01 vm CRON[13]: (root) CMD ([14] command -v debian-sa1 > "
                       "/dev/null && debian-sa1 1 1)\n"
                       "Jan  1 10:15:02 vm CRON[13]: (root) END ([14] command -v debian-sa1 > "
                       "/dev/null && debian-sa1 1 1)\n");
  }

  CrontabSourceOptions Options() const {
    CrontabSourceOptions options;
    options.root = root_.string();
    options.trusted_uid = static_cast<long>(geteuid());
    options.zone = FindZone("UTC");
    return options;
  }

  std::vector<MarkerToWrite> AllUnmarked(const Discovery& discovery) {
    std::vector<MarkerToWrite> markers;
    for (const auto& object : discovery.objects) {
      if (object.role.empty() && object.not_run_because.empty()) {
        markers.push_back({object, object.suggested_role, "1"});
      }
    }
    return markers;
  }

  testing::TempDir temp_;
  fs::path root_;
};

TEST_F(CrontabDiscoverTest, FindsEveryEntryOfDebiansFilesWithItsRunHistory) {
  CrontabDiscoverer discoverer(Options());
  auto discovery = discoverer.Discover(ListContext{kNow, nullptr});
  ASSERT_TRUE(discovery) << discovery.error();
  std::map<std::string, FoundObject> by_id;
  for (const auto& object : discovery->objects) by_id[object.id] = object;
  EXPECT_EQ(by_id.size(), 11u);  // 4 in /etc/crontab, 7 in cron.d
  const FoundObject& sa1 = by_id.at("/etc/cron.d/sysstat:6");
  EXPECT_EQ(sa1.schedule, "5-55/10 * * * *");
  EXPECT_EQ(sa1.suggested_role, "sysstat-debian-sa1");
  EXPECT_EQ(sa1.timezone, "UTC");
  EXPECT_EQ(sa1.finished_runs, 2);
  EXPECT_EQ(sa1.longest_run_seconds, 3);
  EXPECT_FALSE(by_id.at("/etc/cron.d/sysstat:9").longest_run_seconds);
  EXPECT_EQ(by_id.at("/etc/crontab:18").schedule, "17 * * * *");
  EXPECT_TRUE(discovery->notes.empty());
  // List, for the refresher, still sees only marked entries: none.
  CrontabSource source(Options());
  auto listed = source.List(ListContext{kNow, nullptr});
  ASSERT_TRUE(listed) << listed.error();
  EXPECT_TRUE(listed->objects.empty());
}

TEST_F(CrontabDiscoverTest, WithoutALogTheCrontabsAreStillRead) {
  fs::remove(root_ / "var/log/syslog");
  CrontabDiscoverer discoverer(Options());
  auto discovery = discoverer.Discover(ListContext{kNow, nullptr});
  ASSERT_TRUE(discovery) << discovery.error();
  EXPECT_EQ(discovery->objects.size(), 11u);
  ASSERT_EQ(discovery->notes.size(), 1u);
  EXPECT_NE(discovery->notes[0].find("no run history"), std::string::npos);
}

// A journal under the root, as journald keeps one (var/log/journal/MACHINE-ID), written by
// systemd-journal-remote: entries of identifier and message, a second apart.
void WriteJournal(const fs::path& root,
                  const std::vector<std::pair<std::string, std::string>>& entries) {
  ASSERT_TRUE(fs::exists("/lib/systemd/systemd-journal-remote"))
      << "install the Debian package systemd-journal-remote to write test journals";
  const fs::path directory = root / "var/log/journal/0123456789abcdef0123456789abcdef";
  fs::create_directories(directory);
  const fs::path input = root / "journal.export";
  {
    std::ofstream out(input, std::ios::binary);
    std::int64_t usec = (kNow - 3600) * 1000000;
    for (const auto& [identifier, message] : entries) {
      usec += 1000000;
      out << "__REALTIME_TIMESTAMP=" << usec << "\n__MONOTONIC_TIMESTAMP=" << usec - 1000000000
          << "\n_BOOT_ID=0123456789abcdef0123456789abcdef\nSYSLOG_IDENTIFIER=" << identifier
          << "\nSYSLOG_PID=40\nMESSAGE=" << message << "\n\n";
    }
  }
  std::string command = "/lib/systemd/systemd-journal-remote --output='" +
                        (directory / "system.journal").string() + "' '" + input.string() +
                        "' 2>/dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  fs::remove(input);
}

const std::string kSa1 = "command -v debian-sa1 > /dev/null && debian-sa1 1 1";

// The spec says nothing of where cron logs: discover looks, reads the runs there, and says.
TEST_F(CrontabDiscoverTest, HistoryFromTheSyslogFileWhenItExists) {
  CrontabDiscoverer discoverer(Options(), /*find_history=*/true);
  auto discovery = discoverer.Discover(ListContext{kNow, nullptr});
  ASSERT_TRUE(discovery) << discovery.error();
  ASSERT_EQ(discovery->settings.size(), 1u);
  EXPECT_EQ(discovery->settings[0].key, "history");
  EXPECT_EQ(discovery->settings[0].value, "syslog");
  EXPECT_EQ(discovery->settings[0].why, "/var/log/syslog exists");
  EXPECT_TRUE(discovery->notes.empty());

  // The journal has cron's lines as well (rsyslog beside journald): the file is kept.
  WriteJournal(root_, {{"cron", "(CRON) INFO (pidfile fd = 3)"}});
  discovery = CrontabDiscoverer(Options(), true).Discover(ListContext{kNow, nullptr});
  ASSERT_TRUE(discovery) << discovery.error();
  ASSERT_EQ(discovery->settings.size(), 1u);
  EXPECT_EQ(discovery->settings[0].value, "syslog");
  EXPECT_NE(discovery->settings[0].why.find("the journal has cron's lines too"), std::string::npos)
      << discovery->settings[0].why;
  for (const auto& object : discovery->objects) {
    if (object.id == "/etc/cron.d/sysstat:6") {
      EXPECT_EQ(object.longest_run_seconds, 3);
    }
  }
}

TEST_F(CrontabDiscoverTest, HistoryFromTheJournalWhenCronLogsOnlyThere) {
  fs::remove(root_ / "var/log/syslog");
  WriteJournal(root_, {{"cron", "(CRON) INFO (pidfile fd = 3)"},
                       {"CRON", "(root) CMD ([41] " + kSa1 + ")"},
                       {"CRON", "pam_unix(cron:session): session closed for user root"},
                       {"CRON", "(root) END ([41] " + kSa1 + ")"}});
  CrontabDiscoverer discoverer(Options(), /*find_history=*/true);
  auto discovery = discoverer.Discover(ListContext{kNow, nullptr});
  ASSERT_TRUE(discovery) << discovery.error();
  ASSERT_EQ(discovery->settings.size(), 1u);
  EXPECT_EQ(discovery->settings[0].key, "history");
  EXPECT_EQ(discovery->settings[0].value, "journal");
  EXPECT_EQ(discovery->settings[0].why, "/var/log/syslog does not exist; cron logs to the journal");
  // The runs were read there: no note of a missing history, a run of 2 s.
  EXPECT_TRUE(discovery->notes.empty()) << discovery->notes[0];
  bool seen = false;
  for (const auto& object : discovery->objects) {
    if (object.id != "/etc/cron.d/sysstat:6") continue;
    seen = true;
    EXPECT_EQ(object.finished_runs, 1);
    EXPECT_EQ(object.longest_run_seconds, 2);
  }
  EXPECT_TRUE(seen);
  // Something at the syslog path the source could not read is as good as none.
  ASSERT_EQ(mkfifo((root_ / "var/log/syslog").c_str(), 0600), 0);
  discovery = CrontabDiscoverer(Options(), true).Discover(ListContext{kNow, nullptr});
  ASSERT_TRUE(discovery) << discovery.error();
  EXPECT_EQ(discovery->settings.at(0).value, "journal");
  EXPECT_EQ(discovery->settings.at(0).why,
            "/var/log/syslog is a FIFO, not a regular file; cron logs to the journal");
  fs::remove(root_ / "var/log/syslog");
  // Only the daemon's start is there yet (no job ran since boot): cron still logs there.
  fs::remove_all(root_ / "var/log/journal");
  WriteJournal(root_, {{"cron", "(CRON) INFO (Running @reboot jobs)"}});
  discovery = CrontabDiscoverer(Options(), true).Discover(ListContext{kNow, nullptr});
  ASSERT_TRUE(discovery) << discovery.error();
  EXPECT_EQ(discovery->settings.at(0).value, "journal");
}

TEST_F(CrontabDiscoverTest, NoHistoryAnywhereIsSaidWithWhatItMeans) {
  fs::remove(root_ / "var/log/syslog");
  // journald runs, but nothing of cron's is in it.
  WriteJournal(root_, {{"systemd", "Started cron.service - Regular background program."}});
  CrontabDiscoverer discoverer(Options(), /*find_history=*/true);
  auto discovery = discoverer.Discover(ListContext{kNow, nullptr});
  ASSERT_TRUE(discovery) << discovery.error();
  EXPECT_EQ(discovery->objects.size(), 11u);
  ASSERT_EQ(discovery->settings.size(), 1u);
  const ChosenSetting& none = discovery->settings[0];
  EXPECT_EQ(none.key, "");
  for (const char* words :
       {"No run history found: /var/log/syslog does not exist,\n", "has no line of cron's",
        "only whether each entry\nexists", "Install rsyslog", "cron log to the journal"}) {
    EXPECT_NE(none.why.find(words), std::string::npos) << words << " in " << none.why;
  }
  // From the spec: a block without history: or syslog: is looked for; one with either is taken
  // at its word.
  for (const auto& [key, looked] : std::vector<std::pair<std::string, bool>>{
           {"", true}, {"history", false}, {"syslog", false}}) {
    std::map<std::string, std::vector<std::string>> block = {{"root", {root_.string()}}};
    if (!key.empty()) block[key] = {key == "history" ? "syslog" : "/var/log/syslog"};
    SourceSpec spec = *testing::DecodeSourceBlock("host", "crontab", block);
    SourceOptions options;
    options.spec = &spec;
    auto made = MakeCrontabDiscoverer(options);
    ASSERT_TRUE(made) << made.error();
    discovery = (*made)->Discover(ListContext{kNow, nullptr});
    ASSERT_TRUE(discovery) << discovery.error();
    EXPECT_EQ(discovery->settings.size(), looked ? 1u : 0u) << key;
  }
}

TEST_F(CrontabDiscoverTest, FilesCronWouldNotRunAreNoJobs) {
  testing::WriteFile(root_ / "etc/cron.d/writable", "* * * * * root /bin/w\n");
  chmod((root_ / "etc/cron.d/writable").c_str(), 0666);
  testing::WriteFile(root_ / "etc/cron.d/old.dpkg-old", "* * * * * root /bin/o\n");
  testing::WriteFile(root_ / "etc/cron.d/nonewline", "* * * * * root /bin/n");
  CrontabDiscoverer discoverer(Options());
  auto discovery = discoverer.Discover(ListContext{kNow, nullptr});
  ASSERT_TRUE(discovery) << discovery.error();
  std::map<std::string, std::string> not_run;
  for (const auto& object : discovery->objects) {
    if (!object.not_run_because.empty()) not_run[object.id] = object.not_run_because;
  }
  ASSERT_EQ(not_run.size(), 3u);
  EXPECT_NE(not_run["/etc/cron.d/writable"].find("INSECURE MODE"), std::string::npos);
  EXPECT_NE(not_run["/etc/cron.d/old.dpkg-old"].find("letters, digits"), std::string::npos);
  EXPECT_NE(not_run["/etc/cron.d/nonewline"].find("missing newline"), std::string::npos);
}

TEST_F(CrontabDiscoverTest, WritesMarkersWithBackupsAndTheSourceThenSeesEveryRole) {
  const std::string sysstat_before = testing::ReadFile(root_ / "etc/cron.d/sysstat");
  CrontabDiscoverer discoverer(Options());
  auto discovery = discoverer.Discover(ListContext{kNow, nullptr});
  ASSERT_TRUE(discovery) << discovery.error();
  auto markers = AllUnmarked(*discovery);
  // The two sysstat lines suggest the same words; discover makes them unique, so do we here.
  for (auto& marker : markers) {
    if (marker.object.id == "/etc/cron.d/sysstat:9") marker.role += "-2";
    for (char& c : marker.role) c = c == '.' ? '-' : c;
  }
  ASSERT_EQ(markers.size(), 11u);
  auto written = discoverer.WriteMarkers(markers);
  ASSERT_TRUE(written) << written.error();
  ASSERT_EQ(written->size(), 6u);
  for (const auto& line : *written) EXPECT_EQ(line.find("not changed"), std::string::npos) << line;
  EXPECT_EQ(testing::ReadFile(root_ / "etc/cron.d/.sysstat.schedwatch-bak"), sysstat_before);
  struct stat info {};
  ASSERT_EQ(stat((root_ / "etc/cron.d/sysstat").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0644u);
  EXPECT_EQ(testing::ReadFile(root_ / "etc/cron.d/sysstat"),
            "# The first element of the path is a directory where the debian-sa1\n"
            "# script is located\n"
            "PATH=/usr/lib/sysstat:/usr/sbin:/usr/sbin:/usr/bin:/sbin:/bin\n\n"
            "# Activity reports every 10 minutes everyday\n"
            "# schedwatch: role=sysstat-debian-sa1 spec_version=1\n"
            "5-55/10 * * * * root command -v debian-sa1 > /dev/null && debian-sa1 1 1\n\n"
            "# Additional run at 23:59 to rotate the statistics file\n"
            "# schedwatch: role=sysstat-debian-sa1-2 spec_version=1\n"
            "59 23 * * * root command -v debian-sa1 > /dev/null && debian-sa1 60 2\n");
  CrontabSource source(Options());
  auto listed = source.List(ListContext{kNow, nullptr});
  ASSERT_TRUE(listed) << listed.error();
  EXPECT_EQ(listed->objects.size(), 11u);
  for (const auto& problem : listed->problems) ADD_FAILURE() << problem.message;
  // The history still reaches the role, now by its marker.
  EXPECT_EQ(listed->history["sysstat-debian-sa1"].runs.size(), 2u);
  // Discovered again: every object has its marker.
  CrontabDiscoverer again(Options());
  auto second = again.Discover(ListContext{kNow, nullptr});
  ASSERT_TRUE(second) << second.error();
  EXPECT_TRUE(AllUnmarked(*second).empty());
}

TEST_F(CrontabDiscoverTest, RefusesLinksChangedFilesAndHugeFiles) {
  // A link in cron.d to a file only root should read (cron follows links its owner made).
  testing::WriteFile(temp_.path() / "secret", "* * * * * root /bin/secret --password hunter2\n");
  chmod((temp_.path() / "secret").c_str(), 0600);
  fs::create_symlink(temp_.path() / "secret", root_ / "etc/cron.d/linked");
  CrontabDiscoverer discoverer(Options());
  auto discovery = discoverer.Discover(ListContext{kNow, nullptr});
  ASSERT_TRUE(discovery) << discovery.error();
  std::vector<MarkerToWrite> linked, popcon, php;
  for (auto& marker : AllUnmarked(*discovery)) {
    if (marker.object.id == "/etc/cron.d/linked:1") linked.push_back(marker);
    if (marker.object.id == "/etc/cron.d/popularity-contest:3") popcon.push_back(marker);
    if (marker.object.id == "/etc/cron.d/php:14") php.push_back(marker);
  }
  ASSERT_EQ(linked.size(), 1u);
  ASSERT_EQ(popcon.size(), 1u);
  ASSERT_EQ(php.size(), 1u);
  auto refused = discoverer.WriteMarkers(linked);
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->at(0).find("not changed: it is a symbolic link"), std::string::npos)
      << refused->at(0);
  EXPECT_EQ(testing::ReadFile(temp_.path() / "secret"),
            "* * * * * root /bin/secret --password hunter2\n");
  EXPECT_FALSE(fs::exists(root_ / "etc/cron.d/.linked.schedwatch-bak"));

  // Rewritten since discover read it: the schedule at that line is another now.
  testing::WriteFile(root_ / "etc/cron.d/popularity-contest",
                     "SHELL=/bin/sh\nPATH=/bin\n1 2 * * *   root    /bin/other\n");
  auto changed = discoverer.WriteMarkers(popcon);
  ASSERT_TRUE(changed);
  EXPECT_NE(changed->at(0).find("changed since it was read"), std::string::npos) << changed->at(0);
  EXPECT_EQ(testing::ReadFile(root_ / "etc/cron.d/popularity-contest"),
            "SHELL=/bin/sh\nPATH=/bin\n1 2 * * *   root    /bin/other\n");

  // Grown past what is read.
  std::string huge = testing::ReadFile(root_ / "etc/cron.d/php");
  huge += std::string(17u << 20, '#') + "\n";
  testing::WriteFile(root_ / "etc/cron.d/php", huge);
  auto too_large = discoverer.WriteMarkers(php);
  ASSERT_TRUE(too_large);
  EXPECT_NE(too_large->at(0).find("larger than 16 MiB"), std::string::npos) << too_large->at(0);
  EXPECT_EQ(fs::file_size(root_ / "etc/cron.d/php"), huge.size());
}

TEST_F(CrontabDiscoverTest, AUserCrontabKeepsItsOwnerAndMode) {
  // As root the file belongs to another user, as cron finds users' crontabs; else to us.
  const unsigned uid = geteuid() == 0 ? 4242 : geteuid();
  testing::WriteFile(root_ / "etc/passwd", fmt::format("root:x:0:0::/root:/bin/sh\n"
                                                       "alice:x:{}:{}::/home/alice:/bin/sh\n",
                                                       uid, uid));
  const fs::path crontab = root_ / "var/spool/cron/crontabs/alice";
  testing::WriteFile(crontab,
                     "# DO NOT EDIT THIS FILE - edit the master and reinstall.\n"
                     "*/15 * * * * /home/alice/bin/sync.sh --all\n");
  chmod(crontab.c_str(), 0600);
  ASSERT_EQ(chown(crontab.c_str(), uid, uid), 0);
  CrontabDiscoverer discoverer(Options());
  auto discovery = discoverer.Discover(ListContext{kNow, nullptr});
  ASSERT_TRUE(discovery) << discovery.error();
  std::vector<MarkerToWrite> alice;
  for (auto& marker : AllUnmarked(*discovery)) {
    if (marker.object.id == "/var/spool/cron/crontabs/alice:2") alice.push_back(marker);
  }
  ASSERT_EQ(alice.size(), 1u);
  EXPECT_EQ(alice[0].role, "alice-sync");
  auto written = discoverer.WriteMarkers(alice);
  ASSERT_TRUE(written) << written.error();
  EXPECT_EQ(written->at(0).find("not changed"), std::string::npos) << written->at(0);
  struct stat info {};
  ASSERT_EQ(stat(crontab.c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, uid);
  EXPECT_EQ(info.st_mode & 07777, 0600u);
  ASSERT_EQ(stat((root_ / "var/spool/cron/crontabs/.alice.schedwatch-bak").c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, uid);
  EXPECT_EQ(info.st_mode & 07777, 0600u);
  CrontabSource source(Options());
  auto listed = source.List(ListContext{kNow, nullptr});
  ASSERT_TRUE(listed) << listed.error();
  bool found = false;
  for (const auto& object : listed->objects) found = found || object.role() == "alice-sync";
  EXPECT_TRUE(found);
}

TEST(AtomicWriteBeforeRename, AnErrorLeavesTheFileAsItWas) {
  testing::TempDir temp;
  fs::path path = temp.path() / "crontab";
  testing::WriteFile(path, "old\n");
  platform::AtomicWrite how;
  how.before_rename = []() -> Result<bool> { return Error{"it changed"}; };
  auto written = platform::WriteFileAtomically(path.string(), "new\n", how);
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error(), "it changed");
  EXPECT_EQ(testing::ReadFile(path), "old\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(temp.path()), fs::directory_iterator()), 1);
}

}  // namespace
}  // namespace schedwatch::crontab
