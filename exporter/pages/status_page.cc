#include "exporter/pages/status_page.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <numeric>

#include "exporter/pages/timeline.h"
#include "schedwatch/duration.h"
#include "schedwatch/platform/http_client.h"
#include "schedwatch/timefmt.h"

namespace schedwatch {
namespace {

// "yes", or "no" with the scheduler's reason ("no (masked)").
std::string EnabledCell(const LiveObject& object) {
  std::string cell = object.enabled ? "yes" : "no";
  if (!object.state().empty()) cell += " (" + EscapeHtml(object.state()) + ")";
  return cell;
}

constexpr std::size_t kProblemsShown = 20;
constexpr int kPageRefreshSeconds = 15;
// /api/v1/status at 10,000 roles stays a few MB; /api/v1/roles/<role> has all that is kept.
constexpr std::size_t kStatusRunsPerRole = 5;

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

// A job's windows, the one open now and the next: null for a job without windows.
nlohmann::json MaintenanceJson(const JobSpec& job, const RoleStatus& status, std::int64_t now) {
  const MaintenanceWindows& windows = job.Alerting().maintenance;
  if (windows.empty()) return nullptr;
  nlohmann::json texts = nlohmann::json::array();
  for (const auto& window : windows) texts.push_back(window.text);
  nlohmann::json next = nullptr;
  if (auto span = NextWindow(windows, status.maintenance_until.value_or(now))) {
    next = {{"from", span->start}, {"to", span->end}};
  }
  return {{"open_until", Maybe(status.maintenance_until)}, {"next", next}, {"windows", texts}};
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

// Relative, like the JSON link, so the page also works behind a path prefix; "./" keeps a path
// such as "/x:y" from reading as a scheme.
std::string MetricsLink(const std::string& telemetry_path, const std::string& base) {
  return EscapeHtml((base.empty() ? "./" : base) +
                    (telemetry_path.empty() || telemetry_path[0] != '/'
                         ? telemetry_path
                         : telemetry_path.substr(1)));
}

nlohmann::json LabelsJson(const JobSpec& job) {
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [name, value] : job.Alerting().labels) labels[name] = value;
  return labels;
}

// "team=db, tier=1", escaped; empty without labels.
std::string LabelsHtml(const JobSpec& job) {
  std::string out;
  for (const auto& [name, value] : job.Alerting().labels) {
    out += (out.empty() ? "" : ", ") + EscapeHtml(name) + "=" + EscapeHtml(value);
  }
  return out;
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

// The newest `limit` runs, newest first.
nlohmann::json RunsJson(const RoleResult& role, const SourceSpec* source, std::int64_t now,
                        std::size_t limit) {
  nlohmann::json runs = nlohmann::json::array();
  if (!role.runs) return runs;
  for (auto it = role.runs->rbegin(); it != role.runs->rend() && runs.size() < limit; ++it) {
    runs.push_back({{"started", it->started},
                    {"finished", Maybe(it->finished())},
                    {"duration_seconds",
                     it->duration < 0 ? nlohmann::json(nullptr) : nlohmann::json(it->duration)},
                    {"outcome", RunOutcomeName(*it, *role.job, now)},
                    {"from", RunOriginText(source, it->origin)}});
  }
  return runs;
}

nlohmann::json RoleJson(const RefreshResult& result, const RoleResult& role,
                        const PageOptions& options, bool detailed) {
  const RoleStatus& status = role.status;
  const JobSpec& job = *role.job;
  std::int64_t now = result.time;
  nlohmann::json conditions = nlohmann::json::array();
  for (int c = 0; c < kConditionCount; ++c) {
    if (status.conditions.test(c)) conditions.push_back(ConditionNames()[c]);
  }
  nlohmann::json objects = nlohmann::json::array();
  for (const auto& object : role.objects) {
    objects.push_back({{"id", object.id()},
                       {"schedule", object.schedule()},
                       {"timezone", object.timezone()},
                       {"spec_version", object.spec_version()},
                       {"enabled", object.enabled},
                       {"drift_fields", DriftFields(job, object)}});
    if (!object.state().empty()) objects.back()["state"] = object.state();
  }
  auto or_null = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  const RunRecordFacts& records = role.Records();
  nlohmann::json reasons = nlohmann::json::array();
  for (const auto& reason : ExplainConditions(role, FindSource(result, job.source), now)) {
    reasons.push_back({{"condition", ConditionName(reason.condition)},
                       {"reason", reason.text},
                       {"action", reason.action},
                       {"runbook", RunbookLink(options.runbook_url, reason.alert)}});
    if (reason.held) reasons.back()["held"] = true;
  }
  nlohmann::json out = {{"role", job.role},
                        {"source", job.source},
                        {"schedule", job.schedule.text()},
                        {"timezone", job.timezone},
                        {"spec_version", job.spec_version},
                        {"labels", LabelsJson(job)},
                        {"conditions", conditions},
                        {"registered_objects", or_null(status.registered_objects)},
                        {"active_objects", or_null(status.active_objects)},
                        {"drifted_objects", or_null(status.drifted_objects)},
                        {"last_scheduled", Maybe(status.last_scheduled)},
                        {"next_scheduled", Maybe(status.next_scheduled)},
                        {"last_started", Maybe(status.history.last_started)},
                        {"last_success", Maybe(status.history.last_success)},
                        {"last_failure", Maybe(status.history.last_failure)},
                        {"running_since", Maybe(status.history.running_since)},
                        {"last_progress", Maybe(status.last_progress)},
                        {"stale_after_seconds", Maybe(job.stale_after)},
                        {"last_duration_seconds", or_null(records.last_duration)},
                        {"last_exit_code", or_null(records.last_exit_code)},
                        {"guarded", or_null(records.guarded)},
                        {"run_records", records.run_records},
                        {"skipped_duplicates", records.skipped_duplicates},
                        {"objects", objects},
                        {"reasons", reasons},
                        {"runs", RunsJson(role, FindSourceSpec(result, job.source), now,
                                          detailed ? kRunHistoryKept : kStatusRunsPerRole)}};
  if (!job.Alerting().maintenance.empty()) out["maintenance"] = MaintenanceJson(job, status, now);
  if (auto judgement = FailingJudgementOf(role)) {
    const JobAlerting& alerting = job.Alerting();
    out["failing_judged_from"] = {{"failure_threshold", alerting.failure_threshold},
                                  {"recovery_threshold", alerting.recovery_threshold},
                                  {"finished_runs", judgement->finished_runs},
                                  {"short_history", judgement->short_history}};
  }
  if (!status.in_future().empty()) {
    nlohmann::json in_future = nlohmann::json::array();
    for (const auto& time : status.in_future()) {
      in_future.push_back({{"what", time.what}, {"time", time.time}});
    }
    out["in_future"] = in_future;  // set aside: neither a start nor a success
  }
  if (detailed) {
    nlohmann::json thresholds = nlohmann::json::array();
    for (const auto& threshold : Thresholds(job)) {
      thresholds.push_back({{"name", threshold.name},
                            {"value", threshold.value},
                            {"seconds", Maybe(threshold.seconds)},
                            {"from", threshold.origin}});
    }
    out["now"] = now;
    out["refreshed"] = result.complete ? nlohmann::json(FormatRfc3339(now)) : nullptr;
    out["source_type"] = job.source_type;
    out["template"] = job.template_path();
    out["desired_since"] = status.desired_since;
    out["thresholds"] = thresholds;
    out["progress_file"] = job.progress() ? nlohmann::json(job.progress()->file) : nullptr;
    out["ledger_id"] = status.ledger_id() ? nlohmann::json(*status.ledger_id()) : nullptr;
    out["ledger_mismatch"] =
        status.ledger_mismatch ? nlohmann::json(*status.ledger_mismatch) : nullptr;
  }
  return out;
}

std::string Dump(const nlohmann::json& json) {
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
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

std::optional<std::string> RenderRoleHtml(const RefreshResult& result, std::string_view name,
                                          const PageOptions& options) {
  const RoleResult* found = FindRole(result, name);
  if (found == nullptr) return std::nullopt;
  const RoleResult& role = *found;
  const JobSpec& job = *role.job;
  const RoleStatus& status = role.status;
  std::int64_t now = result.time;
  const std::string base = "../";
  std::string escaped_role = EscapeHtml(job.role);
  std::string out = Head(job.role + " · schedwatch", base);
  fmt::format_to(std::back_inserter(out),
                 "<header><nav><a href=\"{0}\">← all roles</a> · <a href=\"{0}api/v1/roles/{1}\">"
                 "JSON</a> · <a href=\"{2}\">metrics</a></nav>\n<h1 id=\"role\" data-role=\"{3}\">"
                 "{3}</h1>\n",
                 base, EscapeHtml(UrlEncode(job.role)), MetricsLink(options.telemetry_path, base),
                 escaped_role);
  if (!result.complete) {
    out +=
        "<p id=\"state\">Waiting for the first complete refresh.</p></header>\n"
        "<div id=\"live\"></div>\n</body></html>\n";
    return out;
  }
  fmt::format_to(std::back_inserter(out),
                 "<p id=\"state\">Source <b>{}</b> ({}) · refreshed {}</p></header>\n"
                 "<div id=\"live\">\n<p class=\"chips\">{}</p>\n",
                 EscapeHtml(job.source), EscapeHtml(job.source_type), Time(now, now),
                 Chips(status));

  // Why: a sentence per condition that holds, and what to do first.
  out += "<section id=\"why\"><h2>Why</h2>\n<ul class=\"reasons\">\n";
  auto reasons = ExplainConditions(role, FindSource(result, job.source), now);
  for (const auto& reason : reasons) {
    fmt::format_to(std::back_inserter(out),
                   "<li data-condition=\"{0}\"{5}><span class=\"c {1}\">{0}{6}</span> "
                   "<span class=\"reason\">{2}</span><br><span class=\"action\">Safe first "
                   "action: <a href=\"{3}\" rel=\"noopener\">{4}</a></span></li>\n",
                   ConditionName(reason.condition),
                   reason.held ? "warn" : ChipStyle(reason.condition), EscapeHtml(reason.text),
                   EscapeHtml(RunbookLink(options.runbook_url, reason.alert)),
                   EscapeHtml(reason.action), reason.held ? " data-held=\"true\"" : "",
                   reason.held ? " held" : "");
  }
  if (reasons.empty()) {
    out +=
        "<li data-condition=\"ok\"><span class=\"c ok\">ok</span> <span class=\"reason\">"
        "every check passes: registered, enabled, matching the spec, started on time, "
        "finished within max_runtime, succeeded within stale_after</span></li>\n";
  }
  out += "</ul></section>\n";

  if (!job.Alerting().maintenance.empty()) {
    // Planned downtime: what it holds and excuses, and when it is next.
    out += "<section id=\"maintenance\"><h2>Maintenance</h2>\n<p>";
    auto next = NextWindow(job.Alerting().maintenance, status.maintenance_until.value_or(now));
    if (status.maintenance_until) {
      fmt::format_to(std::back_inserter(out),
                     "<b id=\"maintenance-open\">Open until {}</b>: alerts are held, and fire "
                     "times and runs started in it are excused.",
                     Time(status.maintenance_until, now));
    } else {
      out += "No window is open.";
    }
    fmt::format_to(
        std::back_inserter(out), " Next window: <span id=\"maintenance-next\">{}</span>.</p>\n<ul>",
        next ? fmt::format("{} to {}", Time(next->start, now), Time(next->end, now)) : "none");
    for (const auto& window : job.Alerting().maintenance) {
      fmt::format_to(std::back_inserter(out), "<li><code>{}</code></li>", EscapeHtml(window.text));
    }
    out += "</ul></section>\n";
  }

  // Timeline.
  TimelineWindow window = TimelineWindowFor(job, now);
  fmt::format_to(std::back_inserter(out),
                 "<section id=\"timeline\"><h2>Timeline <small>last {}</small></h2>\n{}\n"
                 "<p class=\"legend\"><span class=\"k tick\">|</span> fire time · "
                 "<span class=\"k grace\">&nbsp;</span> start grace ({}) · "
                 "<span class=\"k maxrt\">&nbsp;</span> max_runtime ({}) · runs: "
                 "<span class=\"k succeeded\">✓</span> succeeded "
                 "<span class=\"k failed\">✗</span> failed "
                 "<span class=\"k running\">▶</span> running "
                 "<span class=\"k hung\">!</span> hung · times in {}</p></section>\n",
                 FormatDuration(now - window.start),
                 RenderTimelineSvg(job, role.runs.get(), now, TimelineSize::kLarge),
                 FormatDuration(job.start_grace), FormatDuration(job.max_runtime),
                 EscapeHtml(job.timezone));

  // The evidence chain: desired -> registered -> executed -> succeeded -> progressed.
  out += "<section id=\"evidence\"><h2>Evidence</h2>\n<h3>1. Desired: the spec</h3>\n<dl>";
  fmt::format_to(
      std::back_inserter(out),
      "<dt>schedule</dt><dd><code>{}</code> in {} <small>(time zone: {})</small></dd>"
      "<dt>spec version</dt><dd>{}</dd><dt>template</dt><dd>{}</dd>"
      "<dt>desired since</dt><dd>{}</dd>{}</dl>\n",
      EscapeHtml(job.schedule.text()), EscapeHtml(job.timezone),
      ValueOriginText(job.origins.timezone), EscapeHtml(job.spec_version),
      job.template_path().empty() ? "—" : "<code>" + EscapeHtml(job.template_path()) + "</code>",
      Time(status.desired_since, now),
      job.alerting && !job.Alerting().labels.empty()
          ? "<dt>labels</dt><dd id=\"labels\">" + LabelsHtml(job) + "</dd>"
          : "");
  out +=
      "<table id=\"thresholds\"><thead><tr><th>threshold</th><th>value</th><th>from</th></tr>"
      "</thead><tbody>\n";
  for (const auto& threshold : Thresholds(job)) {
    fmt::format_to(std::back_inserter(out),
                   "<tr data-threshold=\"{0}\"><td>{0}</td><td>{1}</td><td>{2}</td></tr>\n",
                   EscapeHtml(threshold.name), EscapeHtml(threshold.value),
                   EscapeHtml(threshold.origin));
  }
  out += "</tbody></table>\n<h3>2. Registered: live objects</h3>\n";
  if (!status.registered_objects) {
    out += "<p>Unknown: the source could not be listed.</p>\n";
  } else if (role.objects.empty()) {
    out += "<p id=\"no-objects\">No live object holds the role.</p>\n";
  } else {
    out +=
        "<div class=\"scroll\"><table id=\"objects\"><thead><tr><th>id</th><th>enabled</th>"
        "<th>schedule</th><th>time zone</th><th>spec version</th></tr></thead><tbody>\n";
    for (const auto& object : role.objects) {
      auto drift = DriftFields(job, object);
      auto cell = [&](const char* field, std::string_view live, const std::string& desired) {
        bool drifts = std::find(drift.begin(), drift.end(), field) != drift.end();
        if (!drifts) return fmt::format("<td>{}</td>", live.empty() ? "—" : EscapeHtml(live));
        return fmt::format(
            "<td class=\"drift\" data-drift=\"{}\"><mark>{}</mark> <small>≠ spec "
            "{}</small></td>",
            field, EscapeHtml(live), EscapeHtml(desired));
      };
      fmt::format_to(
          std::back_inserter(out),
          "<tr data-object=\"{}\"><td><code>{}</code></td>"
          "<td>{}</td>{}{}{}</tr>\n",
          EscapeHtml(object.id()), EscapeHtml(object.id()),
          object.enabled ? EnabledCell(object) : "<mark>" + EnabledCell(object) + "</mark>",
          cell("schedule", object.schedule(), job.schedule.text()),
          cell("timezone", object.timezone(), job.timezone),
          cell("spec_version", object.spec_version(), job.spec_version));
    }
    out += "</tbody></table></div>\n";
  }
  fmt::format_to(std::back_inserter(out),
                 "<h3>3. Executed</h3>\n<dl><dt>last fire time</dt><dd>{}</dd><dt>next fire time"
                 "</dt><dd>{}</dd><dt>last started</dt><dd>{}</dd><dt>running since</dt><dd>{}</dd>"
                 "</dl>\n",
                 Time(status.last_scheduled, now), Time(status.next_scheduled, now),
                 Time(status.history.last_started, now), Time(status.history.running_since, now));
  if (status.Has(Condition::kUnknown) && status.registered_objects) {
    std::string why;
    for (const auto& source : result.sources) {
      if (source.name == job.source) why = ": " + source.history_error;
    }
    fmt::format_to(std::back_inserter(out),
                   "<p id=\"history-unknown\">Unknown: the run history of source {} could not be "
                   "read{}. The runs below were seen before.</p>\n",
                   EscapeHtml(job.source), EscapeHtml(why));
  }
  const SourceSpec* source_spec = FindSourceSpec(result, job.source);
  if (!role.runs || role.runs->empty()) {
    out += "<p id=\"no-runs\">No run seen yet.</p>\n";
  } else {
    out +=
        "<div class=\"scroll\"><table id=\"runs\"><thead><tr><th>started</th><th>ended</th>"
        "<th>duration</th><th>outcome</th><th>read from</th></tr></thead><tbody>\n";
    for (auto it = role.runs->rbegin(); it != role.runs->rend(); ++it) {
      const char* outcome = RunOutcomeName(*it, job, now);
      fmt::format_to(
          std::back_inserter(out),
          "<tr data-outcome=\"{0}\"><td>{1}</td><td>{2}</td><td>{3}</td><td><span class=\"o "
          "{0}\">{0}</span></td><td>{4}</td></tr>\n",
          outcome, Time(it->started, now), Time(it->finished(), now),
          it->duration >= 0 ? FormatDuration(it->duration)
                            : FormatDuration(now - it->started) + " so far",
          EscapeHtml(RunOriginText(source_spec, it->origin)));
    }
    out += "</tbody></table></div>\n";
  }
  if (std::string counted = FailingHistoryText(role); !counted.empty()) {
    fmt::format_to(std::back_inserter(out), "<p id=\"failing-history\">failing: {}.</p>\n",
                   EscapeHtml(counted));
  }
  fmt::format_to(std::back_inserter(out),
                 "<h3>4. Succeeded</h3>\n<dl><dt>last success</dt><dd>{}</dd><dt>last failure</dt>"
                 "<dd>{}</dd><dt>stale after</dt><dd>{}</dd></dl>\n",
                 Time(status.history.last_success, now), Time(status.history.last_failure, now),
                 job.stale_after ? FormatDuration(*job.stale_after) : "—");
  out += "<h3>5. Progressed</h3>\n<dl>";
  if (job.progress()) {
    fmt::format_to(
        std::back_inserter(out),
        "<dt>checkpoint</dt><dd>{} <small>(<code>{}</code>, stale after {})</small></dd>",
        Time(status.last_progress, now), EscapeHtml(job.progress()->file),
        FormatDuration(job.progress()->stale_after));
  } else {
    out += "<dt>checkpoint</dt><dd>none in the spec</dd>";
  }
  if (status.ledger_id()) {
    std::string live;
    for (const auto& object : role.objects) {
      live += (live.empty() ? "" : ", ") + ("<code>" + EscapeHtml(object.id()) + "</code>");
    }
    fmt::format_to(std::back_inserter(out),
                   "<dt>ledger ID</dt><dd id=\"ledger\" data-mismatch=\"{}\"><code>{}</code> "
                   "against live {}: {}</dd>",
                   status.ledger_mismatch.value_or(false) ? "true" : "false",
                   EscapeHtml(*status.ledger_id()), live.empty() ? "none" : live,
                   status.ledger_mismatch.value_or(false)
                       ? fmt::format("<mark>not live</mark> (<a href=\"{}\">runbook</a>)",
                                     EscapeHtml(RunbookLink(options.runbook_url,
                                                            "SchedwatchJobLedgerMismatch")))
                       : "matches");
  } else {
    out += "<dt>ledger ID</dt><dd>none recorded</dd>";
  }
  out += "</dl></section>\n</div>\n</body></html>\n";
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

std::vector<std::uint32_t> SelectStatusRoles(const RefreshResult& result, std::string_view label) {
  std::vector<std::uint32_t> roles;
  for (std::size_t i = 0; i < result.roles.size(); ++i) {
    if (label.empty() || MatchesLabel(*result.roles[i].job, label)) {
      roles.push_back(static_cast<std::uint32_t>(i));
    }
  }
  roles.shrink_to_fit();
  return roles;
}

bool RenderStatusJson(const RefreshResult& result, const PageOptions& options,
                      const std::vector<std::uint32_t>& roles, const PageSink& sink) {
  nlohmann::json json;
  json["complete"] = result.complete;
  json["shard"] = {{"ordinal", result.shard.ordinal},
                   {"total", result.shard.total},
                   {"roles", result.spec ? result.spec->jobs.size() : 0},
                   {"spec_roles", result.spec_roles}};
  json["refreshed"] = result.complete ? nlohmann::json(FormatRfc3339(result.time)) : nullptr;
  if (result.clock_step) {
    json["clock_step"] = {{"seconds", result.clock_step->seconds}, {"at", result.clock_step->at}};
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
                               {"history_up", source.history_up},
                               {"history_error", source.history_error},
                               {"objects", source.objects},
                               {"unowned_objects", source.unowned_objects},
                               {"last_sync", Maybe(source.last_sync)},
                               {"sync_duration_seconds", source.sync_duration_seconds},
                               {"problems", problems}});
  }
  // The roles are dumped one at a time into their place ("roles" sorts before "sources"): as
  // one document, 100,000 roles took 700 MB while it was built.
  json["roles"] = nlohmann::json::array();
  std::string head = Dump(json);
  const std::string_view kRoles = "\"roles\":[";
  std::size_t at = head.find(kRoles) + kRoles.size();
  if (!sink(std::string_view(head).substr(0, at))) return false;
  bool first = true;
  for (std::uint32_t role : roles) {
    std::string text = first ? "" : ",";
    first = false;
    text += Dump(RoleJson(result, result.roles[role], options, false));
    if (!sink(text)) return false;
  }
  return sink(std::string_view(head).substr(at));
}

std::string RenderStatusJson(const RefreshResult& result, const PageOptions& options,
                             std::string_view label) {
  std::string out;
  RenderStatusJson(result, options, SelectStatusRoles(result, label), [&out](std::string_view t) {
    out += t;
    return true;
  });
  return out;
}

std::optional<std::string> RenderRoleJson(const RefreshResult& result, std::string_view name,
                                          const PageOptions& options) {
  const RoleResult* role = FindRole(result, name);
  if (role == nullptr) return std::nullopt;
  return Dump(RoleJson(result, *role, options, true));
}

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

const std::string& StatusScript() {
  static const std::string kScript =
      R"JS(// schedwatch status page: keeps the page fresh without reloading it (fetches this same page and
// swaps the part that changes, so nothing flickers and the search box keeps its focus) and
// filters the roles as you type. The page works without it.
"use strict";
(function () {
  var seconds = Number(document.body.dataset.refreshSeconds) || 15;
  var search = document.getElementById("q");
  var refreshes = 0;

  function filterRows() {
    if (!search) return;
    var text = search.value.trim().toLowerCase();
    document.querySelectorAll("#roles tbody tr[data-role]").forEach(function (row) {
      row.hidden = text !== "" && row.dataset.role.toLowerCase().indexOf(text) < 0;
    });
  }

  function refresh() {
    fetch(window.location.href, {cache: "no-store", credentials: "same-origin"})
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null) return;
        var fresh = new DOMParser().parseFromString(html, "text/html");
        ["state", "live"].forEach(function (id) {
          var now = document.getElementById(id), next = fresh.getElementById(id);
          if (now && next) now.replaceWith(document.adoptNode(next));
        });
        filterRows();
        document.documentElement.dataset.refreshes = String(++refreshes);
      })
      .catch(function () { /* the exporter is restarting: try again next time */ });
  }

  if (search) {
    search.addEventListener("input", function () {
      filterRows();
      var url = new URL(window.location.href);
      if (search.value) url.searchParams.set("q", search.value); else url.searchParams.delete("q");
      window.history.replaceState(null, "", url);
    });
  }
  filterRows();
  window.setInterval(refresh, seconds * 1000);
})();
)JS";
  return kScript;
}

const std::string& StatusStyle() {
  static const std::string kStyle = R"CSS([hidden]{display:none!important}
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#1d2430}
table{border-collapse:collapse;margin-bottom:1.5rem;min-width:60%}
th,td{border-bottom:1px solid #d8dde6;padding:.35rem .7rem;text-align:left;vertical-align:top}
th{background:#f3f5f9}
.c{display:inline-block;border-radius:.6rem;padding:0 .5rem;margin:0 .15rem .15rem 0;font-size:.85rem;color:#1d2430;text-decoration:none}
.ok{background:#d9f2dd}.bad{background:#fbd9d6}.warn{background:#fdf0c9}.unknown{background:#e2e4ea}
code{font-size:.85rem}
#counts{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.3rem}
#filters{display:flex;flex-wrap:wrap;gap:.6rem;align-items:center;margin:.5rem 0 1rem}
#filters input,#filters select,#filters button{font:inherit;padding:.2rem .4rem}
.why{max-width:28rem;font-size:.9rem}
.spark{display:block;width:200px;height:20px}
.scroll{overflow-x:auto}
.timeline{display:block;max-width:1100px;border:1px solid #d8dde6;background:#fff}
.legend{font-size:.9rem}
.k{display:inline-block;min-width:1rem;text-align:center}
.k.grace{background:#f4e3a1}.k.maxrt{border:1px dashed #9aa3b2}
.k.succeeded,.o.succeeded{color:#2e9e4f}.k.failed,.o.failed{color:#d23f31}
.k.running,.o.running{color:#2f6fd6}.k.hung,.o.hung{color:#e08a00}
.o{font-weight:600}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}
dt{color:#5b6472}dd{margin:0}
.reasons li{margin-bottom:.6rem}
td.drift mark,dd mark,td mark{background:#fdf0c9}
nav a{margin-right:.2rem}
@media (max-width:700px){
body{margin:.6rem}
table{min-width:0;width:100%}
#roles thead,#sources thead{display:none}
#roles tr,#sources tr{display:block;border:1px solid #d8dde6;border-radius:.4rem;margin-bottom:.6rem;padding:.3rem}
#roles td,#sources td{display:flex;gap:.5rem;border:0;padding:.15rem .3rem}
#roles td::before,#sources td::before{content:attr(data-label);color:#5b6472;min-width:6.5rem;flex:none}
.spark{width:100%;max-width:200px}
.why{max-width:none}
}
)CSS";
  return kStyle;
}

}  // namespace schedwatch
