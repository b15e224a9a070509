// alertmanager.yml: routes, receivers and inhibit rules for the generated alerts. A complete,
// valid configuration on its own; its pieces are meant to be merged into the user's own.
#include <fmt/format.h>

#include <set>
#include <vector>

#include "rulegen/alerts.h"
#include "rulegen/text.h"

namespace schedwatch::rulegen {
namespace {

struct Inhibit {
  std::string_view comment;
  std::string source, target;        // alertname regexes
  std::string_view source_severity;  // empty: any
  std::string equal;
};

std::string Names(std::initializer_list<Alert> alerts) {
  std::string out;
  for (Alert alert : alerts) out += (out.empty() ? "" : "|") + std::string(TextOf(alert).name);
  return out;
}

}  // namespace

std::string RenderAlertmanager(const Spec& spec, const Options& options) {
  const std::string role_alerts = "SchedwatchJob.+";
  // Every `equal` names the watcher's identity (job and the identity labels), so one watcher's
  // outage never holds back another watcher's alerts.
  auto equal = [&](std::initializer_list<std::string_view> extra) {
    return "[" + IdentityList(options, extra) + "]";
  };
  const bool sharded = options.total_shards > 1;
  std::vector<Inhibit> inhibits = {
      {"No replica of a watcher is up: every other alert about that watcher follows from that.",
       Names({Alert::kExporterDown}),
       role_alerts + "|" +
           Names({Alert::kSourceDown, Alert::kSourceHistoryDown, Alert::kWatcherStale}) +
           (sharded ? "|" + Names({Alert::kShardDown}) : ""),
       "critical", equal({})},
      {"One replica is down: its own source and staleness alerts follow from that.",
       Names({Alert::kExporterDown}),
       Names({Alert::kSourceDown, Alert::kSourceHistoryDown, Alert::kWatcherStale}), "warning",
       equal({"instance"})},
      {"No replica can list a source: its roles are unknown, not missing or stale.",
       Names({Alert::kSourceDown}), role_alerts, "critical",
       sharded ? equal({"source", kShardLabel}) : equal({"source"})},
      {"The object is gone or disabled, so it cannot start or succeed: page once, for the cause.",
       Names({Alert::kJobMissing, Alert::kJobInactive}),
       Names({Alert::kJobNotStarted, Alert::kJobSuccessStale, Alert::kJobSuccessAbsent}), "",
       equal({"source", "role"})},
  };
  if (sharded) {
    // Sharded: the alerts about one shard's roles, sources and refreshes carry its number.
    inhibits.insert(
        inhibits.begin() + 1,
        {"No replica of a shard is up: its roles are unwatched, not missing or "
         "stale; page once, for the shard.",
         Names({Alert::kShardDown}),
         role_alerts + "|" +
             Names({Alert::kSourceDown, Alert::kSourceHistoryDown, Alert::kWatcherStale}),
         "", equal({kShardLabel})});
    inhibits.push_back(
        {"The exporters disagree on the split: their roles cannot add up until "
         "they agree.",
         Names({Alert::kShardingMismatch}), Names({Alert::kShardCoverage}), "", equal({})});
  }
  const std::string group_by = "[alertname, " + IdentityList(options, {"source", "role"}) + "]";

  // --route-by LABEL: one route and one placeholder receiver per value of the spec's label.
  std::string team_routes, team_receivers;
  if (!options.route_by.empty()) {
    std::set<std::string> values;
    const JobAlerting* last = nullptr;
    for (const auto& job : spec.jobs) {
      if (!job.alerting || job.alerting.get() == last) continue;
      last = job.alerting.get();
      std::string_view value = last->Label(options.route_by);
      if (!value.empty()) values.emplace(value);
    }
    team_routes = fmt::format(
        "      # Per value of the spec's label {}: give each receiver its real integrations.\n"
        "      routes:\n",
        options.route_by);
    for (const auto& value : values) {
      std::string receiver = fmt::format("schedwatch-{}-{}", options.route_by, value);
      AppendFormat(team_routes, "        - receiver: {}\n          matchers:\n            - {}\n",
                   YamlScalar(receiver),
                   YamlScalar(fmt::format("{}={}", options.route_by, PromString(value))));
      AppendFormat(team_receivers, "  - name: {}\n", YamlScalar(receiver));
    }
  }
  std::string out = GeneratedHeader(spec, options, "Alertmanager routing");
  AppendFormat(
      out,
      "# A complete configuration on its own. To use it in yours, add the two routes to your\n"
      "# route.routes (before any catch-all route), the receivers to your receivers (give\n"
      "# \"schedwatch\" your real integrations, and point the watchdog webhook at your dead man's\n"
      "# switch), and the inhibit rules to your inhibit_rules.\n"
      "route:\n"
      "  receiver: schedwatch\n"
      "  group_by: {}\n"
      "  routes:\n"
      "    # Always firing: the dead man's switch raises an alarm when these stop arriving.\n"
      "    - receiver: schedwatch-watchdog\n"
      "      matchers:\n"
      "        - {}\n"
      "      group_wait: 0s\n"
      "      group_interval: 1m\n"
      "      repeat_interval: 1m\n"
      "    - receiver: schedwatch\n"
      "      matchers:\n"
      "        - {}\n"
      "      group_by: {}\n"
      "{}"
      "receivers:\n"
      "  - name: schedwatch\n"
      "{}"
      "  - name: schedwatch-watchdog\n"
      "    webhook_configs:\n"
      "      - url: {}\n"
      "        send_resolved: false\n"
      "inhibit_rules:\n",
      group_by, YamlScalar(fmt::format("alertname=\"{}\"", TextOf(Alert::kWatchdog).name)),
      YamlScalar("alertname=~\"Schedwatch.+\""), group_by, team_routes, team_receivers,
      YamlScalar(options.watchdog_url));
  for (const auto& inhibit : inhibits) {
    AppendFormat(out, "  # {}\n  - source_matchers:\n      - {}\n", inhibit.comment,
                 YamlScalar(fmt::format("alertname=~\"{}\"", inhibit.source)));
    if (!inhibit.source_severity.empty()) {
      AppendFormat(out, "      - {}\n",
                   YamlScalar(fmt::format("severity=\"{}\"", inhibit.source_severity)));
    }
    AppendFormat(out, "    target_matchers:\n      - {}\n    equal: {}\n",
                 YamlScalar(fmt::format("alertname=~\"{}\"", inhibit.target)), inhibit.equal);
  }
  return out;
}

}  // namespace schedwatch::rulegen
