#!/usr/bin/python3
"""schedwatch_rulegen --output-format mixin, rendered by Debian's jsonnet.

  mixin_test.py --rulegen BIN --source-dir DIR

- For several specs, in both modes, with default flags and with identity labels, a
  --exporter-alert-for of 0s and an exporter job that needs quoting: jsonnet renders
  mixin.libsonnet's prometheusAlerts and prometheusRules to the groups of schedwatch.rules.yml
  and schedwatch-global.rules.yml, and its grafanaDashboards to dashboard.json. Compared as
  parsed documents (YAML and JSON differ in quoting and layout, not in content).
- Overriding _config (schedwatchSelector, runbookBaseUrl, alertFor, exporterAlertFor, the
  dashboard's uid) changes every place the value is used, and nothing else: a pushed
  success_metric that names the exporter's job keeps it; the result, written with
  std.manifestYamlDoc, passes `promtool check rules`.
- mixin/mixin.libsonnet (the static mixin for jsonnet-bundler) renders to the global rules
  rulegen writes with default flags and to its dashboard (but for uid, title and description,
  which are its _config's); mixin/jsonnetfile.json parses.
"""
import argparse
import json
import os
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from schedwatch_test import check, summary  # noqa: E402
from rules_test import run  # noqa: E402  (the same directory)

JSONNET = "/usr/bin/jsonnet"
PROMTOOL = "/usr/bin/promtool"


def render(directory, expr, name):
    """`expr` evaluated by jsonnet with `directory` on the import path; None on failure."""
    result = run([JSONNET, "-J", directory, "-e", expr])
    if not check(f"jsonnet renders {name}", result.returncode == 0, result.stderr[-3000:]):
        return None
    return json.loads(result.stdout)


def rendered_groups(directory, mixin):
    alerts = render(directory, f"({mixin}).prometheusAlerts", "prometheusAlerts")
    rules = render(directory, f"({mixin}).prometheusRules", "prometheusRules")
    if alerts is None or rules is None:
        return None
    return alerts["groups"] + rules["groups"]


def file_groups(*paths):
    groups = []
    for path in paths:
        with open(path) as f:
            groups += yaml.safe_load(f)["groups"]
    return groups


def by_name(groups):
    return {group["name"]: group for group in groups}


def first_difference(have, want):
    for name in sorted(set(have) | set(want)):
        if have.get(name) != want.get(name):
            for a, b in zip(have.get(name, {}).get("rules", []), want.get(name, {}).get("rules", [])):
                if a != b:
                    return f"group {name}:\nmixin: {json.dumps(a)[:1500]}\nfile:  {json.dumps(b)[:1500]}"
            return f"group {name} differs (missing, or another number of rules)"
    return ""


def generate(args, spec, out, extra=()):
    result = run([args.rulegen, "--config.file", spec, "--out", out, "--output-format", "mixin",
                  *extra])
    check(f"rulegen --output-format mixin {os.path.basename(spec)} {' '.join(extra)} exits 0",
          result.returncode == 0, result.stderr)
    return result.returncode == 0


def check_renders_files(args, tmp):
    examples = os.path.join(args.source_dir, "examples")
    specs = [os.path.join(examples, "desired-state.yaml")] + [
        os.path.join(args.source_dir, "tests", *p) for p in
        (("rules", "spec.yaml"), ("rules", "mixed-spec.yaml"), ("config", "valid.yml"))]
    flag_sets = ((), ("--identity-labels", "cluster,region", "--exporter-alert-for", "0s",
                      "--exporter-job", "sched\"watch's"))
    for spec in specs:
        for mode in ("per-role", "joined"):
            for flags in flag_sets:
                out = os.path.join(tmp, os.path.basename(spec), mode, str(len(flags)))
                label = f"{os.path.basename(spec)} --mode {mode} {' '.join(flags)}".strip()
                if not generate(args, spec, out, ("--mode", mode, *flags)):
                    continue
                groups = rendered_groups(out, "import 'mixin.libsonnet'")
                if groups is None:
                    continue
                have = by_name(groups)
                want = by_name(file_groups(os.path.join(out, "schedwatch.rules.yml"),
                                           os.path.join(out, "schedwatch-global.rules.yml")))
                check(f"{label}: the mixin's groups are the rule files' groups",
                      have == want and len(have) == len(groups), first_difference(have, want))
                dashboards = render(out, "(import 'mixin.libsonnet').grafanaDashboards",
                                    "grafanaDashboards")
                with open(os.path.join(out, "dashboard.json")) as f:
                    dashboard = json.load(f)
                check(f"{label}: the mixin's dashboard is dashboard.json",
                      dashboards == {dashboard["uid"] + ".json": dashboard},
                      list(dashboards or {}))


OVERRIDE = """(import 'mixin.libsonnet') + {
  _config+:: {
    schedwatchSelector: 'job="cron-watch",namespace="ops"',
    runbookBaseUrl: 'https://runbooks.example.org/schedwatch',
    alertFor: '7m',
    exporterAlertFor: '0s',
    dashboard+: {uid: 'mine', job: 'cron-watch'},
  },
}"""


def check_override(args, tmp):
    spec = os.path.join(tmp, "pushed.yaml")
    with open(spec, "w") as f:
        f.write("version: 1\nsources:\n  demo: {type: file, path: live.yaml}\njobs:\n"
                "  - {role: sync, source: demo, schedule: '*/5 * * * *', spec_version: '1'}\n"
                "  - {role: slow, source: demo, schedule: '0 3 * * *', spec_version: '1',\n"
                "     alert_for: 30m}\n"
                "  - {role: report, source: demo, schedule: '0 3 * * *', spec_version: '1',\n"
                "     stale_after: 26h, success_metric: 'report_success{job=\"schedwatch\"}'}\n")
    out = os.path.join(tmp, "override")
    if not generate(args, spec, out):
        return
    groups = rendered_groups(out, OVERRIDE)
    if groups is None:
        return
    alerts = [rule for group in groups for rule in group["rules"] if "alert" in rule]
    exprs = [rule["expr"] for group in groups for rule in group["rules"]]
    check("the selector override is in every rule but the Watchdog's vector(1)",
          all('job="cron-watch",namespace="ops"' in e for e in exprs if e != "vector(1)"),
          [e for e in exprs if "cron-watch" not in e][:3])
    pushed = [e for e in exprs if "report_success" in e]
    check("a pushed success_metric naming the exporter's job keeps it",
          pushed and all('report_success{job="schedwatch"}' in e for e in pushed), pushed)
    check("no other expression selects job=\"schedwatch\"",
          not [e for e in exprs if 'job="schedwatch"' in e.replace(
              'report_success{job="schedwatch"}', "")])
    check("every runbook_url is the new base plus #<alert name in lower case>",
          all(a["annotations"]["runbook_url"] ==
              "https://runbooks.example.org/schedwatch#" + a["alert"].lower() for a in alerts))
    role_for = {a["labels"].get("role"): a.get("for") for a in alerts if "role" in a["labels"]}
    check("alertFor sets the for: of the roles that had the common one, not alertForByRole's",
          role_for == {"sync": "7m", "report": "7m", "slow": "30m"}, role_for)
    check("exporterAlertFor 0s leaves for: out of the exporter alerts",
          not [a for a in alerts if "role" not in a["labels"] and "for" in a])
    dashboards = render(out, f"({OVERRIDE}).grafanaDashboards", "the overridden dashboard")
    dashboard = (dashboards or {}).get("mine.json", {})
    job = [v for v in dashboard.get("templating", {}).get("list", []) if v["name"] == "job"]
    check("the dashboard override sets its uid, key and job default",
          dashboard.get("uid") == "mine" and job and "cron-watch" in json.dumps(job[0]["current"]),
          list(dashboards or {}))
    for name in ("prometheusAlerts", "prometheusRules"):
        result = run([JSONNET, "-J", out, "-S", "-e", f"std.manifestYamlDoc(({OVERRIDE}).{name})"])
        path = os.path.join(tmp, name + ".yml")
        with open(path, "w") as f:
            f.write(result.stdout)
        checked = run([PROMTOOL, "check", "rules", path])
        check(f"promtool check rules accepts the overridden {name} (std.manifestYamlDoc)",
              result.returncode == 0 and checked.returncode == 0,
              result.stderr + checked.stdout + checked.stderr)


def check_static(args, tmp):
    directory = os.path.join(args.source_dir, "mixin")
    out = os.path.join(tmp, "static")
    if not generate(args, os.path.join(args.source_dir, "examples", "desired-state.yaml"), out):
        return
    groups = rendered_groups(directory, "import 'mixin.libsonnet'")
    if groups is None:
        return
    have = by_name(groups)
    want = by_name(file_groups(os.path.join(out, "schedwatch-global.rules.yml")))
    check("mixin/mixin.libsonnet renders to schedwatch-global.rules.yml",
          have == want, first_difference(have, want))
    dashboards = render(directory, "(import 'mixin.libsonnet').grafanaDashboards",
                        "the static mixin's dashboard")
    with open(os.path.join(out, "dashboard.json")) as f:
        generated = json.load(f)
    static = (dashboards or {}).get("schedwatch.json", {})
    for key in ("uid", "title", "description"):
        check(f"the static dashboard's {key} is its own", static.get(key) != generated[key])
        static.pop(key, None)
        generated.pop(key)
    check("mixin/mixin.libsonnet's dashboard is rulegen's but for uid, title and description",
          static == generated)
    with open(os.path.join(directory, "jsonnetfile.json")) as f:
        check("mixin/jsonnetfile.json parses", isinstance(json.load(f), dict))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rulegen", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mixin-test-") as tmp:
        check_renders_files(args, tmp)
        check_override(args, tmp)
        check_static(args, tmp)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
