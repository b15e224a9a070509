#include "schedwatch/spec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <tuple>
#include <vector>

#include "schedwatch/duration.h"
#include "schedwatch/shard.h"
#include "schedwatch/yaml_tree.h"
#include "sources/catalog.h"
#include "sources/crontab/crontab_descriptor.h"
#include "sources/file/file_descriptor.h"
#include "sources/kubernetes/kubernetes_descriptor.h"

namespace schedwatch {
namespace {

namespace fs = std::filesystem;
const fs::path kConfigDir = fs::path(SCHEDWATCH_TEST_DIR) / "config";

std::string WriteTemp(const std::string& name, const std::string& content) {
  fs::path path = fs::temp_directory_path() / ("schedwatch-spec-test-" + name);
  std::ofstream(path, std::ios::binary) << content;
  return path.string();
}

TEST(DurationTest, ParsesPrometheusDurations) {
  EXPECT_EQ(*ParseDuration("90s"), 90);
  EXPECT_EQ(*ParseDuration("5m"), 300);
  EXPECT_EQ(*ParseDuration("1h30m"), 5400);
  EXPECT_EQ(*ParseDuration("2d"), 172800);
  EXPECT_EQ(*ParseDuration("1w"), 604800);
  EXPECT_EQ(*ParseDuration("1500ms"), 2);
  EXPECT_EQ(*ParseDuration("0s"), 0);
}

TEST(DurationTest, RejectsBadDurations) {
  EXPECT_EQ(ParseDuration("").error(), "empty duration");
  EXPECT_EQ(ParseDuration("-5m").error(), "duration \"-5m\" is negative");
  EXPECT_EQ(ParseDuration("5").error(),
            "not a valid duration \"5\": unit missing or unknown (use y, w, d, h, m, s, ms)");
  EXPECT_EQ(ParseDuration("30m1h").error(),
            "not a valid duration \"30m1h\": units must go from largest to smallest, each once");
  EXPECT_EQ(ParseDuration("h").error(), "not a valid duration \"h\": expected a number at \"h\"");
  EXPECT_EQ(ParseDuration("99999999999999999999d").error(),
            "duration \"99999999999999999999d\" is too large");
}

TEST(DurationTest, HasAMaximumFarFromOverflow) {
  EXPECT_EQ(*ParseDuration("10y"), kMaxDurationSeconds);
  EXPECT_EQ(ParseDuration("10y1ms").error(),
            "duration \"10y1ms\" is longer than the maximum of 10y");
  // Exactly INT64_MAX milliseconds: used to round up into a negative number of seconds.
  EXPECT_EQ(ParseDuration("292471208y35w2d7h12m55s807ms").error(),
            "duration \"292471208y35w2d7h12m55s807ms\" is longer than the maximum of 10y");
  EXPECT_EQ(*ParseDurationMilliseconds("24h", kMaxWaitSeconds), 86400000);
  EXPECT_EQ(ParseDurationMilliseconds("1000y", kMaxWaitSeconds).error(),
            "duration \"1000y\" is longer than the maximum of 1d");
  EXPECT_EQ(ParseDurationMilliseconds("24h1ms", kMaxWaitSeconds).error(),
            "duration \"24h1ms\" is longer than the maximum of 1d");
}

TEST(DurationTest, FormatsShortestForm) {
  EXPECT_EQ(FormatDuration(5400), "1h30m");
  EXPECT_EQ(FormatDuration(0), "0s");
  EXPECT_EQ(FormatDuration(90061), "1d1h1m1s");
}

TEST(SpecTest, LoadsTheValidSpecWithDefaultsAndDerivedThresholds) {
  auto spec = LoadSpecFile((kConfigDir / "valid.yml").string());
  ASSERT_TRUE(spec.ok()) << spec.error();
  ASSERT_EQ(spec->jobs.size(), 5u);
  ASSERT_EQ(spec->sources.size(), 4u);
  // Each source's settings come as its type's struct.
  const auto* host_cron = spec->sources.at("host-cron").SettingsAs<crontab::CrontabSettings>();
  ASSERT_NE(host_cron, nullptr);
  EXPECT_EQ(host_cron->paths.size(), 3u);
  EXPECT_EQ(spec->sources.at("demo").SettingsAs<crontab::CrontabSettings>(), nullptr);
  // Relative paths are anchored at the spec's directory.
  EXPECT_EQ(spec->sources.at("demo").SettingsAs<file::FileSettings>()->path,
            (kConfigDir / "live-state.yaml").string());
  EXPECT_EQ(spec->sources.at("prod").SettingsAs<kubernetes::KubernetesSettings>()->kubeconfig,
            (kConfigDir / "kube/config").string());

  const JobSpec& retry = spec->jobs[0];
  EXPECT_EQ(retry.role, "retry");
  EXPECT_EQ(retry.timezone, "Asia/Seoul");
  EXPECT_EQ(retry.spec_version, "7");
  EXPECT_EQ(retry.max_runtime, 300);
  EXPECT_EQ(retry.start_grace, 300);
  EXPECT_EQ(retry.period, 600);
  EXPECT_EQ(retry.stale_after, 2700);  // the override
  EXPECT_TRUE(retry.stale_after_overridden);
  ASSERT_TRUE(retry.progress().has_value());
  EXPECT_EQ(retry.progress()->stale_after, 7200);
  EXPECT_EQ(retry.template_path(), (kConfigDir / "templates/retry.cron").string());
  EXPECT_EQ(retry.schedule.policy(), DstPolicy::kVixieCron);

  const JobSpec& gate = spec->jobs[1];
  EXPECT_EQ(gate.spec_version, "3");  // a plain number is read as its text
  EXPECT_EQ(gate.timezone, "UTC");
  EXPECT_EQ(gate.stale_after, 2 * 300 + 1800);  // 2 x period + max_runtime
  EXPECT_FALSE(gate.stale_after_overridden);

  const JobSpec& report = spec->jobs[2];
  EXPECT_EQ(report.workflow(), ".github/workflows/report.yml");
  EXPECT_EQ(report.success_metric(), "report_last_success_timestamp_seconds{job=\"report\"}");
  EXPECT_EQ(report.schedule.policy(), DstPolicy::kWallClock);

  // Weekdays only in Berlin: the longest gap is Friday 09:00 to Monday 09:00 over the weekend
  // the clocks go back (2026-10-23 to 10-26), one hour longer than three days.
  EXPECT_EQ(spec->jobs[3].period, 3 * 86400 + 3600);
  EXPECT_EQ(spec->jobs[3].stale_after, 2 * (3 * 86400 + 3600) + 1800);

  const JobSpec& boot = spec->jobs[4];
  EXPECT_TRUE(boot.schedule.expression().is_reboot());
  EXPECT_FALSE(boot.period.has_value());
  EXPECT_FALSE(boot.stale_after.has_value());
}

// One file per validation rule, its exact message on its first line: "# error: MESSAGE"; a file
// with several problems has one such line per problem, in file order, all reported at once.
TEST(SpecTest, EveryInvalidFileGetsItsExactMessage) {
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(kConfigDir)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("invalid-", 0) != 0) continue;
    std::ifstream in(entry.path());
    std::string line, expected;
    while (std::getline(in, line) && line.rfind("# error: ", 0) == 0) {
      std::string message = line.substr(9);
      message.replace(message.find("{file}"), 6, entry.path().string());
      expected += (expected.empty() ? "" : "\n") + message;
    }
    ASSERT_FALSE(expected.empty()) << name << " lacks its expected error";
    auto spec = LoadSpecFile(entry.path().string());
    ASSERT_FALSE(spec.ok()) << name << " was accepted";
    EXPECT_EQ(spec.error(), expected) << name;
    ++checked;
  }
  EXPECT_GE(checked, 25);
}

TEST(SpecTest, EmptyFileIsRejected) {
  std::string path = WriteTemp("empty.yml", "");
  EXPECT_EQ(LoadSpecFile(path).error(),
            path + ":1:1: the file is empty; expected a mapping with version, sources and jobs");
  path = WriteTemp("comments.yml", "# nothing here\n");
  EXPECT_EQ(LoadSpecFile(path).error(),
            path + ":1:1: the file is empty; expected a mapping with version, sources and jobs");
}

TEST(SpecTest, NonUtf8FileIsRejectedWithPosition) {
  std::string path = WriteTemp("latin1.yml", "version: 1\nsources:\n  caf\xe9: {type: file}\n");
  auto spec = LoadSpecFile(path);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error(), path + ":3:7: invalid trailing UTF-8 octet");
}

TEST(SpecTest, BinaryFileIsRejected) {
  std::string binary(
      "\x7f"
      "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0",
      20);
  std::string path = WriteTemp("binary.yml", binary);
  auto spec = LoadSpecFile(path);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error().rfind(path + ":1:1: ", 0), 0u) << spec.error();
}

TEST(SpecTest, FileOverTheLimitIsRefusedBeforeParsingNamingTheFlag) {
  std::string path = WriteTemp("huge.yml", std::string(3u << 20, '#'));
  auto spec = LoadSpecFile(path, 2u << 20);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error(), "cannot read " + path +
                              ": it is 3145728 bytes, more than the limit of 2 MiB "
                              "(--config.max-size)");
  fs::remove(path);
}

// 1,000,000 roles are about 100 MB: the default limit reads them (it was 32 MiB).
TEST(SpecTest, FiftyMegabyteFileIsReadUnderTheDefaultLimit) {
  std::string path = WriteTemp("huge.yml", std::string(50u << 20, '#'));
  EXPECT_EQ(LoadSpecFile(path).error(),
            path + ":1:1: the file is empty; expected a mapping with version, sources and jobs");
  fs::remove(path);
}

// The file is parsed as it is read: a reader error far past the first pieces still has its
// line and column.
TEST(SpecTest, BadByteDeepInALargeFileHasItsPosition) {
  std::string text = "version: 1\n";
  for (int i = 0; i < 100000; ++i) text += "# a comment line, \xc3\xa9 and more\n";
  text += "sources:\n  caf\xe9: {type: file}\n";
  std::string path = WriteTemp("deep-latin1.yml", text);
  EXPECT_EQ(LoadSpecFile(path).error(), path + ":100003:7: invalid trailing UTF-8 octet");
}

TEST(SpecTest, MissingFileAndDirectoryAreClearErrors) {
  EXPECT_EQ(LoadSpecFile("/nonexistent/spec.yml").error(),
            "cannot read /nonexistent/spec.yml: No such file or directory");
  std::string dir = fs::temp_directory_path().string();
  EXPECT_EQ(LoadSpecFile(dir).error(),
            "cannot read " + dir + ": it is a directory, not a regular file");
}

TEST(SpecTest, AliasBombIsBoundedAndRejected) {
  // Nine levels of nine-fold aliases: 387 million nodes if expanded. Aliases share nodes, and the
  // decoder gives up on a node of the wrong shape without descending into it.
  std::string text =
      "version: 1\nsources: {demo: {type: file, path: x.yaml}}\na0: &a0 [x, x, x, x, x, x, x, x, "
      "x]\n";
  for (int i = 1; i <= 9; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 9; ++j) text += (j ? ", *a" : "*a") + std::to_string(i - 1);
    text += "]\n";
  }
  text += "jobs: *a9\n";
  auto spec = ParseSpec(text, "bomb.yml", BuiltInCatalog());
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error().substr(0, spec.error().find('\n')),
            "bomb.yml:3:1: a0: unknown key (known keys: version, defaults, sources, jobs)");
  // Ten unknown keys and the nine items of the list of jobs, each of the wrong shape.
  EXPECT_EQ(std::count(spec.error().begin(), spec.error().end(), '\n'), 18) << spec.error();
  // Even through a known key, the first job is a list, not a mapping.
  auto spec2 = ParseSpec(text.substr(0, text.find("a0:")) + "jobs: &j [[[x]]]\n", "bomb.yml",
                         BuiltInCatalog());
  EXPECT_EQ(spec2.error(), "bomb.yml:3:11: jobs[0]: expected a mapping, got a list");
}

// Every problem is reported at once, in file order: the settings of each source (decoded by its
// type's descriptor), each job, each field of a job; past kMaxSpecProblems, a count.
TEST(SpecTest, ReportsEveryProblemAtOnceUpToACap) {
  auto spec = ParseSpec(R"(version: 1
sources:
  k8s: {type: kubernetes, page_size: "0", namespaces: [ok, Bad_NS]}
  ci: {type: github_actions, repository: acme/widgets, token_file: t, token_env: T, api_url: ftp://x}
jobs:
  - {role: a, source: k8s, schedule: "0 0 * * *", spec_version: "1", max_runtime: 0s}
  - {role: b, source: ci, schedule: "0 0 * 13 *", spec_version: "1"}
  - {role: c, source: nowhere, schedule: "0 0 * * *", spec_version: "1"}
)",
                        "many.yml", BuiltInCatalog());
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error(),
            "many.yml:3:38: sources.k8s.page_size: expected a whole number from 1 to 10000, got "
            "the value \"0\"\n"
            "many.yml:3:60: sources.k8s.namespaces[1]: \"Bad_NS\" is not a namespace name "
            "(lower-case letters, digits and '-', at most 63 characters)\n"
            "many.yml:4:82: sources.ci.token_env: token_file and token_env exclude each other\n"
            "many.yml:4:94: sources.ci.api_url: \"ftp://x\" is not an http:// or https:// URL\n"
            "many.yml:6:83: jobs[0].max_runtime: must be longer than 0s\n"
            "many.yml:7:5: jobs[1].workflow: missing required key (github_actions jobs name their "
            "workflow file, e.g. .github/workflows/report.yml)\n"
            "many.yml:7:37: jobs[1].schedule: month field \"13\": 13 is out of range 1-12\n"
            "many.yml:8:23: jobs[2].source: unknown source \"nowhere\" (defined sources: ci, k8s)");

  // Jobs of a source that is itself wrong are not reported again as jobs of an unknown source.
  auto broken = ParseSpec(
      "version: 1\nsources: {demo: {type: nomad}}\njobs:\n"
      "  - {role: a, source: demo, schedule: \"* * * * *\", spec_version: \"1\"}\n",
      "broken.yml", BuiltInCatalog());
  EXPECT_EQ(
      broken.error(),
      "broken.yml:2:24: sources.demo.type: unknown source type \"nomad\" (known types: "
      "celery_beat, crontab, file, github_actions, gitlab, kubernetes, sidekiq_cron, systemd)");

  std::string text = "version: 1\nsources: {demo: {type: file, path: x.yaml}}\njobs:\n";
  for (int i = 0; i < 200; ++i) text += "  - {role: r" + std::to_string(i) + ", source: demo}\n";
  auto capped = ParseSpec(text, "capped.yml", BuiltInCatalog());
  ASSERT_FALSE(capped.ok());
  // Two problems per job (schedule and spec_version missing): 50 shown, 350 counted.
  EXPECT_EQ(std::count(capped.error().begin(), capped.error().end(), '\n'),
            static_cast<long>(kMaxSpecProblems));
  EXPECT_NE(capped.error().find("\ncapped.yml: 350 more problems not shown"), std::string::npos)
      << capped.error().substr(capped.error().size() - 200);
}

TEST(SpecTest, DeepNestingIsRejectedWithoutCrashing) {
  std::string text = "version: 1\njobs: " + std::string(100000, '[') + std::string(100000, ']');
  auto spec = ParseSpec(text, "deep.yml", BuiltInCatalog());
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.error().find("nesting deeper than 256 levels"), std::string::npos) << spec.error();
}

TEST(SpecTest, SelfReferencingAliasIsACycleError) {
  // Used to make the tree a cycle; every recursive walker would then loop until the stack ends.
  auto spec =
      ParseSpec("version: 1\nsources: &s {demo: {type: file, path: x.yaml, loop: *s}}\njobs: []\n",
                "self.yml", BuiltInCatalog());
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error(), "self.yml:2:53: alias \"s\" refers to a node that contains it (a cycle)");
  auto in_list = YamlDocument::Parse("- &l [a, [b, *l]]\n");
  ASSERT_FALSE(in_list.ok());
  EXPECT_EQ(in_list.error(), "1:14: alias \"l\" refers to a node that contains it (a cycle)");
  // An alias to a complete node, even an enclosing one's sibling, is fine.
  auto sibling = YamlDocument::Parse("a: &a {x: 1}\nb: {y: *a}\n");
  ASSERT_TRUE(sibling.ok()) << sibling.error();
  EXPECT_EQ(sibling->root().value(1).value(0).value(0).scalar(), "1");
}

TEST(SpecTest, AnchorsAndAliasesWorkForRepeatedValues) {
  auto spec = ParseSpec(R"(version: 1
sources: {demo: {type: file, path: /x.yaml}}
jobs:
  - role: a
    source: demo
    schedule: &every10 "*/10 * * * *"
    spec_version: &v "4"
  - role: b
    source: demo
    schedule: *every10
    spec_version: *v
)",
                        "aliases.yml", BuiltInCatalog());
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(spec->jobs[1].schedule.expression().text(), "*/10 * * * *");
  EXPECT_EQ(spec->jobs[1].spec_version, "4");
}

}  // namespace
}  // namespace schedwatch

namespace schedwatch {
namespace {

// schedwatch_run's records: <runs_dir>/<role>, the job's runs_dir before its source's; relative
// paths from the spec's directory.
TEST(SpecTest, RunsDirFromJobOrSource) {
  std::string path = WriteTemp("runs.yml", R"(version: 1
sources:
  host: {type: crontab, runs_dir: runs}
  plain: {type: file, path: live.yaml}
  ci: {type: github_actions, repository: acme/widgets}
jobs:
  - {role: backup, source: host, schedule: "0 3 * * *", spec_version: "1"}
  - {role: report, source: host, schedule: "0 3 * * *", spec_version: "1", runs_dir: /srv/runs}
  - {role: other, source: plain, schedule: "0 3 * * *", spec_version: "1"}
  - {role: nightly, source: ci, workflow: nightly.yml, schedule: "0 3 * * *", spec_version: "1",
     require_concurrency: true}
)");
  auto spec = LoadSpecFile(path);
  ASSERT_TRUE(spec.ok()) << spec.error();
  std::string directory = path.substr(0, path.rfind('/') + 1);
  EXPECT_EQ(spec->jobs[0].runs_dir(), directory + "runs/backup");
  EXPECT_EQ(spec->jobs[1].runs_dir(), "/srv/runs/report");
  EXPECT_EQ(spec->jobs[2].runs_dir(), "");
  EXPECT_TRUE(spec->jobs[3].require_concurrency());
  EXPECT_FALSE(spec->jobs[0].require_concurrency());
}

// Issue 34 item 10: a rejected spec interns nothing (the exporter's reload would keep its names
// for good, new ones each time); a kept one interns its jobs' source names.
TEST(SpecTest, ARejectedSpecInternsNothing) {
  auto parse = [](const std::string& sources, const std::string& jobs) {
    return ParseSpec("version: 1\nsources:\n" + sources + "jobs:\n" + jobs, "intern.yml",
                     BuiltInCatalog());
  };
  const std::string host = "  host: {type: crontab}\n";
  auto job = [](const std::string& role, const std::string& source, const std::string& extra = "") {
    return "  - {role: " + role + ", source: " + source +
           ", schedule: \"0 3 * * *\", spec_version: \"1\"" + extra + "}\n";
  };
  ASSERT_TRUE(parse(host, job("warm", "host")).ok());  // the texts every spec has
  const std::size_t before = InternedText::PoolSize();
  for (int reload = 0; reload < 5; ++reload) {
    // Jobs naming sources that are not there, new names each time.
    std::string jobs;
    for (int i = 0; i < 50; ++i) {
      jobs +=
          job("r" + std::to_string(i), "gone-" + std::to_string(reload) + "-" + std::to_string(i));
    }
    auto unknown = parse(host, jobs);
    ASSERT_FALSE(unknown.ok());
    EXPECT_NE(unknown.error().find("unknown source \"gone-" + std::to_string(reload) + "-0\""),
              std::string::npos)
        << unknown.error();
    // New sources the jobs do name, in a spec rejected for something else.
    std::string fresh = "fresh-" + std::to_string(reload);
    auto elsewhere = parse(host + "  " + fresh + ": {type: crontab}\n",
                           job("a", fresh) + job("b", fresh, ", max_runtime: -1h"));
    ASSERT_FALSE(elsewhere.ok());
    EXPECT_EQ(InternedText::PoolSize(), before) << "reload " << reload;
  }
  auto kept = parse(host + "  kept-source: {type: crontab}\n", job("a", "kept-source"));
  ASSERT_TRUE(kept.ok()) << kept.error();
  EXPECT_EQ(kept->jobs[0].source, "kept-source");
  EXPECT_EQ(InternedText::PoolSize(), before + 1);
}

}  // namespace
}  // namespace schedwatch

namespace schedwatch {
namespace {

// A spec's jobs list decoded as it streams by (YamlDocument::StreamedList): each item handed on
// with its position, then dropped; an item defining an anchor stays for later aliases.
TEST(SpecStreamTest, ListItemsAreHandedOnWithPositionsAndDropped) {
  const std::string text =
      "version: 1\nsources: {s: {type: file}}\njobs:\n  - {role: a}\n  - &b {role: b}\n"
      "  - *b\nafter: 1\n";
  std::vector<std::string> before_keys;
  std::vector<std::tuple<std::size_t, int, int, std::string>> items;
  YamlDocument::StreamedList jobs{"jobs",
                                  [&](YamlNode before) {
                                    for (std::size_t i = 0; i < before.size(); ++i)
                                      before_keys.emplace_back(before.key(i).scalar());
                                    return true;
                                  },
                                  [&](YamlNode item, std::size_t index) {
                                    items.emplace_back(index, item.line(), item.column(),
                                                       std::string(item.value(0).scalar()));
                                  }};
  std::size_t at = 0;
  auto document = YamlDocument::Parse(
      [&](char* buffer, std::size_t want) -> Result<std::size_t> {
        std::size_t n = std::min<std::size_t>({want, text.size() - at, 7});  // small pieces
        std::copy_n(text.data() + at, n, buffer);
        at += n;
        return n;
      },
      text.size(), jobs);
  ASSERT_TRUE(document.ok()) << document.error();
  EXPECT_EQ(before_keys, (std::vector<std::string>{"version", "sources"}));
  using Item = std::tuple<std::size_t, int, int, std::string>;
  EXPECT_EQ(items, (std::vector<Item>{{0, 4, 5, "a"}, {1, 5, 5, "b"}, {2, 5, 5, "b"}}))
      << "an alias is the node it names";
  YamlNode root = document->root();
  ASSERT_EQ(root.size(), 4u);
  EXPECT_TRUE(root.value(2).IsSequence());
  EXPECT_EQ(root.value(2).size(), 0u) << "the items are not held";
  EXPECT_EQ(root.value(3).scalar(), "1");

  // Declined: the list stays whole.
  jobs.begin = [](YamlNode) { return false; };
  items.clear();
  auto declined = YamlDocument::Parse(YamlDocument::TextReader(text), text.size(), jobs);
  ASSERT_TRUE(declined.ok());
  EXPECT_TRUE(items.empty());
  EXPECT_EQ(declined->root().value(2).size(), 3u);
}

// Problems of streamed jobs carry file, line, column and field, as those of a whole read.
TEST(SpecStreamTest, StreamedJobsReportFileLineAndField) {
  auto spec = ParseSpec(R"(version: 1
sources: {s: {type: crontab}}
jobs:
  - {role: a, source: s, schedule: "0 0 * * *", spec_version: "1"}
  - {role: b, source: s, schedule: "0 0 * 13 *", spec_version: "1"}
  - {role: a, source: s, schedule: "0 0 * * *", spec_version: "1"}
  - {role: c, source: nowhere, schedule: "0 0 * * *", spec_version: "1", colour: red}
)",
                        "stream.yml", BuiltInCatalog());
  ASSERT_FALSE(spec.ok());
  // The fourth problem lists every known job key.
  EXPECT_EQ(spec.error().substr(0, spec.error().find("(known keys: ")),
            "stream.yml:5:36: jobs[1].schedule: month field \"13\": 13 is out of range 1-12\n"
            "stream.yml:6:5: jobs[2].role: duplicate role \"a\" (first defined on line 4)\n"
            "stream.yml:7:23: jobs[3].source: unknown source \"nowhere\" (defined sources: s)\n"
            "stream.yml:7:74: jobs[3].colour: unknown key ");
}

// The top level is judged as a whole read judges it: a required key missing hides the jobs'
// problems, and the top level's problems are kept first when the cap is reached.
TEST(SpecStreamTest, TopLevelProblemsAfterStreamedJobsAreKeptAsAWholeReadKeepsThem) {
  std::string jobs = "sources: {demo: {type: file, path: x.yaml}}\njobs:\n";
  for (int i = 0; i < 100; ++i) jobs += "  - {role: r" + std::to_string(i) + ", source: demo}\n";
  auto missing = ParseSpec(jobs, "missing.yml", BuiltInCatalog());
  EXPECT_EQ(missing.error(), "missing.yml:1:1: version: missing required key");
  auto capped = ParseSpec("version: 1\n" + jobs + "colour: red\n", "capped.yml", BuiltInCatalog());
  ASSERT_FALSE(capped.ok());
  EXPECT_NE(capped.error().find("capped.yml:104:1: colour: unknown key"), std::string::npos)
      << capped.error();
  EXPECT_NE(capped.error().find("\ncapped.yml: 151 more problems not shown"), std::string::npos);
}

// Defaults written after the jobs still apply to them (the file is read again, whole).
TEST(SpecStreamTest, DefaultsAfterTheJobsStillApply) {
  const std::string text =
      "version: 1\nsources: {s: {type: crontab}}\njobs:\n"
      "  - {role: a, source: s, schedule: \"0 0 * * *\", spec_version: \"1\"}\n"
      "defaults: {max_runtime: 7m}\n";
  auto parsed = ParseSpec(text, "late.yml", BuiltInCatalog());
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->jobs.at(0).max_runtime, 7 * 60);
  auto loaded = LoadSpecFile(WriteTemp("late-defaults.yml", text));
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_EQ(loaded->jobs.at(0).max_runtime, 7 * 60);
}

// A shard keeps only its own roles, in file order, but checks every job of the spec.
TEST(SpecStreamTest, AShardKeepsItsRolesOnlyYetValidatesAll) {
  std::string text = "version: 1\nsources: {s: {type: crontab}}\njobs:\n";
  for (int i = 0; i < 300; ++i) {
    text += "  - {role: role-" + std::to_string(i) +
            ", source: s, schedule: \"0 0 * * *\", spec_version: \"1\"}\n";
  }
  std::string path = WriteTemp("shard.yml", text);
  std::size_t kept = 0;
  for (std::uint32_t k = 0; k < 3; ++k) {
    auto spec = LoadSpecFile(path, kDefaultMaxSpecBytes, ShardAssignment{k, 3});
    ASSERT_TRUE(spec.ok()) << spec.error();
    EXPECT_EQ(spec->SpecRoles(), 300u);
    std::vector<std::string> roles, expected;
    for (const auto& job : spec->jobs) roles.push_back(job.role);
    Spec whole = *ParseSpec(text, path, BuiltInCatalog());
    for (const auto& job : SpecOfShard(whole, ShardAssignment{k, 3}).jobs)
      expected.push_back(job.role);
    EXPECT_EQ(roles, expected);
    kept += spec->jobs.size();
  }
  EXPECT_EQ(kept, 300u);

  // A bad job and a duplicate of roles that shard 0 does not keep still fail it.
  int dup = 0;
  while (ShardAssignment::Of("role-" + std::to_string(dup), 3) == 0) ++dup;
  std::string other = "other-0";
  for (int i = 1; ShardAssignment::Of(other, 3) == 0; ++i) other = "other-" + std::to_string(i);
  std::string bad = text + "  - {role: " + other +
                    ", source: s, schedule: \"0 0 31 2 *\", spec_version: \"1\"}\n"
                    "  - {role: role-" +
                    std::to_string(dup) +
                    ", source: s, schedule: \"@daily\", spec_version: \"1\"}\n";
  auto whole = ParseSpec(bad, "bad.yml", BuiltInCatalog());
  auto shard = ParseSpec(bad, "bad.yml", BuiltInCatalog(), ShardAssignment{0, 3});
  ASSERT_FALSE(whole.ok());
  ASSERT_FALSE(shard.ok());
  EXPECT_EQ(shard.error(), whole.error());
  EXPECT_NE(shard.error().find("bad.yml:304:"), std::string::npos) << shard.error();
  EXPECT_NE(shard.error().find("bad.yml:305:5: jobs[301].role: duplicate role \"role-" +
                               std::to_string(dup) + "\" (first defined on line " +
                               std::to_string(4 + dup) + ")"),
            std::string::npos)
      << shard.error();
}

}  // namespace
}  // namespace schedwatch
