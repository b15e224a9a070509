// schedwatch-global.libsonnet and mixin.libsonnet: the rules and the dashboard as a jsonnet
// monitoring mixin (_config, prometheusAlerts, prometheusRules, grafanaDashboards), for
// kube-prometheus and jsonnet-bundler users. Written from the same rule groups and dashboard as
// the YAML and JSON files, with each _config value referenced where it appears, so `jsonnet`
// renders exactly those files, and overriding _config changes every place its value is used.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "rulegen/alerts.h"
#include "rulegen/text.h"
#include "schedwatch/duration.h"

namespace schedwatch::rulegen {
namespace {

using nlohmann::json;

// The rules are built a second time with this exporter job: where the matcher it gives appears
// in an expression, the real one is the selector of _config (and nowhere else, e.g. not in a
// pushed success_metric that happens to name the same job).
constexpr std::string_view kMarkJob = "schedwatch-mixin-selector-mark";

std::string JobMatcher(std::string_view job) { return "job=" + PromString(job); }

std::string Quote(std::string_view text) {
  return json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace);
}

// A JSON pointer's reference token: ~ and / escaped (RFC 6901).
std::string PointerToken(const std::string& key) {
  std::string out;
  for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

std::string Indent(int depth) { return std::string(static_cast<std::size_t>(depth) * 2, ' '); }

class Writer {
 public:
  Writer(const Options& options, const Sink& sink)
      : options_(options),
        sink_(sink),
        real_matcher_(JobMatcher(options.exporter_job)),
        mark_matcher_(JobMatcher(kMarkJob)) {}
  ~Writer() { sink_(out_); }

  std::string& out() {
    if (out_.size() >= kSinkChunk) {
      sink_(out_);
      out_.clear();
    }
    return out_;
  }

  // `real` as jsonnet: the selector of _config where `marked` (the same text built with
  // kMarkJob) has the mark's matcher, provided that gives back `real` exactly; else a literal.
  std::string Text(std::string_view real, std::string_view marked) const {
    std::vector<std::string_view> parts;
    for (std::size_t start = 0;;) {
      std::size_t at = marked.find(mark_matcher_, start);
      parts.push_back(marked.substr(start, at - start));
      if (at == std::string_view::npos) break;
      start = at + mark_matcher_.size();
    }
    if (parts.size() == 1) return Quote(real);
    std::string joined;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (i > 0) joined += real_matcher_;
      joined += parts[i];
    }
    if (joined != real) return Quote(real);
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (i > 0) out += " + c.schedwatchSelector + ";
      out += Quote(parts[i]);
    }
    return out;
  }

  // `value` as jsonnet, with the node at each JSON pointer of `refs` replaced by its expression.
  void Json(const json& value, const std::string& pointer,
            const std::map<std::string, std::string>& refs, int depth) {
    if (auto ref = refs.find(pointer); ref != refs.end()) {
      out() += ref->second;
      return;
    }
    if (value.is_object() || value.is_array()) {
      bool object = value.is_object();
      if (value.empty()) {
        out() += object ? "{}" : "[]";
        return;
      }
      out() += object ? "{\n" : "[\n";
      std::size_t index = 0;
      for (auto it = value.begin(); it != value.end(); ++it, ++index) {
        std::string key = object ? it.key() : std::to_string(index);
        out() += Indent(depth + 1);
        if (object) out() += Quote(key) + ": ";
        Json(*it, pointer + "/" + PointerToken(key), refs, depth + 1);
        out() += ",\n";
      }
      out() += Indent(depth) + (object ? "}" : "]");
      return;
    }
    out() += value.dump(-1, ' ', false, json::error_handler_t::replace);
  }

  const Options& options() const { return options_; }

 private:
  const Options& options_;
  const Sink& sink_;
  std::string real_matcher_, mark_matcher_;
  std::string out_;
};

// What is shared by the two files: the selector of _config (`c`), and `for` left out for 0s, as
// the rule files leave it out.
constexpr std::string_view kLocals =
    "  local c = $._config,\n"
    "  local forKey(duration) = if duration == '0s' then null else 'for',\n";

// Which _config value a rule's `for` is: the spec's (alertFor, alertForByRole) or the exporter
// alerts' (exporterAlertFor); empty for a literal.
using ForRef = std::function<std::string(const Rule&)>;

std::string Annotations(const Writer& w, const Rule& rule, int depth) {
  const AlertText& text = TextOf(rule.alert);
  auto annotation = [&rule](std::string_view templ) {
    return Quote(rule.annotation_labels.empty()
                     ? std::string(templ)
                     : ExpandAnnotation(templ, rule.annotation_labels, std::nullopt));
  };
  Options no_base = w.options();
  no_base.runbook_base_url.clear();
  std::string in = Indent(depth + 1);
  return fmt::format(
      "{{\n{0}\"summary\": {1},\n{0}\"description\": {2},\n{0}\"runbook_url\": "
      "c.runbookBaseUrl + {3},\n{4}}}",
      in, annotation(text.summary), annotation(text.description),
      Quote(RunbookUrl(no_base, rule.alert)), Indent(depth));
}

// The groups as jsonnet array items. `marked`: the same groups built with kMarkJob. Annotations
// of alerts in `shared` refer to the local `annotations` object.
void Groups(Writer& w, const std::vector<RuleGroup>& groups, const std::vector<RuleGroup>& marked,
            const std::vector<const RuleGroup*>& which, const ForRef& for_ref,
            const std::map<Alert, bool>& shared) {
  const std::string in = Indent(5);
  for (const RuleGroup* group : which) {
    const RuleGroup& mark = marked[static_cast<std::size_t>(group - groups.data())];
    AppendFormat(w.out(), "      {{\n        \"name\": {},\n        \"rules\": [\n",
                 Quote(group->name));
    for (std::size_t r = 0; r < group->rules.size(); ++r) {
      const Rule& rule = group->rules[r];
      std::string& out = w.out();
      out += in + "{\n";
      if (!rule.record.empty()) {
        AppendFormat(out, "{}  \"record\": {},\n", in, Quote(rule.record));
      } else {
        AppendFormat(out, "{}  \"alert\": {},\n", in, Quote(TextOf(rule.alert).name));
      }
      AppendFormat(out, "{}  \"expr\": {},\n", in, w.Text(rule.expr, mark.rules[r].expr));
      if (rule.record.empty()) {
        std::string ref = for_ref(rule);
        if (!ref.empty()) {
          AppendFormat(out, "{}  [forKey({})]: {},\n", in, ref, ref);
        } else if (rule.for_seconds > 0) {
          AppendFormat(out, "{}  \"for\": {},\n", in, Quote(FormatDuration(rule.for_seconds)));
        }
      }
      if (!rule.labels.empty()) {
        out += in + "  \"labels\": {\n";
        for (std::size_t l = 0; l < rule.labels.size(); ++l) {
          AppendFormat(out, "{}    {}: {},\n", in, Quote(rule.labels[l].first),
                       w.Text(rule.labels[l].second, mark.rules[r].labels[l].second));
        }
        out += in + "  },\n";
      }
      if (rule.record.empty()) {
        auto it = shared.find(rule.alert);
        AppendFormat(out, "{}  \"annotations\": {},\n", in,
                     it != shared.end() && it->second && rule.annotation_labels.empty()
                         ? "annotations." + std::string(TextOf(rule.alert).name)
                         : Annotations(w, rule, 6));
      }
      out += in + "},\n";
    }
    w.out() += "        ],\n      },\n";
  }
}

bool Recording(const RuleGroup& group) {
  return std::any_of(group.rules.begin(), group.rules.end(),
                     [](const Rule& rule) { return !rule.record.empty(); });
}

// prometheusAlerts (groups of alerts only) and prometheusRules (groups with a recording rule).
void AlertsAndRules(Writer& w, const std::vector<RuleGroup>& groups,
                    const std::vector<RuleGroup>& marked, const ForRef& for_ref,
                    const std::map<Alert, bool>& shared) {
  for (bool recording : {false, true}) {
    std::vector<const RuleGroup*> which;
    for (const auto& group : groups) {
      if (Recording(group) == recording) which.push_back(&group);
    }
    if (which.empty()) continue;
    AppendFormat(w.out(), "  {}+:: {{\n    groups+: [\n",
                 recording ? "prometheusRules" : "prometheusAlerts");
    Groups(w, groups, marked, which, for_ref, shared);
    w.out() += "    ],\n  },\n";
  }
}

std::vector<RuleGroup> Marked(const std::function<std::vector<RuleGroup>(const Options&)>& build,
                              const Options& options) {
  Options marked = options;
  marked.exporter_job = kMarkJob;
  return build(marked);
}

std::string Comment(std::string header) {
  // GeneratedHeader's "# " lines as jsonnet comments.
  std::string out;
  for (std::size_t start = 0; start < header.size();) {
    std::size_t end = header.find('\n', start);
    out += "//" + header.substr(start + 1, end - start);
    start = end + 1;
  }
  return out;
}

}  // namespace

void RenderGlobalMixin(const Options& options, const Sink& sink) {
  Writer w(options, sink);
  Spec no_spec;
  json dashboard = json::parse(RenderDashboard(no_spec, options));
  std::string description = GeneratedHeader(nullptr, options, "Dashboard");
  w.out() += Comment(GeneratedHeader(nullptr, options, "Monitoring mixin")) +
             "// The alerts and recording rules of schedwatch-global.rules.yml and the "
             "dashboard.\n{\n  _config+:: {\n";
  AppendFormat(w.out(),
               "    // Selects the exporter's series (and `up`) in every rule.\n"
               "    schedwatchSelector: {},\n"
               "    // for: of the exporter alerts (--exporter-alert-for).\n"
               "    exporterAlertFor: {},\n"
               "    // Each alert's runbook_url is this plus #<alert name in lower case>.\n"
               "    runbookBaseUrl: {},\n"
               "    dashboard: {{\n      uid: 'schedwatch',\n      title: 'schedwatch',\n"
               "      description: {},\n      tags: {},\n      refresh: {},\n      from: {},\n"
               "      // The job variable's default.\n      job: {},\n    }},\n  }},\n",
               Quote(JobMatcher(options.exporter_job)),
               Quote(FormatDuration(options.exporter_alert_for)), Quote(options.runbook_base_url),
               Quote(description), dashboard["tags"].dump(),
               Quote(dashboard["refresh"].get<std::string>()),
               Quote(dashboard["time"]["from"].get<std::string>()), Quote(options.exporter_job));
  w.out() += kLocals;
  auto groups = BuildGlobalRules(options);
  auto marked = Marked(BuildGlobalRules, options);
  ForRef for_ref = [&options](const Rule& rule) -> std::string {
    return rule.for_seconds > 0 && rule.for_seconds == options.exporter_alert_for
               ? "c.exporterAlertFor"
               : "";
  };
  AlertsAndRules(w, groups, marked, for_ref, {});
  std::map<std::string, std::string> refs = {{"/uid", "c.dashboard.uid"},
                                             {"/title", "c.dashboard.title"},
                                             {"/description", "c.dashboard.description"},
                                             {"/tags", "c.dashboard.tags"},
                                             {"/refresh", "c.dashboard.refresh"},
                                             {"/time/from", "c.dashboard.from"}};
  const json& variables = dashboard["templating"]["list"];
  for (std::size_t i = 0; i < variables.size(); ++i) {
    if (variables[i].value("name", "") != "job") continue;
    for (const char* field : {"text", "value"}) {
      std::string at = fmt::format("/templating/list/{}/current/{}", i, field);
      refs[at] =
          variables[i]["current"][field].is_array() ? "[c.dashboard.job]" : "c.dashboard.job";
    }
  }
  w.out() += "  grafanaDashboards+:: {\n    [c.dashboard.uid + '.json']: ";
  w.Json(dashboard, "", refs, 2);
  w.out() += ",\n  },\n}\n";
}

void RenderMixin(const Spec& spec, const Options& options, const Sink& sink) {
  Writer w(options, sink);
  auto groups = BuildRules(spec, options);
  auto marked = Marked([&spec](const Options& o) { return BuildRules(spec, o); }, options);
  // alertFor: the most common `for` of the spec's rules; alertForByRole: the roles with another.
  std::map<std::int64_t, std::size_t> count;
  for (const auto& group : groups) {
    for (const auto& rule : group.rules) {
      ++count[rule.for_seconds];
    }
  }
  std::int64_t common =
      count.empty()
          ? 300
          : std::max_element(count.begin(), count.end(), [](const auto& a, const auto& b) {
              return a.second < b.second;
            })->first;
  std::map<std::string, std::int64_t> by_role;
  for (const auto& group : groups) {
    for (const auto& rule : group.rules) {
      std::string role = RoleOf(rule);
      if (!role.empty() && rule.for_seconds != common) by_role[role] = rule.for_seconds;
    }
  }
  json dashboard = json::parse(RenderDashboard(spec, options));
  w.out() += Comment(GeneratedHeader(spec, options, "Monitoring mixin")) +
             "// schedwatch-global.libsonnet (the same for every spec) and this spec's alerts.\n"
             "(import 'schedwatch-global.libsonnet') + {\n  _config+:: {\n";
  AppendFormat(w.out(),
               "    // for: of the per-role alerts: alertForByRole's where it names the role.\n"
               "    alertFor: {},\n    alertForByRole: {{",
               Quote(FormatDuration(common)));
  for (const auto& [role, seconds] : by_role) {
    AppendFormat(w.out(), "\n      {}: {},", Quote(role), Quote(FormatDuration(seconds)));
  }
  AppendFormat(w.out(),
               "{}}},\n    dashboard+: {{\n      uid: {},\n      title: {},\n"
               "      description: {},\n    }},\n  }},\n",
               by_role.empty() ? "" : "\n    ", Quote(dashboard["uid"].get<std::string>()),
               Quote(dashboard["title"].get<std::string>()),
               Quote(dashboard["description"].get<std::string>()));
  w.out() += kLocals;
  // Keyed by alert name: an alert whose name another alert of the file has too is written in full.
  std::map<std::string_view, std::set<Alert>> by_name;
  for (const auto& group : groups) {
    for (const auto& rule : group.rules) {
      if (rule.record.empty()) by_name[TextOf(rule.alert).name].insert(rule.alert);
    }
  }
  std::map<Alert, bool> shared;
  for (const auto& [name, alerts] : by_name) {
    for (Alert alert : alerts) shared[alert] = alerts.size() == 1;
  }
  w.out() += "  local annotations = {\n";
  std::set<Alert> written;
  for (const auto& group : groups) {
    for (const auto& rule : group.rules) {
      if (!rule.record.empty() || !rule.annotation_labels.empty() || !shared[rule.alert] ||
          !written.insert(rule.alert).second) {
        continue;
      }
      AppendFormat(w.out(), "    {}: {},\n", TextOf(rule.alert).name, Annotations(w, rule, 2));
    }
  }
  w.out() += "  },\n";
  ForRef for_ref = [&by_role, common](const Rule& rule) -> std::string {
    std::string role = RoleOf(rule);
    if (by_role.count(role)) return "c.alertForByRole[" + Quote(role) + "]";
    return rule.for_seconds == common ? "c.alertFor" : "";
  };
  AlertsAndRules(w, groups, marked, for_ref, shared);
  w.out() += "}\n";
}

}  // namespace schedwatch::rulegen
