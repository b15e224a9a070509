// schedwatch_rulegen: turns the desired-state spec into Prometheus alert rules, promtool unit
// tests for them, an Alertmanager routing snippet and a Grafana dashboard (DESIGN.md section 6).
// Generate() renders strings; Write() streams the same files into a directory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedwatch/result.h"
#include "schedwatch/spec.h"

namespace schedwatch::rulegen {

enum class Mode {
  kPerRole,  // literal thresholds and an explicit absent() per role: readable, for small specs
  kJoined,   // a constant number of rules joined against the exporter's threshold series
};

inline constexpr const char* kDefaultRunbookBaseUrl = "https://schedwatch.example/README.md";
inline constexpr const char* kDefaultWatchdogUrl = "http://127.0.0.1:9099/heartbeat";

struct Options {
  Mode mode = Mode::kPerRole;
  std::string exporter_job = "schedwatch";  // the Prometheus job label of the exporter's target
  std::string runbook_base_url = kDefaultRunbookBaseUrl;  // each alert links <base>#<alertname>
  std::int64_t watcher_stale_after = 300;  // SchedwatchWatcherStale: heartbeat older than this
  std::string watchdog_url = kDefaultWatchdogUrl;  // the dead man's switch webhook
};

// The four files, as Write() names them.
struct Output {
  std::string rules;         // schedwatch.rules.yml
  std::string rule_tests;    // schedwatch.rules.test.yml
  std::string alertmanager;  // alertmanager.yml
  std::string dashboard;     // dashboard.json
  // Things a person should know, e.g. a success_metric for which no test series can be built.
  std::vector<std::string> warnings;
};

Output Generate(const Spec& spec, const Options& options);

// Creates `directory` if needed and streams the four files into it: schedwatch.rules.yml,
// schedwatch.rules.test.yml, alertmanager.yml, dashboard.json (what Generate() returns, byte
// for byte). Warnings as in Output. The error names the file.
Result<bool> Write(const Spec& spec, const Options& options, const std::string& directory,
                   std::vector<std::string>& warnings);

std::string_view ModeName(Mode mode);

}  // namespace schedwatch::rulegen
