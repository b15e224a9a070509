// schedwatch.rules.yml: the alerting rules of both modes.
//
// Every per-role rule is `(condition) and on(...) schedwatch:source_watched`, a recording rule
// that is 1 for a source while it lists fine and the exporter is scraped. So nothing fires about
// a role while its source is unknown or the exporter is down: SchedwatchSourceDown and
// SchedwatchExporterDown say so instead (and the Alertmanager snippet inhibits the rest). The
// recording rule comes first in each group, so the rules after it see this evaluation's value.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "rulegen/alerts.h"
#include "rulegen/text.h"
#include "schedwatch/duration.h"

namespace schedwatch::rulegen {
namespace {

constexpr std::string_view kLastSuccess = "schedwatch_job_last_success_timestamp_seconds";
constexpr std::string_view kStaleAfter = "schedwatch_job_stale_after_seconds";
constexpr std::string_view kGate = "schedwatch:source_watched";

// Builds one mode's PromQL. Per-role: selectors name the role and thresholds are literals.
// Joined: selectors cover every role and thresholds are the exporter's per-role series, matched
// one-to-one on all their labels (job, instance, role, source).
class Exprs {
 public:
  // `job` is null in joined mode. `pushed_roles` (joined mode) are the roles whose success
  // comes from their own success_metric: the constant rules leave them to per-job rules.
  Exprs(const Options& options, const JobSpec* job, const std::vector<std::string>& pushed_roles)
      : job_(job) {
    job_matcher_ = "job=" + PromString(options.exporter_job);
    scope_ = job ? fmt::format("{},role={},source={}", job_matcher_, PromString(job->role),
                               PromString(job->source))
                 : job_matcher_;
    if (!job && !pushed_roles.empty()) {
      std::string regex;
      for (const auto& role : pushed_roles) regex += (regex.empty() ? "" : "|") + RegexQuote(role);
      excluded_ = ",role!~" + PromString(regex);
    }
    // Per-role mode names the role's source; joined mode matches each role's source.
    gate_ = job ? fmt::format(" and on() {}{{{},source={}}}", kGate, job_matcher_,
                              PromString(job->source))
                : fmt::format(" and on(source) {}{{{}}}", kGate, job_matcher_);
  }
  bool joined() const { return job_ == nullptr; }
  std::string Series(std::string_view metric, std::string_view extra = "") const {
    return fmt::format("{}{{{}{}}}", metric, scope_, extra);
  }
  // The success-related series, without the pushed-success roles in joined mode.
  std::string OwnSeries(std::string_view metric) const { return Series(metric, excluded_); }
  std::string Threshold(std::string_view metric, std::int64_t literal) const {
    return joined() ? Series(metric) : std::to_string(literal);
  }
  std::string Gated(const std::string& condition) const { return "(" + condition + ")" + gate_; }

 private:
  const JobSpec* job_;
  std::string job_matcher_, scope_, excluded_, gate_;
};

std::string PushedSuccess(const JobSpec& job) { return "max(" + job.success_metric + ")"; }

// The condition of `alert`, before gating. `job` is null in joined mode.
std::string Condition(Alert alert, const Exprs& e, const JobSpec* job) {
  bool pushed = job && !job->success_metric.empty();
  std::int64_t stale_after = job && job->stale_after ? *job->stale_after : 0;
  switch (alert) {
    case Alert::kJobMissing:
      return e.Series("schedwatch_job_registered_objects") + " == 0";
    case Alert::kJobSuccessAbsent:
      if (pushed) return "absent(" + PushedSuccess(*job) + ")";
      if (job) return "absent(" + e.Series(kLastSuccess) + ")";
      return fmt::format("max by (job, role, source) ({}) unless on(job, role, source) {}",
                         e.OwnSeries("schedwatch_job_info"), e.Series(kLastSuccess));
    case Alert::kJobSuccessStale:
      if (pushed) return fmt::format("time() - {} > {}", PushedSuccess(*job), stale_after);
      return fmt::format("time() - {} > {}", e.OwnSeries(kLastSuccess),
                         e.Threshold(kStaleAfter, stale_after));
    case Alert::kJobInactive:
      return fmt::format("{} == 0 and {} > 0", e.Series("schedwatch_job_active_objects"),
                         e.Series("schedwatch_job_registered_objects"));
    case Alert::kJobDuplicate:
      return e.Series("schedwatch_job_registered_objects") + " > 1";
    case Alert::kJobDrift:
      return e.Series("schedwatch_job_drifted_objects") + " > 0";
    case Alert::kJobNotStarted:
      // The exporter's own classification: it knows the calendar (missed_starts fire times,
      // each plus start_grace, DST, irregular schedules), which PromQL cannot redo.
      return e.Series("schedwatch_job_condition", ",condition=\"not_started\"") + " == 1";
    case Alert::kJobHung:
      return fmt::format(
          "time() - {} > {}", e.Series("schedwatch_job_running_since_timestamp_seconds"),
          e.Threshold("schedwatch_job_max_runtime_seconds", job ? job->max_runtime : 0));
    case Alert::kJobFailing: {
      std::string failure = e.Series("schedwatch_job_last_failure_timestamp_seconds");
      return fmt::format("{} unless ({} >= {})", failure, e.Series(kLastSuccess), failure);
    }
    case Alert::kJobProgressStalled: {
      // Stalled means success is fresh but the checkpoint is not; stale success is its own alert.
      std::string fresh;
      if (!job) {
        fresh = fmt::format("((time() - {0} <= {1}) or ({0} unless {1}))",
                            e.OwnSeries(kLastSuccess), e.Series(kStaleAfter));
      } else {
        std::string success = pushed ? PushedSuccess(*job) : e.Series(kLastSuccess);
        std::string on = pushed ? "on() " : "";
        fresh = job->stale_after ? fmt::format("{}(time() - {} <= {})", on, success, stale_after)
                                 : on + success;
      }
      return fmt::format("(time() - {} > {}) and {}",
                         e.OwnSeries("schedwatch_job_last_progress_timestamp_seconds"),
                         e.Threshold("schedwatch_job_progress_stale_after_seconds",
                                     job && job->progress ? job->progress->stale_after : 0),
                         fresh);
    }
    case Alert::kJobLedgerMismatch:
      return e.Series("schedwatch_job_ledger_mismatch") + " == 1";
    default:
      break;
  }
  return "";
}

Rule MakeRule(Alert alert, std::string expr, std::int64_t for_seconds) {
  return Rule{
      alert, "", std::move(expr), for_seconds, {{"severity", std::string(TextOf(alert).severity)}},
      {}};
}

// The gate of the per-role rules, for one source (per-role mode) or all (joined mode). The
// per-source ones carry their source as a rule label too, which its series have anyway, so that
// promtool does not lint them as duplicates.
Rule GateRule(const Options& options, const std::string* source) {
  std::string job = "job=" + PromString(options.exporter_job);
  std::string scope = source ? job + ",source=" + PromString(*source) : job;
  Rule rule{Alert::kWatchdog,
            std::string(kGate),
            fmt::format("schedwatch_source_up{{{}}} == 1 and on() (up{{{}}} == 1)", scope, job),
            0,
            {},
            {}};
  if (source) rule.labels = {{"source", *source}};
  return rule;
}

// Per-role rules for one job (per-role mode), or only its pushed-success ones (joined mode).
void AddJobRules(const Options& options, const ForPolicy& for_policy, const JobSpec& job,
                 bool pushed_only, std::vector<Rule>& rules) {
  Exprs exprs(options, &job, {});
  for (Alert alert : RoleAlerts()) {
    if (!Applies(alert, job)) continue;
    bool pushed = UsesPushedSuccess(alert, job) ||
                  (alert == Alert::kJobProgressStalled && !job.success_metric.empty());
    if (pushed_only && !pushed) continue;
    Rule rule = MakeRule(alert, exprs.Gated(Condition(alert, exprs, &job)), for_policy.Of(&job));
    // The role's own labels make each rule distinct (promtool lints same-named rules with the
    // same labels as duplicates). A pushed series carries none of them, and annotation
    // templates see only the expression's labels, so those get the names written in too.
    std::map<std::string, std::string> names = {{"role", job.role}, {"source", job.source}};
    if (UsesPushedSuccess(alert, job)) {
      names["job"] = options.exporter_job;
      rule.annotation_labels = names;
    }
    rule.labels.insert(rule.labels.end(), names.begin(), names.end());
    rules.push_back(std::move(rule));
  }
}

std::vector<Rule> ExporterRules(const Options& options, const ForPolicy& for_policy) {
  std::string job = "{job=" + PromString(options.exporter_job) + "}";
  std::int64_t for_seconds = for_policy.Of(nullptr);
  return {
      MakeRule(Alert::kExporterDown, fmt::format("up{0} == 0 or absent(up{0})", job), for_seconds),
      MakeRule(Alert::kWatcherStale,
               fmt::format("time() - schedwatch_exporter_last_cycle_timestamp_seconds{} > {}", job,
                           options.watcher_stale_after),
               for_seconds),
      MakeRule(Alert::kSourceDown, fmt::format("schedwatch_source_up{} == 0", job), for_seconds),
      MakeRule(Alert::kWatchdog, "vector(1)", 0),
  };
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

}  // namespace

std::vector<RuleGroup> BuildRules(const Spec& spec, const Options& options) {
  ForPolicy for_policy(spec, options.mode);
  std::vector<RuleGroup> groups = {{"schedwatch-exporter", ExporterRules(options, for_policy)}};
  if (options.mode == Mode::kPerRole) {
    // One group per source, in spec order of first use: readable, and evaluated concurrently.
    std::map<std::string, std::size_t> group_of_source;
    for (const auto& job : spec.jobs) {
      auto [it, added] = group_of_source.emplace(job.source, groups.size());
      if (added) {
        groups.push_back({"schedwatch-jobs-" + job.source, {GateRule(options, &job.source)}});
      }
      AddJobRules(options, for_policy, job, /*pushed_only=*/false, groups[it->second].rules);
    }
    return groups;
  }
  std::vector<std::string> pushed_roles;
  for (const auto& job : spec.jobs) {
    if (!job.success_metric.empty()) pushed_roles.push_back(job.role);
  }
  RuleGroup jobs{"schedwatch-jobs", {GateRule(options, nullptr)}};
  Exprs exprs(options, nullptr, pushed_roles);
  for (Alert alert : RoleAlerts()) {
    jobs.rules.push_back(
        MakeRule(alert, exprs.Gated(Condition(alert, exprs, nullptr)), for_policy.Of(nullptr)));
  }
  for (const auto& job : spec.jobs) {
    if (!job.success_metric.empty()) {
      AddJobRules(options, for_policy, job, /*pushed_only=*/true, jobs.rules);
    }
  }
  groups.push_back(std::move(jobs));
  return groups;
}

void RenderRules(const std::vector<RuleGroup>& groups, const Spec& spec, const Options& options,
                 const Sink& sink) {
  // Rules of the same alert share their annotations through a YAML anchor (&Name, then *Name):
  // in per-role mode this makes the file several times smaller.
  std::map<Alert, int> shared;
  std::size_t size = 0;
  for (const auto& group : groups) {
    for (const auto& rule : group.rules) {
      if (rule.record.empty() && rule.annotation_labels.empty()) ++shared[rule.alert];
      size += 256 + rule.expr.size();
    }
  }
  std::string out = GeneratedHeader(spec, options, "Alerting rules");
  out.reserve(std::min(size, 2 * kSinkChunk));
  if (std::any_of(shared.begin(), shared.end(),
                  [](const auto& entry) { return entry.second > 1; })) {
    out +=
        "# Rules of one alert share their annotations: &Name marks the first, *Name repeats it.\n";
  }
  out += "groups:\n";
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
        AppendFormat(out, "        annotations: *{}\n", text.name);
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
                   share ? " &" : "", share ? text.name : "", annotation(text.summary),
                   annotation(text.description), YamlScalar(RunbookUrl(options, rule.alert)));
      if (share) anchored.insert(rule.alert);
    }
  }
  sink(out);
}

}  // namespace schedwatch::rulegen
