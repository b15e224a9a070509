#include "exporter/status_page.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "schedwatch/duration.h"
#include "schedwatch/timefmt.h"

namespace schedwatch {
namespace {

constexpr std::size_t kProblemsShown = 20;

std::string Time(const std::optional<std::int64_t>& time, std::int64_t now) {
  if (!time) return "—";
  std::int64_t age = now - *time;
  std::string relative = age >= 0 ? FormatDuration(age) + " ago" : "in " + FormatDuration(-age);
  return fmt::format("<time datetime=\"{0}\" title=\"{0}\">{1}</time>", FormatRfc3339(*time),
                     relative);
}

std::string Count(const std::optional<int>& value) { return value ? std::to_string(*value) : "—"; }

nlohmann::json Maybe(const std::optional<std::int64_t>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

std::string EscapeHtml(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string RenderStatusHtml(const RefreshResult& result, const std::string& telemetry_path) {
  std::string out = R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>schedwatch</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#1d2430}
table{border-collapse:collapse;margin-bottom:2rem;min-width:60%}
th,td{border-bottom:1px solid #d8dde6;padding:.35rem .7rem;text-align:left;vertical-align:top}
th{background:#f3f5f9}.c{display:inline-block;border-radius:.6rem;padding:0 .5rem;margin:0 .15rem .15rem 0;font-size:.85rem}
.ok{background:#d9f2dd}.bad{background:#fbd9d6}.warn{background:#fdf0c9}.unknown{background:#e2e4ea}
code{font-size:.85rem}
</style></head><body>
<h1>schedwatch</h1>
)";
  if (!result.complete) {
    out += "<p id=\"state\">Waiting for the first complete refresh.</p>\n</body></html>\n";
    return out;
  }
  std::int64_t now = result.time;
  int healthy = 0;
  for (const auto& role : result.roles) healthy += role.status.Has(Condition::kOk);
  out += fmt::format(
      "<p id=\"state\">Refreshed {} — {} of {} roles ok. <a href=\"{}\">metrics</a> · "
      "<a href=\"api/v1/status\">JSON</a></p>\n",
      Time(result.time, now), healthy, result.roles.size(),
      // Relative, like the JSON link, so the page also works behind a path prefix; "./" keeps
      // a path such as "/x:y" from reading as a scheme.
      EscapeHtml("./" + (telemetry_path.empty() || telemetry_path[0] != '/'
                             ? telemetry_path
                             : telemetry_path.substr(1))));
  out +=
      "<h2>Roles</h2>\n<table id=\"roles\"><tr><th>role</th><th>source</th><th>conditions</th>"
      "<th>registered</th><th>active</th><th>last started</th><th>last success</th>"
      "<th>next fire</th><th>schedule</th></tr>\n";
  for (const auto& role : result.roles) {
    std::string badges;
    for (int c = 0; c < kConditionCount; ++c) {
      if (!role.status.conditions.test(c)) continue;
      auto condition = static_cast<Condition>(c);
      const char* style = condition == Condition::kOk        ? "ok"
                          : condition == Condition::kUnknown ? "unknown"
                          : condition == Condition::kDrift || condition == Condition::kDuplicate
                              ? "warn"
                              : "bad";
      badges += fmt::format("<span class=\"c {}\">{}</span>", style, ConditionName(condition));
    }
    out += fmt::format(
        "<tr data-role=\"{0}\"><td>{0}</td><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td>"
        "<td>{5}</td><td>{6}</td><td>{7}</td><td><code>{8}</code> {9}</td></tr>\n",
        EscapeHtml(role.job->role), EscapeHtml(role.job->source), badges,
        Count(role.status.registered_objects), Count(role.status.active_objects),
        Time(role.status.history.last_started, now), Time(role.status.history.last_success, now),
        Time(role.status.next_scheduled, now), EscapeHtml(role.job->schedule.expression().text()),
        EscapeHtml(role.job->timezone));
  }
  out +=
      "</table>\n<h2>Sources</h2>\n<table id=\"sources\"><tr><th>source</th><th>type</th>"
      "<th>up</th><th>objects</th><th>unowned</th><th>last sync</th><th>problems</th></tr>\n";
  for (const auto& source : result.sources) {
    std::string problems = source.up ? "" : EscapeHtml(source.error);
    for (std::size_t i = 0; i < source.problems.size() && i < kProblemsShown; ++i) {
      problems += fmt::format("{}<code>{}</code> {}", problems.empty() ? "" : "<br>",
                              EscapeHtml(source.problems[i].reason),
                              EscapeHtml(source.problems[i].message));
    }
    if (source.problems.size() > kProblemsShown) {
      problems += fmt::format("<br>… and {} more", source.problems.size() - kProblemsShown);
    }
    out += fmt::format(
        "<tr data-source=\"{0}\"><td>{0}</td><td>{1}</td><td><span class=\"c {2}\">{3}</span></td>"
        "<td>{4}</td><td>{5}</td><td>{6}</td><td>{7}</td></tr>\n",
        EscapeHtml(source.name), EscapeHtml(source.type), source.up ? "ok" : "bad",
        source.up ? "up" : "down", source.objects, source.unowned_objects,
        Time(source.last_sync, now), problems);
  }
  out += "</table>\n</body></html>\n";
  return out;
}

std::string RenderStatusJson(const RefreshResult& result) {
  nlohmann::json json;
  json["complete"] = result.complete;
  json["refreshed"] = result.complete ? nlohmann::json(FormatRfc3339(result.time)) : nullptr;
  json["roles"] = nlohmann::json::array();
  for (const auto& role : result.roles) {
    const RoleStatus& status = role.status;
    nlohmann::json conditions = nlohmann::json::array();
    for (int c = 0; c < kConditionCount; ++c) {
      if (status.conditions.test(c)) conditions.push_back(ConditionNames()[c]);
    }
    nlohmann::json objects = nlohmann::json::array();
    for (const auto& object : role.objects) {
      objects.push_back({{"id", object.id},
                         {"schedule", object.schedule},
                         {"timezone", object.timezone},
                         {"spec_version", object.spec_version},
                         {"enabled", object.enabled}});
    }
    auto count = [](const std::optional<int>& v) {
      return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
    };
    json["roles"].push_back(
        {{"role", role.job->role},
         {"source", role.job->source},
         {"schedule", role.job->schedule.expression().text()},
         {"timezone", role.job->timezone},
         {"spec_version", role.job->spec_version},
         {"conditions", conditions},
         {"registered_objects", count(status.registered_objects)},
         {"active_objects", count(status.active_objects)},
         {"drifted_objects", count(status.drifted_objects)},
         {"last_scheduled", Maybe(status.last_scheduled)},
         {"next_scheduled", Maybe(status.next_scheduled)},
         {"last_started", Maybe(status.history.last_started)},
         {"last_success", Maybe(status.history.last_success)},
         {"last_failure", Maybe(status.history.last_failure)},
         {"running_since", Maybe(status.history.running_since)},
         {"last_progress", Maybe(status.last_progress)},
         {"stale_after_seconds", Maybe(role.job->stale_after)},
         {"last_duration_seconds",
          role.last_duration ? nlohmann::json(*role.last_duration) : nlohmann::json(nullptr)},
         {"last_exit_code",
          role.last_exit_code ? nlohmann::json(*role.last_exit_code) : nlohmann::json(nullptr)},
         {"guarded", role.guarded ? nlohmann::json(*role.guarded) : nlohmann::json(nullptr)},
         {"run_records", role.run_records},
         {"skipped_duplicates", role.skipped_duplicates},
         {"objects", objects}});
  }
  json["sources"] = nlohmann::json::array();
  for (const auto& source : result.sources) {
    nlohmann::json problems = nlohmann::json::array();
    for (const auto& problem : source.problems) {
      problems.push_back({{"reason", problem.reason}, {"message", problem.message}});
    }
    json["sources"].push_back({{"source", source.name},
                               {"type", source.type},
                               {"up", source.up},
                               {"error", source.error},
                               {"objects", source.objects},
                               {"unowned_objects", source.unowned_objects},
                               {"last_sync", Maybe(source.last_sync)},
                               {"sync_duration_seconds", source.sync_duration_seconds},
                               {"problems", problems}});
  }
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace schedwatch
