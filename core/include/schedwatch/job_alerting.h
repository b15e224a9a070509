// How a job's alerts are labelled, graded, tuned and held, and which optional series it gets:
// settings most jobs leave alone. They live behind one pointer in JobSpec that jobs with equal
// values share, so that 100,000 jobs without them cost a null pointer each.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedwatch/maintenance.h"

namespace schedwatch {

// The per-role alert kinds `severity:` may name, one per per-role alert.
inline constexpr std::array<std::string_view, 12> kAlertKinds = {
    "missing",     "success_absent", "stale",   "inactive",  "duplicate", "drift",
    "not_started", "hung",           "failing", "too_short", "stalled",   "ledger_mismatch"};
inline constexpr std::array<std::string_view, 3> kSeverityLevels = {"critical", "warning", "info"};

// Label names schedwatch's own series and alerts carry (or Prometheus and Alertmanager add):
// a `labels:` key may not be one of them, nor begin with "__".
inline constexpr std::array<std::string_view, 15> kReservedLabelNames = {
    "job",  "instance", "role",    "source", "schedule", "timezone",  "spec_version", "condition",
    "type", "reason",   "outcome", "le",     "severity", "alertname", "alertstate"};

using LabelPairs = std::vector<std::pair<std::string, std::string>>;

struct JobAlerting {
  LabelPairs labels;    // by name: on schedwatch_job_info and on every per-role alert
  LabelPairs severity;  // alert kind -> level, by kind; kinds not listed keep the built-in one
  // `failing` once this many finished runs in a row failed, and until `recovery_threshold`
  // runs in a row succeed (classify.h, JudgeFailing).
  int failure_threshold = 1;
  int recovery_threshold = 1;
  std::int64_t min_runtime = 0;  // a success shorter than this is too_short; 0: no check
  // Planned downtime: the defaults' windows, then the job's own (maintenance.h).
  MaintenanceWindows maintenance;
  // schedwatch_job_run_duration_seconds for the role: a histogram of its counted runs.
  bool duration_histogram = false;

  // Whether `failing` is judged from the runs rather than the latest failure and success.
  bool Thresholds() const { return failure_threshold > 1 || recovery_threshold > 1; }
  bool empty() const {
    return labels.empty() && severity.empty() && !Thresholds() && min_runtime == 0 &&
           maintenance.empty() && !duration_histogram;
  }
  // The level of `kind`, or `built_in` when the spec does not set one.
  std::string_view SeverityOf(std::string_view kind, std::string_view built_in) const {
    for (const auto& [name, level] : severity) {
      if (name == kind) return level;
    }
    return built_in;
  }
  std::string_view Label(std::string_view name) const {
    for (const auto& [key, value] : labels) {
      if (key == name) return value;
    }
    return {};
  }
  bool operator==(const JobAlerting& other) const {
    return labels == other.labels && severity == other.severity &&
           failure_threshold == other.failure_threshold &&
           recovery_threshold == other.recovery_threshold && min_runtime == other.min_runtime &&
           maintenance == other.maintenance && duration_histogram == other.duration_histogram;
  }
};

// For jobs without any of these settings.
inline const JobAlerting& NoAlerting() {
  static const JobAlerting kNone;
  return kNone;
}

}  // namespace schedwatch
