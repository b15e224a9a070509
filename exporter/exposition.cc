#include "exporter/exposition.h"

#include <fmt/format.h>

#include <functional>
#include <optional>

#include "schedwatch/metrics.h"

namespace schedwatch {
namespace {

using Value = std::optional<double>;

template <typename T>
Value Maybe(const std::optional<T>& value) {
  return value ? Value(static_cast<double>(*value)) : std::nullopt;
}

// A family whose samples are one value per role, with only the identity labels.
struct RoleGauge {
  const metrics::Metric* metric;  // name, help and labels from the contract
  std::function<Value(const RoleResult&)> value;
};

const std::vector<RoleGauge>& RoleGauges() {
  static const auto* gauges = new std::vector<RoleGauge>{
      {&metrics::kJobActiveObjects,
       [](const RoleResult& r) { return Maybe(r.status.active_objects); }},
      {&metrics::kJobDriftedObjects,
       [](const RoleResult& r) { return Maybe(r.status.drifted_objects); }},
      {&metrics::kJobGuarded, [](const RoleResult& r) { return Maybe(r.guarded); }},
      {&metrics::kJobLastDuration, [](const RoleResult& r) { return Maybe(r.last_duration); }},
      {&metrics::kJobLastExitCode, [](const RoleResult& r) { return Maybe(r.last_exit_code); }},
      {&metrics::kJobLastFailure,
       [](const RoleResult& r) { return Maybe(r.status.history.last_failure); }},
      {&metrics::kJobLastProgress,
       [](const RoleResult& r) {
         return r.job->progress ? Maybe(r.status.last_progress) : std::nullopt;
       }},
      {&metrics::kJobLastScheduled,
       [](const RoleResult& r) { return Maybe(r.status.last_scheduled); }},
      {&metrics::kJobLastStarted,
       [](const RoleResult& r) { return Maybe(r.status.history.last_started); }},
      {&metrics::kJobLastSuccess,
       [](const RoleResult& r) { return Maybe(r.status.history.last_success); }},
      {&metrics::kJobLedgerMismatch,
       [](const RoleResult& r) { return Maybe(r.status.ledger_mismatch); }},
      {&metrics::kJobMaxRuntime,
       [](const RoleResult& r) { return Value(static_cast<double>(r.job->max_runtime)); }},
      {&metrics::kJobNextScheduled,
       [](const RoleResult& r) { return Maybe(r.status.next_scheduled); }},
      {&metrics::kJobPeriod, [](const RoleResult& r) { return Maybe(r.job->period); }},
      {&metrics::kJobProgressStaleAfter,
       [](const RoleResult& r) {
         return r.job->progress ? Value(static_cast<double>(r.job->progress->stale_after))
                                : std::nullopt;
       }},
      {&metrics::kJobRegisteredObjects,
       [](const RoleResult& r) { return Maybe(r.status.registered_objects); }},
      {&metrics::kJobRunningSince,
       [](const RoleResult& r) { return Maybe(r.status.history.running_since); }},
      {&metrics::kJobStaleAfter, [](const RoleResult& r) { return Maybe(r.job->stale_after); }},
  };
  return *gauges;
}

void Header(std::string& out, const metrics::Metric& metric) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", metric.name, metric.help,
                 metric.name, metrics::TypeName(metric.type));
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
      if (!header) Header(out, *gauge.metric);
      header = true;
      fmt::format_to(std::back_inserter(out), "{}{{{}}} {}\n", gauge.metric->name, identity[i],
                     *value);
      writer.EndOfLine();
    }
  };

  // Families in name order: the declared gauges, with condition and info slotted in.
  const auto& gauges = RoleGauges();
  std::size_t next = 0;
  auto gauges_before = [&](std::string_view name) {
    for (; next < gauges.size() && gauges[next].metric->name < name; ++next) {
      gauge_family(gauges[next]);
    }
  };

  gauges_before(metrics::kJobCondition.name);
  if (!result.roles.empty()) {
    Header(out, metrics::kJobCondition);
    for (std::size_t i = 0; i < result.roles.size(); ++i) {
      for (int c = 0; c < kConditionCount; ++c) {
        fmt::format_to(std::back_inserter(out), "{}{{{},condition=\"{}\"}} {}\n",
                       metrics::kJobCondition.name, identity[i], ConditionNames()[c],
                       result.roles[i].status.conditions.test(c) ? 1 : 0);
        writer.EndOfLine();
      }
    }
  }
  gauges_before(metrics::kJobInfo.name);
  if (!result.roles.empty()) {
    Header(out, metrics::kJobInfo);
    for (std::size_t i = 0; i < result.roles.size(); ++i) {
      const JobSpec& job = *result.roles[i].job;
      fmt::format_to(std::back_inserter(out),
                     "{}{{{},schedule=\"{}\",timezone=\"{}\",spec_version=\"{}\"}} 1\n",
                     metrics::kJobInfo.name, identity[i], EscapeLabelValue(job.schedule.text()),
                     EscapeLabelValue(job.timezone), EscapeLabelValue(job.spec_version));
      writer.EndOfLine();
    }
  }
  gauges_before("~");  // the rest
}

}  // namespace schedwatch
