#include "exporter/exposition/self_metrics.h"

#include <charconv>
#include <cmath>
#include <set>
#include <string_view>

#include "exporter/exposition/exposition.h"
#include "schedwatch/build_info.h"
#include "schedwatch/metrics.h"

namespace schedwatch {
namespace {

using metrics::Metric;

// Shortest text that reads back as the same double, as the Prometheus client libraries write.
void AppendValue(double value, std::string& out) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value < 0 ? "-Inf" : "+Inf";
  } else {
    char buffer[64];
    auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
    (void)error;  // 64 bytes hold any double
    out.append(buffer, end);
  }
}

using Labels = std::vector<std::pair<std::string_view, std::string_view>>;

void Series(std::string_view name, const Labels& labels, double value, std::string& out) {
  out += name;
  if (!labels.empty()) {
    out += '{';
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) out += ',';
      out.append(labels[i].first).append("=\"");
      AppendEscapedLabelValue(out, labels[i].second);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  AppendValue(value, out);
  out += '\n';
}

// Writes the family's header lines and samples.
class Family {
 public:
  Family(const Metric& metric, const ExpositionForm& form, ChunkedTextWriter& writer)
      : metric_(metric), form_(form), writer_(writer) {}
  void Sample(const Labels& labels, double value) {
    std::string& out = writer_.buffer();
    if (!header_) AppendHeader(out, metric_, form_);
    header_ = true;
    Series(metric_.name, labels, value, out);
    if (form_.open_metrics && metric_.type == metrics::Type::kCounter) {
      Series(CreatedName(metric_), labels, static_cast<double>(form_.counting_since), out);
    }
    writer_.EndOfLine();
  }

 private:
  const Metric& metric_;
  const ExpositionForm& form_;
  ChunkedTextWriter& writer_;
  bool header_ = false;
};

}  // namespace

SelfMetrics::SelfMetrics() {
  const BuildInfo& build = GetBuildInfo();
  build_labels_ = {{"branch", build.branch},
                   {"compiler", build.compiler},
                   {"platform", build.platform},
                   {"revision", build.revision},
                   {"version", build.version}};
}

void SelfMetrics::Update(const RefreshResult& result,
                         const std::map<std::string, std::vector<SourceProblem>>& problems,
                         const std::map<std::string, int>& new_duplicates_prevented) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<std::string, SourceSeries> sources;
  for (const auto& source : result.sources) {
    SourceSeries& series = sources[source.name];
    if (auto it = sources_.find(source.name); it != sources_.end()) series = std::move(it->second);
    series.type = source.type;
    series.up = source.up;
    series.history_up = source.history_up;
    series.sync_duration = source.sync_duration_seconds;
    if (source.last_sync) series.last_sync = static_cast<double>(*source.last_sync);
    if (source.up) series.unowned = source.unowned_objects;
    if (source.requests) series.requests = source.requests;
    if (auto it = problems.find(source.name); it != problems.end()) {
      for (const auto& problem : it->second) {
        if (!problem.counted_before) series.errors[problem.reason] += 1;
      }
    }
  }
  sources_ = std::move(sources);  // sources that left the spec are forgotten

  std::map<std::pair<std::string, std::string>, double> prevented;
  for (const auto& role : result.roles) {
    if (role.job->runs_dir().empty()) continue;
    auto key = std::make_pair(role.job->role, role.job->source);
    auto counted = new_duplicates_prevented.find(role.job->role);
    auto before = duplicates_prevented_.find(key);
    if (counted == new_duplicates_prevented.end() && before == duplicates_prevented_.end()) {
      continue;
    }
    prevented[key] = (before == duplicates_prevented_.end() ? 0 : before->second) +
                     (counted == new_duplicates_prevented.end() ? 0 : counted->second);
  }
  duplicates_prevented_ = std::move(prevented);
  last_cycle_ = static_cast<double>(result.time);
}

void SelfMetrics::SetReload(bool successful, std::optional<std::int64_t> time) {
  std::lock_guard<std::mutex> lock(mutex_);
  reload_successful_ = successful;
  if (time) reload_success_time_ = static_cast<double>(*time);
}

void SelfMetrics::SetClockStep(std::int64_t seconds, std::int64_t time) {
  std::lock_guard<std::mutex> lock(mutex_);
  clock_step_ = {static_cast<double>(seconds), static_cast<double>(time)};
}

void SelfMetrics::SetReconcileLockUnavailable(bool unavailable) {
  std::lock_guard<std::mutex> lock(mutex_);
  reconcile_lock_unavailable_ = unavailable;
}

void SelfMetrics::Render(const RefreshResult& result, const ExpositionForm& form,
                         ChunkedTextWriter& out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  out.EndOfItems();  // these lines are of no role: their chunks are written each time
  auto family = [&](const Metric& metric) { return Family(metric, form, out); };
  Labels build(build_labels_.begin(), build_labels_.end());
  family(metrics::kBuildInfo).Sample(build, 1);
  if (clock_step_) {
    family(metrics::kClockStep).Sample({}, clock_step_->first);
    family(metrics::kClockStepTime).Sample({}, clock_step_->second);
  }
  family(metrics::kReloadSuccessTime).Sample({}, reload_success_time_);
  family(metrics::kReloadSuccessful).Sample({}, reload_successful_ ? 1 : 0);
  if (result.complete) family(metrics::kLastCycle).Sample({}, last_cycle_);
  // Always served, unsharded too: rules and dashboards read every exporter alike.
  auto gauge = [&](const Metric& metric, double value) { family(metric).Sample({}, value); };
  gauge(metrics::kShardOrdinal, result.shard.ordinal);
  gauge(metrics::kShardRoles, result.spec ? static_cast<double>(result.spec->jobs.size()) : 0);
  gauge(metrics::kSpecRoles, static_cast<double>(result.spec_roles));
  gauge(metrics::kTotalShards, result.shard.total);
  if (reconcile_lock_unavailable_) {
    family(metrics::kReconcileLockUnavailable).Sample({}, *reconcile_lock_unavailable_ ? 1 : 0);
  }
  Family prevented = family(metrics::kJobDuplicateRunsPrevented);
  for (const auto& [key, value] : duplicates_prevented_) {
    prevented.Sample({{"role", key.first}, {"source", key.second}}, value);
  }
  // Errors are ordered by reason first, as their labels are.
  std::set<std::tuple<std::string_view, std::string_view, double>> errors;
  for (const auto& [name, source] : sources_) {
    for (const auto& [reason, count] : source.errors) errors.emplace(reason, name, count);
  }
  Family error_family = family(metrics::kSourceErrors);
  for (const auto& [reason, name, count] : errors) {
    error_family.Sample({{"reason", reason}, {"source", name}}, count);
  }
  // One family of the per-source gauges: the sources that have a value for it.
  auto per_source = [&](const Metric& metric, auto value) {
    Family gauge = family(metric);
    for (const auto& [name, source] : sources_) {
      if (std::optional<double> v = value(source)) gauge.Sample({{"source", name}}, *v);
    }
  };
  // Both gauges carry the type, as schedwatch_source_up always did.
  auto up = [&](const Metric& metric, bool SourceSeries::*field) {
    Family gauge = family(metric);
    for (const auto& [name, source] : sources_) {
      gauge.Sample({{"source", name}, {"type", source.type}}, source.*field ? 1 : 0);
    }
  };
  up(metrics::kSourceHistoryUp, &SourceSeries::history_up);
  per_source(metrics::kSourceLastSync, [](const SourceSeries& s) { return s.last_sync; });
  per_source(metrics::kSourceRateLimitRemaining, [](const SourceSeries& s) {
    return s.requests && s.requests->rate_limit_remaining
               ? std::optional<double>(static_cast<double>(*s.requests->rate_limit_remaining))
               : std::nullopt;
  });
  per_source(metrics::kSourceReadFloor, [](const SourceSeries& s) {
    return s.requests && s.requests->read_floor_seconds
               ? std::optional<double>(static_cast<double>(*s.requests->read_floor_seconds))
               : std::nullopt;
  });
  // Ordered by outcome first, as their labels are.
  std::set<std::tuple<std::string_view, std::string_view, double>> requests;
  for (const auto& [name, source] : sources_) {
    if (!source.requests) continue;
    for (const auto& [outcome, count] : source.requests->by_outcome) {
      requests.emplace(outcome, name, static_cast<double>(count));
    }
  }
  Family request_family = family(metrics::kSourceRequests);
  for (const auto& [outcome, name, count] : requests) {
    request_family.Sample({{"outcome", outcome}, {"source", name}}, count);
  }
  per_source(metrics::kSourceSyncDuration,
             [](const SourceSeries& s) { return std::optional<double>(s.sync_duration); });
  per_source(metrics::kSourceUnownedObjects, [](const SourceSeries& s) { return s.unowned; });
  up(metrics::kSourceUp, &SourceSeries::up);
}

}  // namespace schedwatch
