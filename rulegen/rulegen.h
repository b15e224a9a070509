// schedwatch_rulegen: turns the desired-state spec into Prometheus alert rules, promtool unit
// tests for them, an Alertmanager routing snippet and a Grafana dashboard.
// Generate() renders strings; Write() streams the same files into a directory.
//
// Identity: a watched role is (job, identity labels..., source, role). Exporters that serve the
// same (job, identity labels) are replicas of one watcher (they differ only in `instance`); the
// rules merge replicas deliberately and never mix two watchers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedwatch/result.h"
#include "schedwatch/spec.h"

namespace schedwatch::rulegen {

enum class Mode {
  kPerRole,  // literal thresholds and an explicit absent() per role: readable, for small specs
  kJoined,   // a constant number of rules joined against the exporter's threshold series
};

// The runbook in the repository's docs: one section per alert, anchored by its lower-case name.
inline constexpr const char* kDefaultRunbookBaseUrl =
    "https://github.com/schedwatch/schedwatch/blob/main/docs/runbook.md";
inline constexpr const char* kDefaultWatchdogUrl = "http://127.0.0.1:9099/heartbeat";

struct Options {
  Mode mode = Mode::kPerRole;
  std::string exporter_job = "schedwatch";  // the Prometheus job label of the exporter's target
  std::string runbook_base_url = kDefaultRunbookBaseUrl;  // each alert links <base>#<alertname>
  std::int64_t watcher_stale_after = 300;  // SchedwatchWatcherStale: heartbeat older than this
  std::string watchdog_url = kDefaultWatchdogUrl;  // the dead man's switch webhook
  // Labels (besides job) that tell watchers apart, added by relabeling or external_labels, e.g.
  // cluster, region. Every aggregation keeps them.
  std::vector<std::string> identity_labels;
  // `for:` of the exporter alerts in schedwatch-global.rules.yml. A flag, not the spec's
  // alert_for, so that the global file is the same for every spec.
  std::int64_t exporter_alert_for = 300;
  // The window of the success ratio recording rule (SuccessRatioRecord), whole minutes.
  std::int64_t success_ratio_window = 86400;
  // Also write the rules as prometheus-operator PrometheusRule objects.
  bool prometheus_rule = false;
  std::string prometheus_rule_namespace = "monitoring";
  // Also write the rules and the dashboard as a jsonnet mixin (mixin.libsonnet).
  bool mixin = false;
  // The dashboard's uid; empty: "schedwatch-" and a hash of the job, spec name and its roles.
  std::string dashboard_uid;
  // A spec label (`labels:`): alertmanager.yml routes each of its values to a receiver of its
  // own. Empty: no such routes.
  std::string route_by;
  // Exporters that split the spec (--shard K --total-shards N): each per-role alert carries
  // schedwatch_shard, the role's shard, and reads only that shard's replicas; the global file
  // says when a shard is down or the shards disagree. 1: unsharded, today's files.
  int total_shards = 1;
};

// The files, as Write() names them.
struct Output {
  std::string rules;  // schedwatch.rules.yml: the per-role rules of this spec
  // schedwatch-global.rules.yml: the Watchdog and the exporter alerts. It depends on the flags
  // only (never on the spec), so every spec's copy is the same file: load one.
  std::string global_rules;
  std::string rule_tests;    // schedwatch.rules.test.yml
  std::string alertmanager;  // alertmanager.yml
  std::string dashboard;     // dashboard.json
  // With Options::prometheus_rule: schedwatch.prometheusrule.yaml and
  // schedwatch-global.prometheusrule.yaml, the two rule files as PrometheusRule objects.
  std::string prometheus_rule;
  std::string global_prometheus_rule;
  // With Options::mixin: mixin.libsonnet, this spec's mixin, built on schedwatch-global.libsonnet
  // (the global rules and the dashboard; like the global rules file, the same for every spec).
  std::string mixin;
  std::string global_mixin;
  // Things a person should know, e.g. a success_metric for which no test series can be built.
  std::vector<std::string> warnings;
};

Output Generate(const Spec& spec, const Options& options);

// Creates `directory` if needed and streams the files into it (what Generate() returns, byte for
// byte, named as in Output). Warnings as in Output. The error names the file.
Result<bool> Write(const Spec& spec, const Options& options, const std::string& directory,
                   std::vector<std::string>& warnings);

std::string_view ModeName(Mode mode);

}  // namespace schedwatch::rulegen
