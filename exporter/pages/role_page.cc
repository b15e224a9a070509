// One role's page: its evidence chain, why it is in its condition, its windows and runs.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <numeric>

#include "exporter/pages/status_page.h"
#include "exporter/pages/status_page_parts.h"
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

}  // namespace

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

}  // namespace schedwatch
