// Unit tests of the rule generator's library: quoting, template expansion, selector parsing, and
// the shape of the generated rules in both modes. promtool checks behaviour (rules_test.py).
#include "rulegen/rulegen.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "rulegen/alerts.h"
#include "rulegen/text.h"
#include "schedwatch/shard.h"
#include "sources/catalog.h"

namespace schedwatch::rulegen {
namespace {

Spec MakeSpec(int roles, const std::string& extra_job = "") {
  std::string text =
      "version: 1\n"
      "defaults: {alert_for: 5m}\n"
      "sources:\n  demo: {type: file, path: live.yaml}\n  other: {type: file, path: o.yaml}\n"
      "jobs:\n";
  for (int i = 0; i < roles; ++i) {
    text += "  - {role: r" + std::to_string(i) + ", source: " + (i % 2 ? "other" : "demo") +
            ", schedule: '*/5 * * * *', spec_version: '1'}\n";
  }
  text += extra_job;
  auto spec = ParseSpec(text, "dir/spec.yaml", BuiltInCatalog());
  if (!spec) throw std::runtime_error(spec.error());
  return *spec;
}

std::size_t CountRules(const Spec& spec, Mode mode) {
  Options options;
  options.mode = mode;
  std::size_t count = 0;
  for (const auto& group : BuildRules(spec, options)) count += group.rules.size();
  return count;
}

TEST(YamlScalar, ReadsBackAsTheSameString) {
  for (std::string text : {"plain",
                           "5m",
                           "1h30m",
                           "",
                           "yes",
                           "No",
                           "null",
                           "on",
                           "1e5",
                           "0x1F",
                           "12",
                           "-3",
                           "a: b",
                           "# comment",
                           "it's",
                           "say \"hi\"",
                           "{{ $labels.role }}",
                           "line\nbreak",
                           "tab\there",
                           " leading space",
                           "trailing ",
                           "[list]",
                           "&anchor",
                           "*alias",
                           "!tag",
                           "%x",
                           "@x",
                           "`x",
                           "ünïcode",
                           "~",
                           "- dash",
                           "? q",
                           "http://127.0.0.1:9099/x",
                           "a,b"}) {
    std::string yaml = "key: " + YamlScalar(text) + "\n";
    YAML::Node node = YAML::Load(yaml);
    EXPECT_EQ(node["key"].as<std::string>(), text) << yaml;
  }
  EXPECT_EQ(YamlScalar("severity"), "severity");
  EXPECT_EQ(YamlScalar("5m"), "5m");
  EXPECT_EQ(YamlScalar("yes"), "'yes'");
  EXPECT_EQ(YamlScalar("12"), "'12'");
  EXPECT_EQ(YamlScalar("it's"), "'it''s'");
}

TEST(PromString, EscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(PromString("retry"), "\"retry\"");
  EXPECT_EQ(PromString("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
  EXPECT_EQ(PromString(std::string("\x01", 1)), "\"\\x01\"");
}

TEST(RegexQuote, EscapesMetacharacters) {
  EXPECT_EQ(RegexQuote("nightly-report"), "nightly-report");
  EXPECT_EQ(RegexQuote("a.b|c(d)"), "a\\.b\\|c\\(d\\)");
}

TEST(HumanizeDuration, MatchesPrometheusTemplates) {
  EXPECT_EQ(HumanizeDuration(0), "0s");
  EXPECT_EQ(HumanizeDuration(45), "45s");
  EXPECT_EQ(HumanizeDuration(60), "1m 0s");
  EXPECT_EQ(HumanizeDuration(3700), "1h 1m 40s");  // checked against promtool 2.42
  EXPECT_EQ(HumanizeDuration(93600), "1d 2h 0m 0s");
  EXPECT_EQ(HumanizeDuration(-90), "-1m 30s");
}

TEST(ExpandAnnotation, FillsLabelsAndValue) {
  std::map<std::string, std::string> labels = {{"role", "retry"}, {"source", "demo"}};
  EXPECT_EQ(ExpandAnnotation("{{ $labels.role }} on {{$labels.source}}: {{ $value }}", labels, 2),
            "retry on demo: 2");
  EXPECT_EQ(
      ExpandAnnotation("{{ $value | humanizeDuration }} ago, {{ $labels.none }}.", labels, 61),
      "1m 1s ago, .");
  EXPECT_EQ(
      ExpandAnnotation("{{ $labels.role }}: {{ $value | humanizeDuration }}", labels, std::nullopt),
      "retry: {{ $value | humanizeDuration }}");
  EXPECT_THROW(ExpandAnnotation("{{ $value | humanize }}", labels, 1), std::logic_error);
  EXPECT_THROW(ExpandAnnotation("{{ $value", labels, 1), std::logic_error);
}

TEST(Selector, ParsesMatchersAndBuildsAMatchingSeries) {
  auto selector = ParseSelector(
      " report_last_success_timestamp_seconds { job = \"report\", env=~'prod|staging', "
      "instance!=\"\", zone!~\"dev\", } ");
  ASSERT_TRUE(selector);
  EXPECT_EQ(selector->metric, "report_last_success_timestamp_seconds");
  ASSERT_EQ(selector->matchers.size(), 4u);
  EXPECT_EQ(selector->matchers[1].op, "=~");
  EXPECT_EQ(*ExampleSeries(*selector),
            "report_last_success_timestamp_seconds{env=\"prod\",instance=\"x\",job=\"report\"}");
  auto by_name = ParseSelector("{__name__=\"push_time_seconds\",job=\"a\\\"b\"}");
  ASSERT_TRUE(by_name);
  EXPECT_EQ(*ExampleSeries(*by_name), "push_time_seconds{job=\"a\\\"b\"}");
  EXPECT_FALSE(ExampleSeries(*ParseSelector("x{job=~\"a.*\"}")));
  EXPECT_FALSE(ExampleSeries(*ParseSelector("{job=\"a\"}")));  // no metric name
  for (const char* bad : {"", "max(x)", "x{job}", "x{job=\"a\"", "x{job=a}", "x y", "x{=\"a\"}"}) {
    EXPECT_FALSE(ParseSelector(bad)) << bad;
  }
}

TEST(Alerts, NamesAreTheDesignContract) {
  std::set<std::string_view> names;
  for (int i = 0; i <= static_cast<int>(Alert::kShardCoverage); ++i) {
    const AlertText& text = TextOf(static_cast<Alert>(i));
    names.insert(text.name);
    EXPECT_FALSE(text.summary.empty());
    if (static_cast<Alert>(i) != Alert::kWatchdog) {  // a heartbeat: no action to take
      EXPECT_NE(text.description.find("Safe first action"), std::string_view::npos) << text.name;
    }
  }
  EXPECT_EQ(names, (std::set<std::string_view>{
                       "SchedwatchJobMissing",         "SchedwatchJobSuccessAbsent",
                       "SchedwatchJobSuccessStale",    "SchedwatchJobInactive",
                       "SchedwatchJobDuplicate",       "SchedwatchJobDrift",
                       "SchedwatchJobNotStarted",      "SchedwatchJobHung",
                       "SchedwatchJobFailing",         "SchedwatchJobTooShort",
                       "SchedwatchJobProgressStalled", "SchedwatchJobLedgerMismatch",
                       "SchedwatchSourceDown",         "SchedwatchExporterDown",
                       "SchedwatchWatcherStale",       "Watchdog",
                       "SchedwatchSourceHistoryDown",  "SchedwatchShardDown",
                       "SchedwatchShardingMismatch",   "SchedwatchShardCoverage"}));
  Options options;
  options.runbook_base_url = "https://example.org/README.md";
  EXPECT_EQ(RunbookUrl(options, Alert::kJobMissing),
            "https://example.org/README.md#schedwatchjobmissing");
}

TEST(BuildRules, JoinedModeHasAConstantNumberOfRules) {
  EXPECT_EQ(CountRules(MakeSpec(1), Mode::kJoined), CountRules(MakeSpec(300), Mode::kJoined));
  // One rule per alert; the exporter alerts and the Watchdog are in the global file.
  EXPECT_EQ(CountRules(MakeSpec(1), Mode::kJoined), RoleAlerts().size());
  // Per-role: every alert that applies to each role (no progress, no min_runtime here).
  EXPECT_EQ(CountRules(MakeSpec(300), Mode::kPerRole), 300 * (RoleAlerts().size() - 2));
  // A pushed success adds its own rules in joined mode, nothing else does.
  std::string pushed =
      "  - {role: report, source: demo, schedule: '0 3 * * *', spec_version: '1', "
      "success_metric: 'report_success{job=\"report\"}'}\n";
  EXPECT_EQ(CountRules(MakeSpec(300, pushed), Mode::kJoined),
            CountRules(MakeSpec(1), Mode::kJoined) + 2);
}

// The assignment the exporters use: FNV-1a 64 of the role name, then jump consistent hash
// (values computed independently, in Python, from the two papers' definitions).
TEST(ShardOf, IsFnv1aThenJumpConsistentHash) {
  const std::vector<std::pair<std::string, std::vector<int>>> golden = {
      {"backup", {0, 0, 0, 0, 0}},
      {"billing-report", {0, 1, 2, 2, 2}},
      {"role-0", {0, 1, 2, 2, 2}},
      {"role-999", {0, 1, 1, 1, 1}}};
  for (const auto& [role, shards] : golden) {
    for (int n = 1; n <= 5; ++n) EXPECT_EQ(ShardOf(role, n), shards[n - 1]) << role << " " << n;
  }
  EXPECT_EQ(ShardOf("anything", 0), 0);
}

std::size_t CountShardRules(const std::vector<RuleGroup>& groups, Alert alert) {
  std::size_t count = 0;
  for (const auto& group : groups) {
    count += std::count_if(group.rules.begin(), group.rules.end(), [&](const Rule& rule) {
      return rule.record.empty() && rule.alert == alert;
    });
  }
  return count;
}

std::string LabelOf(const Rule& rule, const std::string& name) {
  for (const auto& [label, value] : rule.labels) {
    if (label == name) return value;
  }
  return "";
}

// Sharded: each per-role alert names its role's shard and reads only that shard's exporters;
// joined mode repeats its constant rules per shard.
TEST(BuildRules, ShardedAlertsCarryTheRolesShardAndReadOnlyItsExporters) {
  Spec spec = MakeSpec(40);
  Options options;
  options.total_shards = 3;
  std::set<std::string> seen;
  for (const auto& group : BuildRules(spec, options)) {
    for (const auto& rule : group.rules) {
      std::string role = LabelOf(rule, "role");
      std::string shard = std::to_string(ShardOf(role, 3));
      EXPECT_EQ(LabelOf(rule, "schedwatch_shard"), shard) << role;
      EXPECT_NE(rule.expr.find("schedwatch_exporter_shard_ordinal{job=\"schedwatch\"} == " + shard),
                std::string::npos)
          << rule.expr;
      seen.insert(shard);
    }
  }
  EXPECT_EQ(seen, (std::set<std::string>{"0", "1", "2"}));
  options.mode = Mode::kJoined;
  auto groups = BuildRules(spec, options);
  ASSERT_EQ(groups.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(groups[k].name, "schedwatch-jobs-shard-" + std::to_string(k));
    EXPECT_EQ(groups[k].rules.size(), CountRules(MakeSpec(1), Mode::kJoined));
    for (const auto& rule : groups[k].rules) {
      EXPECT_EQ(LabelOf(rule, "schedwatch_shard"), std::to_string(k));
    }
  }
}

TEST(Generate, ShardedGlobalRulesWatchEachShardAndOneShardIsUnsharded) {
  Spec spec = MakeSpec(10);
  Options options;
  Output unsharded = Generate(spec, options);
  options.total_shards = 1;  // the flag's default: today's files, byte for byte
  EXPECT_EQ(Generate(spec, options).global_rules, unsharded.global_rules);
  EXPECT_EQ(Generate(spec, options).alertmanager, unsharded.alertmanager);
  EXPECT_EQ(CountShardRules(BuildGlobalRules(options), Alert::kShardDown), 0u);
  options.total_shards = 4;
  auto global = BuildGlobalRules(options);
  EXPECT_EQ(CountShardRules(global, Alert::kShardDown), 4u);
  EXPECT_EQ(CountShardRules(global, Alert::kShardingMismatch), 1u);
  EXPECT_EQ(CountShardRules(global, Alert::kShardCoverage), 1u);
  EXPECT_EQ(CountShardRules(global, Alert::kSourceDown), 4u);    // per shard
  EXPECT_EQ(CountShardRules(global, Alert::kExporterDown), 1u);  // the whole watcher
  Output sharded = Generate(spec, options);
  EXPECT_NE(sharded.global_rules.find("4 shards"), std::string::npos);
  EXPECT_NE(sharded.alertmanager.find("equal: [job, schedwatch_shard]"), std::string::npos);
  EXPECT_NE(sharded.dashboard.find("schedwatch_exporter_shard_roles"), std::string::npos);
  EXPECT_EQ(unsharded.dashboard.find("schedwatch_exporter_shard_roles"), std::string::npos);
}

// A replica that lists a source but cannot read its run history serves no run series: the
// alerts about runs leave it out (SuccessAbsent would fire otherwise), those about existence
// still read it.
TEST(BuildRules, AlertsAboutRunsLeaveOutReplicasWithoutTheHistory) {
  Spec spec = MakeSpec(1);
  for (Mode mode : {Mode::kPerRole, Mode::kJoined}) {
    Options options;
    options.mode = mode;
    YAML::Node parsed = YAML::Load(Generate(spec, options).rules);
    const std::string gate = "unless on(job, instance, source) schedwatch_source_history_up{job=";
    int checked = 0;
    for (const auto& group : parsed["groups"]) {
      for (const auto& rule : group["rules"]) {
        if (!rule["alert"]) continue;
        std::string name = rule["alert"].as<std::string>();
        std::string expr = rule["expr"].as<std::string>();
        bool runs = name == "SchedwatchJobSuccessAbsent" || name == "SchedwatchJobSuccessStale" ||
                    name == "SchedwatchJobNotStarted" || name == "SchedwatchJobHung" ||
                    name == "SchedwatchJobFailing" || name == "SchedwatchJobTooShort" ||
                    name == "SchedwatchJobProgressStalled";
        EXPECT_EQ(expr.find(gate) != std::string::npos, runs) << name << ": " << expr;
        ++checked;
      }
    }
    EXPECT_GE(checked, 10);
  }
}

TEST(BuildRules, PerRoleModeWritesLiteralThresholdsAndGates) {
  Spec spec = MakeSpec(2);  // stale_after = 2 x 5m + 30m = 2400s
  Options options;
  options.exporter_job = "sched\"watch";
  std::string rules = Generate(spec, options).rules;
  // Each signal from the replicas that read the role's source, merged by the role's identity.
  EXPECT_NE(
      rules.find("time() - max by (job, source, role) "
                 "(schedwatch_job_last_success_timestamp_seconds{job=\"sched\\\"watch\","
                 "role=\"r0\",source=\"demo\"} and on(job, instance, source) "
                 "(schedwatch_source_up{job=\"sched\\\"watch\",source=\"demo\"} == 1 and "
                 "on(job, instance) up{job=\"sched\\\"watch\"} == 1) unless on(job, instance, "
                 "source) schedwatch_source_history_up{job=\"sched\\\"watch\",source=\"demo\"} == "
                 "0) > 2400"),
      std::string::npos);
  EXPECT_NE(
      rules.find("absent(schedwatch_job_last_success_timestamp_seconds{job=\"sched\\\"watch\","
                 "role=\"r1\",source=\"other\"})"),
      std::string::npos);
  EXPECT_NE(rules.find("- name: schedwatch-jobs-other"), std::string::npos);
  EXPECT_EQ(rules.find("Watchdog"), std::string::npos);
  options.identity_labels = {"cluster", "region"};
  rules = Generate(spec, options).rules;
  EXPECT_NE(rules.find("max by (job, cluster, region, source, role) "
                       "(schedwatch_job_registered_objects{"),
            std::string::npos);
  EXPECT_NE(rules.find("and on(job, cluster, region, instance, source) "), std::string::npos);
  EXPECT_EQ(rules.find("by (job, source"), std::string::npos);

  YAML::Node parsed = YAML::Load(rules);
  ASSERT_EQ(parsed["groups"].size(), 2u);
  for (const auto& group : parsed["groups"]) {
    for (const auto& rule : group["rules"]) {
      if (rule["record"]) continue;
      EXPECT_TRUE(rule["labels"]["severity"]) << rule["alert"].as<std::string>();
      for (const char* key : {"summary", "description", "runbook_url"}) {
        EXPECT_FALSE(rule["annotations"][key].as<std::string>().empty());
      }
    }
  }
}

TEST(BuildRules, JoinedModeUsesTheExportersThresholdSeriesAndTheSmallestFor) {
  std::string slow =
      "  - {role: slow, source: demo, schedule: '@daily', spec_version: '1', "
      "alert_for: 1h}\n  - {role: quick, source: demo, schedule: '@daily', "
      "spec_version: '1', alert_for: 2m}\n";
  Spec spec = MakeSpec(1, slow);
  EXPECT_EQ(ForPolicy(spec, Mode::kJoined).Of(nullptr), 120);
  EXPECT_EQ(ForPolicy(spec, Mode::kJoined).Of(spec.FindJob("slow")), 120);
  EXPECT_EQ(ForPolicy(spec, Mode::kPerRole).Of(spec.FindJob("slow")), 3600);
  EXPECT_EQ(ForPolicy(spec, Mode::kPerRole).Of(nullptr), 120);
  Options options;
  options.mode = Mode::kJoined;
  std::string rules = Generate(spec, options).rules;
  EXPECT_NE(rules.find("> max by (job, source, role) "
                       "(schedwatch_job_stale_after_seconds{job=\"schedwatch\"})"),
            std::string::npos);
  EXPECT_NE(rules.find("unless on(job, source, role) (schedwatch_job_last_success"),
            std::string::npos);
  EXPECT_EQ(rules.find("for: 1h"), std::string::npos);
  EXPECT_EQ(rules.find("role=\""), std::string::npos);  // nothing names a role
}

TEST(BuildRules, TheLongestDurationsStillRenderTheirFor) {
  // start_grace and alert_for at the top of int64 used to pass and round to a negative number of
  // seconds, and every `for:` silently vanished. The spec now stops at 10y, which renders.
  EXPECT_THROW(MakeSpec(1,
                        "  - {role: huge, source: demo, schedule: '@yearly', spec_version: '1', "
                        "alert_for: 292471208y35w2d7h12m55s807ms}\n"),
               std::runtime_error);
  Spec spec = MakeSpec(0,
                       "  - {role: rare, source: demo, schedule: '0 0 29 2 *', spec_version: '1', "
                       "start_grace: 10y, max_runtime: 10y, alert_for: 10y}\n");
  const JobSpec& rare = *spec.FindJob("rare");
  EXPECT_EQ(rare.stale_after, 2 * *rare.period + rare.max_runtime);
  Options options;
  options.mode = Mode::kPerRole;
  std::string rules = Generate(spec, options).rules;
  EXPECT_NE(rules.find("for: 3650d\n"), std::string::npos);
}

TEST(BuildRules, PushedSuccessIsJudgedByItsValue) {
  std::string pushed =
      "  - {role: report, source: demo, schedule: '0 3 * * *', spec_version: '1', "
      "stale_after: 26h, success_metric: 'report_success{job=\"report\"}'}\n";
  Spec spec = MakeSpec(1, pushed);
  for (Mode mode : {Mode::kPerRole, Mode::kJoined}) {
    Options options;
    options.mode = mode;
    std::string rules = Generate(spec, options).rules;
    EXPECT_NE(rules.find("time() - max(report_success{job=\"report\"}) > 93600"),
              std::string::npos);
    EXPECT_NE(rules.find("absent(max(report_success{job=\"report\"}))"), std::string::npos);
    // The role is written into annotations, since the pushed series does not carry it.
    EXPECT_NE(rules.find("description: 'Role report on source demo last succeeded "
                         "{{ $value | humanizeDuration }} ago"),
              std::string::npos);
  }
  Options joined;
  joined.mode = Mode::kJoined;
  std::string rules = Generate(spec, joined).rules;
  EXPECT_NE(rules.find("schedwatch_job_info{job=\"schedwatch\",role!~\"report\"}"),
            std::string::npos);
}

TEST(Generate, IsDeterministicAndWarnsAboutUntestableSelectors) {
  std::string pushed =
      "  - {role: odd, source: demo, schedule: '0 3 * * *', spec_version: '1', "
      "success_metric: 'x{job=~\"a.+\"}'}\n";
  Spec spec = MakeSpec(3, pushed);
  Options options;
  Output first = Generate(spec, options), second = Generate(spec, options);
  EXPECT_EQ(first.rules, second.rules);
  EXPECT_EQ(first.rule_tests, second.rule_tests);
  EXPECT_EQ(first.alertmanager, second.alertmanager);
  EXPECT_EQ(first.dashboard, second.dashboard);
  ASSERT_EQ(first.warnings.size(), 1u);
  EXPECT_NE(first.warnings[0].find("odd"), std::string::npos);
  EXPECT_EQ(first.rules.rfind("# Alerting rules generated by schedwatch_rulegen from spec.yaml", 0),
            0u);
  YAML::Node tests = YAML::Load(first.rule_tests);
  EXPECT_EQ(tests["rule_files"][0].as<std::string>(), "schedwatch.rules.yml");
  EXPECT_EQ(tests["rule_files"][1].as<std::string>(), "schedwatch-global.rules.yml");
  EXPECT_GT(tests["tests"].size(), 10u);
  YAML::Node alertmanager = YAML::Load(first.alertmanager);
  EXPECT_EQ(alertmanager["inhibit_rules"].size(), 4u);
}

TEST(Generate, GlobalRulesAreTheSameForEverySpec) {
  Options options;
  options.identity_labels = {"cluster"};
  Output one = Generate(MakeSpec(3), options);
  options.mode = Mode::kJoined;
  std::string pushed =
      "  - {role: odd, source: demo, schedule: '0 3 * * *', spec_version: '1', alert_for: 1m}\n";
  Output other = Generate(MakeSpec(50, pushed), options);
  EXPECT_EQ(one.global_rules, other.global_rules);
  YAML::Node global = YAML::Load(one.global_rules);
  ASSERT_EQ(global["groups"].size(), 2u);
  EXPECT_EQ(global["groups"][0]["name"].as<std::string>(), "schedwatch-global");
  // The success ratio: one recording rule, whatever the mode and the roles; replicas merged
  // with max, the identity labels kept.
  const YAML::Node& runs = global["groups"][1];
  EXPECT_EQ(runs["name"].as<std::string>(), "schedwatch-runs");
  ASSERT_EQ(runs["rules"].size(), 1u);
  EXPECT_EQ(runs["rules"][0]["record"].as<std::string>(),
            "role:schedwatch_job_runs_success:ratio_rate1d");
  EXPECT_EQ(
      runs["rules"][0]["expr"].as<std::string>(),
      "max by (job, cluster, source, role) (increase(schedwatch_job_runs_total{job=\"schedwatch\","
      "outcome=\"success\"}[1d])) / (max by (job, cluster, source, role) (sum by (job, "
      "cluster, instance, source, role) (increase(schedwatch_job_runs_total{job=\"schedwatch\"}"
      "[1d]))) > 0)");
  options.success_ratio_window = 6 * 3600;
  EXPECT_NE(Generate(MakeSpec(3), options)
                .global_rules.find("record: role:schedwatch_job_runs_success:ratio_rate6h"),
            std::string::npos);
  int watchdogs = 0;
  for (const auto& rule : global["groups"][0]["rules"]) {
    watchdogs += rule["alert"].as<std::string>() == "Watchdog";
    EXPECT_TRUE(rule["labels"]["severity"]);
  }
  EXPECT_EQ(watchdogs, 1);
  EXPECT_NE(one.global_rules.find("max by (job, cluster) (up{job=\"schedwatch\"}) == 0"),
            std::string::npos);
  // Inhibitions name the watcher's identity, never the job alone.
  YAML::Node alertmanager = YAML::Load(one.alertmanager);
  for (const auto& inhibit : alertmanager["inhibit_rules"]) {
    std::vector<std::string> equal = inhibit["equal"].as<std::vector<std::string>>();
    EXPECT_GE(equal.size(), 2u);
    EXPECT_EQ(equal[0], "job");
    EXPECT_EQ(equal[1], "cluster");
  }
}

TEST(Generate, PrometheusRuleHoldsTheSameGroups) {
  Options options;
  options.prometheus_rule = true;
  options.prometheus_rule_namespace = "observability";
  Output output = Generate(MakeSpec(5), options);
  YAML::Node object = YAML::Load(output.prometheus_rule);
  EXPECT_EQ(object["apiVersion"].as<std::string>(), "monitoring.coreos.com/v1");
  EXPECT_EQ(object["kind"].as<std::string>(), "PrometheusRule");
  EXPECT_EQ(object["metadata"]["name"].as<std::string>(), "schedwatch-spec-per-role");
  EXPECT_EQ(object["metadata"]["namespace"].as<std::string>(), "observability");
  YAML::Node rules = YAML::Load(output.rules);
  ASSERT_EQ(object["spec"]["groups"].size(), rules["groups"].size());
  // The same rules, with every alias written out.
  for (std::size_t g = 0; g < rules["groups"].size(); ++g) {
    YAML::Node want = rules["groups"][g], have = object["spec"]["groups"][g];
    EXPECT_EQ(have["name"].as<std::string>(), want["name"].as<std::string>());
    ASSERT_EQ(have["rules"].size(), want["rules"].size());
    for (std::size_t r = 0; r < want["rules"].size(); ++r) {
      for (const char* key : {"alert", "expr", "for"}) {
        EXPECT_EQ(have["rules"][r][key].as<std::string>(""),
                  want["rules"][r][key].as<std::string>(""));
      }
      EXPECT_EQ(have["rules"][r]["annotations"]["description"].as<std::string>(),
                want["rules"][r]["annotations"]["description"].as<std::string>());
    }
  }
  EXPECT_EQ(output.prometheus_rule.find('*'), std::string::npos);
  YAML::Node global = YAML::Load(output.global_prometheus_rule);
  EXPECT_EQ(global["metadata"]["name"].as<std::string>(), "schedwatch-global");
  EXPECT_EQ(Generate(MakeSpec(5), Options{}).prometheus_rule, "");
}

TEST(Generate, DashboardUidsDifferBetweenSpecs) {
  auto uid = [](const Spec& spec, const Options& options) {
    return nlohmann::json::parse(Generate(spec, options).dashboard)["uid"].get<std::string>();
  };
  Options options;
  std::string a = uid(MakeSpec(3), options), b = uid(MakeSpec(4), options);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, uid(MakeSpec(3), options));
  EXPECT_LE(a.size(), 40u);
  options.dashboard_uid = "my dashboard";
  EXPECT_EQ(uid(MakeSpec(3), options), "my-dashboard");
}

TEST(Generate, OutputsLargerThanOneChunkStayWhole) {
  Spec spec = MakeSpec(400);  // per-role rules and tests of 400 roles are over 1 MiB each
  Output output = Generate(spec, Options{});
  ASSERT_GT(output.rules.size(), kSinkChunk);
  ASSERT_GT(output.rule_tests.size(), kSinkChunk);
  std::size_t rules = 0;
  for (const auto& group : YAML::Load(output.rules)["groups"]) rules += group["rules"].size();
  EXPECT_EQ(rules, CountRules(spec, Mode::kPerRole));
  YAML::Node tests = YAML::Load(output.rule_tests);
  // Two groups (every role, then exact annotations) for each of the 13 role cases (two for
  // SuccessAbsent; Failing's two for thresholds left out: no job sets one), five exporter cases
  // six exporter cases and eight replica cases (no identity labels: no cases of two watchers),
  // and the success ratio's.
  EXPECT_EQ(tests["tests"].size(), 2 * 13 + 6u + 8u + 1u);
  // up, 2 sources' schedwatch_source_up and _history_up, roles
  EXPECT_EQ(tests["tests"][0]["input_series"].size(), 4 + 1 + 400u);
}

TEST(Write, StreamsWhatGenerateReturns) {
  Spec spec = MakeSpec(40);
  Options options;
  options.mode = Mode::kJoined;
  auto directory =
      std::filesystem::temp_directory_path() / ("rulegen_test_" + std::to_string(::getpid()));
  std::vector<std::string> warnings;
  ASSERT_TRUE(Write(spec, options, directory.string(), warnings));
  Output output = Generate(spec, options);
  auto read = [&](const char* name) {
    std::ifstream file(directory / name, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(file), {});
  };
  EXPECT_EQ(read("schedwatch.rules.yml"), output.rules);
  EXPECT_EQ(read("schedwatch-global.rules.yml"), output.global_rules);
  EXPECT_EQ(read("schedwatch.rules.test.yml"), output.rule_tests);
  EXPECT_EQ(read("alertmanager.yml"), output.alertmanager);
  EXPECT_EQ(read("dashboard.json"), output.dashboard);
  std::filesystem::remove_all(directory);
  // A directory that cannot be created is an error naming it.
  auto failed = Write(spec, options, "/proc/rulegen-cannot-create", warnings);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().find("/proc/rulegen-cannot-create"), std::string::npos);
}

// labels: literal on each per-role rule; joined from schedwatch_job_info in joined mode.
TEST(BuildRules, SpecLabelsReachEveryPerRoleAlertInBothModes) {
  Spec spec =
      MakeSpec(2,
               "  - {role: paid, source: demo, schedule: '*/5 * * * *', spec_version: '1',\n"
               "     labels: {team: payments, tier: '1'}}\n");
  Options options;
  for (const auto& group : BuildRules(spec, options)) {
    for (const auto& rule : group.rules) {
      bool paid =
          std::find(rule.labels.begin(), rule.labels.end(),
                    std::pair<std::string, std::string>{"role", "paid"}) != rule.labels.end();
      bool team =
          std::find(rule.labels.begin(), rule.labels.end(),
                    std::pair<std::string, std::string>{"team", "payments"}) != rule.labels.end();
      EXPECT_EQ(paid, team) << TextOf(rule.alert).name;
    }
  }
  options.mode = Mode::kJoined;
  auto groups = BuildRules(spec, options);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].rules.size(), RoleAlerts().size());
  for (const auto& rule : groups[0].rules) {
    EXPECT_NE(rule.expr.find(") * on(job, source, role) group_left(team, tier) topk by (job, "
                             "source, role) (1, schedwatch_job_info{job=\"schedwatch\"})"),
              std::string::npos)
        << rule.expr;
  }
  // Without labels the joined rules are unchanged: no join.
  for (const auto& group : BuildRules(MakeSpec(3), options)) {
    for (const auto& rule : group.rules) EXPECT_EQ(rule.expr.find("group_left"), std::string::npos);
  }
}

// severity: literal per rule; joined mode splits an alert's rule by level, the common level
// taking every role but the others.
TEST(BuildRules, SeverityPerJobAndKindSplitsJoinedRulesByLevel) {
  Spec spec =
      MakeSpec(3,
               "  - {role: loud, source: demo, schedule: '*/5 * * * *', spec_version: '1',\n"
               "     severity: {failing: critical, missing: info}}\n"
               "  - {role: calm, source: demo, schedule: '*/5 * * * *', spec_version: '1',\n"
               "     severity: info}\n");
  Options options;
  std::map<std::string, std::string> levels;  // "alert role" -> severity
  for (const auto& group : BuildRules(spec, options)) {
    for (const auto& rule : group.rules) {
      std::string role;
      for (const auto& [name, value] : rule.labels) {
        if (name == "role") role = value;
      }
      levels[std::string(TextOf(rule.alert).name) + " " + role] = rule.labels[0].second;
    }
  }
  EXPECT_EQ(levels["SchedwatchJobFailing loud"], "critical");
  EXPECT_EQ(levels["SchedwatchJobMissing loud"], "info");
  EXPECT_EQ(levels["SchedwatchJobHung loud"], "warning");
  EXPECT_EQ(levels["SchedwatchJobMissing calm"], "info");
  EXPECT_EQ(levels["SchedwatchJobMissing r0"], "critical");

  options.mode = Mode::kJoined;
  std::vector<std::pair<std::string, std::string>> missing;  // severity, expr
  std::size_t count = 0;
  auto joined = BuildRules(spec, options);
  // More than 20 rules: the group continues in a second one.
  ASSERT_EQ(joined.size(), 2u);
  EXPECT_EQ(joined[0].rules.size(), 20u);
  EXPECT_EQ(joined[1].name, "schedwatch-jobs/2");
  for (const auto& group : joined) {
    for (const auto& rule : group.rules) {
      ++count;
      if (rule.alert == Alert::kJobMissing) missing.emplace_back(rule.labels[0].second, rule.expr);
    }
  }
  // Missing: critical (r0-r2) and info (loud, calm); Failing: warning and critical; the
  // others: warning or their built-in level and info (calm).
  EXPECT_EQ(count, 2 * RoleAlerts().size() + 1);
  ASSERT_EQ(missing.size(), 2u);
  EXPECT_EQ(missing[0].first, "critical");
  EXPECT_NE(missing[0].second.find("role!~\"loud|calm\""), std::string::npos) << missing[0].second;
  EXPECT_EQ(missing[1].first, "info");
  EXPECT_NE(missing[1].second.find("role=~\"loud|calm\""), std::string::npos) << missing[1].second;
}

TEST(BuildRules, GroupsHoldAtMost20RulesAndKeepARolesRulesTogether) {
  Options options;
  auto groups = BuildRules(MakeSpec(7), options);
  std::map<std::string, std::set<std::string>> groups_of_role;
  for (const auto& group : groups) {
    EXPECT_LE(group.rules.size(), 20u) << group.name;
    for (const auto& rule : group.rules) groups_of_role[RoleOf(rule)].insert(group.name);
  }
  EXPECT_EQ(groups_of_role.size(), 7u);
  for (const auto& [role, names] : groups_of_role) EXPECT_EQ(names.size(), 1u) << role;
  EXPECT_TRUE(std::any_of(groups.begin(), groups.end(), [](const RuleGroup& group) {
    return group.name == "schedwatch-jobs-demo/2";
  }));
}

TEST(Generate, RouteByWritesARouteAndReceiverPerValue) {
  Spec spec = MakeSpec(1,
                       "  - {role: a, source: demo, schedule: '*/5 * * * *', spec_version: '1',\n"
                       "     labels: {team: db}}\n"
                       "  - {role: b, source: demo, schedule: '*/5 * * * *', spec_version: '1',\n"
                       "     labels: {team: \"q\\\"uote\"}}\n"
                       "  - {role: c, source: demo, schedule: '*/5 * * * *', spec_version: '1',\n"
                       "     labels: {team: db}}\n");
  Options options;
  options.route_by = "team";
  YAML::Node config = YAML::Load(Generate(spec, options).alertmanager);
  YAML::Node routes = config["route"]["routes"][1]["routes"];
  ASSERT_EQ(routes.size(), 2u);
  EXPECT_EQ(routes[0]["receiver"].as<std::string>(), "schedwatch-team-db");
  EXPECT_EQ(routes[0]["matchers"][0].as<std::string>(), "team=\"db\"");
  EXPECT_EQ(routes[1]["receiver"].as<std::string>(), "schedwatch-team-q\"uote");
  EXPECT_EQ(routes[1]["matchers"][0].as<std::string>(), "team=\"q\\\"uote\"");
  std::set<std::string> receivers;
  for (const auto& receiver : config["receivers"])
    receivers.insert(receiver["name"].as<std::string>());
  EXPECT_TRUE(receivers.count("schedwatch-team-db"));
  EXPECT_TRUE(receivers.count("schedwatch-team-q\"uote"));
  options.route_by.clear();
  EXPECT_FALSE(YAML::Load(Generate(spec, options).alertmanager)["route"]["routes"][1]["routes"]);
}

}  // namespace
}  // namespace schedwatch::rulegen
