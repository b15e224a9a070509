// `discover`: the draft from Debian's own crontabs (golden), adding to existing specs as text in
// every style a spec may be written in, run twice adding nothing, and role names.
#include "exporter/commands/discover.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "exporter/commands/spec_merge.h"
#include "schedwatch/schedule.h"
#include "sources/catalog.h"
#include "sources/crontab/crontab_discoverer.h"
#include "tests/test_util.h"

namespace schedwatch {
namespace {

namespace fs = std::filesystem;
const fs::path kDebian = fs::path(SCHEDWATCH_TEST_DIR) / "sources/crontab/fixtures/debian";
const fs::path kGolden = fs::path(SCHEDWATCH_TEST_DIR) / "golden/discover";
constexpr std::int64_t kNow = 1767268800;  // 2026-01-01T12:00:00Z

Spec Parse(const std::string& text) {
  auto spec = ParseSpec(text, "spec.yaml", BuiltInCatalog());
  EXPECT_TRUE(spec) << spec.error();
  return spec ? std::move(*spec) : Spec{};
}

std::vector<std::string> Roles(const Spec& spec) {
  std::vector<std::string> roles;
  for (const auto& job : spec.jobs) roles.push_back(job.role);
  return roles;
}

// Debian's crontabs under a fresh root, read as cron reads them (owned by whoever runs the test).
class DebianRoot {
 public:
  DebianRoot() {
    root_ = temp_.path() / "root";
    fs::create_directories(root_);
    fs::copy(kDebian / "etc", root_ / "etc", fs::copy_options::recursive);
    // What dpkg leaves after a conffile upgrade: cron skips the name.
    fs::copy(root_ / "etc/cron.d/php", root_ / "etc/cron.d/php.dpkg-old");
    for (const auto& entry : fs::recursive_directory_iterator(root_ / "etc")) {
      if (entry.is_regular_file()) chmod(entry.path().c_str(), 0644);
    }
    testing::WriteFile(root_ / "var/log/syslog",
                       "Jan  1 10:05:01 vm CRON[11]: (root) CMD ([12] command -v debian-sa1 > "
                       "/dev/null && debian-sa1 1 1)\n"
                       "Jan  1 10:09:31 vm CRON[11]: (root) END ([12] command -v debian-sa1 > "
                       "/dev/null && debian-sa1 1 1)\n");
  }
  const fs::path& root() const { return root_; }

  DiscoverRequest Request(const Spec& spec) const {
    DiscoverRequest request;
    request.spec = &spec;
    request.now = kNow;
    request.draft_sources = "  host:\n    type: crontab\n";
    std::string root = root_.string();
    request.make_discoverer = [root](const SourceOptions&) -> Result<std::unique_ptr<Discoverer>> {
      crontab::CrontabSourceOptions options;
      options.root = root;
      options.trusted_uid = static_cast<long>(geteuid());
      options.zone = FindZone("UTC");
      return std::unique_ptr<Discoverer>(
          std::make_unique<crontab::CrontabDiscoverer>(std::move(options)));
    };
    return request;
  }

 private:
  testing::TempDir temp_;
  fs::path root_;
};

const char kHostOnly[] = "version: 1\nsources:\n  host:\n    type: crontab\njobs: []\n";

TEST(DiscoverGolden, DebianCrontabsDraftAndReport) {
  DebianRoot debian;
  Spec sources = Parse(kHostOnly);
  DiscoverOutcome outcome = Discover(debian.Request(sources));
  EXPECT_EQ(outcome.exit_code, 0) << outcome.report;
  testing::ExpectGolden(outcome.spec_text, kGolden / "debian-draft.yaml");
  testing::ExpectGolden(outcome.report, kGolden / "debian-report.txt");
  Spec draft = Parse(outcome.spec_text);
  EXPECT_EQ(draft.jobs.size(), 11u);
}

TEST(Discover, RunTwiceAddsNothing) {
  DebianRoot debian;
  Spec sources = Parse(kHostOnly);
  std::string draft = Discover(debian.Request(sources)).spec_text;
  Spec spec = Parse(draft);
  DiscoverRequest again = debian.Request(spec);
  again.merge_into = draft;
  DiscoverOutcome outcome = Discover(again);
  EXPECT_EQ(outcome.exit_code, 0) << outcome.report;
  EXPECT_EQ(outcome.spec_text, draft);
  EXPECT_NE(outcome.report.find("nothing to add"), std::string::npos) << outcome.report;
}

TEST(Discover, RolesAreTheSameOnAnotherMachine) {
  // Another root path, and popularity-contest's postinst chose another time there.
  DebianRoot one, other;
  testing::WriteFile(other.root() / "etc/cron.d/popularity-contest",
                     "SHELL=/bin/sh\nPATH=/usr/local/sbin:/usr/local/bin:/sbin:/bin:/usr/sbin:"
                     "/usr/bin\n7 4 * * *   root    test -x /etc/cron.daily/popularity-contest && "
                     "/etc/cron.daily/popularity-contest --crond\n");
  Spec sources = Parse(kHostOnly);
  Spec first = Parse(Discover(one.Request(sources)).spec_text);
  Spec second = Parse(Discover(other.Request(sources)).spec_text);
  EXPECT_EQ(Roles(first), Roles(second));
  EXPECT_NE(first.FindJob("popularity-contest")->schedule.expression().text(),
            second.FindJob("popularity-contest")->schedule.expression().text());
}

TEST(Discover, AddsToAHandWrittenSpecKeepingItsCommentsAndOrder) {
  DebianRoot debian;
  // Marked by hand already: keeps its role and version.
  testing::WriteFile(debian.root() / "etc/cron.d/php",
                     "# schedwatch: role=php-sessions spec_version=4\n"
                     "09,39 *     * * *     root   [ -x /usr/lib/php/sessionclean ] && "
                     "/usr/lib/php/sessionclean\n");
  chmod((debian.root() / "etc/cron.d/php").c_str(), 0644);
  const std::string hand =
      "# Our jobs. Reviewed in #ops.\n"
      "version: 1\n"
      "jobs:\n"
      "    # the sar collector: every ten minutes\n"
      "    -   role: sysstat-debian-sa1   # named by discover last time\n"
      "        source: host\n"
      "        schedule: '5-55/10 * * * *'\n"
      "        spec_version: \"2\"\n"
      "    # (old: - role: gone)\n"
      "\n"
      "# Where they run\n"
      "sources:\n"
      "  host: {type: crontab}   # this machine\n"
      "# end\n";
  Spec spec = Parse(hand);
  DiscoverRequest request = debian.Request(spec);
  request.merge_into = hand;
  DiscoverOutcome outcome = Discover(request);
  ASSERT_EQ(outcome.exit_code, 0) << outcome.report;
  // The file's own text is all still there, in order, and the new jobs sit inside the list.
  const std::string& merged = outcome.spec_text;
  std::size_t list_end = merged.find("\n# Where they run");
  ASSERT_NE(list_end, std::string::npos);
  EXPECT_EQ(merged.substr(0, hand.find("\n# Where they run")),
            hand.substr(0, hand.find("\n# Where they run")));
  EXPECT_EQ(merged.substr(list_end + 1), hand.substr(hand.find("# Where they run")));
  EXPECT_NE(merged.find("    -   role: e2scrub_all\n        source: host\n"), std::string::npos)
      << merged;
  Spec result = Parse(merged);
  EXPECT_EQ(result.jobs.size(), 11u);
  EXPECT_EQ(result.FindJob("sysstat-debian-sa1")->spec_version, "2");  // untouched
  ASSERT_NE(result.FindJob("php-sessions"), nullptr);
  EXPECT_EQ(result.FindJob("php-sessions")->spec_version, "4");
  EXPECT_NE(outcome.report.find("added 10 jobs"), std::string::npos) << outcome.report;
  // The marker for the role the spec had is asked for with the spec's version.
  EXPECT_NE(outcome.report.find("# schedwatch: role=sysstat-debian-sa1 spec_version=2"),
            std::string::npos)
      << outcome.report;
  // Twice: nothing more.
  Spec merged_spec = Parse(merged);
  DiscoverRequest again = debian.Request(merged_spec);
  again.merge_into = merged;
  EXPECT_EQ(Discover(again).spec_text, merged);
}

TEST(Discover, WrittenMarkersAreFoundNextTime) {
  DebianRoot debian;
  Spec sources = Parse(kHostOnly);
  std::string draft = Discover(debian.Request(sources)).spec_text;
  Spec spec = Parse(draft);
  DiscoverRequest write = debian.Request(spec);
  write.merge_into = draft;
  write.write_markers = true;
  DiscoverOutcome written = Discover(write);
  EXPECT_EQ(written.exit_code, 0) << written.report;
  EXPECT_EQ(written.report.find("not changed"), std::string::npos) << written.report;
  DiscoverRequest again = debian.Request(spec);
  again.merge_into = draft;
  DiscoverOutcome outcome = Discover(again);
  EXPECT_EQ(outcome.spec_text, draft);
  EXPECT_NE(outcome.report.find("markers: every object has one"), std::string::npos)
      << outcome.report;
}

TEST(Discover, AFileNameWithALineBreakOfYamlsStaysInItsComment) {
  DebianRoot debian;
  // cron skips the name; the draft lists it as a comment, which must not end at the break.
  for (const char* line_break : {"\r", "\xc2\x85", "\xe2\x80\xa8", "\xe2\x80\xa9"}) {
    testing::WriteFile(debian.root() / "etc/cron.d" / (std::string("a") + line_break + "jobs: 5"),
                       "* * * * * root /bin/true\n");
  }
  Spec sources = Parse(kHostOnly);
  DiscoverOutcome outcome = Discover(debian.Request(sources));
  EXPECT_EQ(outcome.exit_code, 0) << outcome.report;
  EXPECT_EQ(Parse(outcome.spec_text).jobs.size(), 11u) << outcome.spec_text;
  EXPECT_EQ(outcome.spec_text.find("\njobs: 5"), std::string::npos) << outcome.spec_text;
}

TEST(Discover, ASourceThatCannotBeReadIsSaidAndTheExitCodeIsOne) {
  Spec spec = Parse(
      "version: 1\nsources:\n  host:\n    type: crontab\n    root: /nonexistent-root\njobs: []\n");
  DiscoverRequest request;
  request.spec = &spec;
  request.now = kNow;
  request.draft_sources = "  host:\n    type: crontab\n";
  DiscoverOutcome outcome = Discover(request);
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_NE(outcome.report.find("source \"host\" (crontab): not read: none of the crontab paths"),
            std::string::npos)
      << outcome.report;
  // Nothing was read: nothing is said of markers.
  EXPECT_EQ(outcome.report.find("markers:"), std::string::npos) << outcome.report;
}

TEST(Discover, TheExampleSpecGetsTheSnapshotsUnownedRoleOnly) {
  // Its `demo` snapshot holds every role of the spec and one more; `partner` is not mounted.
  const fs::path example = fs::path(SCHEDWATCH_SOURCE_DIR) / "examples/desired-state.yaml";
  const std::string text = testing::ReadFile(example);
  auto spec = ParseSpec(text, example.string(), BuiltInCatalog());
  ASSERT_TRUE(spec) << spec.error();
  DiscoverRequest request;
  request.spec = &*spec;
  request.now = kNow;
  request.merge_into = text;
  DiscoverOutcome outcome = Discover(request);
  EXPECT_EQ(outcome.exit_code, 1);  // partner could not be read; the rest was done
  EXPECT_NE(outcome.report.find("source \"partner\" (file): not read:"), std::string::npos)
      << outcome.report;
  EXPECT_NE(outcome.report.find("not a job (demo): demo/nightly-report: disabled in the snapshot"),
            std::string::npos)
      << outcome.report;
  EXPECT_NE(outcome.report.find("added 1 job: old-migration\n"), std::string::npos)
      << outcome.report;
  EXPECT_NE(outcome.report.find("markers: every object has one"), std::string::npos);
  EXPECT_EQ(outcome.spec_text.substr(0, text.size()), text);
  auto merged = ParseSpec(outcome.spec_text, example.string(), BuiltInCatalog());
  ASSERT_TRUE(merged) << merged.error();
  request.spec = &*merged;
  request.merge_into = outcome.spec_text;
  EXPECT_EQ(Discover(request).spec_text, outcome.spec_text);
}

JobText Job(const std::string& role) {
  JobText job;
  job.comments = {"/etc/cron.d/x:1"};
  job.fields = {{"role", YamlScalar(role)},
                {"source", "host"},
                {"schedule", QuotedScalar("*/5 * * * *")},
                {"spec_version", QuotedScalar("1")}};
  return job;
}

// Appends two jobs to `text`; the result must read back with the old jobs and the new ones.
std::string AppendTwo(const std::string& text) {
  auto merged = AppendJobs(text, {Job("new-a"), Job("new-b")}, "added");
  EXPECT_TRUE(merged) << merged.error();
  if (!merged) return "";
  Spec before = Parse(text);
  Spec after = Parse(*merged);
  std::vector<std::string> expected = Roles(before);
  expected.push_back("new-a");
  expected.push_back("new-b");
  EXPECT_EQ(Roles(after), expected) << *merged;
  return *merged;
}

const char kSources[] = "sources:\n  host:\n    type: crontab\n";

TEST(SpecMerge, BlockListLastInTheFileWithTrailingComments) {
  std::string text = std::string("version: 1\n") + kSources +
                     "jobs:\n- role: a\n  source: host\n  schedule: '@daily'\n  spec_version: "
                     "'1'\n  # about a\n# the end\n";
  EXPECT_EQ(AppendTwo(text),
            std::string("version: 1\n") + kSources +
                "jobs:\n- role: a\n  source: host\n  schedule: '@daily'\n  spec_version: '1'\n"
                "  # about a\n# added\n# /etc/cron.d/x:1\n- role: new-a\n  source: host\n"
                "  schedule: \"*/5 * * * *\"\n  spec_version: \"1\"\n# /etc/cron.d/x:1\n"
                "- role: new-b\n  source: host\n  schedule: \"*/5 * * * *\"\n"
                "  spec_version: \"1\"\n# the end\n");
}

TEST(SpecMerge, NoFinalNewline) {
  std::string text = std::string("version: 1\n") + kSources +
                     "jobs:\n  - {role: a, source: host, schedule: '@daily', spec_version: '1'}";
  std::string merged = AppendTwo(text);
  EXPECT_EQ(merged.substr(0, text.size() + 1), text + "\n");
}

TEST(SpecMerge, FlowLists) {
  std::string flow = std::string("version: 1\n") + kSources +
                     "jobs: [{role: a, source: host, schedule: \"@daily\", spec_version: \"1\"}, "
                     "# a ] in a comment\n  {role: b, source: host, schedule: '@daily', "
                     "spec_version: 'v]''1'}]  # trailing\n";
  std::string merged = AppendTwo(flow);
  EXPECT_NE(merged.find("# a ] in a comment\n"), std::string::npos) << merged;
  EXPECT_NE(merged.find("spec_version: 'v]''1'}, {role: new-a,"), std::string::npos) << merged;
  EXPECT_NE(merged.find("spec_version: \"1\"}]  # trailing\n"), std::string::npos) << merged;
  // An empty list becomes a block list under its key.
  std::string empty = std::string("version: 1\n") + kSources + "jobs: []   # none yet\n";
  std::string from_empty = AppendTwo(empty);
  EXPECT_NE(
      from_empty.find("jobs:    # none yet\n  # added\n  # /etc/cron.d/x:1\n  - role: new-a\n"),
      std::string::npos)
      << from_empty;
  // A comment right after the brackets stays a comment (found by fuzzing).
  EXPECT_NE(
      AppendTwo(std::string("version: 1\n") + kSources + "jobs: [ ]# x\n").find("jobs: # x\n"),
      std::string::npos);
  // A whole file in flow style stays so.
  std::string all_flow =
      "{version: 1, sources: {host: {type: crontab}},\n jobs: [], defaults: {timezone: UTC}}\n";
  EXPECT_NE(AppendTwo(all_flow).find("jobs: [{role: new-a"), std::string::npos);
}

TEST(SpecMerge, RefusesWhatIsNoSpecList) {
  EXPECT_FALSE(AppendJobs("jobs: {a: 1}\n", {Job("x")}, "added"));
  EXPECT_FALSE(AppendJobs("- a\n", {Job("x")}, "added"));
  EXPECT_FALSE(AppendJobs("jobs: [\n", {Job("x")}, "added"));
}

TEST(DiscoverRoleNames, ValidStableAndShort) {
  EXPECT_EQ(RoleNameFrom("cron.daily"), "cron-daily");
  EXPECT_EQ(RoleNameFrom("e2scrub_all_cron"), "e2scrub_all_cron");
  EXPECT_EQ(RoleNameFrom("-Backup  DB!"), "backup-db");
  EXPECT_EQ(RoleNameFrom("..."), "job");
  EXPECT_EQ(RoleNameFrom("caf\xc3\xa9-sync"), "caf-sync");
  EXPECT_EQ(RoleNameFrom(std::string(100, 'a')).size(), 59u);
  EXPECT_EQ(SuggestedMaxRuntime(3), 60);
  EXPECT_EQ(SuggestedMaxRuntime(270), 540);
  EXPECT_EQ(SuggestedMaxRuntime(271), 600);
}

}  // namespace
}  // namespace schedwatch
