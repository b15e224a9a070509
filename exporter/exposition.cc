#include "exporter/exposition.h"

#include <fmt/format.h>

#include <functional>
#include <optional>

namespace schedwatch {
namespace {

using Value = std::optional<double>;

template <typename T>
Value Maybe(const std::optional<T>& value) {
  return value ? Value(static_cast<double>(*value)) : std::nullopt;
}

// A family whose samples are one value per role, with only the identity labels.
struct RoleGauge {
  std::string_view name;
  std::string_view help;
  std::function<Value(const RoleResult&)> value;
};

const std::vector<RoleGauge>& RoleGauges() {
  static const auto* gauges = new std::vector<RoleGauge>{
      {"schedwatch_job_active_objects",
       "Live objects holding the role that are enabled; absent while the source is unknown.",
       [](const RoleResult& r) { return Maybe(r.status.active_objects); }},
      {"schedwatch_job_drifted_objects",
       "Live objects holding the role whose schedule, time zone or spec version differs from the "
       "spec.",
       [](const RoleResult& r) { return Maybe(r.status.drifted_objects); }},
      {"schedwatch_job_guarded",
       "1 if schedwatch_run's guard holds copies of the role apart: the latest run was guarded "
       "and its records show skipped duplicates; 0 if not; absent without run records.",
       [](const RoleResult& r) { return Maybe(r.guarded); }},
      {"schedwatch_job_last_duration_seconds",
       "Duration of the latest finished run recorded by schedwatch_run.",
       [](const RoleResult& r) { return Maybe(r.last_duration); }},
      {"schedwatch_job_last_exit_code",
       "Exit status of the latest finished run recorded by schedwatch_run (128 + N for signal "
       "N).",
       [](const RoleResult& r) { return Maybe(r.last_exit_code); }},
      {"schedwatch_job_last_failure_timestamp_seconds",
       "End of the last observed failed run, Unix seconds.",
       [](const RoleResult& r) { return Maybe(r.status.history.last_failure); }},
      {"schedwatch_job_last_progress_timestamp_seconds",
       "Time of the role's business checkpoint, Unix seconds.",
       [](const RoleResult& r) {
         return r.job->progress ? Maybe(r.status.last_progress) : std::nullopt;
       }},
      {"schedwatch_job_last_scheduled_timestamp_seconds",
       "Most recent fire time of the desired schedule, Unix seconds.",
       [](const RoleResult& r) { return Maybe(r.status.last_scheduled); }},
      {"schedwatch_job_last_started_timestamp_seconds",
       "Last observed start of a run, Unix seconds.",
       [](const RoleResult& r) { return Maybe(r.status.history.last_started); }},
      {"schedwatch_job_last_success_timestamp_seconds",
       "End of the last observed successful run, Unix seconds.",
       [](const RoleResult& r) { return Maybe(r.status.history.last_success); }},
      {"schedwatch_job_ledger_mismatch",
       "1 if the ledger's recorded object ID is not among the live objects.",
       [](const RoleResult& r) { return Maybe(r.status.ledger_mismatch); }},
      {"schedwatch_job_max_runtime_seconds", "Longest a run may take before it counts as hung.",
       [](const RoleResult& r) { return Value(static_cast<double>(r.job->max_runtime)); }},
      {"schedwatch_job_next_scheduled_timestamp_seconds",
       "Next fire time of the desired schedule, Unix seconds.",
       [](const RoleResult& r) { return Maybe(r.status.next_scheduled); }},
      {"schedwatch_job_period_seconds",
       "Longest gap between consecutive fire times of the schedule over a year.",
       [](const RoleResult& r) { return Maybe(r.job->period); }},
      {"schedwatch_job_progress_stale_after_seconds",
       "How old the business checkpoint may get while success is fresh.",
       [](const RoleResult& r) {
         return r.job->progress ? Value(static_cast<double>(r.job->progress->stale_after))
                                : std::nullopt;
       }},
      {"schedwatch_job_registered_objects",
       "Live objects holding the role (0 missing, more than 1 duplicate); absent while the source "
       "is unknown.",
       [](const RoleResult& r) { return Maybe(r.status.registered_objects); }},
      {"schedwatch_job_running_since_timestamp_seconds",
       "Start of the oldest run still going, Unix seconds; absent when none runs.",
       [](const RoleResult& r) { return Maybe(r.status.history.running_since); }},
      {"schedwatch_job_stale_after_seconds",
       "Staleness threshold in force: the override, else 2 x period + max_runtime.",
       [](const RoleResult& r) { return Maybe(r.job->stale_after); }},
  };
  return *gauges;
}

void Header(std::string& out, std::string_view name, std::string_view help) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} gauge\n", name, help, name);
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void RenderRoleMetrics(const RefreshResult& result, ChunkedTextWriter& writer) {
  std::string& out = writer.buffer();
  // `role="x",source="y"` once per role: the identity labels every series carries.
  std::vector<std::string> identity;
  identity.reserve(result.roles.size());
  for (const auto& role : result.roles) {
    identity.push_back(fmt::format("role=\"{}\",source=\"{}\"", EscapeLabelValue(role.job->role),
                                   EscapeLabelValue(role.job->source)));
  }
  auto gauge_family = [&](const RoleGauge& gauge) {
    bool header = false;
    for (std::size_t i = 0; i < result.roles.size(); ++i) {
      Value value = gauge.value(result.roles[i]);
      if (!value) continue;
      if (!header) Header(out, gauge.name, gauge.help);
      header = true;
      fmt::format_to(std::back_inserter(out), "{}{{{}}} {}\n", gauge.name, identity[i], *value);
      writer.EndOfLine();
    }
  };

  // Families in name order: the declared gauges, with condition and info slotted in.
  const auto& gauges = RoleGauges();
  std::size_t next = 0;
  auto gauges_before = [&](std::string_view name) {
    for (; next < gauges.size() && gauges[next].name < name; ++next) gauge_family(gauges[next]);
  };

  gauges_before("schedwatch_job_condition");
  if (!result.roles.empty()) {
    Header(out, "schedwatch_job_condition",
           "1 if the role is in the condition, else 0; one series per "
           "condition.");
    for (std::size_t i = 0; i < result.roles.size(); ++i) {
      for (int c = 0; c < kConditionCount; ++c) {
        fmt::format_to(std::back_inserter(out),
                       "schedwatch_job_condition{{{},condition=\"{}\"}} {}\n", identity[i],
                       ConditionNames()[c], result.roles[i].status.conditions.test(c) ? 1 : 0);
        writer.EndOfLine();
      }
    }
  }
  gauges_before("schedwatch_job_info");
  if (!result.roles.empty()) {
    Header(out, "schedwatch_job_info",
           "The desired set: one series per role in the spec, value 1.");
    for (std::size_t i = 0; i < result.roles.size(); ++i) {
      const JobSpec& job = *result.roles[i].job;
      fmt::format_to(
          std::back_inserter(out),
          "schedwatch_job_info{{{},schedule=\"{}\",timezone=\"{}\",spec_version=\"{}\"}} 1\n",
          identity[i], EscapeLabelValue(job.schedule.expression().text()),
          EscapeLabelValue(job.timezone), EscapeLabelValue(job.spec_version));
      writer.EndOfLine();
    }
  }
  gauges_before("~");  // the rest
}

}  // namespace schedwatch
