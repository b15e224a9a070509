#include "exporter/exposition/exposition.h"

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

// A counter's family name in OpenMetrics: its samples' name without `_total`.
std::string_view FamilyName(const metrics::Metric& metric, const ExpositionForm& form) {
  std::string_view name = metric.name;
  constexpr std::string_view kTotal = "_total";
  if (form.open_metrics && metric.type == metrics::Type::kCounter && name.size() > kTotal.size() &&
      name.substr(name.size() - kTotal.size()) == kTotal) {
    name.remove_suffix(kTotal.size());
  }
  return name;
}

// The characters of `text` if it is UTF-8 without control characters, quotes or backslashes,
// else nullopt. Prometheus (2.42, and its OpenMetrics parser since) keeps an exemplar's label
// values as written, escapes and all: a value that needs one would read back as another.
std::optional<std::size_t> LabelChars(std::string_view text) {
  std::size_t chars = 0;
  for (std::size_t i = 0; i < text.size(); ++chars) {
    auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    unsigned char lead = byte(i);
    std::size_t length = lead < 0x80                    ? 1
                         : lead >= 0xC2 && lead <= 0xDF ? 2
                         : lead >= 0xE0 && lead <= 0xEF ? 3
                         : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                        : 0;
    if (length == 0 || i + length > text.size()) return std::nullopt;
    if (length == 1 && (lead < 0x20 || lead == 0x7F || lead == '"' || lead == '\\')) {
      return std::nullopt;
    }
    for (std::size_t k = 1; k < length; ++k) {
      if ((byte(i + k) & 0xC0) != 0x80) return std::nullopt;
    }
    // Overlong three- and four-byte forms, surrogates, and past U+10FFFF.
    if ((lead == 0xE0 && byte(i + 1) < 0xA0) || (lead == 0xED && byte(i + 1) > 0x9F) ||
        (lead == 0xF0 && byte(i + 1) < 0x90) || (lead == 0xF4 && byte(i + 1) > 0x8F)) {
      return std::nullopt;
    }
    i += length;
  }
  return chars;
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

}  // namespace

void AppendExemplar(std::string& out, const RunExemplar& exemplar, double value) {
  // OpenMetrics 1.0: an exemplar's label names and values hold at most 128 UTF-8 characters.
  constexpr std::size_t kLimit = 128;
  constexpr std::string_view kId = "run_id", kUrl = "run_url";
  const RunIdentity& identity = *exemplar.identity;
  auto id = LabelChars(identity.id);
  if (!id || *id == 0 || kId.size() + *id > kLimit) return;  // a cut id would name another run
  auto url = LabelChars(identity.url);
  bool with_url = url && *url > 0 && kId.size() + *id + kUrl.size() + *url <= kLimit;
  out += " # {run_id=\"";
  out += identity.id;  // nothing to escape: LabelChars
  if (with_url) out.append("\",run_url=\"").append(identity.url);
  fmt::format_to(std::back_inserter(out), "\"}} {} {}", value, exemplar.finished);
}

void AppendHeader(std::string& out, const metrics::Metric& metric, const ExpositionForm& form) {
  std::string_view family = FamilyName(metric, form);
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", family, metric.help,
                 family, metrics::TypeName(metric.type));
  if (!form.open_metrics) return;
  for (std::string_view unit : {"seconds", "bytes"}) {
    if (family.size() > unit.size() && family.substr(family.size() - unit.size()) == unit &&
        family[family.size() - unit.size() - 1] == '_') {
      fmt::format_to(std::back_inserter(out), "# UNIT {} {}\n", family, unit);
    }
  }
}

std::string CreatedName(const metrics::Metric& metric) {
  return std::string(FamilyName(metric, {true, 0})) + "_created";
}

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

void RenderRoleMetrics(const RefreshResult& result, const ExpositionForm& form,
                       ChunkedTextWriter& writer) {
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
      if (!header) AppendHeader(out, *gauge.metric, form);
      header = true;
      series(*gauge.metric, i);
      out += "} ";
      AppendValue(out, *value);
      out += '\n';
      writer.EndOfLine();
    }
  };

  // A role's exemplars (OpenMetrics only): result.exemplars is sorted by role, as the roles and
  // durations are, and each is asked for in that order.
  std::size_t next_exemplar = 0;
  auto exemplars = [&](const JobSpec& job) -> const RunExemplars* {
    if (!form.open_metrics) return nullptr;
    const auto& list = result.exemplars;
    if (next_exemplar > 0 && list[next_exemplar - 1].job->role >= job.role) next_exemplar = 0;
    while (next_exemplar < list.size() && list[next_exemplar].job->role < job.role) {
      ++next_exemplar;
    }
    if (next_exemplar < list.size() && list[next_exemplar].job == &job) {
      return list[next_exemplar++].exemplars.get();
    }
    return nullptr;
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
    AppendHeader(out, metrics::kJobCondition, form);
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
    AppendHeader(out, metrics::kJobInfo, form);
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
    AppendHeader(out, metric, form);
    const std::string bucket = std::string(metric.name) + "_bucket";
    const std::string sum = std::string(metric.name) + "_sum";
    const std::string count_name = std::string(metric.name) + "_count";
    const std::string created = CreatedName(metric);
    for (const RoleDurations& role : result.durations) {
      const DurationHistogram& histogram = *role.histogram;
      // The newest named run, on the bucket its duration was counted in.
      const RunExemplars* named = exemplars(*role.job);
      const std::optional<RunExemplar>* newest = named ? &named->newest() : nullptr;
      std::size_t exemplar_bucket = histogram.counts.size();
      if (newest && *newest) exemplar_bucket = DurationBucket((*newest)->duration);
      std::uint64_t count = 0;
      for (std::size_t b = 0; b < histogram.counts.size(); ++b) {
        count += histogram.counts[b];
        job_series(bucket, *role.job);
        if (b < kRunDurationBuckets.size()) {
          fmt::format_to(std::back_inserter(out), ",le=\"{}\"}} {}", kRunDurationBuckets[b], count);
        } else {
          fmt::format_to(std::back_inserter(out), ",le=\"+Inf\"}} {}", count);
        }
        if (b == exemplar_bucket) {
          AppendExemplar(out, **newest, static_cast<double>((*newest)->duration));
        }
        out += '\n';
        writer.EndOfLine();
      }
      job_series(sum, *role.job);
      fmt::format_to(std::back_inserter(out), "}} {}\n", histogram.sum);
      writer.EndOfLine();
      job_series(count_name, *role.job);
      fmt::format_to(std::back_inserter(out), "}} {}\n", count);
      writer.EndOfLine();
      if (form.open_metrics) {
        job_series(created, *role.job);
        fmt::format_to(std::back_inserter(out), "}} {}\n", form.counting_since);
        writer.EndOfLine();
      }
    }
  }
  gauges_before(metrics::kJobRuns.name);
  bool runs_header = false;
  const std::string runs_created = CreatedName(metrics::kJobRuns);
  for (std::size_t i = 0; i < result.roles.size(); ++i) {
    const RoleResult& role = result.roles[i];
    if (!role.runs && role.run_counts.empty()) continue;  // its source showed no run
    if (!runs_header) AppendHeader(out, metrics::kJobRuns, form);
    runs_header = true;
    const RunExemplars* named = exemplars(*role.job);
    for (auto [outcome, count] : {std::pair{"failure", role.run_counts.failed},
                                  std::pair{"success", role.run_counts.succeeded}}) {
      series(metrics::kJobRuns, i);
      out += ",outcome=\"";
      out += outcome;
      out += "\"} ";
      AppendValue(out, std::uint64_t{count});
      if (named) {
        const auto& newest = outcome[0] == 's' ? named->succeeded : named->failed;
        if (newest) AppendExemplar(out, *newest, 1);  // one run
      }
      out += '\n';
      writer.EndOfLine();
      if (form.open_metrics) {
        job_series(runs_created, *role.job);
        fmt::format_to(std::back_inserter(out), ",outcome=\"{}\"}} {}\n", outcome,
                       form.counting_since);
        writer.EndOfLine();
      }
    }
  }
  gauges_before("~");  // the rest
}

}  // namespace schedwatch
