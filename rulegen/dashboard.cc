// dashboard.json: a Grafana dashboard over the exporter's metrics. A data source variable, an
// overview of roles per condition, a state table with one row per role, and one row of panels
// per source of the spec.
#include <fmt/format.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "rulegen/alerts.h"
#include "rulegen/text.h"

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

// Grafana uids: at most 40 of [A-Za-z0-9_-].
std::string Uid(const std::string& exporter_job) {
  std::string uid = "schedwatch-" + exporter_job;
  for (char& c : uid) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '-';
  }
  return uid.substr(0, 40);
}

}  // namespace

std::string RenderDashboard(const Spec& spec, const Options& options) {
  const std::string job = "job=" + PromString(options.exporter_job);
  auto by_role = [&](const std::string& metric) {
    return fmt::format("max by (role, source) ({}{{{}}})", metric, job);
  };
  json panels = json::array();
  int id = 1, y = 0;

  panels.push_back(
      Panel(id++, "stat", "Roles per condition", 0, y, 24, 4,
            {Target("A", fmt::format("sum by (condition) (schedwatch_job_condition{{{}}})", job),
                    false, "{{condition}}")}));
  panels.back()["options"] = {{"reduceOptions", {{"calcs", {"lastNotNull"}}}},
                              {"textMode", "value_and_name"}};
  y += 4;

  // One row per role: the queries share role and source, merge puts them side by side and
  // groupBy folds the role's active conditions into one cell.
  json state = Panel(
      id++, "table", "Role states", 0, y, 24, 12,
      {Target("A",
              fmt::format("max by (role, source, condition) (schedwatch_job_condition{{{}}} == 1)",
                          job),
              true),
       Target("B", by_role("schedwatch_job_registered_objects"), true),
       Target("C", "time() - " + by_role("schedwatch_job_last_success_timestamp_seconds"), true),
       Target("D", by_role("schedwatch_job_last_started_timestamp_seconds") + " * 1000", true),
       Target("E",
              fmt::format("max by (role, source, schedule, timezone, spec_version) "
                          "(schedwatch_job_info{{{}}})",
                          job),
              true)});
  state["transformations"] = json::array(
      {{{"id", "merge"}, {"options", json::object()}},
       {{"id", "groupBy"},
        {"options",
         {{"fields",
           {{"role", {{"aggregations", json::array()}, {"operation", "groupby"}}},
            {"source", {{"aggregations", json::array()}, {"operation", "groupby"}}},
            {"schedule", {{"aggregations", {"lastNotNull"}}, {"operation", "aggregate"}}},
            {"condition", {{"aggregations", {"allValues"}}, {"operation", "aggregate"}}},
            {"Value #B", {{"aggregations", {"lastNotNull"}}, {"operation", "aggregate"}}},
            {"Value #C", {{"aggregations", {"lastNotNull"}}, {"operation", "aggregate"}}},
            {"Value #D", {{"aggregations", {"lastNotNull"}}, {"operation", "aggregate"}}}}}}}}});
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

  for (const auto& [name, source] : spec.sources) {
    std::string scope = fmt::format("{},source={}", job, PromString(name));
    panels.push_back({{"id", id++},
                      {"type", "row"},
                      {"title", fmt::format("Source {} ({})", name, source.type)},
                      {"collapsed", false},
                      {"gridPos", {{"x", 0}, {"y", y}, {"w", 24}, {"h", 1}}},
                      {"panels", json::array()}});
    y += 1;
    json health = Panel(
        id++, "stat", fmt::format("{}: up, last sync age, unowned objects", name), 0, y, 8, 6,
        {Target("A", fmt::format("schedwatch_source_up{{{}}}", scope), false, "up"),
         Target("B",
                fmt::format("time() - schedwatch_source_last_sync_timestamp_seconds{{{}}}", scope),
                false, "last sync age"),
         Target("C", fmt::format("schedwatch_source_unowned_objects{{{}}}", scope), false,
                "unowned")});
    health["fieldConfig"] = {
        {"defaults", json::object()},
        {"overrides", json::array({Rename("last sync age", "last sync age", "s")})}};
    panels.push_back(std::move(health));
    panels.push_back(Panel(
        id++, "timeseries", fmt::format("{}: roles per condition", name), 8, y, 16, 6,
        {Target("A", fmt::format("sum by (condition) (schedwatch_job_condition{{{}}})", scope),
                false, "{{condition}}")}));
    y += 6;
  }

  std::string file = spec.file.substr(spec.file.rfind('/') + 1);
  json dashboard = {
      {"title", fmt::format("schedwatch: {}", file)},
      {"uid", Uid(options.exporter_job)},
      {"description", GeneratedHeader(spec, options, "Dashboard")},
      {"tags", {"schedwatch"}},
      {"schemaVersion", 38},
      {"version", 1},
      {"editable", true},
      {"refresh", "1m"},
      {"time", {{"from", "now-6h"}, {"to", "now"}}},
      {"annotations", {{"list", json::array()}}},
      {"templating",
       {{"list", json::array({{{"name", "datasource"},
                               {"label", "Data source"},
                               {"type", "datasource"},
                               {"query", "prometheus"},
                               {"current", json::object()},
                               {"hide", 0},
                               {"refresh", 1},
                               {"regex", ""},
                               {"options", json::array()}}})}}},
      {"panels", std::move(panels)},
  };
  return dashboard.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace schedwatch::rulegen
