#include "exporter/pages/status_page_parts.h"

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

constexpr int kPageRefreshSeconds = 15;

}  // namespace

std::string Time(const std::optional<std::int64_t>& time, std::int64_t now) {
  if (!time) return "—";
  std::int64_t age = now - *time;
  std::string relative = age >= 0 ? FormatDuration(age) + " ago" : "in " + FormatDuration(-age);
  return fmt::format("<time datetime=\"{0}\" title=\"{0}\">{1}</time>", FormatRfc3339(*time),
                     relative);
}

const char* ChipStyle(Condition condition) {
  return condition == Condition::kOk                                            ? "ok"
         : condition == Condition::kUnknown                                     ? "unknown"
         : condition == Condition::kDrift || condition == Condition::kDuplicate ? "warn"
                                                                                : "bad";
}

std::string Chips(const RoleStatus& status) {
  std::string badges;
  for (int c = 0; c < kConditionCount; ++c) {
    if (!status.conditions.test(c)) continue;
    auto condition = static_cast<Condition>(c);
    badges += fmt::format("<span class=\"c {}\">{}</span>", ChipStyle(condition),
                          ConditionName(condition));
  }
  if (status.maintenance_until) {
    badges += "<span class=\"c unknown\" data-maintenance=\"open\">in maintenance</span>";
  }
  return badges;
}

const SourceStatus* FindSource(const RefreshResult& result, const std::string& name) {
  auto it = std::lower_bound(
      result.sources.begin(), result.sources.end(), name,
      [](const SourceStatus& source, const std::string& key) { return source.name < key; });
  return it != result.sources.end() && it->name == name ? &*it : nullptr;
}

const RoleResult* FindRole(const RefreshResult& result, std::string_view name) {
  auto it = std::lower_bound(
      result.roles.begin(), result.roles.end(), name,
      [](const RoleResult& role, std::string_view key) { return role.job->role < key; });
  return it != result.roles.end() && it->job->role == name ? &*it : nullptr;
}

const SourceSpec* FindSourceSpec(const RefreshResult& result, const std::string& name) {
  if (!result.spec) return nullptr;
  auto it = result.spec->sources.find(name);
  return it == result.spec->sources.end() ? nullptr : &it->second;
}

std::string Head(const std::string& title, const std::string& base) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{0}</title>\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<link rel=\"stylesheet\" href=\"{1}static/status.css\">\n"
      "<script src=\"{1}static/status.js\" defer></script></head>\n"
      "<body data-refresh-seconds=\"{2}\">\n",
      EscapeHtml(title), base, kPageRefreshSeconds);
}

std::string MetricsLink(const std::string& telemetry_path, const std::string& base) {
  return EscapeHtml((base.empty() ? "./" : base) +
                    (telemetry_path.empty() || telemetry_path[0] != '/'
                         ? telemetry_path
                         : telemetry_path.substr(1)));
}

std::string LabelsHtml(const JobSpec& job) {
  std::string out;
  for (const auto& [name, value] : job.Alerting().labels) {
    out += (out.empty() ? "" : ", ") + EscapeHtml(name) + "=" + EscapeHtml(value);
  }
  return out;
}

std::string EscapeHtml(std::string_view text) {
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

}  // namespace schedwatch
