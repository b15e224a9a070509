#include "exporter/exposition.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <optional>

#include "schedwatch/metrics.h"

namespace schedwatch {
namespace {

using Value = std::optional<double>;

template <typename Optional>
Value Maybe(const Optional& value) {
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
      {&metrics::kJobGuarded, [](const RoleResult& r) { return Maybe(r.Records().guarded); }},
      {&metrics::kJobInMaintenance,
       [](const RoleResult& r) {
         return r.job->Alerting().maintenance.empty()
                    ? std::nullopt
                    : Value(r.status.maintenance_until ? 1.0 : 0.0);
       }},
      {&metrics::kJobLastDuration,
       [](const RoleResult& r) { return Maybe(r.Records().last_duration); }},
      {&metrics::kJobLastExitCode,
       [](const RoleResult& r) { return Maybe(r.Records().last_exit_code); }},
      {&metrics::kJobLastFailure,
       [](const RoleResult& r) { return Maybe(r.status.history.last_failure); }},
      {&metrics::kJobLastProgress,
       [](const RoleResult& r) {
         return r.job->progress() ? Maybe(r.status.last_progress) : std::nullopt;
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
         return r.job->progress() ? Value(static_cast<double>(r.job->progress()->stale_after))
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

// `value` as fmt's "{}" writes it; whole numbers (timestamps, seconds, counts: nearly every
// sample) without fmt's format parsing and float printing.
void AppendValue(std::string& out, double value) {
  if (value == std::trunc(value) && std::fabs(value) < 1e15 &&
      !(value == 0 && std::signbit(value))) {
    fmt::format_int digits(static_cast<long long>(value));
    out.append(digits.data(), digits.size());
  } else {
    fmt::format_to(std::back_inserter(out), "{}", value);
  }
}

void AppendValue(std::string& out, std::uint64_t value) {
  fmt::format_int digits(value);
  out.append(digits.data(), digits.size());
}

void Header(std::string& out, const metrics::Metric& metric) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", metric.name, metric.help,
                 metric.name, metrics::TypeName(metric.type));
}

}  // namespace

void AppendEscapedLabelValue(std::string& out, std::string_view value) {
  // Runs without a character to escape are appended whole (most values have none).
  for (;;) {
    std::size_t at = value.find_first_of("\\\"\n");
    out.append(value.substr(0, at));
    if (at == std::string_view::npos) return;
    out += value[at] == '\n' ? "\\n" : value[at] == '"' ? "\\\"" : "\\\\";
    value.remove_prefix(at + 1);
  }
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  AppendEscapedLabelValue(out, value);
  return out;
}

void RenderRoleMetrics(const RefreshResult& result, ChunkedTextWriter& writer) {
  std::string& out = writer.buffer();
  // `name{role="x",source="y"`: the identity labels every series carries, written in place
  // (not kept per role: at 100,000 roles that list alone was 8 MB).
  auto job_series = [&](std::string_view name, const JobSpec& job) {
    out += name;
    out += "{role=\"";
    AppendEscapedLabelValue(out, job.role);
    out += "\",source=\"";
    AppendEscapedLabelValue(out, job.source);
    out += '"';
  };
  auto series = [&](const metrics::Metric& metric, std::size_t i) {
    job_series(metric.name, *result.roles[i].job);
  };
  auto gauge_family = [&](const RoleGauge& gauge) {
    bool header = false;
    for (std::size_t i = 0; i < result.roles.size(); ++i) {
      Value value = gauge.value(result.roles[i]);
      if (!value) continue;
      if (!header) Header(out, *gauge.metric);
      header = true;
      series(*gauge.metric, i);
      out += "} ";
      AppendValue(out, *value);
      out += '\n';
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
      const auto& conditions = result.roles[i].status.conditions;
      for (int c = 0; c < kConditionCount; ++c) {
        series(metrics::kJobCondition, i);
        out += ",condition=\"";
        out += ConditionNames()[c];
        out += conditions.test(c) ? "\"} 1\n" : "\"} 0\n";
        writer.EndOfLine();
      }
    }
  }
  gauges_before(metrics::kJobInfo.name);
  if (!result.roles.empty()) {
    Header(out, metrics::kJobInfo);
    for (std::size_t i = 0; i < result.roles.size(); ++i) {
      const JobSpec& job = *result.roles[i].job;
      series(metrics::kJobInfo, i);
      out += ",schedule=\"";
      AppendEscapedLabelValue(out, job.schedule.text());
      out += "\",timezone=\"";
      AppendEscapedLabelValue(out, job.timezone);
      out += "\",spec_version=\"";
      AppendEscapedLabelValue(out, job.spec_version);
      out += '"';
      // The spec's labels (`labels:`) here only, as kube-state-metrics' kube_cronjob_labels.
      for (const auto& [name, value] : job.Alerting().labels) {
        out += ',';
        out += name;
        out += "=\"";
        AppendEscapedLabelValue(out, value);
        out += '"';
      }
      out += "} 1\n";
      writer.EndOfLine();
    }
  }
  gauges_before(metrics::kJobRunDuration.name);
  if (!result.durations.empty()) {
    const metrics::Metric& metric = metrics::kJobRunDuration;
    Header(out, metric);
    const std::string bucket = std::string(metric.name) + "_bucket";
    const std::string sum = std::string(metric.name) + "_sum";
    const std::string count_name = std::string(metric.name) + "_count";
    for (const RoleDurations& role : result.durations) {
      const DurationHistogram& histogram = *role.histogram;
      std::uint64_t count = 0;
      for (std::size_t b = 0; b < histogram.counts.size(); ++b) {
        count += histogram.counts[b];
        job_series(bucket, *role.job);
        if (b < kRunDurationBuckets.size()) {
          fmt::format_to(std::back_inserter(out), ",le=\"{}\"}} {}\n", kRunDurationBuckets[b],
                         count);
        } else {
          fmt::format_to(std::back_inserter(out), ",le=\"+Inf\"}} {}\n", count);
        }
        writer.EndOfLine();
      }
      job_series(sum, *role.job);
      fmt::format_to(std::back_inserter(out), "}} {}\n", histogram.sum);
      writer.EndOfLine();
      job_series(count_name, *role.job);
      fmt::format_to(std::back_inserter(out), "}} {}\n", count);
      writer.EndOfLine();
    }
  }
  gauges_before(metrics::kJobRuns.name);
  bool runs_header = false;
  for (std::size_t i = 0; i < result.roles.size(); ++i) {
    const RoleResult& role = result.roles[i];
    if (!role.runs && role.run_counts.empty()) continue;  // its source showed no run
    if (!runs_header) Header(out, metrics::kJobRuns);
    runs_header = true;
    series(metrics::kJobRuns, i);
    out += ",outcome=\"failure\"} ";
    AppendValue(out, std::uint64_t{role.run_counts.failed});
    out += '\n';
    writer.EndOfLine();
    series(metrics::kJobRuns, i);
    out += ",outcome=\"success\"} ";
    AppendValue(out, std::uint64_t{role.run_counts.succeeded});
    out += '\n';
    writer.EndOfLine();
  }
  gauges_before("~");  // the rest
}

}  // namespace schedwatch
