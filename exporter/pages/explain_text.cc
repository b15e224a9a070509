// `explain`'s text from a role's JSON, which may come from another exporter.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <numeric>

#include "exporter/pages/status_page.h"
#include "exporter/pages/timeline.h"
#include "schedwatch/duration.h"
#include "schedwatch/platform/http_client.h"
#include "schedwatch/timefmt.h"

namespace schedwatch {

namespace {

// A member of an exporter's JSON answer, or null when it is missing or `object` is not an
// object: explain reads what another exporter (of another version, or hostile) answered.
const nlohmann::json& Field(const nlohmann::json& object, const char* key) {
  static const nlohmann::json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

// The items of a member that should be an array; none when it is not one.
const nlohmann::json& Items(const nlohmann::json& object, const char* key) {
  static const nlohmann::json kNone = nlohmann::json::array();
  const nlohmann::json& value = Field(object, key);
  return value.is_array() ? value : kNone;
}

}  // namespace

std::string RenderExplainText(const nlohmann::json& role) {
  // Every value may come from a live object or an exporter's answer: never raw to a terminal.
  auto text = [](const nlohmann::json& value) -> std::string {
    if (value.is_string()) return TerminalSafe(value.get<std::string>());
    if (value.is_null()) return "—";
    return TerminalSafe(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  };
  const nlohmann::json& now_value = Field(role, "now");
  std::int64_t now = now_value.is_number_integer() ? now_value.get<std::int64_t>() : 0;
  auto when = [&](const nlohmann::json& value) -> std::string {
    if (!value.is_number_integer()) return "—";
    std::int64_t time = value.get<std::int64_t>();
    std::int64_t age = now - time;
    return fmt::format("{} ({})", FormatRfc3339(time),
                       age >= 0 ? FormatDuration(age) + " ago" : "in " + FormatDuration(-age));
  };
  std::string conditions;
  for (const auto& c : Items(role, "conditions")) {
    conditions += (conditions.empty() ? "" : ", ") + text(c);
  }
  std::string out =
      fmt::format("{} (source {}, {}): {}\n", text(Field(role, "role")),
                  text(Field(role, "source")), text(Field(role, "source_type")), conditions);
  out += fmt::format("refreshed {}\n\nwhy\n", text(Field(role, "refreshed")));
  const auto& reasons = Items(role, "reasons");
  if (reasons.empty()) out += "  ok: every check passes\n";
  for (const auto& reason : reasons) {
    out += fmt::format(
        "  {}{}: {}\n    first: {}\n    runbook: {}\n", text(Field(reason, "condition")),
        Field(reason, "held") == true ? " (held)" : "", text(Field(reason, "reason")),
        text(Field(reason, "action")), text(Field(reason, "runbook")));
  }
  for (const auto& time : Items(role, "in_future")) {
    out += fmt::format("  set aside: {} {}, later than now plus the clock skew allowance\n",
                       text(Field(time, "what")), when(Field(time, "time")));
  }
  out += fmt::format(
      "\n1. desired\n  schedule       {} in {}\n  spec version   {}\n  template       {}\n",
      text(Field(role, "schedule")), text(Field(role, "timezone")),
      text(Field(role, "spec_version")),
      (Field(role, "template") == "" ? "—" : text(Field(role, "template"))));
  for (const auto& threshold : Items(role, "thresholds")) {
    out += fmt::format("  {:<14} {} ({})\n", text(Field(threshold, "name")),
                       text(Field(threshold, "value")), text(Field(threshold, "from")));
  }
  out += "\n2. registered\n";
  const auto& objects = Items(role, "objects");
  if (objects.empty()) out += "  no live object\n";
  for (const auto& object : objects) {
    std::string drift;
    for (const auto& field : Items(object, "drift_fields")) {
      drift += (drift.empty() ? "  drifts in: " : ", ") + text(field);
    }
    out += fmt::format("  {}  enabled={}  schedule={}  timezone={}  spec_version={}{}\n",
                       text(Field(object, "id")), text(Field(object, "enabled")),
                       text(Field(object, "schedule")), text(Field(object, "timezone")),
                       text(Field(object, "spec_version")), drift);
  }
  out += fmt::format(
      "\n3. executed\n  last fire      {}\n  next fire      {}\n  last started   {}\n"
      "  running since  {}\n",
      when(Field(role, "last_scheduled")), when(Field(role, "next_scheduled")),
      when(Field(role, "last_started")), when(Field(role, "running_since")));
  const auto& runs = Items(role, "runs");
  if (runs.empty()) out += "  no run seen yet\n";
  for (const auto& run : runs) {
    out += fmt::format(
        "  {:<9} started {}, {}, from {}\n", text(Field(run, "outcome")),
        when(Field(run, "started")),
        Field(run, "duration_seconds").is_number_integer()
            ? "took " + FormatDuration(Field(run, "duration_seconds").get<std::int64_t>())
            : std::string("not finished"),
        text(Field(run, "from")));
  }
  out += fmt::format("\n4. succeeded\n  last success   {}\n  last failure   {}\n",
                     when(Field(role, "last_success")), when(Field(role, "last_failure")));
  out += fmt::format("\n5. progressed\n  checkpoint     {}{}\n  ledger ID      {}{}\n",
                     when(Field(role, "last_progress")),
                     Field(role, "progress_file").is_string()
                         ? " from " + text(Field(role, "progress_file"))
                         : std::string(" (no progress in the spec)"),
                     text(Field(role, "ledger_id")),
                     Field(role, "ledger_mismatch") == true ? " (not live)"
                     : Field(role, "ledger_id").is_string() ? " (live)"
                                                            : "");
  return out;
}

}  // namespace schedwatch
