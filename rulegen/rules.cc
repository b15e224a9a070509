// schedwatch.rules.yml (the per-role rules of both modes) and schedwatch-global.rules.yml (the
// exporter alerts and the Watchdog).
//
// Replicas: every per-role rule reads each signal only from the replicas that can see it now,
// i.e. whose target is up and whose source lists fine (`Seen`: the series `and on(identity,
// instance, source)` that gate), and then merges the replicas with `max`/`min by (job, identity
// labels, source, role)`. So an alert fires once per role, not once per replica; nothing fires
// about a role while no replica can read its source (SchedwatchSourceDown and
// SchedwatchExporterDown say so instead); and two watchers (different identity labels) never
// see each other's roles. Each merge takes the view that needs every reading replica to agree
// before paging: the freshest success (max), missing only when every reader sees no object
// (max == 0), a duplicate or drift only when every reader sees it (min). The alerts about runs
// (success, starts, failures, hung, too short, stalled) further leave out the replicas that list
// the source but cannot read its run history (schedwatch_source_history_up 0), whose run series
// are gone: SchedwatchSourceHistoryDown says so instead of SchedwatchJobSuccessAbsent. An exporter
// without that series (older than the rules) is not left out.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "rulegen/alerts.h"
#include "rulegen/text.h"
#include "schedwatch/duration.h"
#include "schedwatch/metrics.h"
#include "schedwatch/shard.h"

namespace schedwatch::rulegen {
namespace {

constexpr std::string_view kLastSuccess = metrics::kJobLastSuccess.name;
constexpr std::string_view kStaleAfter = metrics::kJobStaleAfter.name;

// Builds one mode's PromQL. Per-role: selectors name the role and thresholds are literals.
// Joined: selectors cover every role and thresholds are the exporter's per-role series, merged
// over replicas like the signals.
class Exprs {
 public:
  // `job` is null in joined mode. `pushed_roles` (joined mode) are the roles whose success
  // comes from their own success_metric: the constant rules leave them to per-job rules.
  // `roles` (joined mode) narrows every selector to some roles, e.g. `,role=~"a|b"`: the roles of
  // one severity level when the spec grades an alert differently for some roles.
  // `counted_roles` (joined mode): of the roles in scope, those whose Failing follows the
  // exporter's condition (they set failure_threshold or recovery_threshold), as a regex; empty
  // when none does, "all" when every one does.
  // `shard` (sharded exporters): only the replicas serving that shard are read; -1: all.
  Exprs(const Options& options, const JobSpec* job, const std::vector<std::string>& pushed_roles,
        std::string_view roles = "", std::string counted_roles = "", int shard = -1)
      : job_(job), counted_roles_(std::move(counted_roles)) {
    job_matcher_ = "job=" + PromString(options.exporter_job);
    scope_ = job ? fmt::format("{},role={},source={}", job_matcher_, PromString(job->role),
                               PromString(job->source))
                 : job_matcher_ + std::string(roles);
    if (!job && !pushed_roles.empty()) {
      std::string regex;
      for (const auto& role : pushed_roles) regex += (regex.empty() ? "" : "|") + RegexQuote(role);
      excluded_ = ",role!~" + PromString(regex);
    }
    key_ = IdentityList(options, {"source", "role"});
    std::string watcher = IdentityList(options, {"instance"});
    std::string source = job ? ",source=" + PromString(job->source) : "";
    readable_ = fmt::format("({}{{{}{}}} == 1 and on({}) up{{{}}} == 1{})", metrics::kSourceUp.name,
                            job_matcher_, source, watcher, job_matcher_, InShard(options, shard));
    reader_on_ = IdentityList(options, {"instance", "source"});
    history_down_ =
        fmt::format("{}{{{}{}}} == 0", metrics::kSourceHistoryUp.name, job_matcher_, source);
  }
  // The same, seeing only the replicas that read the source's run history too.
  Exprs ForRuns() const {
    Exprs runs = *this;
    runs.runs_ = true;
    return runs;
  }
  bool joined() const { return job_ == nullptr; }
  const std::string& counted_roles() const { return counted_roles_; }
  const std::string& key() const { return key_; }
  // (source_up == 1 and up == 1) per replica and source: the replicas that read the source now.
  const std::string& Readable() const { return readable_; }
  std::string Series(std::string_view metric, std::string_view extra = "") const {
    return fmt::format("{}{{{}{}}}", metric, scope_, extra);
  }
  // The series as served by the replicas that can read its source.
  std::string Seen(std::string_view metric, std::string_view extra = "") const {
    std::string seen =
        fmt::format("{} and on({}) {}", Series(metric, extra), reader_on_, readable_);
    if (runs_) AppendFormat(seen, " unless on({}) {}", reader_on_, history_down_);
    return seen;
  }
  // Replicas merged: `how` is max or min; `own` leaves out the pushed-success roles.
  std::string Merged(std::string_view how, std::string_view metric, std::string_view extra = "",
                     std::string_view by_extra = "") const {
    return fmt::format("{} by ({}{}) ({})", how, key_, by_extra, Seen(metric, extra));
  }
  std::string Own(std::string_view how, std::string_view metric) const {
    return Merged(how, metric, excluded_);
  }
  // Thresholds: a literal, or the replicas' per-role series (the same on every replica that
  // runs the same spec; max is the lenient one if they differ during a rollout).
  std::string Threshold(std::string_view metric, std::int64_t literal) const {
    return joined() ? fmt::format("max by ({}) ({})", key_, Series(metric))
                    : std::to_string(literal);
  }

 private:
  const JobSpec* job_;
  std::string counted_roles_;
  std::string job_matcher_, scope_, excluded_, key_, readable_, reader_on_, history_down_;
  bool runs_ = false;
};

std::string PushedSuccess(const JobSpec& job) { return "max(" + job.success_metric() + ")"; }

// The exporter's own classification, where PromQL cannot redo it: it knows the calendar
// (missed_starts fire times, each plus start_grace, DST, irregular schedules) and the runs
// (failures and successes in a row, how long each took). `extra` narrows the roles.
std::string InCondition(const Exprs& e, std::string_view condition, std::string_view extra = "",
                        std::string_view by_extra = "") {
  return e.Merged("min", metrics::kJobCondition.name,
                  fmt::format(",condition=\"{}\"{}", condition, extra), by_extra) +
         " == 1";
}

// The latest failure is newer than the latest success.
std::string FailureNewest(const Exprs& e, std::string_view extra = "") {
  std::string failure = e.Merged("max", metrics::kJobLastFailure.name, extra);
  return fmt::format("{} unless ({} >= {})", failure, e.Merged("max", kLastSuccess, extra),
                     failure);
}

// Whether the alert is about runs, which a source's run history tells.
bool NeedsRuns(Alert alert) {
  switch (alert) {
    case Alert::kJobSuccessAbsent:
    case Alert::kJobSuccessStale:
    case Alert::kJobNotStarted:
    case Alert::kJobHung:
    case Alert::kJobFailing:
    case Alert::kJobTooShort:
    case Alert::kJobProgressStalled:
      return true;
    default:
      return false;
  }
}

// The condition of `alert`. `job` is null in joined mode.
std::string Condition(Alert alert, const Exprs& base, const JobSpec* job) {
  const Exprs e = NeedsRuns(alert) ? base.ForRuns() : base;
  bool pushed = job && !job->success_metric().empty();
  std::int64_t stale_after = job && job->stale_after ? *job->stale_after : 0;
  // A pushed series knows no replica: its rules hold while any replica reads the source.
  std::string pushed_gate = " and on() " + e.Readable();
  switch (alert) {
    case Alert::kJobMissing:
      return e.Merged("max", metrics::kJobRegisteredObjects.name) + " == 0";
    case Alert::kJobSuccessAbsent: {
      if (pushed) return "absent(" + PushedSuccess(*job) + ")" + pushed_gate;
      std::string absent =
          fmt::format("{} unless on({}) ({})", e.Own("max", metrics::kJobInfo.name), e.key(),
                      e.Seen(kLastSuccess));
      if (e.joined()) return absent;
      // Per-role mode also catches a role the exporters do not serve at all (their spec
      // differs from this one): no identity is known then, only the role.
      return fmt::format("{} or ((absent({}) unless on() {}){})", absent, e.Series(kLastSuccess),
                         e.Series(metrics::kJobInfo.name), pushed_gate);
    }
    case Alert::kJobSuccessStale:
      if (pushed) {
        return fmt::format("(time() - {} > {}){}", PushedSuccess(*job), stale_after, pushed_gate);
      }
      return fmt::format("time() - {} > {}", e.Own("max", kLastSuccess),
                         e.Threshold(kStaleAfter, stale_after));
    case Alert::kJobInactive:
      return fmt::format("{} == 0 and {} > 0", e.Merged("max", metrics::kJobActiveObjects.name),
                         e.Merged("max", metrics::kJobRegisteredObjects.name));
    case Alert::kJobDuplicate:
      return e.Merged("min", metrics::kJobRegisteredObjects.name) + " > 1";
    case Alert::kJobDrift:
      return e.Merged("min", metrics::kJobDriftedObjects.name) + " > 0";
    case Alert::kJobNotStarted:
      return InCondition(e, "not_started", "", ", condition");
    case Alert::kJobTooShort:
      return InCondition(e, "too_short");
    case Alert::kJobHung:
      return fmt::format("time() - {} > {}", e.Merged("max", metrics::kJobRunningSince.name),
                         e.Threshold(metrics::kJobMaxRuntime.name, job ? job->max_runtime : 0));
    case Alert::kJobFailing: {
      // With failure_threshold or recovery_threshold, failures and successes in a row count,
      // which only the exporter sees.
      if (job) return job->Alerting().Thresholds() ? InCondition(e, "failing") : FailureNewest(e);
      if (e.counted_roles().empty()) return FailureNewest(e);
      if (e.counted_roles() == "all") return InCondition(e, "failing");
      return fmt::format("({}) or ({})", FailureNewest(e, ",role!~" + e.counted_roles()),
                         InCondition(e, "failing", ",role=~" + e.counted_roles()));
    }
    case Alert::kJobProgressStalled: {
      // Stalled means success is fresh but the checkpoint is not; stale success is its own alert.
      std::string fresh;
      if (!job) {
        std::string success = e.Own("max", kLastSuccess);
        std::string limit = e.Threshold(kStaleAfter, 0);
        fresh = fmt::format("((time() - {0} <= {1}) or ({0} unless {1}))", success, limit);
      } else {
        std::string success = pushed ? PushedSuccess(*job) : e.Merged("max", kLastSuccess);
        std::string on = pushed ? "on() " : "";
        fresh = job->stale_after ? fmt::format("{}(time() - {} <= {})", on, success, stale_after)
                                 : on + "(" + success + ")";
      }
      return fmt::format("(time() - {} > {}) and {}", e.Own("max", metrics::kJobLastProgress.name),
                         e.Threshold(metrics::kJobProgressStaleAfter.name,
                                     job && job->progress() ? job->progress()->stale_after : 0),
                         fresh);
    }
    case Alert::kJobLedgerMismatch:
      return e.Merged("min", metrics::kJobLedgerMismatch.name) + " == 1";
    default:
      break;
  }
  return "";
}

// While one of a role's maintenance windows is open, the exporter says so and its alerts are
// held; when it closes they start pending afresh. Per-role mode: the role's own series (on(), so
// that a pushed success's rules, whose series carry no role, are held too).
std::string Held(const std::string& expr, const Exprs& e) {
  std::string_view in_maintenance = metrics::kJobInMaintenance.name;
  if (!e.joined()) {
    return fmt::format("({}) unless on() (max({}) == 1)", expr, e.Series(in_maintenance));
  }
  return fmt::format("({}) unless on({}) (max by ({}) ({}) == 1)", expr, e.key(), e.key(),
                     e.Series(in_maintenance));
}

Rule MakeRule(Alert alert, std::string expr, std::int64_t for_seconds,
              std::string_view severity = "") {
  if (severity.empty()) severity = TextOf(alert).severity;
  return Rule{alert, "", std::move(expr), for_seconds, {{"severity", std::string(severity)}}, {}};
}

// Joined mode: the spec's labels (`labels:`) copied onto each alert from schedwatch_job_info,
// whose one series per role carries them. topk keeps one info series per role when replicas
// differ during a rollout.
std::string WithSpecLabels(std::string expr, const Exprs& e,
                           const std::vector<std::string>& names) {
  if (names.empty()) return expr;
  return fmt::format("({}) * on({}) group_left({}) topk by ({}) (1, {})", expr, e.key(),
                     fmt::join(names, ", "), e.key(), e.Series(metrics::kJobInfo.name));
}

// Joined mode: the roles of `alert` by severity level, when the spec grades some roles
// differently; the most common level first. One entry (and no roles listed) when all agree.
std::vector<std::pair<std::string, std::vector<std::string>>> RolesByLevel(const Spec& spec,
                                                                           Alert alert) {
  std::map<std::string, std::vector<std::string>> roles;
  for (const auto& job : spec.jobs) roles[std::string(SeverityOf(alert, job))].push_back(job.role);
  std::vector<std::pair<std::string, std::vector<std::string>>> out(roles.begin(), roles.end());
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  return out;
}

std::string RoleRegex(const std::vector<std::string>& roles) {
  std::string regex;
  for (const auto& role : roles) regex += (regex.empty() ? "" : "|") + RegexQuote(role);
  return PromString(regex);
}

// Per-role rules for one job (per-role mode), or only its pushed-success ones (joined mode).
void AddJobRules(const Options& options, const ForPolicy& for_policy, const JobSpec& job,
                 bool pushed_only, std::vector<Rule>& rules) {
  const int shard = options.total_shards > 1 ? ShardOf(job.role, options.total_shards) : -1;
  Exprs exprs(options, &job, {}, "", "", shard);
  for (Alert alert : RoleAlerts()) {
    if (!Applies(alert, job)) continue;
    bool pushed = UsesPushedSuccess(alert, job) ||
                  (alert == Alert::kJobProgressStalled && !job.success_metric().empty());
    if (pushed_only && !pushed) continue;
    std::string expr = Condition(alert, exprs, &job);
    if (!job.Alerting().maintenance.empty()) expr = Held(expr, exprs);
    Rule rule = MakeRule(alert, std::move(expr), for_policy.Of(&job), SeverityOf(alert, job));
    // The role's own labels make each rule distinct (promtool lints same-named rules with the
    // same labels as duplicates). A pushed series carries none of them, and annotation
    // templates see only the expression's labels, so those get the names written in too.
    std::map<std::string, std::string> names = {{"role", job.role}, {"source", job.source}};
    if (UsesPushedSuccess(alert, job)) {
      names["job"] = options.exporter_job;
      rule.annotation_labels = names;
    }
    rule.labels.insert(rule.labels.end(), names.begin(), names.end());
    if (shard >= 0) rule.labels.emplace_back(kShardLabel, std::to_string(shard));
    const LabelPairs& spec_labels = job.Alerting().labels;
    rule.labels.insert(rule.labels.end(), spec_labels.begin(), spec_labels.end());
    rules.push_back(std::move(rule));
  }
}

// The YAML anchor of an alert's shared annotations: its name, and "Replica" after it for the
// warning that shares the name (both repeat once per shard).
std::string AnchorOf(Alert alert) {
  bool replica = alert == Alert::kExporterReplicaDown || alert == Alert::kWatcherReplicaStale ||
                 alert == Alert::kSourceReplicaDown || alert == Alert::kSourceHistoryReplicaDown;
  return std::string(TextOf(alert).name) + (replica ? "Replica" : "");
}

void WriteLabels(const Rule& rule, std::string& out) {
  if (rule.labels.empty()) return;
  out += "        labels:\n";
  for (const auto& [name, value] : rule.labels) {
    AppendFormat(out, "          {}: ", name);
    AppendYamlScalar(out, value);
    out += '\n';
  }
}

// Groups of at most kMaxGroupRules rules (the rules of a group are evaluated one after the
// other, and the mixin conventions ask for small groups): a longer group continues in
// "<name>/2", "<name>/3"... ('/' is in no source name). A role's consecutive rules stay together.
constexpr std::size_t kMaxGroupRules = 20;

std::vector<RuleGroup> Split(std::vector<RuleGroup> groups) {
  std::vector<RuleGroup> out;
  for (auto& group : groups) {
    std::size_t first = out.size();
    out.push_back({group.name, {}});
    for (std::size_t start = 0; start < group.rules.size();) {
      std::string role = RoleOf(group.rules[start]);
      std::size_t end = start + 1;
      while (end < group.rules.size() && !role.empty() && RoleOf(group.rules[end]) == role) {
        ++end;
      }
      if (out.back().rules.size() + (end - start) > kMaxGroupRules && !out.back().rules.empty()) {
        out.push_back({fmt::format("{}/{}", group.name, out.size() - first + 1), {}});
      }
      for (; start < end; ++start) out.back().rules.push_back(std::move(group.rules[start]));
    }
  }
  return out;
}

// Sharded exporters: one SchedwatchShardDown per shard, whether its replicas went down or
// never came up (no target serving its ordinal at all); and the instances' own account of the
// split, which must agree with each other and with these rules.
std::vector<Rule> ShardRules(const Options& options, const std::string& shards_up) {
  const std::string e = "job=" + PromString(options.exporter_job);
  const std::string watcher = IdentityList(options, {});
  const std::string replica = IdentityList(options, {"instance"});
  auto live = [&](std::string_view metric) {
    return fmt::format("({}{{{}}} and on({}) up{{{}}} == 1)", metric, e, replica, e);
  };
  std::vector<Rule> rules;
  for (int shard : Shards(options)) {
    // Per watcher that has any target: none of them up and serving the shard. A job with no
    // target at all: absent(). The shard's label in the expression too, for the annotations.
    rules.push_back(MakeRule(
        Alert::kShardDown,
        fmt::format("label_replace(count by ({0}) (up{{{1}}}) unless on({0}) ({2} == {3}) or "
                    "absent(up{{{1}}}), \"{4}\", \"{3}\", \"job\", \".*\")",
                    watcher, e, live(kShardOrdinal), shard, kShardLabel),
        options.exporter_alert_for));
    rules.back().labels.emplace_back(kShardLabel, std::to_string(shard));
  }
  auto spread = [&](std::string_view metric) {
    return fmt::format("max by ({0}) {1} != min by ({0}) {1}", watcher, live(metric));
  };
  rules.push_back(
      MakeRule(Alert::kShardingMismatch,
               fmt::format("count by ({}) ({} != {}) or {}", watcher, live(kTotalShards),
                           options.total_shards, spread(kSpecRoles)),
               options.exporter_alert_for));
  // Each shard's roles once (its replicas agree), summed: the shard as a label from its ordinal;
  // a spare (ordinal N or more) keeps roles of a shard below N and is not counted.
  std::string labelled = fmt::format(
      "{} * on({}) group_left({}) count_values without() (\"{}\", {}{{{}}} < {})",
      live(kShardRoles), replica, kShardLabel, kShardLabel, kShardOrdinal, e, options.total_shards);
  rules.push_back(MakeRule(
      Alert::kShardCoverage,
      fmt::format("sum by ({0}) (max by ({0}, {1}) ({2})) != on({0}) max by ({0}) {3} unless "
                  "on({0}) ({4} < {5})",
                  watcher, kShardLabel, labelled, live(kSpecRoles), shards_up,
                  options.total_shards),
      options.exporter_alert_for));
  return rules;
}

}  // namespace

std::string RoleOf(const Rule& rule) {
  for (const auto& [name, value] : rule.labels) {
    if (name == "role") return value;
  }
  return "";
}

std::string SuccessRatioRecord(const Options& options) {
  return "role:schedwatch_job_runs_success:ratio_rate" +
         FormatDuration(options.success_ratio_window);
}

std::vector<RuleGroup> BuildGlobalRules(const Options& options) {
  const std::string e = "job=" + PromString(options.exporter_job);
  const std::string watcher = IdentityList(options, {});
  const std::string replica = IdentityList(options, {"instance"});
  const std::int64_t for_seconds = options.exporter_alert_for;
  const bool sharded = options.total_shards > 1;
  auto with = [](Rule rule, std::string_view severity) {
    rule.labels = {{"severity", std::string(severity)}};
    return rule;
  };
  std::string none_up = fmt::format("max by ({}) (up{{{}}}) == 0", watcher, e);
  // A replica's series count only while its target is up (a Prometheus restart keeps the last
  // samples of a dead target for the lookback).
  auto live = [&](std::string_view metric, const std::string& in_shard = "") {
    return fmt::format("({}{{{}}} and on({}) up{{{}}} == 1{})", metric, e, replica, e, in_shard);
  };
  // How many shards have a replica up, per watcher (sharded only).
  // A spare of a shrinking StatefulSet (ordinal N or more) is none of them.
  std::string shards_up =
      fmt::format("count by ({0}) (count_values by ({0}) (\"{1}\", {2} < {3}))", watcher,
                  kShardLabel, live(kShardOrdinal), options.total_shards);
  std::vector<Rule> rules = {
      MakeRule(Alert::kExporterDown, fmt::format("{} or absent(up{{{}}})", none_up, e),
               for_seconds),
      // Sharded, a replica down is only a warning while every shard still has one up: while a
      // shard has none, the down target is likely that shard's (SchedwatchShardDown says so).
      with(MakeRule(Alert::kExporterReplicaDown,
                    fmt::format("up{{{0}}} == 0 unless on({1}) ({2}){3}", e, watcher, none_up,
                                sharded ? fmt::format(" unless on({}) ({} < {})", watcher,
                                                      shards_up, options.total_shards)
                                        : ""),
                    for_seconds),
           "warning"),
  };
  // Staleness and sources: judged per shard when sharded, as one shard's fresh replica or
  // readable source says nothing about another shard's roles.
  for (int shard : Shards(options)) {
    const std::string in_shard = InShard(options, sharded ? shard : -1);
    std::string age = fmt::format("time() - {}{{{}}}", metrics::kLastCycle.name, e);
    std::string freshest_age =
        fmt::format("time() - max by ({}) {}", watcher, live(metrics::kLastCycle.name, in_shard));
    const std::string source_key = IdentityList(options, {"source", "type"});
    std::string source_read =
        fmt::format("max by ({}) {}", source_key, live(metrics::kSourceUp.name, in_shard));
    std::string history_read =
        fmt::format("max by ({}) {}", source_key, live(metrics::kSourceHistoryUp.name, in_shard));
    std::vector<Rule> of_shard = {
        MakeRule(Alert::kWatcherStale,
                 fmt::format("{} > {}", freshest_age, options.watcher_stale_after), for_seconds),
        with(MakeRule(Alert::kWatcherReplicaStale,
                      fmt::format("({} > {}) and on({}) up{{{}}} == 1{} and on({}) ({} <= {})", age,
                                  options.watcher_stale_after, replica, e, in_shard, watcher,
                                  freshest_age, options.watcher_stale_after),
                      for_seconds),
             "warning"),
        MakeRule(Alert::kSourceDown, source_read + " == 0", for_seconds),
        with(MakeRule(Alert::kSourceReplicaDown,
                      fmt::format("{}{{{}}} == 0 and on({}) up{{{}}} == 1{} and on({}) ({} == 1)",
                                  metrics::kSourceUp.name, e, replica, e, in_shard, source_key,
                                  source_read),
                      for_seconds),
             "warning"),
        // Only while the source lists: otherwise SchedwatchSourceDown says more.
        MakeRule(Alert::kSourceHistoryDown,
                 fmt::format("{} == 0 and on({}) {} == 1", history_read, source_key, source_read),
                 for_seconds),
        with(MakeRule(Alert::kSourceHistoryReplicaDown,
                      fmt::format("{}{{{}}} == 0 and on({}) {}{{{}}} == 1 and on({}) up{{{}}} == 1"
                                  "{} and on({}) ({} == 1)",
                                  metrics::kSourceHistoryUp.name, e,
                                  IdentityList(options, {"instance", "source", "type"}),
                                  metrics::kSourceUp.name, e, replica, e, in_shard, source_key,
                                  history_read),
                      for_seconds),
             "warning"),
    };
    for (Rule& rule : of_shard) {
      if (sharded) rule.labels.emplace_back(kShardLabel, std::to_string(shard));
      rules.push_back(std::move(rule));
    }
  }
  rules.push_back(MakeRule(Alert::kWatchdog, "vector(1)", 0));
  std::vector<RuleGroup> groups = {{"schedwatch-global", std::move(rules)}};
  if (sharded) groups.push_back({"schedwatch-shards", ShardRules(options, shards_up)});
  // Replicas count the same runs, each from its own start: the one that saw most is merged in,
  // never their sum. Outcomes are summed within a replica.
  const std::string key = IdentityList(options, {"source", "role"});
  auto increase = [&](std::string_view outcome) {
    return fmt::format("increase({}{{{}{}}}[{}])", metrics::kJobRuns.name, e, outcome,
                       FormatDuration(options.success_ratio_window));
  };
  Rule ratio{Alert::kWatchdog,
             SuccessRatioRecord(options),
             fmt::format("max by ({}) ({}) / (max by ({}) (sum by ({}) ({})) > 0)", key,
                         increase(",outcome=\"success\""), key,
                         IdentityList(options, {"instance", "source", "role"}), increase("")),
             0,
             {},
             {}};
  groups.push_back({"schedwatch-runs", {std::move(ratio)}});
  return groups;
}

std::vector<RuleGroup> BuildRules(const Spec& spec, const Options& options) {
  ForPolicy for_policy(spec, options.mode);
  std::vector<RuleGroup> groups;
  if (options.mode == Mode::kPerRole) {
    // One group per source, in spec order of first use: readable, and evaluated concurrently.
    std::map<std::string, std::size_t> group_of_source;
    for (const auto& job : spec.jobs) {
      auto [it, added] = group_of_source.emplace(job.source, groups.size());
      if (added) groups.push_back({"schedwatch-jobs-" + job.source.str(), {}});
      AddJobRules(options, for_policy, job, /*pushed_only=*/false, groups[it->second].rules);
    }
    return Split(std::move(groups));
  }
  std::vector<std::string> pushed_roles;
  for (const auto& job : spec.jobs) {
    if (!job.success_metric().empty()) pushed_roles.push_back(job.role);
  }
  std::set<std::string> counted;
  for (const auto& job : spec.jobs) {
    if (job.Alerting().Thresholds()) counted.insert(job.role);
  }
  // Of `roles`, those whose Failing follows the exporter's condition (Exprs' counted_roles).
  auto counted_of = [&counted](const std::vector<std::string>& roles) -> std::string {
    std::vector<std::string> in;
    for (const auto& role : roles) {
      if (counted.count(role)) in.push_back(role);
    }
    if (in.empty()) return "";
    return in.size() == roles.size() ? "all" : RoleRegex(in);
  };
  const std::vector<std::string> label_names = SpecLabelNames(spec);
  const bool windows = std::any_of(spec.jobs.begin(), spec.jobs.end(), [](const JobSpec& job) {
    return !job.Alerting().maintenance.empty();
  });
  // Sharded: the constant rules once per shard, each reading only that shard's replicas (which
  // serve only its roles) and labelled with it: N times as many rules, still none per role.
  const bool sharded = options.total_shards > 1;
  for (int shard : Shards(options)) {
    RuleGroup jobs{sharded ? fmt::format("schedwatch-jobs-shard-{}", shard) : "schedwatch-jobs",
                   {}};
    for (Alert alert : RoleAlerts()) {
      auto levels = RolesByLevel(spec, alert);
      if (levels.empty()) levels.push_back({std::string(TextOf(alert).severity), {}});
      // The most common level takes every role but the others'; each other level, its own.
      std::vector<std::string> others;
      for (std::size_t i = 1; i < levels.size(); ++i) {
        others.insert(others.end(), levels[i].second.begin(), levels[i].second.end());
      }
      for (std::size_t i = 0; i < levels.size(); ++i) {
        std::string roles = levels.size() == 1 ? ""
                            : i == 0           ? ",role!~" + RoleRegex(others)
                                               : ",role=~" + RoleRegex(levels[i].second);
        Exprs exprs(options, nullptr, pushed_roles, roles,
                    alert == Alert::kJobFailing ? counted_of(levels[i].second) : "",
                    sharded ? shard : -1);
        std::string expr = WithSpecLabels(Condition(alert, exprs, nullptr), exprs, label_names);
        if (windows) expr = Held(expr, exprs);
        jobs.rules.push_back(
            MakeRule(alert, std::move(expr), for_policy.Of(nullptr), levels[i].first));
        if (sharded) jobs.rules.back().labels.emplace_back(kShardLabel, std::to_string(shard));
      }
    }
    groups.push_back(std::move(jobs));
  }
  for (const auto& job : spec.jobs) {
    if (!job.success_metric().empty()) {
      AddJobRules(options, for_policy, job, /*pushed_only=*/true,
                  groups[ShardOf(job.role, options.total_shards)].rules);
    }
  }
  return Split(std::move(groups));
}

void RenderRules(const std::vector<RuleGroup>& groups, const Spec* spec, const Options& options,
                 const Sink& sink, bool anchors) {
  // Rules of the same alert share their annotations through a YAML anchor (&Name, then *Name):
  // in per-role mode this makes the file several times smaller.
  std::map<Alert, int> shared;
  std::size_t size = 0;
  for (const auto& group : groups) {
    for (const auto& rule : group.rules) {
      if (anchors && rule.record.empty() && rule.annotation_labels.empty()) ++shared[rule.alert];
      size += 256 + rule.expr.size();
    }
  }
  std::string out = GeneratedHeader(
      spec, options, spec ? "Alerting rules" : "Global alerting and recording rules");
  out.reserve(std::min(size, 2 * kSinkChunk));
  if (std::any_of(shared.begin(), shared.end(),
                  [](const auto& entry) { return entry.second > 1; })) {
    out +=
        "# Rules of one alert share their annotations: &Name marks the first, *Name repeats it.\n";
  }
  out += groups.empty() ? "groups: []\n" : "groups:\n";
  std::set<Alert> anchored;
  for (const auto& group : groups) {
    AppendFormat(out, "  - name: {}\n    rules:\n", YamlScalar(group.name));
    for (const auto& rule : group.rules) {
      if (out.size() >= kSinkChunk) {
        sink(out);
        out.clear();
      }
      if (!rule.record.empty()) {
        AppendFormat(out, "      - record: {}\n        expr: {}\n", rule.record,
                     YamlScalar(rule.expr));
        WriteLabels(rule, out);
        continue;
      }
      const AlertText& text = TextOf(rule.alert);
      AppendFormat(out, "      - alert: {}\n        expr: ", text.name);
      AppendYamlScalar(out, rule.expr);
      out += '\n';
      if (rule.for_seconds > 0) {
        AppendFormat(out, "        for: {}\n", FormatDuration(rule.for_seconds));
      }
      WriteLabels(rule, out);
      bool share = rule.annotation_labels.empty() && shared[rule.alert] > 1;
      if (share && anchored.count(rule.alert)) {
        AppendFormat(out, "        annotations: *{}\n", AnchorOf(rule.alert));
        continue;
      }
      auto annotation = [&rule](std::string_view templ) {
        return YamlScalar(rule.annotation_labels.empty()
                              ? std::string(templ)
                              : ExpandAnnotation(templ, rule.annotation_labels, std::nullopt));
      };
      AppendFormat(out,
                   "        annotations:{}{}\n          summary: {}\n          description: {}\n"
                   "          runbook_url: {}\n",
                   share ? " &" : "", share ? AnchorOf(rule.alert) : "", annotation(text.summary),
                   annotation(text.description), YamlScalar(RunbookUrl(options, rule.alert)));
      if (share) anchored.insert(rule.alert);
    }
  }
  sink(out);
}

std::string RenderPrometheusRule(const std::vector<RuleGroup>& groups, const Spec* spec,
                                 const Options& options, const std::string& name) {
  std::string rules;
  RenderRules(
      groups, spec, options, [&rules](std::string_view chunk) { rules += chunk; },
      /*anchors=*/false);
  // The rules file's header comments stay comments; its `groups:` becomes spec.groups.
  std::string header = rules.substr(0, rules.find("groups:"));
  std::string body = rules.substr(header.size());
  std::string out = header;
  AppendFormat(out,
               "# For prometheus-operator: give it the labels your Prometheus' ruleSelector "
               "matches.\napiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\n"
               "metadata:\n  name: {}\n  namespace: {}\n  labels:\n"
               "    app.kubernetes.io/name: schedwatch\nspec:\n",
               YamlScalar(name), YamlScalar(options.prometheus_rule_namespace));
  out.reserve(out.size() + body.size() * 11 / 10);
  for (std::size_t start = 0; start < body.size();) {
    std::size_t end = body.find('\n', start);
    end = end == std::string::npos ? body.size() : end + 1;
    out += "  ";
    out.append(body, start, end - start);
    start = end;
  }
  return out;
}

}  // namespace schedwatch::rulegen
