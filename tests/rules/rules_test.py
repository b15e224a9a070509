#!/usr/bin/python3
"""Checks of schedwatch_rulegen's output with the real Prometheus tools.

  rules_test.py CHECK --rulegen BIN --exporter BIN --source-dir DIR

CHECK is one of:
  golden     every spec in examples/ in both modes equals rules/<spec>/<mode>/ (and generating
             twice gives the same bytes); SCHEDWATCH_UPDATE_GOLDEN=1 rewrites rules/
  promtool   promtool check rules / test rules on the generated rules and tests of several
             specs in both modes, the hand-written boundary tests in both modes, and
             promtool check config examples/prometheus.yml
  amtool     amtool check-config on the snippet, on the snippet merged into a full config and on
             examples/alertmanager.yml (which must contain the snippet); routing of Watchdog
  bad_spec   a bad spec or bad arguments exit 2; a bad spec prints exactly what
             `schedwatch_exporter check` prints
  dashboard  dashboard.json parses and has the datasource variable, the state table and a panel
             per source

Prints one line per check and a final `N passed, N failed`; exits non-zero on any failure.
"""
import argparse
import copy
import filecmp
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

MODES = ("per-role", "joined")
OUTPUT_FILES = ("schedwatch.rules.yml", "schedwatch.rules.test.yml", "alertmanager.yml",
                "dashboard.json")
PROMTOOL = "/usr/bin/promtool"
AMTOOL = "/usr/bin/amtool"
TIMEOUT = 300


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, name, detail=""):
        if ok:
            self.passed += 1
            print(f"ok - {name}")
        else:
            self.failed += 1
            print(f"FAIL - {name}")
            if detail:
                print("    " + str(detail).strip().replace("\n", "\n    "))
        return ok

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed or not self.passed else 0


def run(argv, cwd=None):
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL)


def example_specs(source_dir):
    """The desired-state specs in examples/: YAML files with top-level version and jobs."""
    specs = []
    for path in sorted(glob.glob(os.path.join(source_dir, "examples", "*.y*ml"))):
        with open(path) as f:
            doc = yaml.safe_load(f)
        if isinstance(doc, dict) and "version" in doc and "jobs" in doc:
            specs.append(path)
    return specs


def spec_name(path):
    return os.path.splitext(os.path.basename(path))[0]


def generate(args, spec, mode, out, c, extra=()):
    result = run([args.rulegen, "--config.file", spec, "--out", out, "--mode", mode, *extra])
    c.check(result.returncode == 0, f"rulegen {spec_name(spec)} --mode {mode} exits 0",
            result.stderr)
    return result.returncode == 0


def check_golden(args, c, tmp):
    update = os.environ.get("SCHEDWATCH_UPDATE_GOLDEN") == "1"
    rules_dir = os.path.join(args.source_dir, "rules")
    specs = example_specs(args.source_dir)
    c.check(bool(specs), "examples/ holds at least one spec")
    for spec in specs:
        for mode in MODES:
            first, second = (os.path.join(tmp, spec_name(spec), mode, run_) for run_ in "ab")
            if not (generate(args, spec, mode, first, c) and generate(args, spec, mode, second, c)):
                continue
            golden = os.path.join(rules_dir, spec_name(spec), mode)
            if update:
                os.makedirs(golden, exist_ok=True)
                for name in OUTPUT_FILES:
                    shutil.copyfile(os.path.join(first, name), os.path.join(golden, name))
            for name in OUTPUT_FILES:
                label = f"{spec_name(spec)}/{mode}/{name}"
                c.check(filecmp.cmp(os.path.join(first, name), os.path.join(second, name),
                                    shallow=False), f"{label}: two runs give the same bytes")
                committed = os.path.join(golden, name)
                if not os.path.exists(committed):
                    c.check(False, f"{label} is committed in rules/",
                            "regenerate with SCHEDWATCH_UPDATE_GOLDEN=1 ctest -R RulegenGolden")
                    continue
                diff = run(["diff", "-u", committed, os.path.join(first, name)])
                c.check(diff.returncode == 0, f"{label} equals the generated output",
                        diff.stdout[:4000] +
                        "\nregenerate with SCHEDWATCH_UPDATE_GOLDEN=1 ctest -R RulegenGolden")
    known = {spec_name(s) for s in specs}
    stray = [d for d in sorted(os.listdir(rules_dir)) if d not in known] if os.path.isdir(
        rules_dir) else []
    c.check(not stray, "rules/ holds output for examples/ specs only", stray)


def promtool_ok(c, argv, cwd, name):
    result = run([PROMTOOL, *argv], cwd=cwd)
    return c.check(result.returncode == 0 and "SUCCESS" in result.stdout + result.stderr, name,
                   result.stdout[-6000:] + result.stderr[-2000:])


def check_promtool(args, c, tmp):
    specs = example_specs(args.source_dir) + [
        os.path.join(args.source_dir, "tests", "config", "valid.yml"),
        os.path.join(args.source_dir, "tests", "rules", "spec.yaml"),
        os.path.join(args.source_dir, "tests", "rules", "mixed-spec.yaml"),
    ]
    boundary = os.path.join(args.source_dir, "tests", "rules", "boundary.test.yml")
    for spec in specs:
        for mode in MODES:
            out = os.path.join(tmp, spec_name(spec), mode)
            if not generate(args, spec, mode, out, c):
                continue
            label = f"{spec_name(spec)} --mode {mode}"
            result = run([PROMTOOL, "check", "rules", "schedwatch.rules.yml"], cwd=out)
            c.check(result.returncode == 0 and "SUCCESS" in result.stdout
                    and "duplicate" not in result.stdout + result.stderr,
                    f"promtool check rules ({label}), no lint findings",
                    result.stdout + result.stderr)
            promtool_ok(c, ["test", "rules", "schedwatch.rules.test.yml"], out,
                        f"promtool test rules: generated tests ({label})")
            if spec_name(spec) == "spec":
                shutil.copy(boundary, out)
                promtool_ok(c, ["test", "rules", "boundary.test.yml"], out,
                            f"promtool test rules: hand-written boundary tests ({label})")
    # A broken rule must make the generated tests fail: they test something.
    out = os.path.join(tmp, "spec", "joined")
    rules = os.path.join(out, "schedwatch.rules.yml")
    if os.path.exists(rules):
        with open(rules) as f:
            text = f.read()
        with open(rules, "w") as f:
            f.write(text.replace(" and on() (up{job=\"schedwatch\"} == 1)", ""))
        result = run([PROMTOOL, "test", "rules", "schedwatch.rules.test.yml"], cwd=out)
        c.check(result.returncode != 0, "generated tests fail when the exporter gate is removed")
    promtool_ok(c, ["check", "config", os.path.join(args.source_dir, "examples", "prometheus.yml")],
                None, "promtool check config examples/prometheus.yml (with its rule files)")


def amtool_check(c, path, name):
    result = run([AMTOOL, "check-config", path])
    return c.check(result.returncode == 0 and "SUCCESS" in result.stdout, name,
                   result.stdout + result.stderr)


def merged_config(snippet):
    """The snippet's routes, receivers and inhibit rules added to an unrelated full config."""
    base = {
        "global": {"resolve_timeout": "5m"},
        "route": {"receiver": "team", "group_by": ["alertname"],
                  "routes": [{"receiver": "database", "matchers": ['team="database"']}]},
        "receivers": [{"name": "team", "webhook_configs": [{"url": "http://127.0.0.1:5001/"}]},
                      {"name": "database"}],
        "inhibit_rules": [{"source_matchers": ['severity="critical"'],
                           "target_matchers": ['severity="warning"'],
                           "equal": ["alertname"]}],
    }
    merged = copy.deepcopy(base)
    merged["route"]["routes"] = snippet["route"]["routes"] + merged["route"]["routes"]
    merged["receivers"] += snippet["receivers"]
    merged["inhibit_rules"] += snippet["inhibit_rules"]
    return merged


def check_amtool(args, c, tmp):
    spec = os.path.join(args.source_dir, "examples", "desired-state.yaml")
    out = os.path.join(tmp, "out")
    if not generate(args, spec, "per-role", out, c):
        return
    snippet_path = os.path.join(out, "alertmanager.yml")
    amtool_check(c, snippet_path, "amtool check-config: the snippet on its own")
    with open(snippet_path) as f:
        snippet = yaml.safe_load(f)
    merged_path = os.path.join(tmp, "merged.yml")
    with open(merged_path, "w") as f:
        yaml.safe_dump(merged_config(snippet), f)
    amtool_check(c, merged_path, "amtool check-config: the snippet merged into a full config")
    example_path = os.path.join(args.source_dir, "examples", "alertmanager.yml")
    amtool_check(c, example_path, "amtool check-config examples/alertmanager.yml")
    with open(example_path) as f:
        example = yaml.safe_load(f)
    for key, items in (("routes", snippet["route"]["routes"]), ("receivers", snippet["receivers"]),
                       ("inhibit_rules", snippet["inhibit_rules"])):
        have = example["route"]["routes"] if key == "routes" else example.get(key, [])
        names = {"receivers": lambda r: r["name"]}.get(key)
        if names:  # receivers: the example fills in real integrations
            missing = [names(i) for i in items if names(i) not in {names(h) for h in have}]
        else:
            missing = [i for i in items if i not in have]
        c.check(not missing, f"examples/alertmanager.yml includes the snippet's {key}", missing)
    for config, name in ((merged_path, "merged"), (example_path, "example")):
        for labels, receiver in ((["alertname=Watchdog"], "schedwatch-watchdog"),
                                 (["alertname=SchedwatchJobMissing", "role=retry", "source=demo",
                                   "job=schedwatch"], "schedwatch")):
            result = run([AMTOOL, "config", "routes", "test", f"--config.file={config}",
                          *labels])
            c.check(result.returncode == 0 and result.stdout.strip() == receiver,
                     f"{name} config routes {labels[0]} to {receiver}",
                     result.stdout + result.stderr)


def check_bad_spec(args, c, tmp):
    invalid = sorted(glob.glob(os.path.join(args.source_dir, "tests", "config", "invalid-*.yml")))
    c.check(bool(invalid), "tests/config has invalid specs")
    missing = os.path.join(tmp, "no-such-spec.yaml")
    for spec in invalid + [missing]:
        rulegen = run([args.rulegen, "--config.file", spec, "--out", os.path.join(tmp, "out")])
        # `--config.file F check`: the exporter takes --config.file before the subcommand.
        check = run([args.exporter, "--config.file", spec, "check"])
        name = os.path.basename(spec)
        c.check(rulegen.returncode == 2 and check.returncode == 2,
                f"{name}: rulegen and check exit 2",
                f"rulegen {rulegen.returncode}, check {check.returncode}")
        c.check(rulegen.stderr == check.stderr and rulegen.stderr.strip(),
                f"{name}: rulegen prints what check prints",
                f"rulegen: {rulegen.stderr}check:   {check.stderr}")
    c.check(not os.path.exists(os.path.join(tmp, "out")), "nothing is written for a bad spec")
    spec = os.path.join(args.source_dir, "examples", "desired-state.yaml")
    out = os.path.join(tmp, "args")
    for argv, what in (([], "no arguments"),
                       (["--config.file", spec], "no --out"),
                       (["--config.file", spec, "--out", out, "--mode", "fast"], "unknown --mode"),
                       (["--config.file", spec, "--out", out, "--bogus"], "unknown flag"),
                       (["--config.file", spec, "--out", out, "--watcher-stale-after", "soon"],
                        "bad --watcher-stale-after"),
                       (["--config.file", spec, "--out", out, "--exporter-job", ""],
                        "empty --exporter-job")):
        result = run([args.rulegen, *argv])
        c.check(result.returncode == 2 and result.stderr.strip(), f"{what}: exit 2 with a message",
                f"exit {result.returncode}: {result.stderr}")
    result = run([args.rulegen, "--help"])
    c.check(result.returncode == 0 and "--exporter-job" in result.stdout, "--help exits 0")


def check_dashboard(args, c, tmp):
    spec = os.path.join(args.source_dir, "examples", "desired-state.yaml")
    out = os.path.join(tmp, "out")
    if not generate(args, spec, "per-role", out, c, ["--exporter-job", "sched"]):
        return
    with open(os.path.join(out, "dashboard.json")) as f:
        try:
            dashboard = json.load(f)
        except ValueError as e:
            c.check(False, "dashboard.json parses", e)
            return
    c.check(True, "dashboard.json parses")
    variables = dashboard.get("templating", {}).get("list", [])
    c.check(any(v.get("type") == "datasource" and v.get("query") == "prometheus"
                and v.get("name") == "datasource" for v in variables),
            "a Prometheus datasource variable named datasource")
    panels = dashboard.get("panels", [])
    queried = [p for p in panels if p.get("type") != "row"]
    c.check(queried and all(p.get("datasource", {}).get("uid") == "${datasource}" and
                            all(t.get("datasource", {}).get("uid") == "${datasource}"
                                for t in p.get("targets", [])) for p in queried),
            "every panel and query uses the datasource variable")
    exprs = [t["expr"] for p in queried for t in p["targets"]]
    c.check(all('job="sched"' in e for e in exprs), "every query selects the exporter job")
    tables = [p for p in panels if p.get("type") == "table"]
    table_exprs = " ".join(t["expr"] for p in tables for t in p.get("targets", []))
    c.check(len(tables) == 1 and all(m in table_exprs for m in (
        "schedwatch_job_condition", "schedwatch_job_last_success_timestamp_seconds",
        "schedwatch_job_last_started_timestamp_seconds", "schedwatch_job_registered_objects")),
        "a state table with conditions, last success age, last start and registered objects")
    c.check(all(t.get("format") == "table" and t.get("instant") for p in tables
                for t in p["targets"]), "the state table's queries are instant tables")
    with open(spec) as f:
        sources = yaml.safe_load(f)["sources"]
    for source in sources:
        own = [p for p in queried if p.get("type") != "table" and
               all(f'source="{source}"' in t["expr"] for t in p["targets"])]
        c.check(any(p["type"] == "timeseries" for p in own) and
                all(source in p["title"] for p in own), f"panels for source {source}")
    ids = [p["id"] for p in panels]
    c.check(len(ids) == len(set(ids)), "panel ids are unique")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("check", choices=("golden", "promtool", "amtool", "bad_spec", "dashboard"))
    parser.add_argument("--rulegen", required=True)
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    c = Checks()
    with tempfile.TemporaryDirectory(prefix="rulegen-test-") as tmp:
        globals()["check_" + args.check](args, c, tmp)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
