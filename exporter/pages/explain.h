// Why a role is in the conditions it is in: for each condition that holds, the sentence that
// proves it from what was seen ("last success 19m ago, more than stale_after 15m") and the safe
// first action with its runbook anchor (docs/runbook.md, the same anchors schedwatch_rulegen
// links). Pure: used by the status page, the JSON API and `explain`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exporter/state/state.h"

namespace schedwatch {

// The --web.runbook-url default: rulegen's --runbook-base-url default.
inline constexpr const char* kDefaultRunbookUrl =
    "https://github.com/schedwatch/schedwatch/blob/main/docs/runbook.md";

struct ConditionReason {
  Condition condition = Condition::kOk;
  std::string text;    // what was seen
  std::string action;  // the safe first action
  std::string alert;   // the alert (and runbook section) it belongs to: "SchedwatchJobMissing"
  // Not raised: only a recent step of the watcher's clock would raise it (RoleStatus::held).
  bool held = false;
};

// One reason per condition that holds, in the order of the conditions table, then one per
// condition held back after a clock step. `source` is the
// role's source status (for the error of an unknown source); may be null.
std::vector<ConditionReason> ExplainConditions(const RoleResult& role, const SourceStatus* source,
                                               std::int64_t now);

// How `failing` was judged for a role whose job sets failure_threshold or recovery_threshold,
// from the runs the exporter keeps for it (what Classify saw); nullopt for other roles and while
// the source is unknown.
std::optional<FailingJudgement> FailingJudgementOf(const RoleResult& role);

// "failure_threshold 3, recovery_threshold 2, judged from 2 finished runs: fewer than
// failure_threshold, ...": how many runs failing was judged from, for people. Empty without
// thresholds.
std::string FailingHistoryText(const RoleResult& role);

// "<base>#<alert in lower case>", as rulegen writes runbook_url.
std::string RunbookLink(const std::string& base, const std::string& alert);

// A threshold in force and where its value came from.
struct Threshold {
  std::string name;                     // "stale_after"
  std::string value;                    // "25m"
  std::string origin;                   // "derived: 2 × period + max_runtime (2 × 10m + 5m)"
  std::optional<std::int64_t> seconds;  // for durations
};
std::vector<Threshold> Thresholds(const JobSpec& job);

// The fields in which a live object differs from the spec ("schedule", "timezone",
// "spec_version"); empty when it does not drift.
std::vector<std::string> DriftFields(const JobSpec& job, const LiveObject& object);

// Where a role's runs were read from: "cron log /var/log/syslog", "Jobs of its CronJob", ...
std::string RunOriginText(const SourceSpec* source, RunOrigin origin);

// `text` for a terminal: control characters (C0, DEL, C1), bidirectional controls (U+202E
// and kin, which reorder what follows), line separators and invalid UTF-8 become visible
// escapes (\x1b, \u202e), so live data cannot move the cursor, recolour or reorder the text.
std::string TerminalSafe(std::string_view text);

// Severity order of the conditions table (unknown first, ok last), for sorting problems first.
int SeverityRank(const RoleStatus& status);

}  // namespace schedwatch
