// The JSON API: /api/v1/status (every role, or those with a label) and /api/v1/roles/<role>.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <numeric>

#include "exporter/pages/status_page.h"
#include "exporter/pages/status_page_parts.h"
#include "exporter/pages/timeline.h"
#include "schedwatch/duration.h"
#include "schedwatch/platform/http_client.h"
#include "schedwatch/timefmt.h"

namespace schedwatch {

namespace {

// /api/v1/status at 10,000 roles stays a few MB; /api/v1/roles/<role> has all that is kept.
constexpr std::size_t kStatusRunsPerRole = 5;

nlohmann::json Maybe(const std::optional<std::int64_t>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// A job's windows, the one open now and the next: null for a job without windows.
nlohmann::json MaintenanceJson(const JobSpec& job, const RoleStatus& status, std::int64_t now) {
  const MaintenanceWindows& windows = job.Alerting().maintenance;
  if (windows.empty()) return nullptr;
  nlohmann::json texts = nlohmann::json::array();
  for (const auto& window : windows) texts.push_back(window.text);
  nlohmann::json next = nullptr;
  if (auto span = NextWindow(windows, status.maintenance_until.value_or(now))) {
    next = {{"from", span->start}, {"to", span->end}};
  }
  return {{"open_until", Maybe(status.maintenance_until)}, {"next", next}, {"windows", texts}};
}

nlohmann::json LabelsJson(const JobSpec& job) {
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [name, value] : job.Alerting().labels) labels[name] = value;
  return labels;
}

// The newest `limit` runs, newest first.
nlohmann::json RunsJson(const RoleResult& role, const SourceSpec* source, std::int64_t now,
                        std::size_t limit) {
  nlohmann::json runs = nlohmann::json::array();
  if (!role.runs) return runs;
  for (auto it = role.runs->rbegin(); it != role.runs->rend() && runs.size() < limit; ++it) {
    runs.push_back({{"started", it->started},
                    {"finished", Maybe(it->finished())},
                    {"duration_seconds",
                     it->duration < 0 ? nlohmann::json(nullptr) : nlohmann::json(it->duration)},
                    {"outcome", RunOutcomeName(*it, *role.job, now)},
                    {"from", RunOriginText(source, it->origin)}});
  }
  return runs;
}

nlohmann::json RoleJson(const RefreshResult& result, const RoleResult& role,
                        const PageOptions& options, bool detailed) {
  const RoleStatus& status = role.status;
  const JobSpec& job = *role.job;
  std::int64_t now = result.time;
  nlohmann::json conditions = nlohmann::json::array();
  for (int c = 0; c < kConditionCount; ++c) {
    if (status.conditions.test(c)) conditions.push_back(ConditionNames()[c]);
  }
  nlohmann::json objects = nlohmann::json::array();
  for (const auto& object : role.objects) {
    objects.push_back({{"id", object.id()},
                       {"schedule", object.schedule()},
                       {"timezone", object.timezone()},
                       {"spec_version", object.spec_version()},
                       {"enabled", object.enabled},
                       {"drift_fields", DriftFields(job, object)}});
    if (!object.state().empty()) objects.back()["state"] = object.state();
  }
  auto or_null = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  const RunRecordFacts& records = role.Records();
  nlohmann::json reasons = nlohmann::json::array();
  for (const auto& reason : ExplainConditions(role, FindSource(result, job.source), now)) {
    reasons.push_back({{"condition", ConditionName(reason.condition)},
                       {"reason", reason.text},
                       {"action", reason.action},
                       {"runbook", RunbookLink(options.runbook_url, reason.alert)}});
    if (reason.held) reasons.back()["held"] = true;
  }
  nlohmann::json out = {{"role", job.role},
                        {"source", job.source},
                        {"schedule", job.schedule.text()},
                        {"timezone", job.timezone},
                        {"spec_version", job.spec_version},
                        {"labels", LabelsJson(job)},
                        {"conditions", conditions},
                        {"registered_objects", or_null(status.registered_objects)},
                        {"active_objects", or_null(status.active_objects)},
                        {"drifted_objects", or_null(status.drifted_objects)},
                        {"last_scheduled", Maybe(status.last_scheduled)},
                        {"next_scheduled", Maybe(status.next_scheduled)},
                        {"last_started", Maybe(status.history.last_started)},
                        {"last_success", Maybe(status.history.last_success)},
                        {"last_failure", Maybe(status.history.last_failure)},
                        {"running_since", Maybe(status.history.running_since)},
                        {"last_progress", Maybe(status.last_progress)},
                        {"stale_after_seconds", Maybe(job.stale_after)},
                        {"last_duration_seconds", or_null(records.last_duration)},
                        {"last_exit_code", or_null(records.last_exit_code)},
                        {"guarded", or_null(records.guarded)},
                        {"run_records", records.run_records},
                        {"skipped_duplicates", records.skipped_duplicates},
                        {"objects", objects},
                        {"reasons", reasons},
                        {"runs", RunsJson(role, FindSourceSpec(result, job.source), now,
                                          detailed ? kRunHistoryKept : kStatusRunsPerRole)}};
  if (!job.Alerting().maintenance.empty()) out["maintenance"] = MaintenanceJson(job, status, now);
  if (auto judgement = FailingJudgementOf(role)) {
    const JobAlerting& alerting = job.Alerting();
    out["failing_judged_from"] = {{"failure_threshold", alerting.failure_threshold},
                                  {"recovery_threshold", alerting.recovery_threshold},
                                  {"finished_runs", judgement->finished_runs},
                                  {"short_history", judgement->short_history}};
  }
  if (!status.in_future().empty()) {
    nlohmann::json in_future = nlohmann::json::array();
    for (const auto& time : status.in_future()) {
      in_future.push_back({{"what", time.what}, {"time", time.time}});
    }
    out["in_future"] = in_future;  // set aside: neither a start nor a success
  }
  if (detailed) {
    nlohmann::json thresholds = nlohmann::json::array();
    for (const auto& threshold : Thresholds(job)) {
      thresholds.push_back({{"name", threshold.name},
                            {"value", threshold.value},
                            {"seconds", Maybe(threshold.seconds)},
                            {"from", threshold.origin}});
    }
    out["now"] = now;
    out["refreshed"] = result.complete ? nlohmann::json(FormatRfc3339(now)) : nullptr;
    out["source_type"] = job.source_type;
    out["template"] = job.template_path();
    out["desired_since"] = status.desired_since;
    out["thresholds"] = thresholds;
    out["progress_file"] = job.progress() ? nlohmann::json(job.progress()->file) : nullptr;
    out["ledger_id"] = status.ledger_id() ? nlohmann::json(*status.ledger_id()) : nullptr;
    out["ledger_mismatch"] =
        status.ledger_mismatch ? nlohmann::json(*status.ledger_mismatch) : nullptr;
  }
  return out;
}

std::string Dump(const nlohmann::json& json) {
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::vector<std::uint32_t> SelectStatusRoles(const RefreshResult& result, std::string_view label) {
  std::vector<std::uint32_t> roles;
  for (std::size_t i = 0; i < result.roles.size(); ++i) {
    if (label.empty() || MatchesLabel(*result.roles[i].job, label)) {
      roles.push_back(static_cast<std::uint32_t>(i));
    }
  }
  roles.shrink_to_fit();
  return roles;
}

bool RenderStatusJson(const RefreshResult& result, const PageOptions& options,
                      const std::vector<std::uint32_t>& roles, const PageSink& sink) {
  nlohmann::json json;
  json["complete"] = result.complete;
  json["shard"] = {{"ordinal", result.shard.ordinal},
                   {"total", result.shard.total},
                   {"roles", result.spec ? result.spec->jobs.size() : 0},
                   {"spec_roles", result.spec_roles}};
  json["refreshed"] = result.complete ? nlohmann::json(FormatRfc3339(result.time)) : nullptr;
  if (result.clock_step) {
    json["clock_step"] = {{"seconds", result.clock_step->seconds}, {"at", result.clock_step->at}};
  }
  json["sources"] = nlohmann::json::array();
  for (const auto& source : result.sources) {
    nlohmann::json problems = nlohmann::json::array();
    for (const auto& problem : source.problems) {
      problems.push_back({{"reason", problem.reason}, {"message", problem.message}});
    }
    json["sources"].push_back({{"source", source.name},
                               {"type", source.type},
                               {"up", source.up},
                               {"error", source.error},
                               {"history_up", source.history_up},
                               {"history_error", source.history_error},
                               {"objects", source.objects},
                               {"unowned_objects", source.unowned_objects},
                               {"last_sync", Maybe(source.last_sync)},
                               {"sync_duration_seconds", source.sync_duration_seconds},
                               {"problems", problems}});
  }
  // The roles are dumped one at a time into their place ("roles" sorts before "sources"): as
  // one document, 100,000 roles took 700 MB while it was built.
  json["roles"] = nlohmann::json::array();
  std::string head = Dump(json);
  const std::string_view kRoles = "\"roles\":[";
  std::size_t at = head.find(kRoles) + kRoles.size();
  if (!sink(std::string_view(head).substr(0, at))) return false;
  bool first = true;
  for (std::uint32_t role : roles) {
    std::string text = first ? "" : ",";
    first = false;
    text += Dump(RoleJson(result, result.roles[role], options, false));
    if (!sink(text)) return false;
  }
  return sink(std::string_view(head).substr(at));
}

std::string RenderStatusJson(const RefreshResult& result, const PageOptions& options,
                             std::string_view label) {
  std::string out;
  RenderStatusJson(result, options, SelectStatusRoles(result, label), [&out](std::string_view t) {
    out += t;
    return true;
  });
  return out;
}

std::optional<std::string> RenderRoleJson(const RefreshResult& result, std::string_view name,
                                          const PageOptions& options) {
  const RoleResult* role = FindRole(result, name);
  if (role == nullptr) return std::nullopt;
  return Dump(RoleJson(result, *role, options, true));
}

}  // namespace schedwatch
