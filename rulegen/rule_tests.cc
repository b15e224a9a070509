// schedwatch.rules.test.yml: promtool unit tests generated from the spec.
//
// One test group per alert covers every role at once, so the file grows linearly with the spec.
// Each group shows the exporter's healthy output at 0m and 1m and the condition from 2m on;
// thresholds sit exactly at the boundary before that (an age equal to stale_after does not
// fire, one minute more does). Every role is then checked one evaluation before its `for:` has
// passed (pending, not firing) and when it has (firing), through the ALERTS series. A second,
// small group per alert checks the exact labels and annotations Prometheus sends, for one role
// of each kind (exporter-observed and pushed success).
//
// Replicas and watchers: further groups run two replicas of one watcher (one down, both down,
// one that cannot read its sources, two that disagree, two that agree), and, with identity
// labels, two watchers in one job that share source names. Replica r of watcher w is scraped as
// localhost:<9762 + 10w + r> and carries the identity labels' values <label>-<a + w>.
//
// Sharded exporters (--total-shards N): every replica is N exporters, shard k's at port + 100k
// serving schedwatch_exporter_shard_ordinal k and its roles' series; the alerts about one shard
// are expected once per shard, and further groups kill a shard, leave one out, and make the
// shards disagree or not add up.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "rulegen/alerts.h"
#include "rulegen/text.h"
#include "schedwatch/duration.h"
#include "schedwatch/metrics.h"
#include "schedwatch/shard.h"

namespace schedwatch::rulegen {
namespace {

using Labels = std::map<std::string, std::string>;

constexpr std::int64_t kOnset = 120;  // conditions start at 2m
constexpr const char* kInstance = "localhost:9762";
constexpr int kSampledRolesPerSource = 4;

std::int64_t CeilMinute(std::int64_t seconds) { return (seconds + 59) / 60 * 60; }

// A series' samples at 0m, 1m, 2m, ... in promtool's expanding notation.
struct Values {
  enum class Kind {
    kConst,           // a throughout
    kStep,            // a at 0m and 1m, b from 2m on
    kRamp,            // 0, 60, 120, ...: a timestamp that keeps up with the clock
    kRampThenStale,   // 0, 60, then a staleness marker at 2m: the series disappears
    kConstThenStale,  // a at 0m and 1m, then gone
    kStepAt,          // a before `at`, b from `at` on
  };
  Kind kind;
  std::int64_t a = 0, b = 0;
  std::int64_t at = 0;  // kStepAt: a whole minute

  std::string Render(std::int64_t samples) const {
    switch (kind) {
      case Kind::kConst:
        return fmt::format("{}x{}", a, samples - 1);
      case Kind::kStep:
        return fmt::format("{}x1 {}x{}", a, b, samples - 3);
      case Kind::kRamp:
        return fmt::format("0+60x{}", samples - 1);
      case Kind::kRampThenStale:
        return "0+60x1 stale";
      case Kind::kConstThenStale:
        return fmt::format("{}x1 stale", a);
      case Kind::kStepAt:
        return fmt::format("{}x{} {}x{}", a, at / 60 - 1, b, samples - at / 60 - 1);
    }
    return "";
  }
};
Values Const(std::int64_t a) { return {Values::Kind::kConst, a}; }
Values Step(std::int64_t a, std::int64_t b) { return {Values::Kind::kStep, a, b}; }
Values Ramp() { return {Values::Kind::kRamp}; }
Values RampThenStale() { return {Values::Kind::kRampThenStale}; }
Values ConstThenStale(std::int64_t a) { return {Values::Kind::kConstThenStale, a}; }
Values StepAt(std::int64_t a, std::int64_t b, std::int64_t at) {
  return {Values::Kind::kStepAt, a, b, at};
}

struct Expected {
  Alert alert;
  Labels labels;  // all but alertname
  std::int64_t onset, fires_at;
  std::int64_t value_at_zero, value_slope;  // $value = value_at_zero + value_slope * t
  std::optional<std::int64_t> resolves_at;  // gone from then on
  bool ActiveAt(std::int64_t t) const { return !resolves_at || t < *resolves_at; }
};

struct TestCase {
  std::string name;
  std::vector<std::pair<std::string, Values>> series;
  std::vector<Expected> expected;
  // true: alert_rule_test with exact labels and annotations; false: the ALERTS series.
  bool annotations = false;
  // Alert names (a regex) with no ALERTS series, pending or firing, at any checked time from
  // quiet_from on.
  std::string quiet;
  std::string quiet_roles;         // a regex: the quiet check covers only these roles (and none)
  std::string quiet_except_roles;  // a regex of roles the quiet check leaves out
  std::int64_t quiet_from = kOnset;
  // Times checked besides those of the expectations (a case that expects only quiet).
  std::vector<std::int64_t> check_at;
  std::set<std::string> infos;  // the schedwatch_job_info series added, each once
};

std::string SeriesText(std::string_view metric, const Labels& labels) {
  std::string out(metric);
  out += '{';
  for (const auto& [name, value] : labels) {
    if (out.back() != '{') out += ',';
    out += name;
    out += '=';
    out += PromString(value);
  }
  out += '}';
  return out;
}

class TestWriter {
 public:
  TestWriter(const Spec& spec, const Options& options, std::vector<std::string>& warnings)
      : spec_(spec), options_(options), for_policy_(spec, options.mode) {
    // Joined rules take the spec's labels from schedwatch_job_info, which the exporter serves
    // for every role it serves anything for: so do the tests.
    every_role_has_info_ = options.mode == Mode::kJoined && !SpecLabelNames(spec).empty();
    sharded_ = options.total_shards > 1;
    std::map<std::string, int> per_source;
    for (const auto& job : spec.jobs) {
      if (++per_source[job.source] > kSampledRolesPerSource) continue;
      sampled_.push_back(&job);
      sampled_roles_ += (sampled_roles_.empty() ? "" : "|") + RegexQuote(job.role);
    }
    count_labels_ = options.identity_labels;
    // severity too: every role's level is checked, not only the sampled roles' exact labels.
    count_labels_.insert(count_labels_.end(), {"source", "role", "severity"});
    count_by_ = fmt::format("{}", fmt::join(count_labels_, ", "));
    for (const auto& job : spec.jobs) {
      role_labels_.emplace(&job, SeriesText("", RoleLabels(job, 0, 0)));
      if (job.success_metric().empty()) continue;
      auto selector = ParseSelector(job.success_metric());
      auto series = selector ? ExampleSeries(*selector) : std::nullopt;
      if (series) {
        pushed_series_[job.role] = *series;
      } else {
        untestable_ += (untestable_.empty() ? "" : "|") + RegexQuote(job.role);
        warnings.push_back(fmt::format(
            "role {}: no test series can be built for success_metric {} (supported: =, !=, !~ "
            "and =~ with literal alternatives); its generated tests leave the pushed series out",
            job.role, job.success_metric()));
      }
    }
  }

  void Render(const Sink& sink) {
    std::string out = GeneratedHeader(spec_, options_, "promtool unit tests");
    out.reserve(2 * kSinkChunk);
    out += "# Run: promtool test rules schedwatch.rules.test.yml\n";
    out +=
        "rule_files:\n  - schedwatch.rules.yml\n  - schedwatch-global.rules.yml\n"
        "evaluation_interval: 1m\ntests:\n";
    for (const auto& role_case : RoleCases()) {
      if (role_case.only &&
          std::none_of(spec_.jobs.begin(), spec_.jobs.end(), [&](const auto& job) {
            return Applies(role_case.alert, job) && role_case.only(job);
          })) {
        continue;
      }
      for (bool annotations : {false, true}) {
        Write(Build(role_case, annotations), out);
        if (out.size() >= kSinkChunk) {
          sink(out);
          out.clear();
        }
      }
    }
    Write(SourceDownCase(), out);
    Write(HistoryDownCase(), out);
    Write(ExporterDownCase(), out);
    Write(ExporterAbsentCase(), out);
    Write(WatcherStaleCase(), out);
    for (const auto& test : ReplicaCases()) {
      Write(test, out);
      if (out.size() >= kSinkChunk) {
        sink(out);
        out.clear();
      }
    }
    if (sharded_) {
      for (const auto& test : ShardCases()) Write(test, out);
    }
    WriteSuccessRatio(out);
    TestCase watchdog;
    watchdog.name = "Watchdog: always firing, even with no other series";
    watchdog.annotations = true;
    ExpectExporter(watchdog, Alert::kWatchdog, {}, 0, 1);
    Write(watchdog, out);
    sink(out);
  }

 private:
  // A per-role alert's case: `build` adds one job's series and its expectation.
  struct RoleCaseSpec {
    Alert alert;
    std::string what;
    std::function<void(TestCase&, const JobSpec&)> build;
    // The roles the case is about, of those the alert applies to; null: all. A case with a
    // filter and no role it takes is left out.
    std::function<bool(const JobSpec&)> only = nullptr;
  };

  // job and the identity labels of watcher `w`.
  Labels WatcherLabels(int w = 0) const {
    Labels labels = {{"job", options_.exporter_job}};
    for (const auto& label : options_.identity_labels) {
      labels[label] = fmt::format("{}-{}", label, static_cast<char>('a' + w));
    }
    return labels;
  }
  Labels ExporterLabels(int w = 0, int r = 0, int shard = 0) const {
    Labels labels = WatcherLabels(w);
    labels["instance"] = w == 0 && r == 0 && shard == 0
                             ? kInstance
                             : fmt::format("localhost:{}", 9762 + 10 * w + r + 100 * shard);
    return labels;
  }
  int ShardOfJob(const JobSpec& job) const { return ShardOf(job.role, options_.total_shards); }
  Labels RoleLabels(const JobSpec& job, int w = 0, int r = 0) const {
    Labels labels = ExporterLabels(w, r, ShardOfJob(job));
    labels["role"] = job.role;
    labels["source"] = job.source;
    return labels;
  }
  static Labels With(Labels labels, const std::string& name, const std::string& value) {
    labels[name] = value;
    return labels;
  }
  Labels SourceLabels(const std::string& name, const SourceSpec& source, Labels base) const {
    base["source"] = name;
    base["type"] = source.type;
    return base;
  }
  Labels SourceLabels(const std::string& name, const SourceSpec& source) const {
    return SourceLabels(name, source, ExporterLabels());
  }

  void Add(TestCase& test, std::string_view metric, const Labels& labels, Values values) const {
    test.series.emplace_back(SeriesText(metric, labels), values);
  }
  void AddRole(TestCase& test, std::string_view metric, const JobSpec& job, Values values,
               int w = 0, int r = 0) const {
    bool info = metric == metrics::kJobInfo.name;
    if (info || every_role_has_info_) AddInfo(test, job, info ? values : Const(1), w, r);
    if (info) return;
    if (w == 0 && r == 0) {
      test.series.emplace_back(fmt::format("{}{}", metric, role_labels_.at(&job)), values);
    } else {
      Add(test, metric, RoleLabels(job, w, r), values);
    }
  }
  // The role's schedwatch_job_info, once per test: it carries the spec's labels (`labels:`).
  void AddInfo(TestCase& test, const JobSpec& job, Values values, int w = 0, int r = 0) const {
    Labels labels = RoleLabels(job, w, r);
    for (const auto& [name, value] : job.Alerting().labels) labels[name] = value;
    std::string text = SeriesText(metrics::kJobInfo.name, labels);
    if (test.infos.insert(text).second) test.series.emplace_back(text, values);
  }
  // The exporter's schedwatch_job_condition for `condition`.
  void AddCondition(TestCase& test, const JobSpec& job, std::string_view condition,
                    Values values) const {
    Add(test, metrics::kJobCondition.name,
        With(RoleLabels(job), "condition", std::string(condition)), values);
    if (every_role_has_info_) AddInfo(test, job, Const(1));
  }
  const std::string* PushedSeries(const JobSpec& job) const {
    auto it = pushed_series_.find(job.role);
    return it == pushed_series_.end() ? nullptr : &it->second;
  }
  // The success series the rules read for `job`; false when a pushed one cannot be built.
  bool AddSuccess(TestCase& test, const JobSpec& job, Values values, int w = 0, int r = 0) const {
    if (job.success_metric().empty()) {
      AddRole(test, metrics::kJobLastSuccess.name, job, values, w, r);
      return true;
    }
    const std::string* series = PushedSeries(job);
    if (series) test.series.emplace_back(*series, values);
    return series != nullptr;
  }
  // The exporter is scraped and every source lists fine, unless a case says otherwise. The run
  // history is read when the list is, unless `history_up` says otherwise.
  // Sharded: for each shard (or only `shard`), which its exporter serves as its ordinal.
  void AddGates(TestCase& test, Values up, Values source_up, int w = 0, int r = 0,
                std::optional<Values> history_up = std::nullopt, int shard = -1) const {
    for (int k : Shards(options_)) {
      if (shard >= 0 && k != shard) continue;
      Add(test, "up", ExporterLabels(w, r, k), up);
      if (sharded_) Add(test, kShardOrdinal, ExporterLabels(w, r, k), Const(k));
      for (const auto& [name, source] : spec_.sources) {
        Labels labels = SourceLabels(name, source, ExporterLabels(w, r, k));
        Add(test, metrics::kSourceUp.name, labels, source_up);
        Add(test, metrics::kSourceHistoryUp.name, labels, history_up.value_or(source_up));
      }
    }
  }
  // A sharded exporter's account of the split: N, the spec's roles and its own.
  void AddShardGauges(TestCase& test, int w, int r, int shard, Values total, Values spec_roles,
                      Values shard_roles) const {
    Labels labels = ExporterLabels(w, r, shard);
    Add(test, kTotalShards, labels, total);
    Add(test, kSpecRoles, labels, spec_roles);
    Add(test, kShardRoles, labels, shard_roles);
  }
  std::int64_t RolesOfShard(int shard) const {
    return std::count_if(spec_.jobs.begin(), spec_.jobs.end(),
                         [&](const JobSpec& job) { return ShardOfJob(job) == shard; });
  }

  void ExpectRole(TestCase& test, Alert alert, const JobSpec& job, std::int64_t onset,
                  std::int64_t value_at_zero, std::int64_t value_slope = 0, int w = 0) const {
    Labels labels;
    if (ShapeOf(alert, job) == LabelShape::kIdentity) {
      labels = WatcherLabels(w);
      if (alert == Alert::kJobNotStarted) labels["condition"] = "not_started";
    } else {
      labels = {{"job", options_.exporter_job}};
    }
    labels["role"] = job.role;
    labels["source"] = job.source;
    if (sharded_) labels[std::string(kShardLabel)] = std::to_string(ShardOfJob(job));
    for (const auto& [name, value] : job.Alerting().labels) labels[name] = value;
    Expect(test, alert, std::move(labels), onset, for_policy_.Of(&job), value_at_zero, value_slope,
           SeverityOf(alert, job));
  }
  // An exporter alert as each shard raises it (once when unsharded): `labels(k)` for shard k,
  // plus the shard's label when the alert is per shard.
  void ExpectEachShard(TestCase& test, Alert alert, const std::function<Labels(int)>& labels,
                       std::int64_t onset, std::int64_t value_at_zero,
                       std::int64_t value_slope = 0) const {
    for (int k : Shards(options_)) {
      Labels of_shard = labels(k);
      if (sharded_ && PerShard(alert)) of_shard[std::string(kShardLabel)] = std::to_string(k);
      ExpectExporter(test, alert, std::move(of_shard), onset, value_at_zero, value_slope);
    }
  }
  void ExpectExporter(TestCase& test, Alert alert, Labels labels, std::int64_t onset,
                      std::int64_t value_at_zero, std::int64_t value_slope = 0) const {
    Expect(test, alert, std::move(labels), onset,
           alert == Alert::kWatchdog ? 0 : options_.exporter_alert_for, value_at_zero, value_slope);
  }
  static void Expect(TestCase& test, Alert alert, Labels labels, std::int64_t onset,
                     std::int64_t for_seconds, std::int64_t value_at_zero, std::int64_t value_slope,
                     std::string_view severity = "") {
    labels["severity"] = std::string(severity.empty() ? TextOf(alert).severity : severity);
    test.expected.push_back({alert, std::move(labels), onset, onset + CeilMinute(for_seconds),
                             value_at_zero, value_slope, std::nullopt});
  }

  // Every role the alert applies to; or, for the annotations, the first of them whose success
  // is observed by the exporter and the first that pushes its own.
  TestCase Build(const RoleCaseSpec& role_case, bool annotations) const {
    TestCase test;
    test.annotations = annotations;
    AddGates(test, Const(1), Const(1));
    std::vector<std::string> shown;
    bool seen[2] = {false, false};
    for (const auto& job : spec_.jobs) {
      if (!Applies(role_case.alert, job) || (role_case.only && !role_case.only(job))) continue;
      bool pushed = !job.success_metric().empty();
      if (annotations && seen[pushed]) {
        // Per-role absent() rules fire for any role without a success series: give the other
        // roles one, or expect their alert when no series can be built for them.
        if (role_case.alert == Alert::kJobSuccessAbsent && !AddSuccess(test, job, Ramp())) {
          role_case.build(test, job);
        }
        continue;
      }
      seen[pushed] = true;
      shown.push_back(job.role);
      role_case.build(test, job);
    }
    std::string_view name = TextOf(role_case.alert).name;
    test.name = annotations ? fmt::format("{}: exact labels and annotations for {} ({})", name,
                                          fmt::join(shown, ", "), role_case.what)
                            : fmt::format("{}: {}", name, role_case.what);
    return test;
  }

  std::vector<RoleCaseSpec> RoleCases() const {
    std::vector<RoleCaseSpec> cases = {
        {Alert::kJobMissing,
         "registered_objects drops to 0 at 2m; pending for alert_for, then firing",
         [&](TestCase& t, const JobSpec& job) {
           AddRole(t, metrics::kJobRegisteredObjects.name, job, Step(1, 0));
           ExpectRole(t, Alert::kJobMissing, job, kOnset, 0);
         }},
        {Alert::kJobSuccessAbsent, "desired roles whose success series never appeared",
         [&](TestCase& t, const JobSpec& job) {
           AddRole(t, metrics::kJobInfo.name, job, Const(1));
           ExpectRole(t, Alert::kJobSuccessAbsent, job, 0, 1);
         }},
        {Alert::kJobSuccessAbsent,
         "the success series disappears at 2m (lost history, wiped Pushgateway)",
         [&](TestCase& t, const JobSpec& job) {
           AddRole(t, metrics::kJobInfo.name, job, Const(1));
           bool added = AddSuccess(t, job, RampThenStale());
           ExpectRole(t, Alert::kJobSuccessAbsent, job, added ? kOnset : 0, 1);
         }},
        {Alert::kJobSuccessStale,
         "last success exactly stale_after old at 1m (quiet), older from 2m on; pushed success "
         "series are judged by their value",
         [&](TestCase& t, const JobSpec& job) {
           std::int64_t stale_after = *job.stale_after;
           AddRole(t, metrics::kJobStaleAfter.name, job, Const(stale_after));
           if (AddSuccess(t, job, Const(60 - stale_after))) {
             ExpectRole(t, Alert::kJobSuccessStale, job, kOnset, stale_after - 60, 1);
           }
         }},
        {Alert::kJobInactive, "the only object is disabled at 2m",
         [&](TestCase& t, const JobSpec& job) {
           AddRole(t, metrics::kJobRegisteredObjects.name, job, Const(1));
           AddRole(t, metrics::kJobActiveObjects.name, job, Step(1, 0));
           ExpectRole(t, Alert::kJobInactive, job, kOnset, 0);
         }},
        {Alert::kJobDuplicate, "a second object appears at 2m",
         [&](TestCase& t, const JobSpec& job) {
           AddRole(t, metrics::kJobRegisteredObjects.name, job, Step(1, 2));
           AddRole(t, metrics::kJobActiveObjects.name, job, Step(1, 2));
           ExpectRole(t, Alert::kJobDuplicate, job, kOnset, 2);
         }},
        {Alert::kJobDrift, "the object drifts from the spec at 2m",
         [&](TestCase& t, const JobSpec& job) {
           AddRole(t, metrics::kJobRegisteredObjects.name, job, Const(1));
           AddRole(t, metrics::kJobDriftedObjects.name, job, Step(0, 1));
           ExpectRole(t, Alert::kJobDrift, job, kOnset, 1);
         }},
        {Alert::kJobNotStarted, "the exporter classifies the role not_started at 2m",
         [&](TestCase& t, const JobSpec& job) {
           AddCondition(t, job, "not_started", Step(0, 1));
           ExpectRole(t, Alert::kJobNotStarted, job, kOnset, 1);
         }},
        {Alert::kJobHung, "a run exactly max_runtime old at 1m (quiet), older from 2m on",
         [&](TestCase& t, const JobSpec& job) {
           AddRole(t, metrics::kJobMaxRuntime.name, job, Const(job.max_runtime));
           AddRole(t, metrics::kJobRunningSince.name, job, Const(60 - job.max_runtime));
           ExpectRole(t, Alert::kJobHung, job, kOnset, job.max_runtime - 60, 1);
         }},
        {Alert::kJobFailing,
         "a failure older than the last success (quiet), then a newer one at 2m",
         [&](TestCase& t, const JobSpec& job) {
           AddRole(t, metrics::kJobLastSuccess.name, job, Const(-600));
           AddRole(t, metrics::kJobLastFailure.name, job, Step(-700, 100));
           ExpectRole(t, Alert::kJobFailing, job, kOnset, 100);
         },
         [](const JobSpec& job) { return !job.Alerting().Thresholds(); }},
        {Alert::kJobFailing,
         "failure_threshold N: from 0m the latest failure is newer than the latest success, but "
         "with N-1 failures in a row the exporter's condition failing stays 0 (quiet); the Nth "
         "sets it at 2m",
         [&](TestCase& t, const JobSpec& job) {
           AddRole(t, metrics::kJobLastSuccess.name, job, Const(-600));
           AddRole(t, metrics::kJobLastFailure.name, job, Const(-60));
           AddCondition(t, job, "failing", Step(0, 1));
           ExpectRole(t, Alert::kJobFailing, job, kOnset, 1);
         },
         [](const JobSpec& job) { return job.Alerting().Thresholds(); }},
        {Alert::kJobFailing,
         "recovery_threshold M: failing from 0m; successes newer than the latest failure from 1m "
         "leave it failing while fewer than M are in a row (still firing), the Mth clears it",
         [&](TestCase& t, const JobSpec& job) {
           std::int64_t fires_at = CeilMinute(for_policy_.Of(&job));
           AddRole(t, metrics::kJobLastFailure.name, job, Const(-600));
           AddRole(t, metrics::kJobLastSuccess.name, job, StepAt(-700, 30, 60));
           AddCondition(t, job, "failing", StepAt(1, 0, fires_at + 60));
           ExpectRole(t, Alert::kJobFailing, job, 0, 1);
           t.expected.back().resolves_at = fires_at + 60;
         },
         [](const JobSpec& job) { return job.Alerting().Thresholds(); }},
        {Alert::kJobTooShort,
         "min_runtime: a run of min_runtime + 1s at 0m is no condition (quiet); one of "
         "min_runtime - 1s at 2m is too_short to the exporter",
         [&](TestCase& t, const JobSpec& job) {
           AddCondition(t, job, "too_short", Step(0, 1));
           ExpectRole(t, Alert::kJobTooShort, job, kOnset, 1);
         }},
        {Alert::kJobMissing,
         "maintenance: registered_objects is 0 from 0m while a window is open (held, quiet); the "
         "window closes at 2m, and the alert pends for alert_for from there, then fires",
         [&](TestCase& t, const JobSpec& job) {
           AddRole(t, metrics::kJobRegisteredObjects.name, job, Const(0));
           AddRole(t, metrics::kJobInMaintenance.name, job, Step(1, 0));
           ExpectRole(t, Alert::kJobMissing, job, kOnset, 0);
         },
         [](const JobSpec& job) { return !job.Alerting().maintenance.empty(); }},
        {Alert::kJobProgressStalled,
         "success stays fresh; the checkpoint is exactly progress stale_after old at 1m (quiet), "
         "older from 2m on",
         [&](TestCase& t, const JobSpec& job) {
           std::int64_t stale_after = job.progress()->stale_after;
           AddRole(t, metrics::kJobProgressStaleAfter.name, job, Const(stale_after));
           AddRole(t, metrics::kJobLastProgress.name, job, Const(60 - stale_after));
           if (job.stale_after) {
             AddRole(t, metrics::kJobStaleAfter.name, job, Const(*job.stale_after));
           }
           if (AddSuccess(t, job, Ramp())) {
             ExpectRole(t, Alert::kJobProgressStalled, job, kOnset, stale_after - 60, 1);
           }
         }},
        {Alert::kJobLedgerMismatch, "the ledger's recorded object stops being live at 2m",
         [&](TestCase& t, const JobSpec& job) {
           AddRole(t, metrics::kJobLedgerMismatch.name, job, Step(0, 1));
           ExpectRole(t, Alert::kJobLedgerMismatch, job, kOnset, 1);
         }},
    };
    return cases;
  }

  // Every source fails at 2m: the exporter drops its roles' objects and history, and
  // SchedwatchSourceDown replaces every per-role alert (SuccessAbsent would fire otherwise).
  TestCase SourceDownCase() const {
    TestCase test;
    test.name = "SchedwatchSourceDown: every source fails at 2m; no per-role alert meanwhile";
    test.annotations = true;
    AddGates(test, Const(1), Step(1, 0));
    for (const auto& job : spec_.jobs) {
      AddRole(test, metrics::kJobInfo.name, job, Const(1));
      AddRole(test, metrics::kJobRegisteredObjects.name, job, ConstThenStale(1));
      if (job.success_metric().empty()) AddSuccess(test, job, RampThenStale());
    }
    for (const auto& [name, source] : spec_.sources) {
      ExpectEachShard(
          test, Alert::kSourceDown,
          [&](int) { return SourceLabels(name, source, WatcherLabels()); }, kOnset, 0);
    }
    test.quiet = "SchedwatchJob.+";
    return test;
  }

  // Every source's run history fails at 2m while the lists are still read (cron's log gone):
  // the exporter drops the roles' run series but still serves their objects. Existence is still
  // judged (each role's object also goes at 2m: SchedwatchJobMissing), SchedwatchSourceHistoryDown
  // fires, and no alert about runs does (SuccessAbsent would fire otherwise).
  TestCase HistoryDownCase() const {
    TestCase test;
    test.name =
        "SchedwatchSourceHistoryDown: every source's run history fails at 2m, the lists are "
        "still read and every object goes; SchedwatchJobMissing, no alert about runs";
    test.annotations = true;
    AddGates(test, Const(1), Const(1), 0, 0, Step(1, 0));
    for (const auto& job : spec_.jobs) {
      AddRole(test, metrics::kJobInfo.name, job, Const(1));
      AddRole(test, metrics::kJobRegisteredObjects.name, job, Step(1, 0));
      AddRole(test, metrics::kJobActiveObjects.name, job, Step(1, 0));
      // A pushed success is the job's own, not the source's history: it goes on.
      AddSuccess(test, job, job.success_metric().empty() ? RampThenStale() : Ramp());
      ExpectRole(test, Alert::kJobMissing, job, kOnset, 0);
    }
    for (const auto& [name, source] : spec_.sources) {
      ExpectEachShard(
          test, Alert::kSourceHistoryDown,
          [&](int) { return SourceLabels(name, source, WatcherLabels()); }, kOnset, 0);
    }
    test.quiet =
        "SchedwatchJob(SuccessAbsent|SuccessStale|NotStarted|Hung|Failing|TooShort|"
        "ProgressStalled)|SchedwatchSourceDown";
    test.quiet_except_roles = untestable_;
    return test;
  }

  // The exporter's target fails at 2m but its last samples are still there (as within the
  // lookback after a Prometheus restart), showing every role missing and without success:
  // only the `up` gate keeps the per-role alerts quiet. Only SchedwatchExporterDown may fire.
  TestCase ExporterDownCase() const {
    TestCase test;
    test.name =
        "SchedwatchExporterDown: the target fails at 2m while its last samples show every role "
        "missing; no per-role alert";
    test.annotations = true;
    AddGates(test, Step(1, 0), Const(1));
    for (const auto& job : spec_.jobs) {
      AddRole(test, metrics::kJobInfo.name, job, Const(1));
      AddRole(test, metrics::kJobRegisteredObjects.name, job, Step(1, 0));
    }
    ExpectExporter(test, Alert::kExporterDown, WatcherLabels(), kOnset, 0);
    test.quiet = "SchedwatchJob.+|SchedwatchSourceDown|SchedwatchWatcherStale";
    return test;
  }

  TestCase ExporterAbsentCase() const {
    TestCase test;
    test.name = "SchedwatchExporterDown: no target of the job at all; no per-role alert";
    test.annotations = true;
    ExpectExporter(test, Alert::kExporterDown, {{"job", options_.exporter_job}}, 0, 1);
    if (sharded_) {  // and no shard came up
      ExpectEachShard(
          test, Alert::kShardDown,
          [&](int) {
            return Labels{{"job", options_.exporter_job}};
          },
          0, 1);
    }
    test.quiet = "SchedwatchJob.+";
    test.quiet_from = 0;
    return test;
  }

  TestCase WatcherStaleCase() const {
    TestCase test;
    test.name =
        "SchedwatchWatcherStale: the last refresh is exactly the limit old at 1m (quiet), older "
        "from 2m on";
    test.annotations = true;
    AddGates(test, Const(1), Const(1));
    for (int k : Shards(options_)) {
      Add(test, metrics::kLastCycle.name, ExporterLabels(0, 0, k),
          Const(60 - options_.watcher_stale_after));
    }
    ExpectEachShard(
        test, Alert::kWatcherStale, [&](int) { return WatcherLabels(); }, kOnset,
        options_.watcher_stale_after - 60, 1);
    return test;
  }

  // Healthy series of every role as replica r of watcher w serves them (the pushed success
  // series, shared by all, only once: with w == 0 and r == 0).
  void AddHealthyRoles(TestCase& test, int w, int r) const {
    for (const JobSpec* sampled : sampled_) {
      const JobSpec& job = *sampled;
      AddRole(test, metrics::kJobInfo.name, job, Const(1), w, r);
      AddRole(test, metrics::kJobRegisteredObjects.name, job, Const(1), w, r);
      if (job.success_metric().empty() || (w == 0 && r == 0)) AddSuccess(test, job, Ramp(), w, r);
    }
  }
  // Only the sampled roles have series (the others' absent() rules may fire), and roles whose
  // pushed success cannot be built fire SuccessAbsent in any case: leave both out.
  void Quiet(TestCase& test, std::string quiet) const {
    test.quiet = std::move(quiet);
    test.quiet_roles = sampled_roles_;
    test.quiet_except_roles = untestable_;
  }
  std::int64_t LongestFor() const {
    std::int64_t longest = options_.exporter_alert_for;
    for (const auto& job : spec_.jobs) longest = std::max(longest, for_policy_.Of(&job));
    return CeilMinute(longest);
  }

  std::vector<TestCase> ReplicaCases() const {
    std::vector<TestCase> cases;
    const std::string others = "SchedwatchJob.+|SchedwatchSourceDown|SchedwatchWatcherStale";
    {
      TestCase test;
      test.name =
          "replicas: replica 2 of 2 stops being scraped at 2m while its last samples show every "
          "role missing; one SchedwatchExporterDown warning for it, no per-role alert";
      test.annotations = true;
      AddGates(test, Const(1), Const(1));
      AddGates(test, Step(1, 0), Const(1), 0, 1);
      AddHealthyRoles(test, 0, 0);
      for (const JobSpec* sampled : sampled_) {
        const JobSpec& job = *sampled;
        AddRole(test, metrics::kJobInfo.name, job, Const(1), 0, 1);
        AddRole(test, metrics::kJobRegisteredObjects.name, job, Step(1, 0), 0, 1);
      }
      ExpectEachShard(
          test, Alert::kExporterReplicaDown, [&](int k) { return ExporterLabels(0, 1, k); }, kOnset,
          0);
      // Sharded: replicas of one shard are replicas as before; every shard still has one up.
      Quiet(test, others + (sharded_ ? "|SchedwatchShardDown" : ""));
      cases.push_back(std::move(test));
    }
    {
      TestCase test;
      test.name =
          "replicas: both replicas stop being scraped at 2m; one critical SchedwatchExporterDown "
          "for the watcher, no warning, no per-role alert";
      test.annotations = true;
      AddGates(test, Step(1, 0), Const(1));
      AddGates(test, Step(1, 0), Const(1), 0, 1);
      AddHealthyRoles(test, 0, 0);
      AddHealthyRoles(test, 0, 1);
      ExpectExporter(test, Alert::kExporterDown, WatcherLabels(), kOnset, 0);
      Quiet(test, others);
      cases.push_back(std::move(test));
    }
    {
      TestCase test;
      test.name =
          "replicas: replica 2 cannot list any source from 2m (its role series go), replica 1 "
          "still can; SchedwatchSourceDown warnings for replica 2, no per-role alert";
      test.annotations = true;
      AddGates(test, Const(1), Const(1));
      AddGates(test, Const(1), Step(1, 0), 0, 1);
      AddHealthyRoles(test, 0, 0);
      for (const JobSpec* sampled : sampled_) {
        const JobSpec& job = *sampled;
        AddRole(test, metrics::kJobInfo.name, job, Const(1), 0, 1);
        AddRole(test, metrics::kJobRegisteredObjects.name, job, ConstThenStale(1), 0, 1);
        if (job.success_metric().empty()) AddSuccess(test, job, RampThenStale(), 0, 1);
      }
      for (const auto& [name, source] : spec_.sources) {
        ExpectEachShard(
            test, Alert::kSourceReplicaDown,
            [&](int k) { return SourceLabels(name, source, ExporterLabels(0, 1, k)); }, kOnset, 0);
      }
      Quiet(test, "SchedwatchJob.+|SchedwatchExporterDown|SchedwatchWatcherStale");
      cases.push_back(std::move(test));
    }
    {
      TestCase test;
      test.name =
          "replicas: replica 2 lists every source but cannot read their run history from 2m (its "
          "run series go), replica 1 still can; SchedwatchSourceHistoryDown warnings for replica "
          "2, no per-role alert";
      test.annotations = true;
      AddGates(test, Const(1), Const(1));
      AddGates(test, Const(1), Const(1), 0, 1, Step(1, 0));
      AddHealthyRoles(test, 0, 0);
      for (const JobSpec* sampled : sampled_) {
        const JobSpec& job = *sampled;
        AddRole(test, metrics::kJobInfo.name, job, Const(1), 0, 1);
        AddRole(test, metrics::kJobRegisteredObjects.name, job, Const(1), 0, 1);
        if (job.success_metric().empty()) AddSuccess(test, job, RampThenStale(), 0, 1);
      }
      for (const auto& [name, source] : spec_.sources) {
        ExpectEachShard(
            test, Alert::kSourceHistoryReplicaDown,
            [&](int k) { return SourceLabels(name, source, ExporterLabels(0, 1, k)); }, kOnset, 0);
      }
      Quiet(test,
            "SchedwatchJob.+|SchedwatchSourceDown|SchedwatchExporterDown|"
            "SchedwatchWatcherStale");
      cases.push_back(std::move(test));
    }
    {
      TestCase test;
      test.name =
          "replicas: replica 2's last refresh is exactly the limit old at 1m (quiet), older from "
          "2m on, replica 1's is fresh; a SchedwatchWatcherStale warning for replica 2 only";
      test.annotations = true;
      AddGates(test, Const(1), Const(1));
      AddGates(test, Const(1), Const(1), 0, 1);
      for (int k : Shards(options_)) {
        Add(test, metrics::kLastCycle.name, ExporterLabels(0, 0, k), Ramp());
        Add(test, metrics::kLastCycle.name, ExporterLabels(0, 1, k),
            Const(60 - options_.watcher_stale_after));
      }
      ExpectEachShard(
          test, Alert::kWatcherReplicaStale, [&](int k) { return ExporterLabels(0, 1, k); }, kOnset,
          options_.watcher_stale_after - 60, 1);
      cases.push_back(std::move(test));
    }
    {
      TestCase test;
      test.name =
          "replicas disagree from 2m: replica 2 lags (sees no object and a success far older "
          "than stale_after), replica 1 sees the object and a fresh success; no alert";
      AddGates(test, Const(1), Const(1));
      AddGates(test, Const(1), Const(1), 0, 1);
      AddHealthyRoles(test, 0, 0);
      for (const JobSpec* sampled : sampled_) {
        const JobSpec& job = *sampled;
        AddRole(test, metrics::kJobInfo.name, job, Const(1), 0, 1);
        AddRole(test, metrics::kJobRegisteredObjects.name, job, Step(1, 0), 0, 1);
        if (job.success_metric().empty()) AddSuccess(test, job, Step(0, -1000000000), 0, 1);
        if (job.stale_after) {
          for (int r : {0, 1}) {
            AddRole(test, metrics::kJobStaleAfter.name, job, Const(*job.stale_after), 0, r);
          }
        }
      }
      test.check_at = {kOnset, kOnset + LongestFor()};
      Quiet(test, "Schedwatch.+");
      test.quiet_from = 0;
      cases.push_back(std::move(test));
    }
    {
      TestCase test;
      test.name =
          "replicas: replica 2 cannot list its sources but still serves its last series (one "
          "object); replica 1 sees a second object from 2m: SchedwatchJobDuplicate, as only "
          "replicas that read a source count";
      AddGates(test, Const(1), Const(1));
      AddGates(test, Const(1), Const(0), 0, 1);
      for (const JobSpec* sampled : sampled_) {
        const JobSpec& job = *sampled;
        AddRole(test, metrics::kJobRegisteredObjects.name, job, Step(1, 2));
        AddRole(test, metrics::kJobRegisteredObjects.name, job, Const(1), 0, 1);
        ExpectRole(test, Alert::kJobDuplicate, job, kOnset, 2);
      }
      cases.push_back(std::move(test));
    }
    {
      TestCase test;
      test.name =
          "replicas agree from 2m: both see no object; one SchedwatchJobMissing per role, not "
          "one per replica";
      AddGates(test, Const(1), Const(1));
      AddGates(test, Const(1), Const(1), 0, 1);
      for (const JobSpec* sampled : sampled_) {
        const JobSpec& job = *sampled;
        for (int r : {0, 1}) {
          AddRole(test, metrics::kJobRegisteredObjects.name, job, Step(1, 0), 0, r);
        }
        ExpectRole(test, Alert::kJobMissing, job, kOnset, 0);
      }
      cases.push_back(std::move(test));
    }
    if (options_.identity_labels.empty()) return cases;

    // Two watchers in one job, told apart by the identity labels only: the same source names,
    // the same roles.
    {
      TestCase test;
      test.name =
          "watchers: watcher b cannot list its sources from 2m and its last series show every "
          "role missing without success, while watcher a reads the same-named sources; "
          "SchedwatchSourceDown for b only, no per-role alert for either";
      test.annotations = true;
      AddGates(test, Const(1), Const(1));
      AddGates(test, Const(1), Step(1, 0), 1, 0);
      AddHealthyRoles(test, 0, 0);
      for (const JobSpec* sampled : sampled_) {
        const JobSpec& job = *sampled;
        AddRole(test, metrics::kJobInfo.name, job, Const(1), 1, 0);
        AddRole(test, metrics::kJobRegisteredObjects.name, job, Step(1, 0), 1, 0);
      }
      for (const auto& [name, source] : spec_.sources) {
        ExpectEachShard(
            test, Alert::kSourceDown,
            [&](int) { return SourceLabels(name, source, WatcherLabels(1)); }, kOnset, 0);
      }
      Quiet(test, "SchedwatchJob.+|SchedwatchExporterDown|SchedwatchWatcherStale");
      cases.push_back(std::move(test));
    }
    {
      TestCase test;
      test.name =
          "watchers: watcher a sees no object for its roles from 2m while watcher b sees them; "
          "SchedwatchJobMissing with watcher a's identity labels only";
      AddGates(test, Const(1), Const(1));
      AddGates(test, Const(1), Const(1), 1, 0);
      for (const JobSpec* sampled : sampled_) {
        const JobSpec& job = *sampled;
        AddRole(test, metrics::kJobRegisteredObjects.name, job, Step(1, 0));
        AddRole(test, metrics::kJobRegisteredObjects.name, job, Const(1), 1, 0);
        ExpectRole(test, Alert::kJobMissing, job, kOnset, 0);
      }
      cases.push_back(std::move(test));
    }
    return cases;
  }

  // Sharded: a shard killed, a shard that never came up, exporters that disagree on the split,
  // shards whose roles do not add up. Each exporter serves N, the spec's roles and its own.
  std::vector<TestCase> ShardCases() const {
    const int n = options_.total_shards;
    const auto spec_roles = static_cast<std::int64_t>(spec_.jobs.size());
    // A shard with roles (sampled ones, if any): the first role's.
    const int chosen = sampled_.empty() ? 0 : ShardOfJob(*sampled_.front());
    auto healthy_gauges = [&](TestCase& test, int r) {
      for (int k : Shards(options_)) {
        AddShardGauges(test, 0, r, k, Const(n), Const(spec_roles), Const(RolesOfShard(k)));
      }
    };
    auto shard_down = [&](int shard) {
      return With(WatcherLabels(), std::string(kShardLabel), std::to_string(shard));
    };
    std::vector<TestCase> cases;
    {
      TestCase test;
      test.name = fmt::format(
          "SchedwatchShardDown: shard {}'s only exporter stops being scraped at 2m while its last "
          "samples show its roles missing; one SchedwatchShardDown, no per-role alert, no "
          "SchedwatchExporterDown warning, the shards' roles not judged",
          chosen);
      test.annotations = true;
      for (int k : Shards(options_)) {
        AddGates(test, k == chosen ? Step(1, 0) : Const(1), Const(1), 0, 0, std::nullopt, k);
      }
      healthy_gauges(test, 0);
      std::string roles;
      for (const JobSpec* sampled : sampled_) {
        const JobSpec& job = *sampled;
        AddRole(test, metrics::kJobInfo.name, job, Const(1));
        if (ShardOfJob(job) == chosen) {
          AddRole(test, metrics::kJobRegisteredObjects.name, job, Step(1, 0));
          roles += (roles.empty() ? "" : "|") + RegexQuote(job.role);
        } else {
          AddRole(test, metrics::kJobRegisteredObjects.name, job, Const(1));
          AddSuccess(test, job, Ramp());
        }
      }
      ExpectExporter(test, Alert::kShardDown, shard_down(chosen), kOnset, n);
      test.quiet =
          "SchedwatchJob.+|SchedwatchExporterDown|SchedwatchSourceDown|SchedwatchWatcherStale|"
          "SchedwatchShardingMismatch|SchedwatchShardCoverage";
      test.quiet_roles = roles;
      test.quiet_except_roles = untestable_;
      cases.push_back(std::move(test));
    }
    {
      TestCase test;
      test.name =
          "SchedwatchShardDown: no target serves shard 0 (it never came up) while the other "
          "shards are up; SchedwatchShardDown for shard 0 from the start, no other exporter alert";
      test.annotations = true;
      for (int k : Shards(options_)) {
        if (k != 0) AddGates(test, Const(1), Const(1), 0, 0, std::nullopt, k);
      }
      ExpectExporter(test, Alert::kShardDown, shard_down(0), 0, n - 1);
      // Its roles were never served: no per-role alert either (their absent() rules read only
      // their shard's exporters).
      test.quiet =
          "SchedwatchJob.+|SchedwatchExporterDown|SchedwatchSourceDown|SchedwatchWatcherStale";
      std::string roles;
      for (const JobSpec* sampled : sampled_) {
        if (ShardOfJob(*sampled) == 0)
          roles += (roles.empty() ? "" : "|") + RegexQuote(sampled->role);
      }
      test.quiet_roles = roles.empty() ? "$^" : roles;
      test.quiet_except_roles = untestable_;
      test.quiet_from = 0;
      cases.push_back(std::move(test));
    }
    {
      TestCase test;
      test.name = fmt::format(
          "SchedwatchShardingMismatch: shard {}'s exporter serves total_shards {} from 2m (a "
          "rollout half done), the others {}",
          n - 1, n + 1, n);
      test.annotations = true;
      AddGates(test, Const(1), Const(1));
      for (int k : Shards(options_)) {
        AddShardGauges(test, 0, 0, k, k == n - 1 ? Step(n, n + 1) : Const(n), Const(spec_roles),
                       Const(RolesOfShard(k)));
      }
      ExpectExporter(test, Alert::kShardingMismatch, WatcherLabels(), kOnset, 1);
      test.quiet = "SchedwatchShardDown|SchedwatchShardCoverage";
      test.quiet_roles = "$^";
      cases.push_back(std::move(test));
    }
    {
      TestCase test;
      test.name =
          "SchedwatchShardingMismatch: every exporter serves the same total_shards, but shard "
          "0's spec has one role more from 2m";
      test.annotations = true;
      AddGates(test, Const(1), Const(1));
      for (int k : Shards(options_)) {
        AddShardGauges(test, 0, 0, k, Const(n),
                       k == 0 ? Step(spec_roles, spec_roles + 1) : Const(spec_roles),
                       Const(RolesOfShard(k)));
      }
      ExpectExporter(test, Alert::kShardingMismatch, WatcherLabels(), kOnset, spec_roles + 1);
      test.quiet = "SchedwatchShardDown";
      test.quiet_roles = "$^";
      cases.push_back(std::move(test));
    }
    {
      TestCase test;
      test.name = fmt::format(
          "SchedwatchShardCoverage: two replicas of every shard serve its roles (counted once: "
          "quiet), and a spare with ordinal N (not counted); from 2m both replicas of shard {} "
          "watch one role fewer, so the shards add up to {} of the spec's {}",
          chosen, spec_roles - 1, spec_roles);
      test.annotations = true;
      for (int r : {0, 1}) {
        AddGates(test, Const(1), Const(1), 0, r);
        for (int k : Shards(options_)) {
          std::int64_t roles = RolesOfShard(k);
          AddShardGauges(test, 0, r, k, Const(n), Const(spec_roles),
                         k == chosen ? Step(roles, roles - 1) : Const(roles));
        }
      }
      // A spare of a shrinking StatefulSet (ordinal N) keeps the roles of a shard below N: it
      // is none of the N shards, and its roles are not counted.
      Labels spare = ExporterLabels(0, 2, n);
      Add(test, "up", spare, Const(1));
      Add(test, kShardOrdinal, spare, Const(n));
      AddShardGauges(test, 0, 2, n, Const(n), Const(spec_roles), Const(RolesOfShard(0)));
      ExpectExporter(test, Alert::kShardCoverage, WatcherLabels(), kOnset, spec_roles - 1);
      test.quiet = "SchedwatchShardDown|SchedwatchShardingMismatch|SchedwatchExporterDown";
      test.quiet_roles = "$^";
      test.quiet_from = 0;
      test.check_at = {0};
      cases.push_back(std::move(test));
    }
    return cases;
  }

  // The success ratio recording rule, for the sampled roles: a failure by 1m, successes by 2m,
  // 3m and 4m: 0.75 at 5m, and a second replica that missed the failure is merged in, not
  // added. For a window of at most kRatioBoundaryWindow also both sides of it: 0.75 one minute
  // before the failure's increase leaves the window, 1 one minute after, no sample once no run
  // finished within it. (promtool evaluates every rule of the files each minute up to the last
  // check: a day of minutes for every alert of a large spec takes too long; the boundary is the
  // same whatever the window, and the repository's tests check it with a 30m window.)
  static constexpr std::int64_t kRatioBoundaryWindow = 3600;
  void WriteSuccessRatio(std::string& out) const {
    if (sampled_.empty()) return;
    const std::int64_t window = options_.success_ratio_window;
    const bool boundary = window <= kRatioBoundaryWindow;
    const std::int64_t samples = boundary ? window / 60 + 6 : 6;
    const std::string record = SuccessRatioRecord(options_);
    AppendFormat(
        out, "  - name: {}\n    interval: 1m\n    input_series:\n",
        YamlScalar(fmt::format("{}: 3 successes and 1 failure within {} give 0.75{}; replicas "
                               "merged, not added",
                               record, FormatDuration(window),
                               boundary ? ", 1 once the failure is older, none once no run "
                                          "finished within it"
                                        : "")));
    auto series = [&](const JobSpec& job, int r, std::string_view outcome, std::string values) {
      AppendFormat(
          out, "      - series: {}\n        values: {}\n",
          YamlScalar(SeriesText(metrics::kJobRuns.name,
                                With(RoleLabels(job, 0, r), "outcome", std::string(outcome)))),
          YamlScalar(values));
    };
    for (const JobSpec* job : sampled_) {
      series(*job, 0, "failure", fmt::format("0 1x{}", samples - 2));
      series(*job, 0, "success", fmt::format("0x1 1 2 3x{}", samples - 5));
    }
    series(*sampled_[0], 1, "failure", fmt::format("0x{}", samples - 1));
    series(*sampled_[0], 1, "success", fmt::format("0x1 1 2 3x{}", samples - 5));
    out += "    promql_expr_test:\n";
    std::vector<std::pair<std::int64_t, const char*>> checks = {{300, "0.75"}};
    if (boundary) {
      checks.insert(checks.end(),
                    {{window - 60, "0.75"}, {window + 60, "1"}, {window + 300, nullptr}});
    }
    for (auto [t, value] : checks) {
      AppendFormat(out, "      - expr: {}\n        eval_time: {}\n", record, FormatDuration(t));
      if (!value) {
        out += "        exp_samples: []\n";
        continue;
      }
      out += "        exp_samples:\n";
      for (const JobSpec* job : sampled_) {
        Labels labels = WatcherLabels();
        labels["role"] = job->role;
        labels["source"] = job->source;
        AppendFormat(out, "          - labels: {}\n            value: {}\n",
                     YamlScalar(SeriesText(record, labels)), value);
      }
    }
  }

  void Write(const TestCase& test, std::string& out) const {
    std::set<std::int64_t> times(test.check_at.begin(), test.check_at.end());
    for (const auto& e : test.expected) {
      if (e.fires_at >= 60) times.insert(e.fires_at - 60);
      times.insert(e.fires_at);
      if (e.resolves_at) times.insert(*e.resolves_at);
    }
    std::int64_t samples =
        std::max<std::int64_t>((times.empty() ? 0 : *times.rbegin()) / 60 + 2, 4);

    AppendFormat(out, "  - name: {}\n    interval: 1m\n", YamlScalar(test.name));
    out += test.series.empty() ? "    input_series: []\n" : "    input_series:\n";
    for (const auto& [series, values] : test.series) {
      out += "      - series: ";
      AppendYamlScalar(out, series);
      out += "\n        values: ";
      AppendYamlScalar(out, values.Render(samples));
      out += '\n';
    }
    // By name: the critical and the warning variant of an alert share it.
    std::vector<std::string_view> alerts;
    for (const auto& e : test.expected) {
      std::string_view name = TextOf(e.alert).name;
      if (std::find(alerts.begin(), alerts.end(), name) == alerts.end()) alerts.push_back(name);
    }
    if (test.annotations) {
      out += "    alert_rule_test:\n";
      for (std::int64_t t : times) {
        for (std::string_view alert : alerts) WriteAlertRuleTest(test, alert, t, out);
      }
    }
    bool quiet = !test.quiet.empty() && !times.empty() && *times.rbegin() >= test.quiet_from;
    if (!test.annotations || quiet) out += "    promql_expr_test:\n";
    for (std::int64_t t : times) {
      if (!test.annotations) {
        for (std::string_view alert : alerts) WriteAlertsCheck(test, alert, t, out);
      }
      if (quiet && t >= test.quiet_from) {
        // An empty alternative keeps alerts without a role label in the check.
        std::string only =
            test.quiet_roles.empty() ? "" : ",role=~" + PromString("(" + test.quiet_roles + ")|");
        std::string except =
            test.quiet_except_roles.empty() ? "" : ",role!~" + PromString(test.quiet_except_roles);
        AppendFormat(out, "      - expr: {}\n        eval_time: {}\n        exp_samples: []\n",
                     YamlScalar(fmt::format("ALERTS{{alertname=~{}{}{}}}", PromString(test.quiet),
                                            only, except)),
                     FormatDuration(t));
      }
    }
  }

  // Which roles' alerts fire, through ALERTS (their full labels are checked in the annotation
  // groups), and how many are still pending.
  // Counted by the role's identity: a role firing once per replica would count 2.
  void WriteAlertsCheck(const TestCase& test, std::string_view name, std::int64_t t,
                        std::string& out) const {
    AppendFormat(out,
                 "      - expr: 'count by ({}) "
                 "(ALERTS{{alertname=\"{}\",alertstate=\"firing\"}})'\n"
                 "        eval_time: {}\n",
                 count_by_, name, FormatDuration(t));
    int pending = 0;
    bool any = false;
    for (const auto& e : test.expected) {
      if (TextOf(e.alert).name != name || e.onset > t || !e.ActiveAt(t)) continue;
      if (e.fires_at > t) {
        ++pending;
        continue;
      }
      if (!any) out += "        exp_samples:\n";
      any = true;
      Labels key;
      for (const auto& label : count_labels_) {
        auto it = e.labels.find(label);
        if (it != e.labels.end()) key[label] = it->second;
      }
      AppendFormat(out, "          - labels: {}\n            value: 1\n",
                   YamlScalar(SeriesText("", key)));
    }
    if (!any) out += "        exp_samples: []\n";
    AppendFormat(out,
                 "      - expr: 'count(ALERTS{{alertname=\"{}\",alertstate=\"pending\"}})'\n"
                 "        eval_time: {}\n",
                 name, FormatDuration(t));
    if (pending > 0) {
      AppendFormat(out, "        exp_samples:\n          - labels: '{{}}'\n            value: {}\n",
                   pending);
    } else {
      out += "        exp_samples: []\n";
    }
  }

  void WriteAlertRuleTest(const TestCase& test, std::string_view name, std::int64_t t,
                          std::string& out) const {
    AppendFormat(out, "      - eval_time: {}\n        alertname: {}\n", FormatDuration(t), name);
    std::vector<const Expected*> firing;
    for (const auto& e : test.expected) {
      if (TextOf(e.alert).name == name && e.fires_at <= t && e.ActiveAt(t)) firing.push_back(&e);
    }
    if (firing.empty()) {
      out += "        exp_alerts: []\n";
      return;
    }
    out += "        exp_alerts:\n";
    for (const Expected* e : firing) {
      const AlertText& text = TextOf(e->alert);
      out += "          - exp_labels: {";
      bool first = true;
      for (const auto& [name, value] : e->labels) {
        AppendFormat(out, "{}{}: {}", first ? "" : ", ", YamlScalar(name), YamlScalar(value));
        first = false;
      }
      std::int64_t value = e->value_at_zero + e->value_slope * t;
      AppendFormat(out,
                   "}}\n            exp_annotations:\n              summary: {}\n"
                   "              description: {}\n              runbook_url: {}\n",
                   YamlScalar(ExpandAnnotation(text.summary, e->labels, value)),
                   YamlScalar(ExpandAnnotation(text.description, e->labels, value)),
                   YamlScalar(RunbookUrl(options_, e->alert)));
    }
  }

  const Spec& spec_;
  const Options& options_;
  ForPolicy for_policy_;
  std::map<std::string, std::string> pushed_series_;  // role -> a series its selector matches
  // {instance=...,job=...,role=...,source=...} per job: written for every role and alert.
  std::map<const JobSpec*, std::string> role_labels_;
  std::string untestable_;  // roles whose pushed success series cannot be built, as a regex
  // The roles the replica and watcher cases use: a few per source, so that those cases stay
  // small for a spec of 10,000 roles (the per-role cases above cover every role).
  std::vector<const JobSpec*> sampled_;
  std::string sampled_roles_;              // the same, as a regex
  std::vector<std::string> count_labels_;  // the identity labels, source, role, severity
  std::string count_by_;
  bool every_role_has_info_ = false;
  bool sharded_ = false;
};

}  // namespace

void RenderRuleTests(const Spec& spec, const Options& options, std::vector<std::string>& warnings,
                     const Sink& sink) {
  TestWriter(spec, options, warnings).Render(sink);
}

}  // namespace schedwatch::rulegen
