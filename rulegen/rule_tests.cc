// schedwatch.rules.test.yml: promtool unit tests generated from the spec.
//
// One test group per alert covers every role at once, so the file grows linearly with the spec.
// Each group shows the exporter's healthy output at 0m and 1m and the condition from 2m on;
// thresholds sit exactly at the boundary before that (an age equal to stale_after does not
// fire, one minute more does). Every role is then checked one evaluation before its `for:` has
// passed (pending, not firing) and when it has (firing), through the ALERTS series. A second,
// small group per alert checks the exact labels and annotations Prometheus sends, for one role
// of each kind (exporter-observed and pushed success).
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "rulegen/alerts.h"
#include "rulegen/text.h"
#include "schedwatch/duration.h"

namespace schedwatch::rulegen {
namespace {

using Labels = std::map<std::string, std::string>;

constexpr std::int64_t kOnset = 120;  // conditions start at 2m
constexpr const char* kInstance = "localhost:9762";

std::int64_t CeilMinute(std::int64_t seconds) { return (seconds + 59) / 60 * 60; }

// A series' samples at 0m, 1m, 2m, ... in promtool's expanding notation.
struct Values {
  enum class Kind {
    kConst,           // a throughout
    kStep,            // a at 0m and 1m, b from 2m on
    kRamp,            // 0, 60, 120, ...: a timestamp that keeps up with the clock
    kRampThenStale,   // 0, 60, then a staleness marker at 2m: the series disappears
    kConstThenStale,  // a at 0m and 1m, then gone
  };
  Kind kind;
  std::int64_t a = 0, b = 0;

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
    }
    return "";
  }
};
Values Const(std::int64_t a) { return {Values::Kind::kConst, a}; }
Values Step(std::int64_t a, std::int64_t b) { return {Values::Kind::kStep, a, b}; }
Values Ramp() { return {Values::Kind::kRamp}; }
Values RampThenStale() { return {Values::Kind::kRampThenStale}; }
Values ConstThenStale(std::int64_t a) { return {Values::Kind::kConstThenStale, a}; }

struct Expected {
  Alert alert;
  Labels labels;  // all but alertname
  std::int64_t onset, fires_at;
  std::int64_t value_at_zero, value_slope;  // $value = value_at_zero + value_slope * t
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
  std::int64_t quiet_from = kOnset;
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
    for (const auto& job : spec.jobs) {
      role_labels_.emplace(&job, SeriesText("", RoleLabels(job)));
      if (job.success_metric.empty()) continue;
      auto selector = ParseSelector(job.success_metric);
      auto series = selector ? ExampleSeries(*selector) : std::nullopt;
      if (series) {
        pushed_series_[job.role] = *series;
      } else {
        warnings.push_back(fmt::format(
            "role {}: no test series can be built for success_metric {} (supported: =, !=, !~ "
            "and =~ with literal alternatives); its generated tests leave the pushed series out",
            job.role, job.success_metric));
      }
    }
  }

  void Render(const Sink& sink) {
    std::string out = GeneratedHeader(spec_, options_, "promtool unit tests");
    out.reserve(2 * kSinkChunk);
    out += "# Run: promtool test rules schedwatch.rules.test.yml\n";
    out += "rule_files:\n  - schedwatch.rules.yml\nevaluation_interval: 1m\ntests:\n";
    for (const auto& role_case : RoleCases()) {
      for (bool annotations : {false, true}) {
        Write(Build(role_case, annotations), out);
        if (out.size() >= kSinkChunk) {
          sink(out);
          out.clear();
        }
      }
    }
    Write(SourceDownCase(), out);
    Write(ExporterDownCase(), out);
    Write(ExporterAbsentCase(), out);
    Write(WatcherStaleCase(), out);
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
  };

  Labels RoleLabels(const JobSpec& job) const {
    return {{"instance", kInstance},
            {"job", options_.exporter_job},
            {"role", job.role},
            {"source", job.source}};
  }
  Labels ExporterLabels() const {
    return {{"instance", kInstance}, {"job", options_.exporter_job}};
  }
  Labels SourceLabels(const std::string& name, const SourceSpec& source) const {
    Labels labels = ExporterLabels();
    labels["source"] = name;
    labels["type"] = source.type;
    return labels;
  }

  void Add(TestCase& test, std::string_view metric, const Labels& labels, Values values) const {
    test.series.emplace_back(SeriesText(metric, labels), values);
  }
  void AddRole(TestCase& test, std::string_view metric, const JobSpec& job, Values values) const {
    test.series.emplace_back(fmt::format("{}{}", metric, role_labels_.at(&job)), values);
  }
  const std::string* PushedSeries(const JobSpec& job) const {
    auto it = pushed_series_.find(job.role);
    return it == pushed_series_.end() ? nullptr : &it->second;
  }
  // The success series the rules read for `job`; false when a pushed one cannot be built.
  bool AddSuccess(TestCase& test, const JobSpec& job, Values values) const {
    if (job.success_metric.empty()) {
      AddRole(test, "schedwatch_job_last_success_timestamp_seconds", job, values);
      return true;
    }
    const std::string* series = PushedSeries(job);
    if (series) test.series.emplace_back(*series, values);
    return series != nullptr;
  }
  // The exporter is scraped and every source lists fine, unless a case says otherwise.
  void AddGates(TestCase& test, Values up, Values source_up) const {
    Add(test, "up", ExporterLabels(), up);
    for (const auto& [name, source] : spec_.sources) {
      Add(test, "schedwatch_source_up", SourceLabels(name, source), source_up);
    }
  }

  void ExpectRole(TestCase& test, Alert alert, const JobSpec& job, std::int64_t onset,
                  std::int64_t value_at_zero, std::int64_t value_slope = 0) const {
    Labels labels;
    if (ShapeOf(alert, job) == LabelShape::kExporterSeries) {
      labels = RoleLabels(job);
      if (alert == Alert::kJobNotStarted) labels["condition"] = "not_started";
    } else {
      labels = {{"job", options_.exporter_job}, {"role", job.role}, {"source", job.source}};
    }
    Expect(test, alert, std::move(labels), onset, for_policy_.Of(&job), value_at_zero, value_slope);
  }
  void ExpectExporter(TestCase& test, Alert alert, Labels labels, std::int64_t onset,
                      std::int64_t value_at_zero, std::int64_t value_slope = 0) const {
    Expect(test, alert, std::move(labels), onset,
           alert == Alert::kWatchdog ? 0 : for_policy_.Of(nullptr), value_at_zero, value_slope);
  }
  static void Expect(TestCase& test, Alert alert, Labels labels, std::int64_t onset,
                     std::int64_t for_seconds, std::int64_t value_at_zero,
                     std::int64_t value_slope) {
    labels["severity"] = std::string(TextOf(alert).severity);
    test.expected.push_back({alert, std::move(labels), onset, onset + CeilMinute(for_seconds),
                             value_at_zero, value_slope});
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
      if (!Applies(role_case.alert, job)) continue;
      bool pushed = !job.success_metric.empty();
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
           AddRole(t, "schedwatch_job_registered_objects", job, Step(1, 0));
           ExpectRole(t, Alert::kJobMissing, job, kOnset, 0);
         }},
        {Alert::kJobSuccessAbsent, "desired roles whose success series never appeared",
         [&](TestCase& t, const JobSpec& job) {
           AddRole(t, "schedwatch_job_info", job, Const(1));
           ExpectRole(t, Alert::kJobSuccessAbsent, job, 0, 1);
         }},
        {Alert::kJobSuccessAbsent,
         "the success series disappears at 2m (lost history, wiped Pushgateway)",
         [&](TestCase& t, const JobSpec& job) {
           AddRole(t, "schedwatch_job_info", job, Const(1));
           bool added = AddSuccess(t, job, RampThenStale());
           ExpectRole(t, Alert::kJobSuccessAbsent, job, added ? kOnset : 0, 1);
         }},
        {Alert::kJobSuccessStale,
         "last success exactly stale_after old at 1m (quiet), older from 2m on; pushed success "
         "series are judged by their value",
         [&](TestCase& t, const JobSpec& job) {
           std::int64_t stale_after = *job.stale_after;
           AddRole(t, "schedwatch_job_stale_after_seconds", job, Const(stale_after));
           if (AddSuccess(t, job, Const(60 - stale_after))) {
             ExpectRole(t, Alert::kJobSuccessStale, job, kOnset, stale_after - 60, 1);
           }
         }},
        {Alert::kJobInactive, "the only object is disabled at 2m",
         [&](TestCase& t, const JobSpec& job) {
           AddRole(t, "schedwatch_job_registered_objects", job, Const(1));
           AddRole(t, "schedwatch_job_active_objects", job, Step(1, 0));
           ExpectRole(t, Alert::kJobInactive, job, kOnset, 0);
         }},
        {Alert::kJobDuplicate, "a second object appears at 2m",
         [&](TestCase& t, const JobSpec& job) {
           AddRole(t, "schedwatch_job_registered_objects", job, Step(1, 2));
           AddRole(t, "schedwatch_job_active_objects", job, Step(1, 2));
           ExpectRole(t, Alert::kJobDuplicate, job, kOnset, 2);
         }},
        {Alert::kJobDrift, "the object drifts from the spec at 2m",
         [&](TestCase& t, const JobSpec& job) {
           AddRole(t, "schedwatch_job_registered_objects", job, Const(1));
           AddRole(t, "schedwatch_job_drifted_objects", job, Step(0, 1));
           ExpectRole(t, Alert::kJobDrift, job, kOnset, 1);
         }},
        {Alert::kJobNotStarted, "the exporter classifies the role not_started at 2m",
         [&](TestCase& t, const JobSpec& job) {
           Labels labels = RoleLabels(job);
           labels["condition"] = "not_started";
           Add(t, "schedwatch_job_condition", labels, Step(0, 1));
           ExpectRole(t, Alert::kJobNotStarted, job, kOnset, 1);
         }},
        {Alert::kJobHung, "a run exactly max_runtime old at 1m (quiet), older from 2m on",
         [&](TestCase& t, const JobSpec& job) {
           AddRole(t, "schedwatch_job_max_runtime_seconds", job, Const(job.max_runtime));
           AddRole(t, "schedwatch_job_running_since_timestamp_seconds", job,
                   Const(60 - job.max_runtime));
           ExpectRole(t, Alert::kJobHung, job, kOnset, job.max_runtime - 60, 1);
         }},
        {Alert::kJobFailing,
         "a failure older than the last success (quiet), then a newer one at 2m",
         [&](TestCase& t, const JobSpec& job) {
           AddRole(t, "schedwatch_job_last_success_timestamp_seconds", job, Const(-600));
           AddRole(t, "schedwatch_job_last_failure_timestamp_seconds", job, Step(-700, 100));
           ExpectRole(t, Alert::kJobFailing, job, kOnset, 100);
         }},
        {Alert::kJobProgressStalled,
         "success stays fresh; the checkpoint is exactly progress stale_after old at 1m (quiet), "
         "older from 2m on",
         [&](TestCase& t, const JobSpec& job) {
           std::int64_t stale_after = job.progress->stale_after;
           AddRole(t, "schedwatch_job_progress_stale_after_seconds", job, Const(stale_after));
           AddRole(t, "schedwatch_job_last_progress_timestamp_seconds", job,
                   Const(60 - stale_after));
           if (job.stale_after) {
             AddRole(t, "schedwatch_job_stale_after_seconds", job, Const(*job.stale_after));
           }
           if (AddSuccess(t, job, Ramp())) {
             ExpectRole(t, Alert::kJobProgressStalled, job, kOnset, stale_after - 60, 1);
           }
         }},
        {Alert::kJobLedgerMismatch, "the ledger's recorded object stops being live at 2m",
         [&](TestCase& t, const JobSpec& job) {
           AddRole(t, "schedwatch_job_ledger_mismatch", job, Step(0, 1));
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
      AddRole(test, "schedwatch_job_info", job, Const(1));
      AddRole(test, "schedwatch_job_registered_objects", job, ConstThenStale(1));
      if (job.success_metric.empty()) AddSuccess(test, job, RampThenStale());
    }
    for (const auto& [name, source] : spec_.sources) {
      ExpectExporter(test, Alert::kSourceDown, SourceLabels(name, source), kOnset, 0);
    }
    test.quiet = "SchedwatchJob.+";
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
      AddRole(test, "schedwatch_job_info", job, Const(1));
      AddRole(test, "schedwatch_job_registered_objects", job, Step(1, 0));
    }
    ExpectExporter(test, Alert::kExporterDown, ExporterLabels(), kOnset, 0);
    test.quiet = "SchedwatchJob.+|SchedwatchSourceDown|SchedwatchWatcherStale";
    return test;
  }

  TestCase ExporterAbsentCase() const {
    TestCase test;
    test.name = "SchedwatchExporterDown: no target of the job at all; no per-role alert";
    test.annotations = true;
    ExpectExporter(test, Alert::kExporterDown, {{"job", options_.exporter_job}}, 0, 1);
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
    Add(test, "schedwatch_exporter_last_cycle_timestamp_seconds", ExporterLabels(),
        Const(60 - options_.watcher_stale_after));
    ExpectExporter(test, Alert::kWatcherStale, ExporterLabels(), kOnset,
                   options_.watcher_stale_after - 60, 1);
    return test;
  }

  void Write(const TestCase& test, std::string& out) const {
    std::set<std::int64_t> times;
    for (const auto& e : test.expected) {
      if (e.fires_at >= 60) times.insert(e.fires_at - 60);
      times.insert(e.fires_at);
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
    std::vector<Alert> alerts;
    for (const auto& e : test.expected) {
      if (std::find(alerts.begin(), alerts.end(), e.alert) == alerts.end())
        alerts.push_back(e.alert);
    }
    if (test.annotations) {
      out += "    alert_rule_test:\n";
      for (std::int64_t t : times) {
        for (Alert alert : alerts) WriteAlertRuleTest(test, alert, t, out);
      }
    }
    bool quiet = !test.quiet.empty() && !times.empty() && *times.rbegin() >= test.quiet_from;
    if (!test.annotations || quiet) out += "    promql_expr_test:\n";
    for (std::int64_t t : times) {
      if (!test.annotations) {
        for (Alert alert : alerts) WriteAlertsCheck(test, alert, t, out);
      }
      if (quiet && t >= test.quiet_from) {
        AppendFormat(out, "      - expr: {}\n        eval_time: {}\n        exp_samples: []\n",
                     YamlScalar(fmt::format("ALERTS{{alertname=~{}}}", PromString(test.quiet))),
                     FormatDuration(t));
      }
    }
  }

  // Which roles' alerts fire, through ALERTS (their full labels are checked in the annotation
  // groups), and how many are still pending.
  void WriteAlertsCheck(const TestCase& test, Alert alert, std::int64_t t, std::string& out) const {
    std::string_view name = TextOf(alert).name;
    AppendFormat(out,
                 "      - expr: 'count by (role, source) "
                 "(ALERTS{{alertname=\"{}\",alertstate=\"firing\"}})'\n"
                 "        eval_time: {}\n",
                 name, FormatDuration(t));
    int pending = 0;
    bool any = false;
    for (const auto& e : test.expected) {
      if (e.alert != alert || e.onset > t) continue;
      if (e.fires_at > t) {
        ++pending;
        continue;
      }
      if (!any) out += "        exp_samples:\n";
      any = true;
      AppendFormat(out, "          - labels: '{{role={},source={}}}'\n            value: 1\n",
                   PromString(e.labels.at("role")), PromString(e.labels.at("source")));
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

  void WriteAlertRuleTest(const TestCase& test, Alert alert, std::int64_t t,
                          std::string& out) const {
    AppendFormat(out, "      - eval_time: {}\n        alertname: {}\n", FormatDuration(t),
                 TextOf(alert).name);
    std::vector<const Expected*> firing;
    for (const auto& e : test.expected) {
      if (e.alert == alert && e.fires_at <= t) firing.push_back(&e);
    }
    if (firing.empty()) {
      out += "        exp_alerts: []\n";
      return;
    }
    out += "        exp_alerts:\n";
    const AlertText& text = TextOf(alert);
    for (const Expected* e : firing) {
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
                   YamlScalar(RunbookUrl(options_, alert)));
    }
  }

  const Spec& spec_;
  const Options& options_;
  ForPolicy for_policy_;
  std::map<std::string, std::string> pushed_series_;  // role -> a series its selector matches
  // {instance=...,job=...,role=...,source=...} per job: written for every role and alert.
  std::map<const JobSpec*, std::string> role_labels_;
};

}  // namespace

void RenderRuleTests(const Spec& spec, const Options& options, std::vector<std::string>& warnings,
                     const Sink& sink) {
  TestWriter(spec, options, warnings).Render(sink);
}

}  // namespace schedwatch::rulegen
