// The metric contract: every family schedwatch_exporter serves, with its type, labels and help.
// The exposition and the exporter's self-metrics render from it and rulegen writes its PromQL
// with its names, so a rename is one line here. tests/golden/stable-metrics.txt holds the stable
// list; a test fails when a stable metric disappears, changes type or labels, or a new one
// appears unlisted.
#pragma once

#include <array>
#include <string_view>

namespace schedwatch::metrics {

enum class Type { kGauge, kCounter, kHistogram };

struct Metric {
  std::string_view name;
  Type type;
  // Label names in the order the series carry them, comma-separated. Every per-role family
  // starts with `role,source`.
  std::string_view labels;
  std::string_view help;
};

constexpr std::string_view TypeName(Type type) {
  return type == Type::kCounter ? "counter" : type == Type::kHistogram ? "histogram" : "gauge";
}

// Per role, one series per role of the spec (rendered by exporter/exposition/exposition.cc).
inline constexpr Metric kJobActiveObjects{
    "schedwatch_job_active_objects", Type::kGauge, "role,source",
    "Live objects holding the role that are enabled; absent while the source is unknown."};
inline constexpr Metric kJobCondition{
    "schedwatch_job_condition", Type::kGauge, "role,source,condition",
    "1 if the role is in the condition, else 0; one series per condition."};
inline constexpr Metric kJobDriftedObjects{
    "schedwatch_job_drifted_objects", Type::kGauge, "role,source",
    "Live objects holding the role whose schedule, time zone or spec version differs from the "
    "spec."};
inline constexpr Metric kJobGuarded{
    "schedwatch_job_guarded", Type::kGauge, "role,source",
    "1 if schedwatch_run's guard holds copies of the role apart: the latest run was guarded and "
    "its records show skipped duplicates; 0 if not; absent without run records."};
inline constexpr Metric kJobInMaintenance{
    "schedwatch_job_in_maintenance", Type::kGauge, "role,source",
    "1 while one of the role's maintenance windows is open (its alerts are held), else 0; only "
    "for roles with windows."};
inline constexpr Metric kJobInfo{"schedwatch_job_info", Type::kGauge,
                                 "role,source,schedule,timezone,spec_version,...",
                                 "The desired set: one series per role in the spec, value 1."};
inline constexpr Metric kJobLastDuration{
    "schedwatch_job_last_duration_seconds", Type::kGauge, "role,source",
    "Duration of the latest finished run recorded by schedwatch_run."};
inline constexpr Metric kJobLastExitCode{
    "schedwatch_job_last_exit_code", Type::kGauge, "role,source",
    "Exit status of the latest finished run recorded by schedwatch_run (128 + N for signal N)."};
inline constexpr Metric kJobLastFailure{"schedwatch_job_last_failure_timestamp_seconds",
                                        Type::kGauge, "role,source",
                                        "End of the last observed failed run, Unix seconds."};
inline constexpr Metric kJobLastProgress{"schedwatch_job_last_progress_timestamp_seconds",
                                         Type::kGauge, "role,source",
                                         "Time of the role's business checkpoint, Unix seconds."};
inline constexpr Metric kJobLastScheduled{
    "schedwatch_job_last_scheduled_timestamp_seconds", Type::kGauge, "role,source",
    "Most recent fire time of the desired schedule, Unix seconds."};
inline constexpr Metric kJobLastStarted{"schedwatch_job_last_started_timestamp_seconds",
                                        Type::kGauge, "role,source",
                                        "Last observed start of a run, Unix seconds."};
inline constexpr Metric kJobLastSuccess{"schedwatch_job_last_success_timestamp_seconds",
                                        Type::kGauge, "role,source",
                                        "End of the last observed successful run, Unix seconds."};
inline constexpr Metric kJobLedgerMismatch{
    "schedwatch_job_ledger_mismatch", Type::kGauge, "role,source",
    "1 if the ledger's recorded object ID is not among the live objects."};
inline constexpr Metric kJobMaxRuntime{"schedwatch_job_max_runtime_seconds", Type::kGauge,
                                       "role,source",
                                       "Longest a run may take before it counts as hung."};
inline constexpr Metric kJobNextScheduled{"schedwatch_job_next_scheduled_timestamp_seconds",
                                          Type::kGauge, "role,source",
                                          "Next fire time of the desired schedule, Unix seconds."};
inline constexpr Metric kJobPeriod{
    "schedwatch_job_period_seconds", Type::kGauge, "role,source",
    "Longest gap between consecutive fire times of the schedule over a year."};
inline constexpr Metric kJobProgressStaleAfter{
    "schedwatch_job_progress_stale_after_seconds", Type::kGauge, "role,source",
    "How old the business checkpoint may get while success is fresh."};
inline constexpr Metric kJobRegisteredObjects{
    "schedwatch_job_registered_objects", Type::kGauge, "role,source",
    "Live objects holding the role (0 missing, more than 1 duplicate); absent while the source is "
    "unknown."};
inline constexpr Metric kJobRunningSince{
    "schedwatch_job_running_since_timestamp_seconds", Type::kGauge, "role,source",
    "Start of the oldest run still going, Unix seconds; absent when none runs."};
inline constexpr Metric kJobRunDuration{
    "schedwatch_job_run_duration_seconds", Type::kHistogram, "role,source",
    "Durations of the finished runs counted in schedwatch_job_runs_total, for jobs with "
    "duration_histogram: true."};
inline constexpr Metric kJobRuns{
    "schedwatch_job_runs_total", Type::kCounter, "role,source,outcome",
    "Finished runs the exporter saw in the source's run history, each counted once when first "
    "seen finished, by outcome (success, failure); only for roles whose source showed runs."};
inline constexpr Metric kJobStaleAfter{
    "schedwatch_job_stale_after_seconds", Type::kGauge, "role,source",
    "Staleness threshold in force: the override, else 2 x period + max_runtime."};
inline constexpr Metric kJobDuplicateRunsPrevented{
    "schedwatch_job_duplicate_runs_prevented_total", Type::kCounter, "role,source",
    "Runs schedwatch_run skipped because another copy of the role held its guard (from its "
    "skipped records)."};

// The exporter about itself and its sources (exporter/exposition/self_metrics.cc).
inline constexpr Metric kBuildInfo{
    "schedwatch_exporter_build_info", Type::kGauge, "branch,compiler,platform,revision,version",
    "A metric with a constant '1' value labeled by version, revision, branch, compiler and "
    "platform from which schedwatch_exporter was built."};
inline constexpr Metric kClockStep{
    "schedwatch_exporter_clock_step_seconds", Type::kGauge, "",
    "How far the wall clock moved against the monotonic clock in the last step the exporter saw "
    "(positive forward), seconds; absent until one is seen."};
inline constexpr Metric kClockStepTime{"schedwatch_exporter_clock_step_timestamp_seconds",
                                       Type::kGauge, "",
                                       "Unix time of the first refresh after the last clock step."};
inline constexpr Metric kReloadSuccessTime{
    "schedwatch_exporter_config_last_reload_success_timestamp_seconds", Type::kGauge, "",
    "Unix time of the last successful spec (re)load."};
inline constexpr Metric kReloadSuccessful{"schedwatch_exporter_config_last_reload_successful",
                                          Type::kGauge, "",
                                          "1 if the last spec (re)load succeeded, else 0."};
inline constexpr Metric kReconcileLockUnavailable{
    "schedwatch_reconcile_lock_unavailable", Type::kGauge, "",
    "1 if the last reconcile --apply the exporter ran could not take its lock (another holder, or "
    "a lock directory other users can write), else 0; absent without --reconcile.on-start."};
inline constexpr Metric kStatusPages{
    "schedwatch_exporter_status_pages_total", Type::kCounter, "outcome",
    "Status pages and JSON (/ and /api/v1/status) asked for, by outcome: rendered, cached (the "
    "bytes of an earlier rendering of the same roles in this refresh), refused (503: no room "
    "within the page budget, or too many waiting)."};
inline constexpr Metric kHttpRequestsLimited{
    "schedwatch_exporter_http_requests_limited_total", Type::kCounter, "",
    "Requests answered 429 by the web configuration's rate_limit (scrapes that pass "
    "authentication are never limited)."};
inline constexpr Metric kLastCycle{
    "schedwatch_exporter_last_cycle_timestamp_seconds", Type::kGauge, "",
    "End of the last complete refresh, Unix seconds: the watcher's own heartbeat."};
inline constexpr Metric kSourceErrors{"schedwatch_source_errors_total", Type::kCounter,
                                      "reason,source",
                                      "Failed lists and malformed items, by reason."};
inline constexpr Metric kSourceLastSync{"schedwatch_source_last_sync_timestamp_seconds",
                                        Type::kGauge, "source",
                                        "End of the source's last successful list, Unix seconds."};
inline constexpr Metric kSourceReadFloor{
    "schedwatch_source_read_floor_seconds", Type::kGauge, "source",
    "Least time between two real reads of a rate-limited API: min_interval, or more when the last "
    "read's cost asks for it to stay within half of the API's limits."};
inline constexpr Metric kSourceRateLimitRemaining{
    "schedwatch_source_rate_limit_remaining", Type::kGauge, "source",
    "Requests left in the API's primary rate-limit window, from the last answer's "
    "x-ratelimit-remaining."};
inline constexpr Metric kSourceRequests{
    "schedwatch_source_requests_total", Type::kCounter, "outcome,source",
    "API requests the source sent, retries included, by outcome: the HTTP status (304: answered "
    "from the cache, free of GitHub's primary limit) or error when no answer came."};
inline constexpr Metric kSourceSyncDuration{
    "schedwatch_source_sync_duration_seconds", Type::kGauge, "source",
    "Duration of the source's last list, confirming re-read included."};
inline constexpr Metric kSourceUnownedObjects{
    "schedwatch_source_unowned_objects", Type::kGauge, "source",
    "Objects carrying the schedwatch marker whose role is not in the spec."};
inline constexpr Metric kSourceHistoryUp{
    "schedwatch_source_history_up", Type::kGauge, "source,type",
    "1 if the source's last read got its run history, else 0: with schedwatch_source_up 1 the "
    "roles' existence is judged and their runs are unknown."};
inline constexpr Metric kSourceUp{"schedwatch_source_up", Type::kGauge, "source,type",
                                  "1 if the source's last list succeeded, else 0."};
inline constexpr Metric kShardOrdinal{
    "schedwatch_exporter_shard_ordinal", Type::kGauge, "",
    "Which shard of the spec this exporter watches (--shard), 0 when unsharded."};
inline constexpr Metric kTotalShards{
    "schedwatch_exporter_total_shards", Type::kGauge, "",
    "How many shards the spec is split into (--total-shards), 1 when unsharded."};
inline constexpr Metric kSpecRoles{"schedwatch_exporter_spec_roles", Type::kGauge, "",
                                   "Roles in the whole spec, every shard's."};
inline constexpr Metric kShardRoles{
    "schedwatch_exporter_shard_roles", Type::kGauge, "",
    "Roles this exporter watches: those of its shard (all of the spec's when unsharded)."};

// Every family above, by name.
inline constexpr std::array<const Metric*, 46> kAll = {&kJobActiveObjects,
                                                       &kJobCondition,
                                                       &kJobDriftedObjects,
                                                       &kJobDuplicateRunsPrevented,
                                                       &kJobGuarded,
                                                       &kJobInfo,
                                                       &kJobInMaintenance,
                                                       &kJobLastDuration,
                                                       &kJobLastExitCode,
                                                       &kJobLastFailure,
                                                       &kJobLastProgress,
                                                       &kJobLastScheduled,
                                                       &kJobLastStarted,
                                                       &kJobLastSuccess,
                                                       &kJobLedgerMismatch,
                                                       &kJobMaxRuntime,
                                                       &kJobNextScheduled,
                                                       &kJobPeriod,
                                                       &kJobProgressStaleAfter,
                                                       &kJobRegisteredObjects,
                                                       &kJobRunDuration,
                                                       &kJobRunningSince,
                                                       &kJobRuns,
                                                       &kJobStaleAfter,
                                                       &kBuildInfo,
                                                       &kClockStep,
                                                       &kClockStepTime,
                                                       &kReloadSuccessTime,
                                                       &kReloadSuccessful,
                                                       &kLastCycle,
                                                       &kStatusPages,
                                                       &kReconcileLockUnavailable,
                                                       &kSourceErrors,
                                                       &kSourceHistoryUp,
                                                       &kSourceLastSync,
                                                       &kSourceRateLimitRemaining,
                                                       &kSourceReadFloor,
                                                       &kSourceRequests,
                                                       &kSourceSyncDuration,
                                                       &kSourceUnownedObjects,
                                                       &kSourceUp,
                                                       &kHttpRequestsLimited,
                                                       &kShardOrdinal,
                                                       &kTotalShards,
                                                       &kSpecRoles,
                                                       &kShardRoles};

}  // namespace schedwatch::metrics
