#!/usr/bin/python3
"""Every generated rule file and dashboard against the monitoring-mixin conventions.

  conventions_test.py --rulegen BIN --source-dir DIR

mixtool and grafana's dashboard-linter are not packaged in Debian, so their documented rules
are encoded here:

Rules (mixtool lint; monitoring-mixins' "Guidelines for alert names, labels, and annotations"):
  alert-name      CamelCase (mixtool's ^([A-Z]+[a-z0-9]+)+$), at most 40 characters
  severity        one of info, warning, critical
  summary         a sentence (capital letter ... period) without templates
  description     present and templated ({{ ... }})
  runbook_url     present: <base>#<alert name in lower case>
  group size      at most 20 rules per group
  record          level:metric:operations
Dashboards (dashboard-linter; mixtool lint's uid check):
  uid             set, at most 40 of [A-Za-z0-9_-]; tags set
  datasource      a `datasource` variable of type datasource for prometheus, used by every
                  panel and target (template-datasource, panel-datasource)
  job, instance   query variables on $datasource, multi-select, allValue .+ (template-job,
                  template-instance), and a job and instance matcher on their variables in every
                  selector of every target (target-job, target-instance)
  rate interval   every rate() and irate() over [$__rate_interval] (target-rate-interval)

Checked: the output of every spec in examples/ and tests/rules/, in both modes, with and without
identity labels, as rule files and PrometheusRule objects and as the mixin rendered by jsonnet;
the committed rules/, examples/kubernetes/prometheusrule.yaml and mixin/.
"""
import argparse
import glob
import json
import os
import re
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from schedwatch_test import check, summary  # noqa: E402
from rules_test import run  # noqa: E402  (the same directory)

JSONNET = "/usr/bin/jsonnet"
MAX_GROUP_RULES = 20

# Where a convention conflicts with a documented choice: (check, alert, which rules) -> why.
EXCEPTIONS = [
    # docs/design.md, Alerts: the Watchdog's severity is `none`, as kube-prometheus' own Watchdog:
    # it pages no one and is routed by its name to the dead man's switch; `info` would send it
    # down the routes of info alerts.
    ("severity", "Watchdog", lambda rule: True),
    # One series without labels and one meaning: there is nothing to template.
    ("description", "Watchdog", lambda rule: True),
    # docs/rulegen.md, Pushed success: SuccessAbsent on a pushed series is absent(max(<selector>)),
    # whose result carries no role or source label, so the rule writes them into its description
    # instead of templating them (the description still names the role).
    ("description", "SchedwatchJobSuccessAbsent", lambda rule: "absent(max(" in rule["expr"]),
]


CAMEL_CASE = re.compile(r"^([A-Z]+[a-z0-9]+)+$")
TEMPLATE = re.compile(r"\{\{.+\}\}")
SENTENCE = re.compile(r"^[A-Z].+\.$")
RECORD = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*:[a-zA-Z_][a-zA-Z0-9_]*:[a-zA-Z0-9_]+$")
UID = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


def excepted(check_name, rule):
    return any(c == check_name and a == rule["alert"] and which(rule)
               for c, a, which in EXCEPTIONS)


def rule_problems(groups):
    problems = []
    for group in groups:
        if len(group["rules"]) > MAX_GROUP_RULES:
            problems.append(f"group {group['name']}: {len(group['rules'])} rules, more than "
                            f"{MAX_GROUP_RULES}")
        for rule in group["rules"]:
            if "record" in rule:
                if not RECORD.match(rule["record"]):
                    problems.append(f"record {rule['record']}: not level:metric:operations")
                continue
            name = rule["alert"]
            labels = rule.get("labels", {})
            annotations = rule.get("annotations", {})
            if not CAMEL_CASE.match(name) or len(name) > 40:
                problems.append(f"{name}: not CamelCase of at most 40 characters")
            if labels.get("severity") not in ("info", "warning", "critical") and not excepted(
                    "severity", rule):
                problems.append(f"{name}: severity {labels.get('severity')!r}")
            text = annotations.get("summary", "")
            if TEMPLATE.search(text) or not SENTENCE.match(text):
                problems.append(f"{name}: summary {text!r} is not a sentence without templates")
            if not TEMPLATE.search(annotations.get("description", "")) and not excepted(
                    "description", rule):
                problems.append(f"{name}: description without templates")
            url = annotations.get("runbook_url", "")
            if not re.match(r"^https?://[^#\s]+#" + re.escape(name.lower()) + "$", url):
                problems.append(f"{name}: runbook_url {url!r}")
    return problems


# PromQL words that are not series selectors.
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
            "unless", "bool", "offset", "inf", "nan"}


def selectors(expr):
    """The series selectors of `expr`: (metric, matcher text) for each, with a bare metric name
    as an empty matcher text."""
    found = []

    def take(match):
        found.append((match.group(1) or "", match.group(2)))
        return " "
    rest = re.sub(r"([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*(\{[^}]*\})", take, expr)
    rest = re.sub(r'"(?:[^"\\]|\\.)*"', " ", rest)
    rest = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", rest)
    rest = re.sub(r"\[[^\]]*\]", " ", rest)
    for match in re.finditer(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\()?", rest):
        if match.group(2) is None and match.group(1).lower() not in KEYWORDS:
            found.append((match.group(1), ""))
    return found


def dashboard_problems(dashboard):
    problems = []
    if not UID.match(dashboard.get("uid") or ""):
        problems.append(f"uid {dashboard.get('uid')!r}")
    if not dashboard.get("tags"):
        problems.append("no tags")
    variables = {v["name"]: v for v in dashboard.get("templating", {}).get("list", [])}
    source = variables.get("datasource", {})
    if source.get("type") != "datasource" or source.get("query") != "prometheus":
        problems.append("no datasource variable for prometheus")
    uses = ("$datasource", "${datasource}")
    for name in ("job", "instance"):
        variable = variables.get(name, {})
        if not (variable.get("type") == "query"
                and variable.get("datasource", {}).get("uid") in uses
                and variable.get("multi") and variable.get("allValue") == ".+"):
            problems.append(f"{name} variable: not a multi-select query on $datasource with "
                            f"allValue .+: {json.dumps(variable)[:300]}")
    for panel in dashboard.get("panels", []):
        if panel.get("type") == "row":
            continue
        title = panel.get("title")
        if panel.get("datasource", {}).get("uid") not in uses:
            problems.append(f"panel {title!r}: datasource {panel.get('datasource')}")
        for target in panel.get("targets", []):
            expr = target.get("expr", "")
            if target.get("datasource", {}).get("uid") not in uses:
                problems.append(f"panel {title!r}: a target's datasource {target.get('datasource')}")
            for metric, matchers in selectors(expr):
                for name in ("job", "instance"):
                    if f'{name}=~"${name}"' not in matchers:
                        problems.append(f"panel {title!r}: {metric}{matchers} has no "
                                        f"{name}=~\"${name}\"")
            for function, window in re.findall(r"\b(i?rate)\s*\([^\[]*\[([^\]]*)\]", expr):
                if window != "$__rate_interval":
                    problems.append(f"panel {title!r}: {function}() over [{window}]")
    return problems


def check_rules(what, groups):
    problems = rule_problems(groups)
    check(f"{what}: rules follow the conventions", not problems, "\n".join(problems[:20]))


def check_dashboard(what, dashboard):
    problems = dashboard_problems(dashboard)
    check(f"{what}: dashboard follows the conventions", not problems, "\n".join(problems[:20]))


def load_yaml(path):
    with open(path) as f:
        return list(yaml.safe_load_all(f))


def check_directory(what, directory):
    """The rule files, PrometheusRule objects and dashboard found in `directory`."""
    for path in sorted(glob.glob(os.path.join(directory, "*.rules.yml"))):
        check_rules(f"{what}/{os.path.basename(path)}", load_yaml(path)[0]["groups"])
    for path in sorted(glob.glob(os.path.join(directory, "*.prometheusrule.yaml"))):
        check_rules(f"{what}/{os.path.basename(path)}", load_yaml(path)[0]["spec"]["groups"])
    dashboard = os.path.join(directory, "dashboard.json")
    if os.path.exists(dashboard):
        with open(dashboard) as f:
            check_dashboard(f"{what}/dashboard.json", json.load(f))


def check_mixin(what, directory):
    expr = "local m = import 'mixin.libsonnet'; {alerts: m.prometheusAlerts, " \
           "rules: m.prometheusRules, dashboards: m.grafanaDashboards}"
    result = run([JSONNET, "-J", directory, "-e", expr])
    if not check(f"{what}: jsonnet renders the mixin", result.returncode == 0, result.stderr):
        return
    mixin = json.loads(result.stdout)
    check_rules(f"{what} (mixin)", mixin["alerts"]["groups"] + mixin["rules"]["groups"])
    for name, dashboard in mixin["dashboards"].items():
        check_dashboard(f"{what} (mixin) {name}", dashboard)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rulegen", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    source = args.source_dir
    specs = sorted(glob.glob(os.path.join(source, "examples", "*.yaml"))) + [
        os.path.join(source, "tests", "rules", "spec.yaml"),
        os.path.join(source, "tests", "rules", "mixed-spec.yaml"),
        os.path.join(source, "tests", "config", "valid.yml")]
    specs = [s for s in specs if "jobs:" in open(s).read() and "version:" in open(s).read()]
    with tempfile.TemporaryDirectory(prefix="conventions-test-") as tmp:
        for spec in specs:
            for mode in ("per-role", "joined"):
                for extra in ((), ("--identity-labels", "cluster")):
                    for output in ("prometheus-rule", "mixin"):
                        out = os.path.join(tmp, os.path.basename(spec), mode, str(len(extra)),
                                           output)
                        what = f"{os.path.basename(spec)} {mode} {' '.join(extra)} {output}"
                        result = run([args.rulegen, "--config.file", spec, "--out", out,
                                      "--mode", mode, "--output-format", output, *extra])
                        if not check(f"rulegen {what} exits 0", result.returncode == 0,
                                     result.stderr):
                            continue
                        check_directory(what, out)
                        if output == "mixin":
                            check_mixin(what, out)
        for directory in sorted(glob.glob(os.path.join(source, "rules", "*", "*"))):
            check_directory(os.path.relpath(directory, source), directory)
        kubernetes = os.path.join(source, "examples", "kubernetes", "prometheusrule.yaml")
        check_rules("examples/kubernetes/prometheusrule.yaml",
                    [g for doc in load_yaml(kubernetes) if doc for g in doc["spec"]["groups"]])
        check_mixin("mixin/", os.path.join(source, "mixin"))
    # The checks themselves: each finds what it is for.
    bad = [{"name": "g", "rules": [{"alert": "jobDown", "labels": {"severity": "page"},
                                    "annotations": {"summary": "{{ $labels.job }} is down",
                                                    "description": "Down.",
                                                    "runbook_url": "x"}}] * 21}]
    found = " ".join(rule_problems(bad))
    check("the rule checks find a bad name, severity, summary, description, runbook and group",
          all(w in found for w in ("CamelCase", "severity", "summary", "description",
                                   "runbook_url", "more than 20")), found)
    panel = {"type": "timeseries", "title": "p", "datasource": {"uid": "prom"},
             "targets": [{"datasource": {"uid": "${datasource}"},
                          "expr": 'rate(x{job=~"$job"}[5m]) + up'}]}
    found = " ".join(dashboard_problems({"panels": [panel]}))
    check("the dashboard checks find uid, tags, variables, datasource, matchers and rate window",
          all(w in found for w in ("uid", "tags", "datasource variable", "job variable",
                                   "instance variable", "datasource {", "instance=~",
                                   "up has no job", "rate() over [5m]")), found)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
