// dashboard.json: a Grafana dashboard over the exporter's metrics. Variables for the data
// source, job, identity labels, replica (instance) and source; replica health, an overview of
// roles per condition, a state table with one row per role, and a row of panels repeated per
// source.
#include <fmt/format.h>

#include <cctype>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "rulegen/alerts.h"
#include "rulegen/text.h"
#include "schedwatch/metrics.h"

namespace schedwatch::rulegen {
namespace {

using nlohmann::json;

const json kDatasource = {{"type", "prometheus"}, {"uid", "${datasource}"}};

json Target(const std::string& ref, const std::string& expr, bool table,
            const std::string& legend = "") {
  json target = {{"datasource", kDatasource}, {"refId", ref}, {"expr", expr}};
  if (table) {
    target["instant"] = true;
    target["format"] = "table";
  } else {
    target["range"] = true;
    target["legendFormat"] = legend;
  }
  return target;
}

json Panel(int id, const std::string& type, const std::string& title, int x, int y, int w, int h,
           json targets) {
  return {{"id", id},
          {"type", type},
          {"title", title},
          {"datasource", kDatasource},
          {"gridPos", {{"x", x}, {"y", y}, {"w", w}, {"h", h}}},
          {"targets", std::move(targets)}};
}

json Rename(const std::string& field, const std::string& name, const std::string& unit = "") {
  json properties = json::array({{{"id", "displayName"}, {"value", name}}});
  if (!unit.empty()) properties.push_back({{"id", "unit"}, {"value", unit}});
  return {{"matcher", {{"id", "byName"}, {"options", field}}}, {"properties", properties}};
}

// Grafana uids: at most 40 of [A-Za-z0-9_-]. Derived from what makes this spec's dashboard
// its own (exporter job, spec file name, identity labels, roles), so that two specs' dashboards
// never overwrite each other; --dashboard-uid sets it instead.
std::string Uid(const Spec& spec, const Options& options) {
  std::string uid = options.dashboard_uid;
  if (uid.empty()) {
    std::uint64_t hash = 14695981039346656037ull;  // FNV-1a, 64 bit: stable across platforms
    auto add = [&hash](std::string_view text) {
      for (char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
      hash = (hash ^ 0xff) * 1099511628211ull;  // a separator no text contains
    };
    add(options.exporter_job);
    add(spec.file.substr(spec.file.rfind('/') + 1));
    for (const auto& label : options.identity_labels) add(label);
    for (const auto& job : spec.jobs) {
      add(job.source);
      add(job.role);
    }
    uid = fmt::format("schedwatch-{:016x}", hash);
  }
  for (char& c : uid) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '-';
  }
  return uid.substr(0, 40);
}

json QueryVariable(const std::string& name, const std::string& label, const std::string& query,
                   bool all) {
  json variable = {{"name", name},
                   {"label", label},
                   {"type", "query"},
                   {"datasource", kDatasource},
                   {"query", {{"query", query}, {"refId", "StandardVariableQuery"}}},
                   {"definition", query},
                   {"refresh", 2},
                   {"sort", 1},
                   {"hide", 0},
                   {"regex", ""},
                   {"options", json::array()},
                   {"multi", all},
                   {"includeAll", all}};
  if (all) {
    variable["allValue"] = ".*";
    variable["current"] = {{"text", "All"}, {"value", "$__all"}};
  }
  return variable;
}

}  // namespace

std::string RenderDashboard(const Spec& spec, const Options& options) {
  // Every query selects through the variables, so the dashboard shows any watcher of any job,
  // and its per-source rows follow the sources the exporters serve, without regenerating.
  std::string watcher = "job=~\"$job\"";
  for (const auto& label : options.identity_labels) {
    watcher += fmt::format(",{0}=~\"${0}\"", label);
  }
  const std::string replica = watcher + ",instance=~\"$instance\"";
  const std::string sel = replica + ",source=~\"$source\"";
  const std::string key = IdentityList(options, {"source", "role"});
  // Replicas merged, as the rules do: a role counts once however many replicas serve it.
  auto by_role = [&](std::string_view metric) {
    return fmt::format("max by ({}) ({}{{{}}})", key, metric, sel);
  };
  auto per_condition = [&](const std::string& scope) {
    return fmt::format("sum by (condition) (max by ({}, condition) ({}{{{}}}))", key,
                       metrics::kJobCondition.name, scope);
  };
  json panels = json::array();
  int id = 1, y = 0;

  panels.push_back(
      Panel(id++, "stat", "Replicas: up, last refresh age", 0, y, 8, 4,
            {Target("A", fmt::format("up{{{}}}", replica), false, "{{instance}} up"),
             Target("B", fmt::format("time() - {}{{{}}}", metrics::kLastCycle.name, replica), false,
                    "{{instance}} refresh age")}));
  panels.back()["fieldConfig"] = {
      {"defaults", json::object()},
      {"overrides",
       json::array({{{"matcher", {{"id", "byRegexp"}, {"options", ".*refresh age"}}},
                     {"properties", json::array({{{"id", "unit"}, {"value", "s"}}})}}})}};
  panels.push_back(Panel(id++, "stat", "Roles per condition", 8, y, 16, 4,
                         {Target("A", per_condition(sel), false, "{{condition}}")}));
  panels.back()["options"] = {{"reduceOptions", {{"calcs", {"lastNotNull"}}}},
                              {"textMode", "value_and_name"}};
  y += 4;
  if (options.total_shards > 1) {
    // Sharded: each shard's replicas up and roles, the shard as a label from its ordinal.
    const std::string on = IdentityList(options, {"instance"});
    auto per_shard = [&](const std::string& what) {
      return fmt::format("{} * on({}) group_left({}) count_values without() (\"{}\", {}{{{}}})",
                         what, on, kShardLabel, kShardLabel, kShardOrdinal, replica);
    };
    const std::string by = fmt::format("by ({}, {})", IdentityList(options, {}), kShardLabel);
    const std::string legend = fmt::format("shard {{{{{}}}}}", kShardLabel);
    panels.push_back(Panel(
        id++, "stat", fmt::format("Shards ({}): replicas up", options.total_shards), 0, y, 8, 4,
        {Target("A", fmt::format("sum {} ({})", by, per_shard(fmt::format("up{{{}}}", replica))),
                false, legend)}));
    panels.push_back(Panel(
        id++, "stat", "Shards: roles watched, and the spec's", 8, y, 16, 4,
        {Target("A",
                fmt::format("max {} ({})", by,
                            per_shard(fmt::format("{}{{{}}}", kShardRoles, replica))),
                false, legend),
         Target(
             "B",
             fmt::format("max by ({}) ({}{{{}}})", IdentityList(options, {}), kSpecRoles, replica),
             false, "spec")}));
    y += 4;
  }

  // One row per role: the queries share the role's labels, merge puts them side by side and
  // groupBy folds the role's active conditions into one cell.
  json group_fields = {
      {"schedule", {{"aggregations", {"lastNotNull"}}, {"operation", "aggregate"}}},
      {"condition", {{"aggregations", {"allValues"}}, {"operation", "aggregate"}}},
      {"Value #B", {{"aggregations", {"lastNotNull"}}, {"operation", "aggregate"}}},
      {"Value #C", {{"aggregations", {"lastNotNull"}}, {"operation", "aggregate"}}},
      {"Value #D", {{"aggregations", {"lastNotNull"}}, {"operation", "aggregate"}}}};
  for (std::string label : {std::string("job"), std::string("source"), std::string("role")}) {
    group_fields[label] = {{"aggregations", json::array()}, {"operation", "groupby"}};
  }
  for (const auto& label : options.identity_labels) {
    group_fields[label] = {{"aggregations", json::array()}, {"operation", "groupby"}};
  }
  json state = Panel(id++, "table", "Role states", 0, y, 24, 12,
                     {Target("A",
                             fmt::format("max by ({}, condition) ({}{{{}}} == 1)", key,
                                         metrics::kJobCondition.name, sel),
                             true),
                      Target("B", by_role(metrics::kJobRegisteredObjects.name), true),
                      Target("C", "time() - " + by_role(metrics::kJobLastSuccess.name), true),
                      Target("D", by_role(metrics::kJobLastStarted.name) + " * 1000", true),
                      Target("E",
                             fmt::format("max by ({}, schedule, timezone, spec_version) ({}{{{}}})",
                                         key, metrics::kJobInfo.name, sel),
                             true)});
  state["transformations"] =
      json::array({{{"id", "merge"}, {"options", json::object()}},
                   {{"id", "groupBy"}, {"options", {{"fields", group_fields}}}}});
  state["fieldConfig"] = {
      {"defaults", json::object()},
      {"overrides",
       json::array({Rename("condition (allValues)", "conditions"),
                    Rename("schedule (lastNotNull)", "schedule"),
                    Rename("Value #B (lastNotNull)", "registered objects"),
                    Rename("Value #C (lastNotNull)", "last success age", "s"),
                    Rename("Value #D (lastNotNull)", "last start", "dateTimeAsIso")})}};
  panels.push_back(std::move(state));
  y += 12;

  // A row repeated for every value of $source: the panels below it, until the next row, are
  // repeated with $source set to that one source.
  panels.push_back({{"id", id++},
                    {"type", "row"},
                    {"title", "Source $source"},
                    {"repeat", "source"},
                    {"collapsed", false},
                    {"gridPos", {{"x", 0}, {"y", y}, {"w", 24}, {"h", 1}}},
                    {"panels", json::array()}});
  y += 1;
  const std::string one_source = replica + ",source=~\"$source\"";
  json health = Panel(
      id++, "stat", "$source: up, history up, last sync age, unowned objects", 0, y, 8, 6,
      {Target("A", fmt::format("{}{{{}}}", metrics::kSourceUp.name, one_source), false,
              "{{instance}} up"),
       Target("D", fmt::format("{}{{{}}}", metrics::kSourceHistoryUp.name, one_source), false,
              "{{instance}} history up"),
       Target("B", fmt::format("time() - {}{{{}}}", metrics::kSourceLastSync.name, one_source),
              false, "{{instance}} last sync age"),
       Target("C", fmt::format("{}{{{}}}", metrics::kSourceUnownedObjects.name, one_source), false,
              "{{instance}} unowned")});
  health["fieldConfig"] = {
      {"defaults", json::object()},
      {"overrides",
       json::array({{{"matcher", {{"id", "byRegexp"}, {"options", ".*last sync age"}}},
                     {"properties", json::array({{{"id", "unit"}, {"value", "s"}}})}}})}};
  panels.push_back(std::move(health));
  panels.push_back(Panel(id++, "timeseries", "$source: roles per condition", 8, y, 16, 6,
                         {Target("A", per_condition(one_source), false, "{{condition}}")}));
  // Runs by outcome, with the exemplars OpenMetrics scrapes carry (each the newest run's run_id
  // and run_url): a point links to the run's page.
  json runs_target =
      Target("A",
             fmt::format("sum by (role, outcome) (increase({}{{{}}}[$__rate_interval]))",
                         metrics::kJobRuns.name, one_source),
             false, "{{role}} {{outcome}}");
  runs_target["exemplar"] = true;
  json runs = Panel(id++, "timeseries", "$source: runs by outcome", 0, y + 6, 24, 6,
                    json::array({std::move(runs_target)}));
  runs["fieldConfig"] = {{"defaults",
                          {{"links", json::array({{{"title", "Run ${__data.fields.run_id}"},
                                                   {"url", "${__data.fields.run_url}"},
                                                   {"targetBlank", true}}})}}},
                         {"overrides", json::array()}};
  panels.push_back(std::move(runs));

  json variables = json::array({{{"name", "datasource"},
                                 {"label", "Data source"},
                                 {"type", "datasource"},
                                 {"query", "prometheus"},
                                 {"current", json::object()},
                                 {"hide", 0},
                                 {"refresh", 1},
                                 {"regex", ""},
                                 {"options", json::array()}}});
  // job and instance are on every series, so All is .+ (as dashboard-linter asks); the job
  // variable is a multi-select too, set to --exporter-job.
  json job = QueryVariable("job", "Job",
                           fmt::format("label_values({}, job)", metrics::kLastCycle.name), true);
  job["allValue"] = ".+";
  job["current"] = {{"text", json::array({options.exporter_job})},
                    {"value", json::array({options.exporter_job})}};
  variables.push_back(std::move(job));
  std::string scope = "job=~\"$job\"";
  for (const auto& label : options.identity_labels) {
    variables.push_back(QueryVariable(
        label, label,
        fmt::format("label_values({}{{{}}}, {})", metrics::kLastCycle.name, scope, label), true));
    scope += fmt::format(",{0}=~\"${0}\"", label);
  }
  variables.push_back(QueryVariable(
      "instance", "Instance",
      fmt::format("label_values({}{{{}}}, instance)", metrics::kLastCycle.name, scope), true));
  variables.back()["allValue"] = ".+";
  variables.push_back(
      QueryVariable("source", "Source",
                    fmt::format("label_values({}{{{},instance=~\"$instance\"}}, source)",
                                metrics::kSourceUp.name, scope),
                    true));

  std::string file = spec.file.substr(spec.file.rfind('/') + 1);
  json dashboard = {
      {"title", fmt::format("schedwatch: {}", file)},
      {"uid", Uid(spec, options)},
      {"description", GeneratedHeader(spec, options, "Dashboard")},
      {"tags", {"schedwatch"}},
      {"schemaVersion", 38},
      {"version", 1},
      {"editable", true},
      {"refresh", "1m"},
      {"time", {{"from", "now-6h"}, {"to", "now"}}},
      {"annotations", {{"list", json::array()}}},
      {"templating", {{"list", std::move(variables)}}},
      {"panels", std::move(panels)},
  };
  return dashboard.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace schedwatch::rulegen
