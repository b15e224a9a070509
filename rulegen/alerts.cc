#include "rulegen/alerts.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include "rulegen/text.h"

namespace schedwatch::rulegen {
namespace {

// Descriptions say what was seen and the safe first action to take.
constexpr std::array<AlertText, 24> kAlerts = {{
    {"SchedwatchJobMissing", "critical", "The scheduler holds no object for a watched role.",
     "The scheduler behind source {{ $labels.source }} holds no object for role {{ $labels.role }} "
     "(registered_objects is 0; the exporter confirms an absence with a second read), so nothing "
     "will run. Safe first action: re-read the source, then re-create the job from its template "
     "(schedwatch_exporter reconcile, then with --apply)."},
    {"SchedwatchJobSuccessAbsent", "warning", "A watched role has no success recorded at all.",
     "There is no success timestamp for role {{ $labels.role }} on source {{ $labels.source }}: it "
     "has not succeeded since it was added, or its run history or pushed success metric was lost. "
     "Safe first action: check the run history and that the job still records its success."},
    {"SchedwatchJobSuccessStale", "critical",
     "A watched role has not succeeded within its stale_after.",
     "Role {{ $labels.role }} on source {{ $labels.source }} last succeeded "
     "{{ $value | humanizeDuration }} ago, longer than its stale_after. Safe first action: read "
     "the "
     "run history and the job logs."},
    {"SchedwatchJobInactive", "warning", "Every object of a watched role is disabled.",
     "Role {{ $labels.role }} has objects on source {{ $labels.source }} but none is enabled "
     "(suspended or disabled), so it will not run. Safe first action: check the change history, "
     "then enable it explicitly."},
    {"SchedwatchJobDuplicate", "warning", "More than one object holds a watched role.",
     "{{ $value }} live objects on source {{ $labels.source }} hold role {{ $labels.role }}, so "
     "the "
     "job may run more than once. If schedwatch_job_guarded is 1 for the role, schedwatch_run's "
     "guard holds the copies apart (schedwatch_job_duplicate_runs_prevented_total counts the "
     "skipped runs); otherwise they may run at once. Safe first action: confirm ownership by "
     "hand; never delete one automatically."},
    {"SchedwatchJobDrift", "warning", "Objects of a watched role differ from the spec.",
     "{{ $value }} live object(s) of role {{ $labels.role }} on source {{ $labels.source }} have a "
     "schedule, time zone or spec version other than the spec's. Safe first action: find who "
     "changed it and which version is right."},
    {"SchedwatchJobNotStarted", "critical", "A watched role missed its scheduled starts.",
     "Role {{ $labels.role }} on source {{ $labels.source }} missed missed_starts consecutive fire "
     "times (each plus start_grace) with no start seen. Safe first action: check the run history "
     "and the scheduler's health."},
    {"SchedwatchJobHung", "warning",
     "A run of a watched role has gone on longer than its max_runtime.",
     "A run of role {{ $labels.role }} on source {{ $labels.source }} started "
     "{{ $value | humanizeDuration }} ago and has not finished, longer than its max_runtime. Safe "
     "first action: read its logs and check its timeouts."},
    {"SchedwatchJobFailing", "warning", "The latest run of a watched role failed.",
     "The latest finished run of role {{ $labels.role }} on source {{ $labels.source }} failed "
     "and no success came after it (with failure_threshold or recovery_threshold: the exporter "
     "counts failures and successes in a row). Safe first action: read the job logs."},
    {"SchedwatchJobTooShort", "warning", "The latest run of a watched role succeeded too quickly.",
     "The latest finished run of role {{ $labels.role }} on source {{ $labels.source }} "
     "succeeded in less than its min_runtime: it probably did no work. Safe first action: read "
     "that run's logs and check its inputs."},
    {"SchedwatchJobProgressStalled", "warning",
     "A watched role succeeds, but its checkpoint does not move.",
     "Role {{ $labels.role }} on source {{ $labels.source }} succeeds, but its business checkpoint "
     "has not moved for {{ $value | humanizeDuration }}, longer than its progress stale_after. "
     "Safe first action: check its inputs and domain conditions."},
    {"SchedwatchJobLedgerMismatch", "warning",
     "The object the ledger recorded for a watched role is not live.",
     "The object ID the ledger recorded for role {{ $labels.role }} is not among the live objects "
     "on source {{ $labels.source }}: someone re-created or deleted it. Safe first action: "
     "re-read, "
     "verify the live object, then update the ledger with schedwatch_exporter reconcile."},
    {"SchedwatchSourceDown", "critical", "No replica of the watcher can list a source.",
     "No replica of the watcher (job {{ $labels.job }}) can list source {{ $labels.source }} "
     "({{ $labels.type }}); its roles are unknown and their alerts are held back. Safe first "
     "action: check the source, its credentials and the network (the exporter's status page "
     "shows the error)."},
    {"SchedwatchExporterDown", "critical", "No replica of a schedwatch watcher is up or scraped.",
     "Prometheus has no successful scrape of any replica of this watcher (job {{ $labels.job }}): "
     "no scheduled job it watches is watched and its per-role alerts are held back. Safe first "
     "action: check the exporter process, its /-/healthy endpoint and the scrape configuration."},
    {"SchedwatchWatcherStale", "critical",
     "No replica of a schedwatch watcher has refreshed recently.",
     "The exporter of job {{ $labels.job }} answers scrapes, but no replica's last complete "
     "refresh is newer than {{ $value | humanizeDuration }}, so what it serves is old. Safe first "
     "action: read the exporter's logs; restart it if its refresh loop is stuck."},
    {"Watchdog", "none", "Heartbeat of the alerting pipeline, always firing.",
     "Always firing. Routed to a dead man's switch outside this Prometheus and Alertmanager, which "
     "raises an alarm when the heartbeat stops. Never silence it."},
    {"SchedwatchSourceDown", "warning", "One replica cannot list a source; another still can.",
     "Replica {{ $labels.instance }} (job {{ $labels.job }}) cannot list source "
     "{{ $labels.source }} ({{ $labels.type }}); another replica still reads it, so its roles are "
     "still watched, without redundancy. Safe first action: check that replica's credentials and "
     "network path to the source (its status page shows the error)."},
    {"SchedwatchExporterDown", "warning", "One schedwatch replica is down; another is still up.",
     "Prometheus cannot scrape {{ $labels.instance }}, one replica of a watcher of job "
     "{{ $labels.job }}; another replica still watches, without redundancy. Safe first action: "
     "check that exporter process, its /-/healthy endpoint and the scrape configuration."},
    {"SchedwatchWatcherStale", "warning",
     "One schedwatch replica has not refreshed recently; another is fresh.",
     "Replica {{ $labels.instance }} (job {{ $labels.job }}) answers scrapes, but its last "
     "complete refresh ended {{ $value | humanizeDuration }} ago; another replica is fresh. Safe "
     "first action: read that exporter's logs; restart it if its refresh loop is stuck."},
    {"SchedwatchSourceHistoryDown", "critical",
     "A source is listed, but no replica can read its run history.",
     "The watcher (job {{ $labels.job }}) lists source {{ $labels.source }} "
     "({{ $labels.type }}) but no replica can read its run history (cron's log or journal, the "
     "journal, Jobs, workflow runs, pipelines): missing, inactive, duplicate and drift are still "
     "judged, but whether its roles start, fail, hang or succeed is unknown and those alerts are "
     "held back. Safe first action: check the source's history (the exporter's status page shows "
     "the error), e.g. a crontab source reading /var/log/syslog on a host without rsyslog."},
    {"SchedwatchSourceHistoryDown", "warning",
     "One replica cannot read a source's run history; another still can.",
     "Replica {{ $labels.instance }} (job {{ $labels.job }}) lists source {{ $labels.source }} "
     "({{ $labels.type }}) but cannot read its run history; another replica still reads it, so "
     "its roles' runs are still watched, without redundancy. Safe first action: check that "
     "replica's access to the source's history (its status page shows the error)."},
    {"SchedwatchShardDown", "critical", "No replica of a shard of the exporter is up.",
     "No replica of shard {{ $labels.schedwatch_shard }} (job {{ $labels.job }}) is up and "
     "serving schedwatch_exporter_shard_ordinal {{ $labels.schedwatch_shard }}, so none of the "
     "roles whose names hash to it is watched; their own alerts are held back. Safe first action: "
     "check that shard's exporter (--shard {{ $labels.schedwatch_shard }}, or StatefulSet pod "
     "{{ $labels.schedwatch_shard }}), its logs and its scrape target; `schedwatch_exporter check "
     "--total-shards N` lists the shard's roles."},
    {"SchedwatchShardingMismatch", "critical",
     "The exporter's shards disagree on how the spec is split.",
     "Instances of job {{ $labels.job }} serve different schedwatch_exporter_total_shards or "
     "schedwatch_exporter_spec_roles, or a total other than the one these rules were generated "
     "for: some roles may be watched twice and others not at all. Safe first action: compare "
     "the instances' --total-shards and spec files (their status pages say which shard each is), "
     "finish the rollout, and generate the rules again with the new --total-shards."},
    {"SchedwatchShardCoverage", "critical", "The shards together do not watch the spec's roles.",
     "Every shard of job {{ $labels.job }} is up, but their schedwatch_exporter_shard_roles add "
     "up to {{ $value }}, not the schedwatch_exporter_spec_roles of the spec: some roles are "
     "watched by no shard or by two. Safe first action: check that every instance runs the same "
     "schedwatch version and spec (`schedwatch_exporter check --total-shards N` lists each "
     "role's shard)."},
}};

}  // namespace

const AlertText& TextOf(Alert alert) { return kAlerts.at(static_cast<std::size_t>(alert)); }

const std::vector<Alert>& RoleAlerts() {
  static const std::vector<Alert> kRoleAlerts = {
      Alert::kJobMissing,         Alert::kJobSuccessAbsent,
      Alert::kJobSuccessStale,    Alert::kJobInactive,
      Alert::kJobDuplicate,       Alert::kJobDrift,
      Alert::kJobNotStarted,      Alert::kJobHung,
      Alert::kJobFailing,         Alert::kJobTooShort,
      Alert::kJobProgressStalled, Alert::kJobLedgerMismatch};
  return kRoleAlerts;
}

std::string RunbookUrl(const Options& options, Alert alert) {
  std::string anchor(TextOf(alert).name);
  std::transform(anchor.begin(), anchor.end(), anchor.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return options.runbook_base_url + "#" + anchor;
}

std::string_view KindOf(Alert alert) {
  switch (alert) {
    case Alert::kJobMissing:
      return "missing";
    case Alert::kJobSuccessAbsent:
      return "success_absent";
    case Alert::kJobSuccessStale:
      return "stale";
    case Alert::kJobInactive:
      return "inactive";
    case Alert::kJobDuplicate:
      return "duplicate";
    case Alert::kJobDrift:
      return "drift";
    case Alert::kJobNotStarted:
      return "not_started";
    case Alert::kJobHung:
      return "hung";
    case Alert::kJobFailing:
      return "failing";
    case Alert::kJobTooShort:
      return "too_short";
    case Alert::kJobProgressStalled:
      return "stalled";
    case Alert::kJobLedgerMismatch:
      return "ledger_mismatch";
    default:
      return "";
  }
}

std::string_view SeverityOf(Alert alert, const JobSpec& job) {
  return job.Alerting().SeverityOf(KindOf(alert), TextOf(alert).severity);
}

std::vector<std::string> SpecLabelNames(const Spec& spec) {
  std::set<std::string> names;
  const JobAlerting* last = nullptr;  // jobs share their settings: most repeat the previous
  for (const auto& job : spec.jobs) {
    if (!job.alerting || job.alerting.get() == last) continue;
    last = job.alerting.get();
    for (const auto& [name, value] : last->labels) names.insert(name);
  }
  return {names.begin(), names.end()};
}

bool Applies(Alert alert, const JobSpec& job) {
  if (alert == Alert::kJobSuccessStale) return job.stale_after.has_value();
  if (alert == Alert::kJobProgressStalled) return job.progress().has_value();
  if (alert == Alert::kJobTooShort) return job.Alerting().min_runtime > 0;
  return true;
}

bool UsesPushedSuccess(Alert alert, const JobSpec& job) {
  return !job.success_metric().empty() &&
         (alert == Alert::kJobSuccessAbsent || alert == Alert::kJobSuccessStale);
}

ForPolicy::ForPolicy(const Spec& spec, Mode mode) : mode_(mode) {
  if (spec.jobs.empty()) return;
  smallest_ =
      std::min_element(spec.jobs.begin(), spec.jobs.end(), [](const JobSpec& a, const JobSpec& b) {
        return a.alert_for < b.alert_for;
      })->alert_for;
}

LabelShape ShapeOf(Alert alert, const JobSpec& job) {
  return UsesPushedSuccess(alert, job) ? LabelShape::kPushed : LabelShape::kIdentity;
}

bool PerShard(Alert alert) {
  switch (alert) {
    case Alert::kSourceDown:
    case Alert::kWatcherStale:
    case Alert::kSourceReplicaDown:
    case Alert::kWatcherReplicaStale:
    case Alert::kSourceHistoryDown:
    case Alert::kSourceHistoryReplicaDown:
    case Alert::kShardDown:
      return true;
    default:
      return !KindOf(alert).empty();  // the per-role alerts
  }
}

std::string InShard(const Options& options, int shard) {
  if (shard < 0) return "";
  return fmt::format(" and on({}) {}{{job={}}} == {}", IdentityList(options, {"instance"}),
                     kShardOrdinal, PromString(options.exporter_job), shard);
}

std::vector<int> Shards(const Options& options) {
  std::vector<int> shards(std::max(options.total_shards, 1));
  for (std::size_t k = 0; k < shards.size(); ++k) shards[k] = static_cast<int>(k);
  return shards;
}

std::string IdentityList(const Options& options, std::initializer_list<std::string_view> extra) {
  std::string out = "job";
  for (const auto& label : options.identity_labels) out += ", " + label;
  for (auto label : extra) {
    out += ", ";
    out += label;
  }
  return out;
}

std::string GeneratedHeader(const Spec* spec, const Options& options, std::string_view what) {
  std::string identity =
      options.identity_labels.empty()
          ? std::string()
          : fmt::format(", identity labels {}", fmt::join(options.identity_labels, ","));
  if (options.total_shards > 1) AppendFormat(identity, ", {} shards", options.total_shards);
  if (!spec) {
    return fmt::format(
        "# {} generated by schedwatch_rulegen (exporter job {}{}).\n"
        "# The same for every spec: load one copy. Do not edit: generate again.\n",
        what, options.exporter_job, identity);
  }
  std::string file = spec->file.substr(spec->file.rfind('/') + 1);
  return fmt::format(
      "# {} generated by schedwatch_rulegen from {}\n"
      "# (mode {}, exporter job {}{}). Do not edit: change the spec and generate again.\n",
      what, file, ModeName(options.mode), options.exporter_job, identity);
}

std::string_view ModeName(Mode mode) { return mode == Mode::kJoined ? "joined" : "per-role"; }

}  // namespace schedwatch::rulegen
