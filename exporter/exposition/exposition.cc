#include "exporter/exposition/exposition.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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

// Values written alike: the same bits (0 and -0 are equal but written apart; NaN is unequal).
bool SameValue(const Value& a, const Value& b) {
  if (!a || !b) return !a == !b;
  std::uint64_t x, y;
  std::memcpy(&x, &*a, sizeof x);
  std::memcpy(&y, &*b, sizeof y);
  return x == y;
}

// The same series names (role and source) in both refreshes: the same job, or one a reload made
// anew.
bool SameSeries(const JobSpec& a, const JobSpec& b) {
  return &a == &b || (a.role == b.role && a.source == b.source);
}

// What schedwatch_job_info shows of a job is the same.
bool SameInfo(const JobSpec& a, const JobSpec& b) {
  return &a == &b ||
         (SameSeries(a, b) && a.timezone == b.timezone && a.spec_version == b.spec_version &&
          a.schedule.text() == b.schedule.text() && a.Alerting().labels == b.Alerting().labels);
}

// The same exemplars are written: the same runs, as a reload or the run store may hold them anew.
bool SameExemplars(const RunExemplars* a, const RunExemplars* b) {
  auto same = [](const std::optional<RunExemplar>& x, const std::optional<RunExemplar>& y) {
    return !x || !y ? !x == !y
                    : x->finished == y->finished && x->duration == y->duration &&
                          (x->identity == y->identity || (x->identity->id == y->identity->id &&
                                                          x->identity->url == y->identity->url));
  };
  return a == b || (a && b && same(a->failed, b->failed) && same(a->succeeded, b->succeeded));
}

// A role's exemplars in a refresh's list (sorted by role), asked for in role order but for an
// occasional step back.
class ExemplarFinder {
 public:
  explicit ExemplarFinder(const std::vector<RoleExemplars>& list) : list_(list) {}
  const RunExemplars* Of(const JobSpec& job) {
    auto before = [](const RoleExemplars& entry, const std::string& role) {
      return entry.job->role < role;
    };
    if (next_ > 0 && list_[next_ - 1].job->role >= job.role) {
      next_ = static_cast<std::size_t>(
          std::lower_bound(list_.begin(), list_.begin() + next_, job.role, before) - list_.begin());
    }
    while (next_ < list_.size() && before(list_[next_], job.role)) ++next_;
    if (next_ < list_.size() && list_[next_].job == &job) return list_[next_++].exemplars.get();
    return nullptr;
  }

 private:
  const std::vector<RoleExemplars>& list_;
  std::size_t next_ = 0;
};

// Writes items [0, count) of family `family` (then counts it), one by one but where the writer's
// previous text has a reusable chunk starting where the open chunk does and every item it spans
// is unchanged: that chunk is reused and its items are not written. Items of both refreshes pair
// by role (`role(i)`, `previous_role(p)`: both sorted); `same(p, i)`: item p of the previous
// refresh is written as item i is now.
template <typename Role, typename PreviousRole, typename Write, typename Same>
void WriteItems(ChunkedTextWriter& writer, std::uint32_t& family, std::size_t count, Role role,
                std::size_t previous_count, PreviousRole previous_role, Write write, Same same) {
  for (std::size_t i = 0; i < count;) {
    writer.Item(family, static_cast<std::uint32_t>(i));
    write(i);
    std::size_t next = i + 1;
    std::optional<TextPosition> start = writer.OpenStart();
    if (previous_count > 0 && start && start->family == family && start->item == i) {
      const std::string& wanted = role(i);
      std::size_t low = 0, high = previous_count;
      while (low < high) {
        std::size_t middle = low + (high - low) / 2;
        if (previous_role(middle) < wanted) {
          low = middle + 1;
        } else {
          high = middle;
        }
      }
      const ChunkSpan* span =
          low < previous_count && previous_role(low) == wanted
              ? writer.PreviousChunk({family, static_cast<std::uint32_t>(low), start->line})
              : nullptr;
      if (span != nullptr && span->end.item < previous_count && span->end.item - low < count - i) {
        bool unchanged = true;
        for (std::size_t k = 0; unchanged && low + k <= span->end.item; ++k) {
          unchanged = same(low + k, i + k);
        }
        if (unchanged) next = writer.Reuse(*span);
      }
    }
    i = next;
  }
  ++family;
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
                       ChunkedTextWriter& writer, const RefreshResult* previous) {
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
  auto header = [&](const metrics::Metric& metric) {
    AppendHeader(out, metric, form);
    writer.Taint();  // its chunk holds more than items' lines: never reused
  };

  // Families are numbered in the order written, their items are roles (or roles with durations)
  // in role order. A role's lines depend on what `same` compares only: nothing here reads the
  // clock, and the previous text is of the same form.
  static const RefreshResult kNone;
  const RefreshResult& before = previous != nullptr ? *previous : kNone;
  std::uint32_t family = 0;
  auto role_items = [&](auto write, auto same) {
    WriteItems(
        writer, family, result.roles.size(),
        [&](std::size_t i) -> const std::string& { return result.roles[i].job->role; },
        before.roles.size(),
        [&](std::size_t p) -> const std::string& { return before.roles[p].job->role; }, write,
        [&](std::size_t p, std::size_t i) { return same(before.roles[p], result.roles[i]); });
  };
  // Exemplars (OpenMetrics only): of this refresh as written and as compared, and of the last.
  ExemplarFinder exemplars(result.exemplars), now_exemplars(result.exemplars),
      before_exemplars(before.exemplars);
  auto same_exemplars = [&](const JobSpec& a, const JobSpec& b) {
    return !form.open_metrics || SameExemplars(before_exemplars.Of(a), now_exemplars.Of(b));
  };

  auto gauge_family = [&](const RoleGauge& gauge) {
    bool written = false;
    role_items(
        [&](std::size_t i) {
          Value value = gauge.value(result.roles[i]);
          if (!value) return;
          if (!written) header(*gauge.metric);
          written = true;
          series(*gauge.metric, i);
          out += "} ";
          AppendValue(out, *value);
          out += '\n';
          writer.EndOfLine();
        },
        [&](const RoleResult& a, const RoleResult& b) {
          return &a == &b ||
                 (SameSeries(*a.job, *b.job) && SameValue(gauge.value(a), gauge.value(b)));
        });
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
  if (!result.roles.empty()) header(metrics::kJobCondition);
  role_items(
      [&](std::size_t i) {
        const auto& conditions = result.roles[i].status.conditions;
        for (int c = 0; c < kConditionCount; ++c) {
          series(metrics::kJobCondition, i);
          out += ",condition=\"";
          out += ConditionNames()[c];
          out += conditions.test(c) ? "\"} 1\n" : "\"} 0\n";
          writer.EndOfLine();
        }
      },
      [&](const RoleResult& a, const RoleResult& b) {
        return &a == &b ||
               (SameSeries(*a.job, *b.job) && a.status.conditions == b.status.conditions);
      });
  gauges_before(metrics::kJobInfo.name);
  if (!result.roles.empty()) header(metrics::kJobInfo);
  role_items(
      [&](std::size_t i) {
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
      },
      [&](const RoleResult& a, const RoleResult& b) { return SameInfo(*a.job, *b.job); });
  gauges_before(metrics::kJobRunDuration.name);
  {
    const metrics::Metric& metric = metrics::kJobRunDuration;
    if (!result.durations.empty()) header(metric);
    const std::string bucket = std::string(metric.name) + "_bucket";
    const std::string sum = std::string(metric.name) + "_sum";
    const std::string count_name = std::string(metric.name) + "_count";
    const std::string created = CreatedName(metric);
    auto write = [&](std::size_t i) {
      const RoleDurations& role = result.durations[i];
      const DurationHistogram& histogram = *role.histogram;
      // The newest named run, on the bucket its duration was counted in.
      const RunExemplars* named = form.open_metrics ? exemplars.Of(*role.job) : nullptr;
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
    };
    WriteItems(
        writer, family, result.durations.size(),
        [&](std::size_t i) -> const std::string& { return result.durations[i].job->role; },
        before.durations.size(),
        [&](std::size_t p) -> const std::string& { return before.durations[p].job->role; }, write,
        [&](std::size_t p, std::size_t i) {
          const RoleDurations& a = before.durations[p];
          const RoleDurations& b = result.durations[i];
          return SameSeries(*a.job, *b.job) &&
                 (a.histogram == b.histogram || (a.histogram->counts == b.histogram->counts &&
                                                 a.histogram->sum == b.histogram->sum)) &&
                 same_exemplars(*a.job, *b.job);
        });
  }
  gauges_before(metrics::kJobRuns.name);
  bool runs_written = false;
  const std::string runs_created = CreatedName(metrics::kJobRuns);
  // Served while its source showed a run, or runs were counted.
  auto shows_runs = [](const RoleResult& role) { return role.runs || !role.run_counts.empty(); };
  role_items(
      [&](std::size_t i) {
        const RoleResult& role = result.roles[i];
        if (!shows_runs(role)) return;
        if (!runs_written) header(metrics::kJobRuns);
        runs_written = true;
        const RunExemplars* named = form.open_metrics ? exemplars.Of(*role.job) : nullptr;
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
      },
      [&](const RoleResult& a, const RoleResult& b) {
        return SameSeries(*a.job, *b.job) && shows_runs(a) == shows_runs(b) &&
               (!shows_runs(a) ||
                (a.run_counts.succeeded == b.run_counts.succeeded &&
                 a.run_counts.failed == b.run_counts.failed && same_exemplars(*a.job, *b.job)));
      });
  gauges_before("~");  // the rest
}

}  // namespace schedwatch
