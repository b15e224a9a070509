// The alerts and the rules that raise them. Alert names, severities and
// annotation texts live here only; the rules file, the promtool tests, the Alertmanager snippet
// and the dashboard all read them from here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "rulegen/rulegen.h"
#include "schedwatch/spec.h"

namespace schedwatch::rulegen {

enum class Alert {
  // Per role: each carries the labels job, role and source.
  kJobMissing,
  kJobSuccessAbsent,
  kJobSuccessStale,
  kJobInactive,
  kJobDuplicate,
  kJobDrift,
  kJobNotStarted,
  kJobHung,
  kJobFailing,
  kJobTooShort,
  kJobProgressStalled,
  kJobLedgerMismatch,
  // About the exporter and its sources. The first three are critical: no replica of a watcher
  // is up, fresh, or can read the source.
  kSourceDown,
  kExporterDown,
  kWatcherStale,
  kWatchdog,
  // The same alert names as warnings, one per replica, while another replica still covers.
  kSourceReplicaDown,
  kExporterReplicaDown,
  kWatcherReplicaStale,
  // The source lists, but no replica reads its run history (critical), or one replica does not
  // while another does (warning): existence is still watched, the runs are not.
  kSourceHistoryDown,
  kSourceHistoryReplicaDown,
  // Sharded exporters (Options::total_shards > 1): no replica of a shard up and serving it; the
  // instances disagree on the split; the shards' roles do not add up to the spec's.
  kShardDown,
  kShardingMismatch,
  kShardCoverage,
};

struct AlertText {
  std::string_view name;
  std::string_view severity;
  // A sentence without templates, the same for every alert it names (the mixin convention: a
  // notification's headline). The description carries the details.
  std::string_view summary;
  // Templates: only {{ $labels.NAME }}, {{ $value }} and {{ $value | humanizeDuration }}, so that
  // the generated tests can compute the expected text (see ExpandAnnotation).
  std::string_view description;
};

const AlertText& TextOf(Alert alert);
// Per-role alerts in the order their rules are written.
const std::vector<Alert>& RoleAlerts();
std::string RunbookUrl(const Options& options, Alert alert);
// The spec's name of a per-role alert's kind (`severity: {missing: ...}`); empty for the others.
std::string_view KindOf(Alert alert);
// The alert's severity for `job`: the spec's level for its kind, else the built-in one.
std::string_view SeverityOf(Alert alert, const JobSpec& job);
// Every label name the spec's jobs set (`labels:`), sorted: what the joined rules copy from
// schedwatch_job_info.
std::vector<std::string> SpecLabelNames(const Spec& spec);

// Whether the spec gives `job` this alert at all: SuccessStale needs a stale_after (none for
// @reboot jobs), ProgressStalled needs a progress block, TooShort a min_runtime.
bool Applies(Alert alert, const JobSpec& job);
// Whether the alert reads the job's own pushed success series (success_metric) instead of
// the exporter's schedwatch_job_last_success_timestamp_seconds.
bool UsesPushedSuccess(Alert alert, const JobSpec& job);

// The `for:` of the rules: per-role mode uses each job's alert_for; joined mode uses the
// smallest alert_for in the spec (5m for a spec without jobs), so that no role waits longer than
// it asked for. The exporter alerts use Options::exporter_alert_for.
class ForPolicy {
 public:
  ForPolicy(const Spec& spec, Mode mode);
  // `job` is null for the exporter alerts and the joined rules.
  std::int64_t Of(const JobSpec* job) const {
    return job && mode_ == Mode::kPerRole ? job->alert_for : smallest_;
  }

 private:
  Mode mode_;
  std::int64_t smallest_ = 300;
};

// The labels of a per-role alert (besides alertname and severity). Replicas are merged, so no
// per-role alert carries `instance`.
enum class LabelShape {
  kIdentity,  // job, the identity labels, source, role (+ condition for NotStarted)
  kPushed,    // job, role, source: a pushed success series knows no exporter or identity
};
LabelShape ShapeOf(Alert alert, const JobSpec& job);

// "job, cluster, region" plus `extra`: the `by`/`on` list of one watcher's identity.
std::string IdentityList(const Options& options, std::initializer_list<std::string_view> extra);

// The label every alert about one shard carries when the exporters are sharded.
inline constexpr std::string_view kShardLabel = "schedwatch_shard";
// What a sharded exporter says about itself (served always, N = 1 too): its shard K, N, the
// roles of the whole spec and the roles it watches.
inline constexpr std::string_view kShardOrdinal = "schedwatch_exporter_shard_ordinal";
inline constexpr std::string_view kTotalShards = "schedwatch_exporter_total_shards";
inline constexpr std::string_view kSpecRoles = "schedwatch_exporter_spec_roles";
inline constexpr std::string_view kShardRoles = "schedwatch_exporter_shard_roles";
// " and on(<replica>) schedwatch_exporter_shard_ordinal{job=...} == <shard>": narrows a per-replica
// expression to the replicas of one shard; empty when unsharded (shard < 0).
std::string InShard(const Options& options, int shard);
// The shards rules are written for: {0} when unsharded, else 0 .. N-1.
std::vector<int> Shards(const Options& options);
// Whether `alert` is raised per shard when sharded (a label kShardLabel on its rules).
bool PerShard(Alert alert);

struct Rule {
  Alert alert;         // unused for recording rules
  std::string record;  // non-empty for a recording rule: the series it records
  std::string expr;
  std::int64_t for_seconds = 0;
  std::vector<std::pair<std::string, std::string>> labels;  // severity first, then static ones
  // Set when the expression's result has no role labels (a pushed success series): the
  // annotations' {{ $labels.* }} are filled in from these when the rule is written.
  std::map<std::string, std::string> annotation_labels;
};
// The rule's `role` label; empty for rules about no one role.
std::string RoleOf(const Rule& rule);
struct RuleGroup {
  std::string name;
  std::vector<Rule> rules;
};

std::vector<RuleGroup> BuildRules(const Spec& spec, const Options& options);

// Receives an output piece by piece (about 1 MiB at a time): the files of a 10,000-role spec
// are tens of MiB, and streaming them spares holding (and page-faulting) them whole.
using Sink = std::function<void(std::string_view)>;
inline constexpr std::size_t kSinkChunk = 1 << 20;

// The groups of schedwatch-global.rules.yml: the exporter alerts and the Watchdog.
std::vector<RuleGroup> BuildGlobalRules(const Options& options);
// The success ratio's recording rule, role:schedwatch_job_runs_success:ratio_rate<window>:
// successes over finished runs in the window, per role, replicas merged; no sample for a role
// without finished runs in the window.
std::string SuccessRatioRecord(const Options& options);

// `spec` null: the global file, whose header names no spec. `anchors` false writes each rule's
// annotations in full (for tools that do not resolve YAML aliases).
void RenderRules(const std::vector<RuleGroup>& groups, const Spec* spec, const Options& options,
                 const Sink& sink, bool anchors = true);
// A PrometheusRule object (monitoring.coreos.com/v1) holding `groups`.
std::string RenderPrometheusRule(const std::vector<RuleGroup>& groups, const Spec* spec,
                                 const Options& options, const std::string& name);
void RenderRuleTests(const Spec& spec, const Options& options, std::vector<std::string>& warnings,
                     const Sink& sink);
std::string RenderAlertmanager(const Spec& spec, const Options& options);
std::string RenderDashboard(const Spec& spec, const Options& options);
// The jsonnet mixin: schedwatch-global.libsonnet (the global rules and the dashboard, with
// _config) and mixin.libsonnet (that plus the spec's rules), rendering to the same rules and
// dashboard as the files above.
void RenderGlobalMixin(const Options& options, const Sink& sink);
void RenderMixin(const Spec& spec, const Options& options, const Sink& sink);

// "# Generated by schedwatch_rulegen from desired-state.yaml (...)": the first lines of every
// YAML output. Names the spec by its file name only, so output does not depend on the path.
// The global file's header (spec null) names no spec and no mode: it is the same for every spec.
std::string GeneratedHeader(const Spec* spec, const Options& options, std::string_view what);
inline std::string GeneratedHeader(const Spec& spec, const Options& options,
                                   std::string_view what) {
  return GeneratedHeader(&spec, options, what);
}

}  // namespace schedwatch::rulegen
