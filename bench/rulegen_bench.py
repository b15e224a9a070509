#!/usr/bin/python3
"""Rule evaluation cost of both rule modes in a real Prometheus, served by one exporter or by
several replicas of one watcher.

For each role count, writes a spec of N roles over four `file` sources (with snapshots in a
realistic mix of conditions), serves it with the built schedwatch_exporter on loopback, and for
each mode starts /usr/bin/prometheus on loopback with the generated rules, a 5s scrape and
evaluation interval and a temporary TSDB. Once the exporter's series are in, it samples
prometheus_rule_group_last_duration_seconds of every group over several evaluations and prints
the median per group, the sum over the per-role groups, and the joined/per-role ratio. It also
prints the alerts each mode raises, counted by name: they must agree (NotStarted, which follows
the exporter's clock-dependent classification, is shown next to the exporter's own count).

Stops every process it starts, also on errors and timeouts.

With --replicas 1 2, the same spec is also served by two exporter replicas (both scraped in
one job, as an HA pair): the rules merge them, so the alerts must be the same as with one, and
the figure to compare is the joined group's duration against the single exporter's.

  bench/rulegen_bench.py --build build-rules [--roles 1000 10000] [--samples 4]
                         [--modes per-role joined] [--replicas 1 2]
"""
import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "harness"))
from schedwatch_test import Exporter, get, get_json, start_prometheus, wait_for  # noqa: E402

SOURCES = ("a", "b", "c", "d")
SCHEDULES = ("*/5 * * * *", "*/10 * * * *", "{m} * * * *", "{m} {h} * * *", "{m} 9 * * 1-5")


def write_spec(directory, roles):
    """A spec with `roles` jobs and one snapshot per source. Most roles last started at their
    latest fire time; about 2% are missing, 2% drifted, 1% inactive, 3% failing, 1% hung and
    1% duplicated, and about 5% have not started for a while."""
    random.seed(4)
    spec = ["version: 1", "defaults: {alert_for: 5m}", "sources:"]
    spec += [f"  {s}: {{type: file, path: {s}.yaml}}" for s in SOURCES]
    spec.append("jobs:")
    snapshots = {s: (["objects:"], ["runs:"]) for s in SOURCES}
    # Minutes since the latest start for a healthy role of each schedule kind, at most.
    recent = (4, 9, 59, 23 * 60, 20 * 60)
    for i in range(roles):
        role, source = f"job-{i:05d}", SOURCES[i % len(SOURCES)]
        schedule = SCHEDULES[i % len(SCHEDULES)].format(m=i % 60, h=i % 24)
        spec.append(f'  - {{role: {role}, source: {source}, schedule: "{schedule}", '
                    f'spec_version: "{i % 7 + 1}"}}')
        objects, runs = snapshots[source]
        kind = random.random()
        if kind < 0.02:
            continue  # missing
        version = i % 7 + 1 if kind > 0.04 else 0
        copies = 2 if kind > 0.99 else 1
        for copy in range(copies):
            objects.append(f'  - {{id: "{source}/{role}/{copy}", role: {role}, '
                           f'schedule: "{schedule}", spec_version: "{version}", '
                           f'enabled: {"false" if kind < 0.05 else "true"}}}')
        started = random.randint(2, recent[i % len(recent)] + 1)
        if 0.90 < kind < 0.95:
            started = 3 * 24 * 60 + started  # not started for three days
        result = "failure" if kind < 0.08 else "success"
        runs.append(f"  - {{role: {role}, started: -{started}m, finished: -{started - 1}m, "
                    f"result: {result}}}")
        if kind > 0.98:
            runs.append(f"  - {{role: {role}, started: -3h, result: running}}")
    with open(os.path.join(directory, "spec.yaml"), "w") as f:
        f.write("\n".join(spec) + "\n")
    for source, (objects, runs) in snapshots.items():
        with open(os.path.join(directory, f"{source}.yaml"), "w") as f:
            f.write("\n".join(objects + runs) + "\n")
    return os.path.join(directory, "spec.yaml")


def start_exporter(build, spec, directory):
    exporter = Exporter(os.path.join(build, "exporter", "schedwatch_exporter"), spec, directory,
                        interval="5s", confirm_delay=None, wait="ready", timeout=420)
    return exporter, exporter.port


def group_metrics(prometheus_port):
    """{group: (iterations, last duration)} from Prometheus' own /metrics."""
    text = get(f"http://127.0.0.1:{prometheus_port}/metrics").text
    values = {}
    for name in ("prometheus_rule_group_iterations_total",
                 "prometheus_rule_group_last_duration_seconds",
                 "prometheus_rule_group_rules"):
        for match in re.finditer(name + r'\{rule_group="[^"]*;([^"]+)"\} (\S+)', text):
            values.setdefault(match.group(1), {})[name] = float(match.group(2))
    return {group: (v.get("prometheus_rule_group_iterations_total", 0),
                    v.get("prometheus_rule_group_last_duration_seconds", 0),
                    int(v.get("prometheus_rule_group_rules", 0))) for group, v in values.items()}


def query(prometheus_port, promql):
    url = (f"http://127.0.0.1:{prometheus_port}/api/v1/query?query=" +
           urllib.parse.quote(promql))
    return get_json(url)["data"]["result"]


def measure_mode(args, spec, roles, mode, exporter_ports, directory):
    out = os.path.join(directory, f"{mode}-{len(exporter_ports)}")
    subprocess.run([os.path.join(args.build, "rulegen", "schedwatch_rulegen"), "--config.file",
                    spec, "--out", out, "--mode", mode], check=True, timeout=300)
    targets = ", ".join(f"'127.0.0.1:{port}'" for port in exporter_ports)
    config = os.path.join(out, "prometheus.yml")
    with open(config, "w") as f:
        f.write(f"""global:
  scrape_interval: 5s
  scrape_timeout: 5s
  evaluation_interval: 5s
rule_files:
  - {os.path.join(out, "schedwatch.rules.yml")}
  - {os.path.join(out, "schedwatch-global.rules.yml")}
scrape_configs:
  - job_name: schedwatch
    static_configs:
      - targets: [{targets}]
""")
    started = time.time()
    prometheus = start_prometheus(out, "prometheus", config, "--log.level=warn")
    prometheus_port = prometheus.port
    try:
        prometheus.wait_ready(args.timeout)
        loaded = time.time() - started

        def scraped():
            result = query(prometheus_port, 'count(schedwatch_job_info{job="schedwatch"})')
            return result and int(float(result[0]["value"][1])) == roles * len(exporter_ports)
        wait_for(scraped, args.timeout, "the exporter's series", interval=0.5,
                 ignore=(OSError,), required=True)
        # Sample each group's last duration at every new iteration from now on.
        start = group_metrics(prometheus_port)
        samples = {group: [] for group in start}
        last = {group: it for group, (it, _, _) in start.items()}

        def enough():
            for group, (iterations, duration, _) in group_metrics(prometheus_port).items():
                if iterations > last.get(group, 0):
                    last[group] = iterations
                    samples.setdefault(group, []).append(duration)
            return all(len(s) >= args.samples for s in samples.values())
        wait_for(enough, args.timeout, f"{args.samples} evaluations of every group",
                 interval=0.5, ignore=(OSError,), required=True)
        rules = {group: count for group, (_, _, count) in group_metrics(prometheus_port).items()}
        alerts = {r["metric"]["alertname"]: int(float(r["value"][1]))
                  for r in query(prometheus_port, "count by (alertname) (ALERTS)")}
        not_started = query(prometheus_port, 'count(max by (role) (schedwatch_job_condition{'
                                             'job="schedwatch",condition="not_started"}) == 1)')
        alerts["exporter's not_started roles"] = int(float(not_started[0]["value"][1])) if (
            not_started) else 0
        rss = prometheus.rss_kib() / 1024
    finally:
        prometheus.stop()
    shutil.rmtree(os.path.join(out, "prometheus-tsdb"), ignore_errors=True)
    medians = {group: statistics.median(s) for group, s in samples.items()}
    return {"medians": medians, "maxima": {g: max(s) for g, s in samples.items()},
            "rules": rules, "alerts": alerts, "loaded": loaded, "rss": rss}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True, help="build directory with the binaries")
    parser.add_argument("--roles", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--samples", type=int, default=4, help="evaluations sampled per group")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per wait")
    parser.add_argument("--modes", nargs="+", default=["per-role", "joined"],
                        choices=["per-role", "joined"])
    parser.add_argument("--replicas", type=int, nargs="+", default=[1],
                        help="exporter replicas serving the spec (each count measured)")
    args = parser.parse_args()
    totals = {}
    for roles in args.roles:
        directory = tempfile.mkdtemp(prefix=f"rulegen-bench-{roles}-")
        results = {}
        try:
            spec = write_spec(directory, roles)
            exporters = []
            try:
                for count in sorted(args.replicas):
                    while len(exporters) < count:
                        replica = os.path.join(directory, f"replica-{len(exporters)}")
                        os.makedirs(replica)
                        exporters.append(start_exporter(args.build, spec, replica))
                    ports = [port for _, port in exporters[:count]]
                    for mode in args.modes:
                        name = mode if count == 1 else f"{mode}, {count} replicas"
                        results[name] = measure_mode(args, spec, roles, mode, ports, directory)
            finally:
                for exporter, _ in exporters:
                    exporter.stop()
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        print(f"{roles} roles (4 sources, evaluation interval 5s, median of {args.samples} "
              f"evaluations; prometheus_rule_group_last_duration_seconds):")
        for mode, result in results.items():
            jobs = {g: d for g, d in result["medians"].items() if g.startswith("schedwatch-jobs")}
            totals[(roles, mode)] = sum(jobs.values())
            print(f"  {mode}: {sum(result['rules'].values())} rules, loaded in "
                  f"{result['loaded']:.1f} s, Prometheus RSS {result['rss']:.0f} MiB")
            # Groups hold at most 20 rules: list the few, not the thousands of per-role ones.
            listed = sorted(result["medians"]) if len(result["medians"]) <= 12 else sorted(
                g for g in result["medians"] if g not in jobs)
            for group in listed:
                print(f"    {group:28} {result['rules'].get(group, 0):7} rules  "
                      f"{result['medians'][group] * 1000:10.2f} ms  "
                      f"(max {result['maxima'][group] * 1000:.2f} ms)")
            print(f"    {f'{len(jobs)} schedwatch-jobs groups, summed':28} "
                  f"{sum(result['rules'].get(g, 0) for g in jobs):7}        "
                  f"{totals[(roles, mode)] * 1000:10.2f} ms")
        # NotStarted follows the exporter's classification, which moves with the clock (and a
        # slow group evaluates it late): it is shown next to the exporter's own count.
        for mode, result in results.items():
            print(f"  {mode} alerts (pending or firing) by name: "
                  f"{json.dumps(result['alerts'], sort_keys=True)}")
        steady = [{k: v for k, v in r["alerts"].items() if "NotStarted" not in k and "not_started"
                   not in k} for r in results.values()]
        print(f"  apart from NotStarted, every mode and replica count raises "
              f"{'the same' if all(a == steady[0] for a in steady) else 'DIFFERENT'} alerts")
        for mode in args.modes:
            for count in args.replicas:
                if count > 1 and totals.get((roles, mode)):
                    many = totals[(roles, f"{mode}, {count} replicas")]
                    print(f"{mode} at {roles} roles: {count} replicas / one exporter: "
                          f"{many / totals[(roles, mode)]:.2f}")
    for roles in args.roles:
        if totals.get((roles, "per-role")) and totals.get((roles, "joined")):
            print(f"joined / per-role evaluation time at {roles} roles: "
                  f"{totals[(roles, 'joined')] / totals[(roles, 'per-role')]:.3f} "
                  f"(per-role / joined: {totals[(roles, 'per-role')] / totals[(roles, 'joined')]:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
