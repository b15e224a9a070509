#!/usr/bin/python3
"""Checks of schedwatch_rulegen's output with the real Prometheus tools.

  rules_test.py CHECK --rulegen BIN --exporter BIN --source-dir DIR

CHECK is one of:
  golden     every spec in examples/ in both modes equals rules/<spec>/<mode>/ (and generating
             twice gives the same bytes), and examples/kubernetes/prometheusrule.yaml equals
             the PrometheusRule objects generated from the ConfigMap's spec;
             SCHEDWATCH_UPDATE_GOLDEN=1 rewrites both
  promtool   promtool check rules / test rules on the generated rules and tests of several
             specs in both modes, with and without identity labels, the hand-written boundary
             tests in both modes, two specs' rules with the global file loaded twice (one
             Watchdog), and promtool check config examples/prometheus.yml
  amtool     amtool check-config on the snippet, on the snippet merged into a full config and on
             examples/alertmanager.yml (which must contain the snippet); routing of Watchdog
  bad_spec   a bad spec or bad arguments exit 2; a bad spec prints exactly what
             `schedwatch_exporter check` (and serve) prints, which is every problem its
             "# error:" lines name
  dashboard  dashboard.json parses and has the datasource variable, the state table and a panel
             per source

Prints one line per check and a final `N passed, N failed`; exits non-zero on any failure.
"""
import argparse
import concurrent.futures
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from schedwatch_test import check, summary  # noqa: E402

MODES = ("per-role", "joined")
OUTPUT_FILES = ("schedwatch.rules.yml", "schedwatch-global.rules.yml",
                "schedwatch.rules.test.yml", "alertmanager.yml", "dashboard.json")
IDENTITY = ("--identity-labels", "cluster,region")
RATIO_WINDOW = ("--success-ratio-window", "30m")
SHARDS = ("--total-shards", "3")
SHARDS_IDENTITY = SHARDS + IDENTITY
# examples/kubernetes/prometheusrule.yaml: generated from the ConfigMap's spec with these flags.
KUBERNETES_RULE_FLAGS = ("--mode", "joined", "--output-format", "prometheus-rule",
                         "--identity-labels", "cluster")
PROMTOOL = "/usr/bin/promtool"
AMTOOL = "/usr/bin/amtool"
TIMEOUT = 300


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


def generation(args, spec, mode, out, extra=()):
    """rulegen run into `out`, as a check's (name, passed, detail)."""
    result = run([args.rulegen, "--config.file", spec, "--out", out, "--mode", mode, *extra])
    return (f"rulegen {spec_name(spec)} --mode {mode} exits 0", result.returncode == 0,
            result.stderr)


def generate(args, spec, mode, out, extra=()):
    return check(*generation(args, spec, mode, out, extra))


def check_golden(args, tmp):
    update = os.environ.get("SCHEDWATCH_UPDATE_GOLDEN") == "1"
    rules_dir = os.path.join(args.source_dir, "rules")
    specs = example_specs(args.source_dir)
    check("examples/ holds at least one spec", bool(specs))
    for spec in specs:
        for mode in MODES:
            first, second = (os.path.join(tmp, spec_name(spec), mode, run_) for run_ in "ab")
            if not (generate(args, spec, mode, first) and generate(args, spec, mode, second)):
                continue
            golden = os.path.join(rules_dir, spec_name(spec), mode)
            if update:
                os.makedirs(golden, exist_ok=True)
                for name in OUTPUT_FILES:
                    shutil.copyfile(os.path.join(first, name), os.path.join(golden, name))
            for name in OUTPUT_FILES:
                label = f"{spec_name(spec)}/{mode}/{name}"
                check(f"{label}: two runs give the same bytes", filecmp.cmp(os.path.join(first, name), os.path.join(second, name),
                                  shallow=False))
                committed = os.path.join(golden, name)
                if not os.path.exists(committed):
                    check(f"{label} is committed in rules/", False,
                          "regenerate with SCHEDWATCH_UPDATE_GOLDEN=1 ctest -R RulegenGolden")
                    continue
                diff = run(["diff", "-u", committed, os.path.join(first, name)])
                check(f"{label} equals the generated output", diff.returncode == 0,
                      diff.stdout[:4000] +
                      "\nregenerate with SCHEDWATCH_UPDATE_GOLDEN=1 ctest -R RulegenGolden")
    check_kubernetes_rules(args, tmp, update)
    check_static_mixin(args, tmp, update)
    known = {spec_name(s) for s in specs}
    stray = [d for d in sorted(os.listdir(rules_dir)) if d not in known] if os.path.isdir(
        rules_dir) else []
    check("rules/ holds output for examples/ specs only", not stray, stray)


def check_kubernetes_rules(args, tmp, update):
    """examples/kubernetes/prometheusrule.yaml is what rulegen writes for the ConfigMap's spec."""
    directory = os.path.join(args.source_dir, "examples", "kubernetes")
    with open(os.path.join(directory, "configmap.yaml")) as f:
        config_map = yaml.safe_load(f)
    spec = os.path.join(tmp, "desired-state.yaml")
    with open(spec, "w") as f:
        f.write(config_map["data"]["desired-state.yaml"])
    out = os.path.join(tmp, "kubernetes")
    result = run([args.rulegen, "--config.file", spec, "--out", out, *KUBERNETES_RULE_FLAGS])
    if not check("rulegen writes the ConfigMap spec's PrometheusRule", result.returncode == 0,
                 result.stderr):
        return
    generated = ""
    for name in ("schedwatch-global.prometheusrule.yaml", "schedwatch.prometheusrule.yaml"):
        with open(os.path.join(out, name)) as f:
            generated += ("---\n" if generated else "") + f.read()
    committed = os.path.join(directory, "prometheusrule.yaml")
    header = ("# Generated: schedwatch_rulegen --config.file desired-state.yaml (the ConfigMap's) "
              + " ".join(KUBERNETES_RULE_FLAGS) + "\n")
    generated = header + generated
    if update:
        with open(committed, "w") as f:
            f.write(generated)
    with open(committed) as f:
        have = f.read()
    check("examples/kubernetes/prometheusrule.yaml equals the generated one", have == generated,
          "regenerate with SCHEDWATCH_UPDATE_GOLDEN=1 ctest -R RulegenGolden")


def check_static_mixin(args, tmp, update):
    """mixin/mixin.libsonnet is the schedwatch-global.libsonnet rulegen writes with default flags
    (mixin_test.py renders it)."""
    out = os.path.join(tmp, "mixin")
    spec = os.path.join(args.source_dir, "examples", "desired-state.yaml")
    if not generate(args, spec, "per-role", out, ("--output-format", "mixin")):
        return
    with open(os.path.join(out, "schedwatch-global.libsonnet")) as f:
        generated = f.read()
    committed = os.path.join(args.source_dir, "mixin", "mixin.libsonnet")
    if update:
        with open(committed, "w") as f:
            f.write(generated)
    with open(committed) as f:
        have = f.read()
    check("mixin/mixin.libsonnet equals the generated schedwatch-global.libsonnet",
          have == generated, "regenerate with SCHEDWATCH_UPDATE_GOLDEN=1 ctest -R RulegenGolden")


def promtool_result(argv, cwd, name):
    """A check's (name, passed, detail) for a promtool command that must print SUCCESS."""
    result = run([PROMTOOL, *argv], cwd=cwd)
    return (name, result.returncode == 0 and "SUCCESS" in result.stdout + result.stderr,
            result.stdout[-6000:] + result.stderr[-2000:])


def promtool_ok(argv, cwd, name):
    return check(*promtool_result(argv, cwd, name))


def judged_by_promtool(args, tmp, spec, mode, extra, boundary):
    """One spec's rules generated and judged by promtool: the checks, as (name, passed, detail)."""
    suffix = {(): "", IDENTITY: "-identity", RATIO_WINDOW: "-window", SHARDS: "-shards",
              SHARDS_IDENTITY: "-shards-identity"}[extra]
    out = os.path.join(tmp, spec_name(spec) + suffix, mode)
    checks = [generation(args, spec, mode, out, extra)]
    if not checks[0][1]:
        return checks
    label = f"{spec_name(spec)} --mode {mode} {' '.join(extra)}".strip()
    result = run([PROMTOOL, "check", "rules", "schedwatch.rules.yml",
                  "schedwatch-global.rules.yml"], cwd=out)
    checks.append((f"promtool check rules ({label}), no lint findings",
                   result.returncode == 0 and "SUCCESS" in result.stdout
                   and "duplicate" not in result.stdout + result.stderr,
                   result.stdout + result.stderr))
    checks.append(promtool_result(["test", "rules", "schedwatch.rules.test.yml"], out,
                                  f"promtool test rules: generated tests ({label})"))
    if spec_name(spec) == "spec" and not extra:
        shutil.copy(boundary, out)
        checks.append(promtool_result(["test", "rules", "boundary.test.yml"], out,
                                      f"promtool test rules: hand-written boundary tests ({label})"))
    return checks


def check_promtool(args, tmp):
    specs = example_specs(args.source_dir) + [
        os.path.join(args.source_dir, "tests", "config", "valid.yml"),
        os.path.join(args.source_dir, "tests", "rules", "spec.yaml"),
        os.path.join(args.source_dir, "tests", "rules", "mixed-spec.yaml"),
    ]
    boundary = os.path.join(args.source_dir, "tests", "rules", "boundary.test.yml")
    runs = [(spec, mode, ()) for spec in specs for mode in MODES]
    runs += [(spec, mode, IDENTITY) for spec in specs[-2:] for mode in MODES]
    runs += [(specs[-2], mode, RATIO_WINDOW) for mode in MODES]
    runs += [(specs[-2], mode, SHARDS) for mode in MODES]
    runs += [(specs[-1], "joined", SHARDS_IDENTITY)]
    # Each run in a directory of its own: promtool's evaluations, the slow part, side by side.
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        judged = pool.map(lambda r: judged_by_promtool(args, tmp, *r, boundary), runs)
        for checks in judged:
            for one in checks:
                check(*one)
    # A broken rule must make the generated tests fail: they test something.
    fails_when_changed(os.path.join(tmp, "spec", "joined"), "schedwatch.rules.yml",
                       " and on(job, instance) up{job=\"schedwatch\"} == 1", "",
                       "the exporter gate is removed")
    # Merging replicas by the identity is what keeps two watchers apart.
    fails_when_changed(os.path.join(tmp, "spec-identity", "joined"), "schedwatch.rules.yml",
                       "by (job, cluster, region, source, role)", "by (job, source, role)",
                       "the rules merge without the identity labels")
    # The success ratio merges replicas with max: added, their runs would count twice.
    fails_when_changed(os.path.join(tmp, "spec", "per-role"), "schedwatch-global.rules.yml",
                       "max by (job, source, role) (sum by", "sum by (job, source, role) (sum by",
                       "the success ratio adds replicas")
    # An open maintenance window holds the role's alerts (the example's backup has a window).
    fails_when_changed(os.path.join(tmp, "desired-state", "per-role"), "schedwatch.rules.yml",
                       " unless on() (max(schedwatch_job_in_maintenance{job=\"schedwatch\","
                       "role=\"backup\",source=\"demo\"}) == 1)", "",
                       "a maintenance window no longer holds the alerts")
    check_sharded_rules_tested(tmp)
    check_two_specs(args, tmp)
    promtool_ok(["check", "config", os.path.join(args.source_dir, "examples", "prometheus.yml")],
                None, "promtool check config examples/prometheus.yml (with its rule files)")


def check_sharded_rules_tested(tmp):
    """--total-shards 3: the generated tests fail when a shard rule is broken."""
    sharded = os.path.join(tmp, "spec-shards", "per-role")
    ordinal = 'schedwatch_exporter_shard_ordinal{job="schedwatch"}'
    live_ordinal = f'({ordinal} and on(job, instance) up{{job="schedwatch"}} == 1)'
    for rules_file, old, new, what in (
            ("schedwatch-global.rules.yml", f"unless on(job) ({live_ordinal} ==",
             f"and on(job) ({live_ordinal} ==", "SchedwatchShardDown fires for the shards up"),
            ("schedwatch-global.rules.yml", ' or absent(up{job="schedwatch"}), "schedwatch_shard"',
             ', "schedwatch_shard"', "SchedwatchShardDown misses a job with no target at all"),
            ("schedwatch-global.rules.yml", "== 1) != 3)", "== 1) != 4)",
             "SchedwatchShardingMismatch compares total_shards with another N"),
            ("schedwatch-global.rules.yml", " or max by (job) (schedwatch_exporter_spec_roles",
             " and max by (job) (schedwatch_exporter_spec_roles",
             "SchedwatchShardingMismatch ignores the spec's roles"),
            ("schedwatch-global.rules.yml", "sum by (job) (max by (job, schedwatch_shard) (",
             "sum by (job) (sum by (job, schedwatch_shard) (",
             "SchedwatchShardCoverage counts a shard once per replica"),
            ("schedwatch-global.rules.yml",
             f" unless on(job) (count by (job) (count_values by (job) (\"schedwatch_shard\", "
             f"{live_ordinal} < 3)) < 3)", "",
             "SchedwatchExporterDown's warning and SchedwatchShardCoverage fire while a shard is "
             "down"),
            ("schedwatch.rules.yml", f" and on(job, instance) {ordinal} == ",
             f" and on(job, instance) {ordinal} >= 0 * ",
             "the per-role rules read every shard's exporters"),
            ("schedwatch.rules.yml", "schedwatch_shard: ", "shard: ",
             "the per-role alerts lose their shard")):
        fails_when_changed(sharded, rules_file, old, new, what)


def fails_when_changed(out, rules_file, old, new, what):
    """Replaces `old` (which the rules must hold) with `new` in a generated rules file of `out`:
    the generated tests must then fail."""
    path = os.path.join(out, rules_file)
    if not os.path.exists(path):
        check(f"{path} was generated", False)
        return
    with open(path) as f:
        text = f.read()
    where = os.path.join(*out.split(os.sep)[-2:])
    check(f"{rules_file} of {where} holds {old!r}", old in text, old)
    with open(path, "w") as f:
        f.write(text.replace(old, new))
    result = run([PROMTOOL, "test", "rules", "schedwatch.rules.test.yml"], cwd=out)
    with open(path, "w") as f:  # for the next change to the same output
        f.write(text)
    check(f"generated tests fail when {what}", result.returncode != 0)


def check_two_specs(args, tmp):
    """Two specs' rules loaded together, each with its copy of the global file: the copies are
    the same bytes, and one Watchdog and one SchedwatchExporterDown fire, not two."""
    outs = []
    for spec in ("spec.yaml", "mixed-spec.yaml"):
        out = os.path.join(tmp, "two", spec_name(spec))
        if not generate(args, os.path.join(args.source_dir, "tests", "rules", spec), "per-role",
                        out, ("--exporter-alert-for", "0s")):
            return
        outs.append(out)
    globals_ = [os.path.join(out, "schedwatch-global.rules.yml") for out in outs]
    check("two specs' schedwatch-global.rules.yml are the same bytes",
          filecmp.cmp(*globals_, shallow=False))
    test = {
        "rule_files": [os.path.join(out, name) for out in outs
                       for name in ("schedwatch.rules.yml", "schedwatch-global.rules.yml")],
        "evaluation_interval": "1m",
        "tests": [{
            "name": "two specs, the global file loaded twice; no exporter target",
            "interval": "1m",
            "input_series": [],
            "promql_expr_test": [
                {"expr": 'count(ALERTS{alertname="Watchdog"})', "eval_time": "1m",
                 "exp_samples": [{"labels": "{}", "value": 1}]},
                {"expr": 'count(ALERTS{alertname="SchedwatchExporterDown"})', "eval_time": "1m",
                 "exp_samples": [{"labels": "{}", "value": 1}]},
            ],
        }],
    }
    path = os.path.join(tmp, "two", "two.test.yml")
    with open(path, "w") as f:
        yaml.safe_dump(test, f)
    promtool_ok(["test", "rules", path], None,
                "promtool: two specs with the global file twice give one Watchdog")


def amtool_check(path, name):
    result = run([AMTOOL, "check-config", path])
    return check(name, result.returncode == 0 and "SUCCESS" in result.stdout,
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


def check_amtool(args, tmp):
    spec = os.path.join(args.source_dir, "examples", "desired-state.yaml")
    out = os.path.join(tmp, "out")
    if not generate(args, spec, "per-role", out):
        return
    snippet_path = os.path.join(out, "alertmanager.yml")
    amtool_check(snippet_path, "amtool check-config: the snippet on its own")
    with open(snippet_path) as f:
        snippet = yaml.safe_load(f)
    merged_path = os.path.join(tmp, "merged.yml")
    with open(merged_path, "w") as f:
        yaml.safe_dump(merged_config(snippet), f)
    amtool_check(merged_path, "amtool check-config: the snippet merged into a full config")
    check_route_by(args, tmp)
    example_path = os.path.join(args.source_dir, "examples", "alertmanager.yml")
    amtool_check(example_path, "amtool check-config examples/alertmanager.yml")
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
        check(f"examples/alertmanager.yml includes the snippet's {key}", not missing, missing)
    for config, name in ((merged_path, "merged"), (example_path, "example")):
        for labels, receiver in ((["alertname=Watchdog"], "schedwatch-watchdog"),
                                 (["alertname=SchedwatchJobMissing", "role=retry", "source=demo",
                                   "job=schedwatch"], "schedwatch")):
            result = run([AMTOOL, "config", "routes", "test", f"--config.file={config}",
                          *labels])
            check(f"{name} config routes {labels[0]} to {receiver}",
                   result.returncode == 0 and result.stdout.strip() == receiver,
                   result.stdout + result.stderr)


def check_route_by(args, tmp):
    """--route-by team: a route and a receiver per team of the example; amtool accepts it and
    routes each team's per-role alert to its receiver, the rest to schedwatch."""
    spec = os.path.join(args.source_dir, "examples", "desired-state.yaml")
    out = os.path.join(tmp, "route-by")
    if not generate(args, spec, "per-role", out, ("--route-by", "team")):
        return
    path = os.path.join(out, "alertmanager.yml")
    amtool_check(path, "amtool check-config: the snippet with --route-by team")
    missing = ["alertname=SchedwatchJobMissing", "job=schedwatch"]
    for argv, receiver in ((missing + ["team=payments", "role=retry"], "schedwatch-team-payments"),
                           (missing + ["team=platform", "role=gate"], "schedwatch-team-platform"),
                           (missing + ["role=other"], "schedwatch"),
                           (["alertname=SchedwatchSourceDown", "job=schedwatch"], "schedwatch")):
        result = run([AMTOOL, "config", "routes", "test", f"--config.file={path}", *argv])
        check(f"--route-by team routes {' '.join(argv)} to {receiver}",
              result.returncode == 0 and result.stdout.strip() == receiver,
              result.stdout + result.stderr)
    for extra, why in ((("--route-by", "owner"), "a label no job sets"),
                       (("--identity-labels", "team"), "an identity label that is a spec label")):
        result = run([args.rulegen, "--config.file", spec, "--out", os.path.join(tmp, "refused"),
                      *extra])
        check(f"rulegen refuses {why} (exit 2)",
              result.returncode == 2 and extra[1] in result.stderr, result.stderr)


def expected_errors(spec):
    """The "# error: MESSAGE" lines that open an invalid spec, one per problem, file named."""
    if not os.path.exists(spec):
        return []
    expected = []
    with open(spec, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("# error: "):
                break
            expected.append(line[len("# error: "):].rstrip("\n").replace("{file}", spec))
    return expected


def serve_bad_spec(args, spec):
    """`schedwatch_exporter` serving `spec` on a free port; None if it is still serving."""
    try:
        return subprocess.run([args.exporter, "--config.file", spec,
                               "--web.listen-address", "127.0.0.1:0"],
                              capture_output=True, text=True, timeout=10,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None


def check_bad_spec(args, tmp):
    invalid = sorted(glob.glob(os.path.join(args.source_dir, "tests", "config", "invalid-*.yml")))
    check("tests/config has invalid specs", bool(invalid))
    missing = os.path.join(tmp, "no-such-spec.yaml")
    for spec in invalid + [missing]:
        rulegen = run([args.rulegen, "--config.file", spec, "--out", os.path.join(tmp, "out")])
        # `--config.file F check`: the exporter takes --config.file before the subcommand.
        checked = run([args.exporter, "--config.file", spec, "check"])
        name = os.path.basename(spec)
        check(f"{name}: rulegen and check exit 2",
              rulegen.returncode == 2 and checked.returncode == 2,
              f"rulegen {rulegen.returncode}, check {checked.returncode}")
        check(f"{name}: rulegen prints what check prints",
              rulegen.stderr == checked.stderr and rulegen.stderr.strip(),
              f"rulegen: {rulegen.stderr}check:   {checked.stderr}")
        # What check and rulegen refuse, serve refuses with the same words.
        serve = serve_bad_spec(args, spec)
        check(f"{name}: serve exits 2 and prints what check prints",
              serve is not None and serve.returncode == 2 and serve.stderr == checked.stderr,
              "still serving after 10 s" if serve is None
              else f"serve {serve.returncode}: {serve.stderr}")
        expected = expected_errors(spec)
        if expected:
            check(f"{name}: check prints its {len(expected)} problem(s) with their positions",
                  checked.stderr == "".join(line + "\n" for line in expected),
                  f"expected: {expected}\ngot: {checked.stderr}")
    check("nothing is written for a bad spec", not os.path.exists(os.path.join(tmp, "out")))
    spec = os.path.join(args.source_dir, "examples", "desired-state.yaml")
    out = os.path.join(tmp, "args")
    for argv, what in (([], "no arguments"),
                       (["--config.file", spec], "no --out"),
                       (["--config.file", spec, "--out", out, "--mode", "fast"], "unknown --mode"),
                       (["--config.file", spec, "--out", out, "--bogus"], "unknown flag"),
                       (["--config.file", spec, "--out", out, "--watcher-stale-after", "soon"],
                        "bad --watcher-stale-after"),
                       (["--config.file", spec, "--out", out, "--exporter-job", ""],
                        "empty --exporter-job"),
                       (["--config.file", spec, "--out", out, "--identity-labels", "instance"],
                        "--identity-labels instance (already part of every identity)"),
                       (["--config.file", spec, "--out", out, "--identity-labels", "a-b"],
                        "--identity-labels that is no label name"),
                       (["--config.file", spec, "--out", out, "--identity-labels", "x,x"],
                        "--identity-labels naming a label twice"),
                       (["--config.file", spec, "--out", out, "--output-format", "helm"],
                        "unknown --output-format"),
                       (["--config.file", spec, "--out", out, "--exporter-alert-for", "-1m"],
                        "bad --exporter-alert-for"),
                       (["--config.file", spec, "--out", out, "--success-ratio-window", "5m"],
                        "--success-ratio-window shorter than 10m"),
                       (["--config.file", spec, "--out", out, "--success-ratio-window", "90m30s"],
                        "--success-ratio-window not in whole minutes"),
                       (["--config.file", spec, "--out", out, "--total-shards", "0"],
                        "--total-shards 0"),
                       (["--config.file", spec, "--out", out, "--total-shards", "1025"],
                        "--total-shards above 1024"),
                       (["--config.file", spec, "--out", out, "--total-shards", "three"],
                        "--total-shards that is no number"),
                       (["--config.file", spec, "--out", out, "--identity-labels",
                         "schedwatch_shard"], "--identity-labels schedwatch_shard (the shard's)"),
                       (["--config.file", shard_labelled(tmp), "--out", out, "--total-shards",
                         "2"], "--total-shards with a spec label schedwatch_shard")):
        result = run([args.rulegen, *argv])
        check(f"{what}: exit 2 with a message", result.returncode == 2 and result.stderr.strip(),
              f"exit {result.returncode}: {result.stderr}")
    result = run([args.rulegen, "--help"])
    check("--help exits 0", result.returncode == 0 and "--exporter-job" in result.stdout)


def shard_labelled(tmp):
    """A spec whose job sets the label sharded rules set to the role's shard."""
    path = os.path.join(tmp, "shard-labelled.yaml")
    with open(path, "w") as f:
        f.write("version: 1\nsources:\n  demo: {type: file, path: live.yaml}\njobs:\n"
                "  - {role: a, source: demo, schedule: '* * * * *', spec_version: '1', "
                "labels: {schedwatch_shard: '9'}}\n")
    return path


def check_dashboard(args, tmp):
    spec = os.path.join(args.source_dir, "examples", "desired-state.yaml")
    dashboards = {}
    for name, extra in (("a", ["--exporter-job", "sched", "--identity-labels", "cluster"]),
                        ("b", ["--exporter-job", "sched", "--identity-labels", "cluster"]),
                        ("other", ["--exporter-job", "sched"])):
        out = os.path.join(tmp, name)
        source = spec if name != "other" else os.path.join(args.source_dir, "tests", "rules",
                                                           "spec.yaml")
        if not generate(args, source, "per-role", out, extra):
            return
        with open(os.path.join(out, "dashboard.json")) as f:
            try:
                dashboards[name] = json.load(f)
            except ValueError as e:
                check("dashboard.json parses", False, e)
                return
    check("dashboard.json parses", True)
    check("the uid is stable for a spec and differs between specs",
          dashboards["a"]["uid"] == dashboards["b"]["uid"] != dashboards["other"]["uid"],
          [d["uid"] for d in dashboards.values()])
    dashboard = dashboards["a"]
    variables = {v.get("name"): v for v in dashboard.get("templating", {}).get("list", [])}
    check("a Prometheus datasource variable named datasource",
          variables.get("datasource", {}).get("type") == "datasource"
          and variables["datasource"].get("query") == "prometheus")
    check("query variables for job, the identity label, instance and source",
          all(variables.get(n, {}).get("type") == "query" for n in ("job", "cluster", "instance",
                                                                      "source")), list(variables))
    check("the job variable defaults to --exporter-job",
          variables["job"].get("current", {}).get("value") == ["sched"])
    check("job, identity, instance and source variables offer All",
          all(variables[n].get("includeAll") for n in ("job", "cluster", "instance", "source")))
    panels = dashboard.get("panels", [])
    queried = [p for p in panels if p.get("type") != "row"]
    check("every panel and query uses the datasource variable",
          queried and all(p.get("datasource", {}).get("uid") == "${datasource}" and
                          all(t.get("datasource", {}).get("uid") == "${datasource}"
                              for t in p.get("targets", [])) for p in queried))
    exprs = [t["expr"] for p in queried for t in p["targets"]]
    check("every query selects through the job, identity and instance "
          "variables", all('job=~"$job"' in e and 'cluster=~"$cluster"' in e and 'instance=~"$instance"' in e
              for e in exprs), [e for e in exprs if '$job' not in e])
    tables = [p for p in panels if p.get("type") == "table"]
    table_exprs = " ".join(t["expr"] for p in tables for t in p.get("targets", []))
    check("a state table with conditions, last success age, last start and registered objects",
        len(tables) == 1 and all(m in table_exprs for m in (
        "schedwatch_job_condition", "schedwatch_job_last_success_timestamp_seconds",
        "schedwatch_job_last_started_timestamp_seconds", "schedwatch_job_registered_objects")))
    check("the state table's queries are instant tables", all(t.get("format") == "table" and t.get("instant") for p in tables
              for t in p["targets"]))
    check("the state table merges replicas (no instance in its by clause)",
          "instance" not in table_exprs.split("by (")[1].split(")")[0])
    rows = [p for p in panels if p.get("type") == "row"]
    check("one row, repeated over $source",
          len(rows) == 1 and rows[0].get("repeat") == "source", rows)
    after_row = panels[panels.index(rows[0]) + 1:] if rows else []
    check("the repeated row's panels select $source", after_row and all('source=~"$source"' in t["expr"] for p in after_row
                            for t in p["targets"]))
    with open(spec) as f:
        sources = yaml.safe_load(f)["sources"]
    check("no panel names a source of the spec: sources can change without regenerating",
          not any(f'"{s}"' in json.dumps(dashboard["panels"]) for s in sources))
    ids = [p["id"] for p in panels]
    check("panel ids are unique", len(ids) == len(set(ids)))
    runs = [p for p in panels if "schedwatch_job_runs_total" in json.dumps(p.get("targets", []))]
    check("a runs panel queries exemplars and links each to its run (run_url)",
          len(runs) == 1 and all(t.get("exemplar") is True for t in runs[0]["targets"]) and
          any(link.get("url") == "${__data.fields.run_url}"
              for link in runs[0]["fieldConfig"]["defaults"].get("links", [])), runs)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("check", choices=("golden", "promtool", "amtool", "bad_spec", "dashboard"))
    parser.add_argument("--rulegen", required=True)
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rulegen-test-") as tmp:
        globals()["check_" + args.check](args, tmp)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
