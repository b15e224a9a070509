// schedwatch_rulegen: writes alert rules, their promtool tests, an Alertmanager snippet and a
// Grafana dashboard from the desired-state spec. Exit codes: 0 fine, 2 bad spec or arguments.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

#include "rulegen/alerts.h"
#include "rulegen/rulegen.h"
#include "schedwatch/build_info.h"
#include "schedwatch/duration.h"
#include "schedwatch/spec.h"
#include "sources/catalog.h"

namespace {

constexpr int kExitBadInput = 2;

// Identity labels: Prometheus label names that the rules do not already use for something else.
std::string IdentityLabelProblem(const std::string& label) {
  static const char* const kReserved[] = {
      "job",  "instance",  "source",   "role",       "condition",
      "type", "alertname", "severity", "alertstate", "schedwatch_shard"};
  if (label.empty() || !(std::isalpha(static_cast<unsigned char>(label[0])) || label[0] == '_') ||
      !std::all_of(label.begin(), label.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
      })) {
    return fmt::format("\"{}\" is not a Prometheus label name", label);
  }
  if (label.rfind("__", 0) == 0) return fmt::format("{} is reserved by Prometheus", label);
  for (const char* reserved : kReserved) {
    if (label == reserved) return fmt::format("{} is already part of every identity", label);
  }
  return "";
}

bool HasControlCharacters(const std::string& text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

}  // namespace

int main(int argc, char** argv) {
  using namespace schedwatch;
  CLI::App app{
      "schedwatch_rulegen: writes Prometheus alert rules, their promtool tests, an "
      "Alertmanager snippet and a Grafana dashboard from the desired-state spec."};
  app.set_version_flag("--version", VersionText("schedwatch_rulegen"));
  std::string config_file, out_dir, mode = "per-role", watcher_stale_after = "5m";
  std::string exporter_alert_for = "5m", output_format = "rules", success_ratio_window = "1d";
  rulegen::Options options;
  app.add_option("--config.file", config_file, "The desired-state spec (YAML)")->required();
  std::size_t max_spec_bytes = kDefaultMaxSpecBytes;
  app.add_option("--config.max-size", max_spec_bytes,
                 "Largest spec file read (B, KiB, MiB, GiB); 1,000,000 roles are about 100 MB")
      ->transform(CLI::AsSizeValue(false))
      ->default_str("256MiB");
  app.add_option("--out", out_dir, "Directory to write the files into (created if needed)")
      ->required();
  app.add_option("--mode", mode,
                 "per-role: literal thresholds and an absent() per role (small specs); joined: a "
                 "constant number of rules joined against the exporter's threshold series")
      ->check(CLI::IsMember({"per-role", "joined"}))
      ->capture_default_str();
  app.add_option("--exporter-job", options.exporter_job,
                 "The Prometheus job name of the exporter's scrape target")
      ->capture_default_str();
  app.add_option("--runbook-base-url", options.runbook_base_url,
                 "Each alert's runbook_url is this URL plus #<alertname in lower case>")
      ->capture_default_str();
  app.add_option("--watcher-stale-after", watcher_stale_after,
                 "SchedwatchWatcherStale fires when the exporter's last complete refresh is older")
      ->capture_default_str();
  app.add_option("--watchdog-url", options.watchdog_url,
                 "Webhook of the dead man's switch that receives the Watchdog alert")
      ->capture_default_str();
  app.add_option("--identity-labels", options.identity_labels,
                 "Labels (besides job) that tell watchers apart, set by relabeling or "
                 "external_labels, e.g. cluster,region; exporters that share them are replicas")
      ->delimiter(',');
  app.add_option("--exporter-alert-for", exporter_alert_for,
                 "for: of SchedwatchExporterDown, SchedwatchWatcherStale, SchedwatchSourceDown and "
                 "SchedwatchSourceHistoryDown "
                 "(schedwatch-global.rules.yml)")
      ->capture_default_str();
  app.add_option("--success-ratio-window", success_ratio_window,
                 "Window of the success ratio recording rule "
                 "(role:schedwatch_job_runs_success:ratio_rate<window>), whole minutes")
      ->capture_default_str();
  app.add_option("--output-format", output_format,
                 "rules: Prometheus rule files; prometheus-rule: also the same rules as "
                 "prometheus-operator PrometheusRule objects (*.prometheusrule.yaml); mixin: also "
                 "a jsonnet monitoring mixin (mixin.libsonnet, schedwatch-global.libsonnet)")
      ->check(CLI::IsMember({"rules", "prometheus-rule", "mixin"}))
      ->capture_default_str();
  app.add_option("--prometheus-rule-namespace", options.prometheus_rule_namespace,
                 "metadata.namespace of the PrometheusRule objects")
      ->capture_default_str();
  app.add_option("--route-by", options.route_by,
                 "A label of the spec's jobs (labels:): alertmanager.yml routes each of its values "
                 "to a receiver of its own");
  app.add_option("--total-shards", options.total_shards,
                 "The exporters split the spec into this many shards (--shard K --total-shards "
                 "N): per-role alerts carry schedwatch_shard and the global rules watch each "
                 "shard; at most 1024, as rules are written per shard")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option(
      "--dashboard-uid", options.dashboard_uid,
      "The Grafana dashboard's uid (default: derived from the job, spec name and roles)");
  try {
    app.parse(argc, argv);
    for (const auto& label : options.identity_labels) {
      std::string problem = IdentityLabelProblem(label);
      if (!problem.empty()) throw CLI::ValidationError("--identity-labels", problem);
    }
    if (std::set<std::string>(options.identity_labels.begin(), options.identity_labels.end())
            .size() != options.identity_labels.size()) {
      throw CLI::ValidationError("--identity-labels", "a label is named twice");
    }
    auto alert_for = ParseDuration(exporter_alert_for);
    if (!alert_for || *alert_for < 0) {
      throw CLI::ValidationError("--exporter-alert-for",
                                 alert_for ? "must not be negative" : alert_for.error());
    }
    options.exporter_alert_for = *alert_for;
    options.prometheus_rule = output_format == "prometheus-rule";
    options.mixin = output_format == "mixin";
    auto stale_after = ParseDuration(watcher_stale_after);
    if (!stale_after || *stale_after <= 0) {
      throw CLI::ValidationError("--watcher-stale-after",
                                 stale_after ? "must be longer than 0s" : stale_after.error());
    }
    options.watcher_stale_after = *stale_after;
    auto window = ParseDuration(success_ratio_window);
    if (!window || *window < 600 || *window % 60 != 0) {
      throw CLI::ValidationError("--success-ratio-window",
                                 window ? "must be whole minutes, at least 10m" : window.error());
    }
    options.success_ratio_window = *window;
    for (const auto& [flag, value] :
         {std::pair<const char*, const std::string*>{"--exporter-job", &options.exporter_job},
          {"--runbook-base-url", &options.runbook_base_url},
          {"--watchdog-url", &options.watchdog_url},
          {"--prometheus-rule-namespace", &options.prometheus_rule_namespace}}) {
      if (value->empty() || HasControlCharacters(*value)) {
        throw CLI::ValidationError(flag, "must be non-empty, without control characters");
      }
    }
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadInput;
  }
  options.mode = mode == "joined" ? rulegen::Mode::kJoined : rulegen::Mode::kPerRole;

  auto spec = LoadSpecFile(config_file, max_spec_bytes);
  if (!spec) {
    std::fprintf(stderr, "%s\n", spec.error().c_str());
    return kExitBadInput;
  }
  // The spec's labels and the flags must not name the same label for different things.
  std::vector<std::string> spec_labels = rulegen::SpecLabelNames(*spec);
  auto in_spec = [&spec_labels](const std::string& label) {
    return std::binary_search(spec_labels.begin(), spec_labels.end(), label);
  };
  for (const auto& label : options.identity_labels) {
    if (in_spec(label)) {
      std::fprintf(stderr,
                   "--identity-labels: %s is also a label of the spec's jobs (labels:); an "
                   "identity label tells watchers apart and must not be a job's label\n",
                   label.c_str());
      return kExitBadInput;
    }
  }
  if (options.total_shards > 1 && in_spec(std::string(rulegen::kShardLabel))) {
    std::fprintf(stderr,
                 "--total-shards: schedwatch_shard is a label of the spec's jobs "
                 "(labels:); sharded rules set it to each role's shard\n");
    return kExitBadInput;
  }
  if (!options.route_by.empty() && !in_spec(options.route_by)) {
    std::fprintf(stderr, "--route-by: no job in the spec has the label %s (labels:)\n",
                 options.route_by.c_str());
    return kExitBadInput;
  }
  std::vector<std::string> warnings;
  auto written = rulegen::Write(*spec, options, out_dir, warnings);
  for (const auto& warning : warnings) std::fprintf(stderr, "warning: %s\n", warning.c_str());
  if (!written) {
    std::fprintf(stderr, "%s\n", written.error().c_str());
    return 1;
  }
  return 0;
}
