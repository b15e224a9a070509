// The overview: every role's row, filtered, and the sources; the head apart from the rows so
// that the rows can be shared by the page cache.
#include "exporter/pages/status_page.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <numeric>

#include "exporter/pages/status_page_parts.h"
#include "exporter/pages/timeline.h"
#include "schedwatch/duration.h"
#include "schedwatch/platform/http_client.h"
#include "schedwatch/timefmt.h"

namespace schedwatch {

namespace {

constexpr std::size_t kProblemsShown = 20;

std::string Count(const std::optional<int>& value) { return value ? std::to_string(*value) : "—"; }

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// The index of a condition's name; -1 for none.
int ConditionIndex(std::string_view name) {
  for (int c = 0; c < kConditionCount; ++c) {
    if (name == ConditionNames()[c]) return c;
  }
  return -1;
}

std::string QueryLink(const OverviewFilter& filter) {
  std::string query;
  auto add = [&query](const char* key, const std::string& value) {
    if (value.empty()) return;
    query += (query.empty() ? "?" : "&") + std::string(key) + "=" + UrlEncode(value);
  };
  add("condition", filter.condition);
  add("source", filter.source);
  add("q", filter.query);
  add("label", filter.label);
  if (filter.limit != 1000) add("limit", filter.limit == 0 ? "all" : std::to_string(filter.limit));
  return query.empty() ? "./" : query;
}

void RenderOverviewRow(std::string& out, const RoleResult& role, const RefreshResult& result) {
  std::int64_t now = result.time;
  const JobSpec& job = *role.job;
  std::string why;
  auto reasons = ExplainConditions(role, FindSource(result, job.source), now);
  if (!reasons.empty()) why = EscapeHtml(reasons.front().text);
  if (reasons.size() > 1) why += fmt::format(" <small>(+{} more)</small>", reasons.size() - 1);
  std::string escaped_role = EscapeHtml(job.role);
  fmt::format_to(
      std::back_inserter(out),
      "<tr data-role=\"{0}\" data-source=\"{1}\" data-conditions=\"{2}\">"
      "<td data-label=\"role\"><a href=\"roles/{3}\">{0}</a>{14}</td><td "
      "data-label=\"source\">{1}</td>"
      "<td data-label=\"conditions\">{4}</td><td data-label=\"why\" class=\"why\">{5}</td>"
      "<td data-label=\"runs\" class=\"spark-cell\">{6}</td>"
      "<td data-label=\"registered\">{7}</td><td data-label=\"active\">{8}</td>"
      "<td data-label=\"last started\">{9}</td><td data-label=\"last success\">{10}</td>"
      "<td data-label=\"next fire\">{11}</td><td data-label=\"schedule\"><code>{12}</code> "
      "{13}</td>"
      "</tr>\n",
      escaped_role, EscapeHtml(job.source), EscapeHtml(role.status.ConditionList()),
      EscapeHtml(UrlEncode(job.role)), Chips(role.status), why,
      RenderTimelineSvg(job, role.runs.get(), now, TimelineSize::kSparkline),
      Count(role.status.registered_objects), Count(role.status.active_objects),
      Time(role.status.history.last_started, now), Time(role.status.history.last_success, now),
      Time(role.status.next_scheduled, now), EscapeHtml(job.schedule.text()),
      EscapeHtml(job.timezone),
      job.alerting ? " <small class=\"labels\">" + LabelsHtml(job) + "</small>" : "");
}

}  // namespace

// Whether `text` holds `lower` (lower case) in any case, without a lower-case copy of it.
bool ContainsFolded(std::string_view text, std::string_view lower) {
  return std::search(text.begin(), text.end(), lower.begin(), lower.end(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == b;
         }) != text.end();
}

OverviewSelection SelectOverview(const RefreshResult& result, const OverviewFilter& filter) {
  OverviewSelection selection;
  if (!result.complete) return selection;
  int wanted_condition = ConditionIndex(filter.condition);
  std::string query = Lower(filter.query);
  // Problems first, by the order of the conditions table; then by name (the roles' order).
  // One list per rank, not a sort: a request at 100,000 roles runs this once each.
  std::array<std::vector<std::uint32_t>, kConditionCount + 1> ranked;
  for (std::size_t i = 0; i < result.roles.size(); ++i) {
    const RoleResult& role = result.roles[i];
    if (wanted_condition >= 0 && !role.status.conditions.test(wanted_condition)) continue;
    if (!filter.source.empty() && role.job->source != filter.source) continue;
    if (!query.empty() && !ContainsFolded(role.job->role, query)) continue;
    if (!filter.label.empty() && !MatchesLabel(*role.job, filter.label)) continue;
    ranked[SeverityRank(role.status)].push_back(static_cast<std::uint32_t>(i));
  }
  std::vector<std::uint32_t>& shown = selection.drawn;
  for (const auto& rank : ranked) selection.matched += rank.size();
  std::size_t drawn =
      filter.limit == 0 ? selection.matched : std::min(selection.matched, filter.limit);
  shown.reserve(drawn);
  for (const auto& rank : ranked) {
    shown.insert(shown.end(), rank.begin(),
                 rank.begin() + std::min(rank.size(), drawn - shown.size()));
  }
  return selection;
}

std::string RenderOverviewHead(const RefreshResult& result, const PageOptions& options,
                               const OverviewFilter& filter, const OverviewSelection& selection) {
  std::string out = Head("schedwatch", "");
  out += "<header><h1>schedwatch</h1>\n";
  if (!result.complete) {
    out +=
        "<p id=\"state\">Waiting for the first complete refresh.</p></header>\n"
        "<div id=\"live\"></div>\n</body></html>\n";
    return out;
  }
  std::int64_t now = result.time;
  std::array<int, kConditionCount> counts{};
  for (const auto& role : result.roles) {
    for (int c = 0; c < kConditionCount; ++c) counts[c] += role.status.conditions.test(c);
  }
  int healthy = counts[static_cast<int>(Condition::kOk)];
  fmt::format_to(std::back_inserter(out),
                 "<p id=\"state\">Refreshed {} — {} of {} roles ok. <a href=\"{}\">metrics</a> · "
                 "<a href=\"api/v1/status\">JSON</a></p></header>\n",
                 Time(result.time, now), healthy, result.roles.size(),
                 MetricsLink(options.telemetry_path, ""));
  if (result.shard.Sharded()) {
    // Only this shard's roles are shown and linked: the others are the other shards'.
    fmt::format_to(std::back_inserter(out),
                   "<p id=\"shard\">Shard {} of {}: {} of the spec's {} roles; the rest are "
                   "watched by the other shards.</p>\n",
                   result.shard.ordinal, result.shard.total,
                   result.spec ? result.spec->jobs.size() : 0, result.spec_roles);
  }
  if (result.clock_step && result.clock_step->seconds != 0) {
    std::int64_t seconds = result.clock_step->seconds;
    fmt::format_to(std::back_inserter(out),
                   "<p id=\"clock-step\" class=\"notice\">The watcher's clock moved {} {} ({}): "
                   "for a while, not_started, hung, stale and stalled that only the step would "
                   "raise are held and say so.</p>\n",
                   seconds < 0 ? "back" : "forward",
                   FormatDuration(seconds < 0 ? -seconds : seconds),
                   Time(result.clock_step->at, now));
  }

  // The filter form works without the script (a GET of this page); the script filters as you
  // type and keeps the page fresh.
  int wanted_condition = ConditionIndex(filter.condition);
  out +=
      "<form id=\"filters\" method=\"get\" action=\"./\" role=\"search\">"
      "<label>find a role <input type=\"search\" id=\"q\" name=\"q\" autocomplete=\"off\" "
      "value=\"" +
      EscapeHtml(filter.query) +
      "\"></label> <label>condition <select name=\"condition\"><option value=\"\">any</option>";
  for (int c = 0; c < kConditionCount; ++c) {
    fmt::format_to(std::back_inserter(out), "<option value=\"{0}\"{1}>{0} ({2})</option>",
                   ConditionNames()[c], c == wanted_condition ? " selected" : "", counts[c]);
  }
  out += "</select></label> <label>source <select name=\"source\"><option value=\"\">any</option>";
  for (const auto& source : result.sources) {
    fmt::format_to(std::back_inserter(out), "<option value=\"{0}\"{1}>{0}</option>",
                   EscapeHtml(source.name), source.name == filter.source ? " selected" : "");
  }
  out +=
      "</select></label> <label>label <input type=\"search\" name=\"label\" "
      "placeholder=\"team=db\" autocomplete=\"off\" value=\"" +
      EscapeHtml(filter.label) +
      "\"></label> <button type=\"submit\">show</button></form>\n<div id=\"live\">\n";

  out += "<ul id=\"counts\">";
  for (int c = 0; c < kConditionCount; ++c) {
    if (counts[c] == 0) continue;
    OverviewFilter link = filter;
    link.condition = ConditionNames()[c];
    fmt::format_to(std::back_inserter(out),
                   "<li><a class=\"c {0}\" data-condition=\"{1}\" href=\"{2}\">{1} <b>{3}</b></a>"
                   "</li>",
                   ChipStyle(static_cast<Condition>(c)), ConditionNames()[c],
                   EscapeHtml(QueryLink(link)), counts[c]);
  }
  out += "</ul>\n";

  std::size_t drawn = selection.drawn.size();
  bool filtered = wanted_condition >= 0 || !filter.source.empty() || !filter.query.empty() ||
                  !filter.label.empty();
  fmt::format_to(std::back_inserter(out), "<h2>Roles</h2>\n<p id=\"shown\">{} of {} roles{}{}",
                 drawn, result.roles.size(), filtered ? " match the filters" : "",
                 drawn ? ", problems first." : ".");
  if (drawn < selection.matched) {
    OverviewFilter all = filter;
    all.limit = 0;
    fmt::format_to(std::back_inserter(out),
                   " {} more: narrow the filters or <a href=\"{}\">show "
                   "all</a>.",
                   selection.matched - drawn, EscapeHtml(QueryLink(all)));
  }
  if (filtered) out += " <a href=\"./\">clear the filters</a>";
  out +=
      "</p>\n<div class=\"scroll\"><table id=\"roles\"><thead><tr><th>role</th><th>source</th>"
      "<th>conditions</th><th>why</th><th>runs</th><th>registered</th><th>active</th>"
      "<th>last started</th><th>last success</th><th>next fire</th><th>schedule</th></tr></thead>"
      "<tbody>\n";
  return out;
}

bool RenderOverviewRows(const RefreshResult& result, const OverviewSelection& selection,
                        const PageSink& sink) {
  if (!result.complete) return true;
  std::int64_t now = result.time;
  std::string out;  // one row or table at a time: the page itself is the sink's
  for (std::uint32_t role : selection.drawn) {
    out.clear();
    RenderOverviewRow(out, result.roles[role], result);
    if (!sink(out)) return false;
  }
  out =
      "</tbody></table></div>\n<h2>Sources</h2>\n<div class=\"scroll\"><table id=\"sources\">"
      "<thead><tr><th>source</th><th>type</th><th>up</th><th>objects</th><th>unowned</th>"
      "<th>last sync</th><th>problems</th></tr></thead><tbody>\n";
  for (const auto& source : result.sources) {
    std::string problems = source.up ? "" : EscapeHtml(source.error);
    // A list read without its history: its roles' existence is judged, their runs are not.
    const char* up = !source.up ? "down" : source.history_up ? "up" : "history down";
    for (std::size_t i = 0; i < source.problems.size() && i < kProblemsShown; ++i) {
      problems += fmt::format("{}<code>{}</code> {}", problems.empty() ? "" : "<br>",
                              EscapeHtml(source.problems[i].reason),
                              EscapeHtml(source.problems[i].message));
    }
    if (source.problems.size() > kProblemsShown) {
      problems += fmt::format("<br>… and {} more", source.problems.size() - kProblemsShown);
    }
    fmt::format_to(
        std::back_inserter(out),
        "<tr data-source=\"{0}\"><td data-label=\"source\">{0}</td><td data-label=\"type\">{1}</td>"
        "<td data-label=\"up\"><span class=\"c {2}\">{3}</span></td>"
        "<td data-label=\"objects\">{4}</td><td data-label=\"unowned\">{5}</td>"
        "<td data-label=\"last sync\">{6}</td><td data-label=\"problems\">{7}</td></tr>\n",
        EscapeHtml(source.name), EscapeHtml(source.type),
        !source.up          ? "bad"
        : source.history_up ? "ok"
                            : "warn",
        up, source.objects, source.unowned_objects, Time(source.last_sync, now), problems);
    if (!sink(out)) return false;
    out.clear();
  }
  out += "</tbody></table></div>\n</div>\n</body></html>\n";
  return sink(out);
}

std::string RenderStatusHtml(const RefreshResult& result, const PageOptions& options,
                             const OverviewFilter& filter) {
  OverviewSelection selection = SelectOverview(result, filter);
  std::string out = RenderOverviewHead(result, options, filter, selection);
  RenderOverviewRows(result, selection, [&out](std::string_view text) {
    out += text;
    return true;
  });
  return out;
}

bool MatchesLabel(const JobSpec& job, std::string_view filter) {
  auto equals = filter.find('=');
  std::string_view name = filter.substr(0, equals);
  for (const auto& [key, value] : job.Alerting().labels) {
    if (key == name) return equals == std::string_view::npos || value == filter.substr(equals + 1);
  }
  return false;
}

}  // namespace schedwatch
