#!/usr/bin/python3
"""Several watchers, end to end on loopback: the topology that docs/operations.md ("Running it in
production") describes, with Debian's prometheus and prometheus-alertmanager.

  east-1, east-2   two exporter replicas of one watcher (the same spec, the same snapshot file)
  west             a different watcher: its own snapshot file, the same source and role names
  leaf-east        Prometheus scraping east-1 and east-2, external_labels {cluster: east}
  leaf-west        Prometheus scraping west, external_labels {cluster: west}
  global           Prometheus federating both leaves (/federate, match[]={job="schedwatch"}),
                   evaluating the joined rules (--identity-labels cluster), sending to
  alertmanager     with the generated snippet; the test reads its /api/v2/alerts

Scenarios:
  - healthy: one Watchdog at Alertmanager although the global rules file is loaded twice, and
    no other alert;
  - west's source becomes unreadable: SchedwatchSourceDown (critical) for west only; nothing
    changes for east; east's own incident (a role removed) still pages, once, unsuppressed;
  - east-2 killed: no per-role page, one SchedwatchExporterDown warning (instance east-2);
  - east-1 killed too: SchedwatchExporterDown critical for east, no per-role page.
Prints 'N passed, N failed'.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from schedwatch_test import (Exporter, Peers, Receiver, alertmanager_config,  # noqa: E402
                             check, firing, get_json, held, prometheus_query, replace_file,
                             require_tools, start_alertmanager, start_prometheus, summary,
                             temporary_directory, unchanged, wait_for_peer)

SPEC = """\
# Two watchers of the same roles on the same-named source: only the cluster label differs.
version: 1
defaults:
  timezone: UTC
  start_grace: 0s
  max_runtime: 10m
  alert_for: 2s
sources:
  cluster:
    type: file
    path: live.yaml
jobs:
  - {role: retry, source: cluster, schedule: "* * * * *", spec_version: "7", stale_after: 10m}
  - {role: gate, source: cluster, schedule: "* * * * *", spec_version: "3", stale_after: 10m}
"""


def write_live_state(path, roles):
    lines = ["objects:"]
    lines += [f'  - {{id: live/{role}, role: {role}, schedule: "* * * * *", '
              f'spec_version: "{version}"}}' for role, version in roles]
    lines += ["runs:"]
    lines += [f"  - {{role: {role}, started: -20s, finished: -15s, result: success}}"
              for role, _ in roles]
    replace_file(path, "\n".join(lines) + "\n")


ROLES = [("retry", "7"), ("gate", "3")]


class Alertmanager:
    def __init__(self, url):
        self.url = url

    def alerts(self, pages_only=True):
        """Active alerts; pages_only: neither inhibited nor silenced (what gets delivered)."""
        query = "?active=true" + ("&inhibited=false&silenced=false" if pages_only else "")
        return [a["labels"] for a in get_json(f"{self.url}/api/v2/alerts{query}")]

    def named(self, name, pages_only=True, **labels):
        return [a for a in self.alerts(pages_only) if a["alertname"] == name
                and all(a.get(k) == v for k, v in labels.items())]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--rulegen", required=True)
    args = parser.parse_args()
    require_tools("prometheus", "prometheus-alertmanager")
    started = time.time()
    with temporary_directory("schedwatch-federation-") as workdir, Receiver() as receiver, \
            Peers(show=("global", "leaf-east", "alertmanager", "east-1")) as peers:
        run(args, workdir, receiver, peers)
    print(f"     whole run: {time.time() - started:.0f}s")
    return summary()


def run(args, workdir, receiver, peers):
    # One spec per watcher directory (the file source reads live.yaml beside it).
    specs, lives = {}, {}
    for watcher in ("east", "west"):
        os.makedirs(os.path.join(workdir, watcher))
        specs[watcher] = os.path.join(workdir, watcher, "spec.yaml")
        with open(specs[watcher], "w") as out:
            out.write(SPEC)
        lives[watcher] = os.path.join(workdir, watcher, "live.yaml")
        write_live_state(lives[watcher], ROLES)

    # The rules of both watchers' specs: joined mode, cluster as the identity label. The
    # global Prometheus loads east's rules and BOTH copies of the global file.
    rule_dirs = {}
    for watcher in ("east", "west"):
        rule_dirs[watcher] = os.path.join(workdir, "rules-" + watcher)
        generated = subprocess.run(
            [args.rulegen, "--config.file", specs[watcher], "--out", rule_dirs[watcher],
             "--mode", "joined", "--identity-labels", "cluster", "--watcher-stale-after",
             "30s", "--exporter-alert-for", "2s",
             "--watchdog-url", f"{receiver.url}/heartbeat"],
            capture_output=True, text=True)
        if not check(f"rulegen writes {watcher}'s rules", generated.returncode == 0,
                     generated.stderr):
            return
    global_files = [os.path.join(rule_dirs[w], "schedwatch-global.rules.yml")
                    for w in ("east", "west")]
    with open(global_files[0]) as a, open(global_files[1]) as b:
        check("both specs' global rule files are the same bytes", a.read() == b.read())

    with open(os.path.join(rule_dirs["east"], "alertmanager.yml")) as snippet:
        am_config = alertmanager_config(yaml.safe_load(snippet), f"{receiver.url}/alerts",
                                        watchdog_repeat="1h")
    am_file = os.path.join(workdir, "alertmanager.yml")
    with open(am_file, "w") as out:
        yaml.safe_dump(am_config, out)
    check("the inhibitions' equal lists name the identity label",
          all(rule["equal"][:2] == ["job", "cluster"] for rule in am_config["inhibit_rules"]),
          am_config["inhibit_rules"])

    for exporter, watcher in (("east-1", "east"), ("east-2", "east"), ("west", "west")):
        peers[exporter] = Exporter(args.exporter, specs[watcher], workdir, name=exporter,
                                   confirm_delay="200ms")
    peers["alertmanager"] = start_alertmanager(workdir, am_file)
    instance = {name: f"127.0.0.1:{peers[name].port}" for name in ("east-1", "east-2", "west")}

    # The leaves only scrape; the identity label comes from their external_labels, which
    # /federate adds to what it serves.
    for leaf, targets in (("leaf-east", ["east-1", "east-2"]), ("leaf-west", ["west"])):
        peers[leaf] = start_prometheus(workdir, leaf, {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s",
                       "external_labels": {"cluster": leaf.split("-")[1]}},
            "scrape_configs": [{"job_name": "schedwatch", "static_configs": [
                {"targets": [instance[t] for t in targets]}]}]},
            "--rules.alert.resend-delay=1s")
    peers["global"] = start_prometheus(workdir, "global", {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [os.path.join(rule_dirs["east"], "schedwatch.rules.yml")] + global_files,
        "alerting": {"alertmanagers": [
            {"static_configs": [{"targets": [peers["alertmanager"].address]}]}]},
        "scrape_configs": [{
            "job_name": "federate", "honor_labels": True, "metrics_path": "/federate",
            "params": {"match[]": ['{job="schedwatch"}']},
            "static_configs": [{"targets": [peers["leaf-east"].address,
                                            peers["leaf-west"].address]}]}]},
        "--rules.alert.resend-delay=1s")
    global_url = peers["global"].url
    am = Alertmanager(peers["alertmanager"].url)

    def federated_up():
        result = prometheus_query(global_url, 'up{job="schedwatch"} == 1')
        return sorted((r["metric"].get("cluster"), r["metric"]["instance"]) for r in result)

    want = sorted([("east", instance["east-1"]), ("east", instance["east-2"]),
                   ("west", instance["west"])])
    check("the global Prometheus sees all three exporters through federation, with cluster",
          wait_for_peer(lambda: federated_up() == want, 60, "three federated targets up"),
          (federated_up(), want, peers["global"].logs()[-1500:]))
    check("both watchers' roles arrive at the global Prometheus", wait_for_peer(
        lambda: len(prometheus_query(
            global_url, 'schedwatch_job_registered_objects{job="schedwatch"}')) == 6,
                30, "federated role series"))

    # Healthy: the Watchdog once (two copies of the global file are loaded), nothing else.
    check("healthy: exactly one Watchdog at Alertmanager, with the global file loaded twice",
          wait_for_peer(lambda: len(am.named("Watchdog", pages_only=False)) == 1,
              60, "the Watchdog at Alertmanager"),
          am.alerts(False))
    quiet = wait_for_peer(lambda: prometheus_query(global_url, 'ALERTS{alertname!="Watchdog"}')
                       == [],
                           30, "the rules to settle (nothing but the Watchdog pending or firing)")
    check("healthy: no alert but the Watchdog", quiet is not None and
          [a for a in am.alerts(False) if a["alertname"] != "Watchdog"] == [],
          (prometheus_query(global_url, "ALERTS"), am.alerts(False)))

    def east_alerts():
        return sorted(json.dumps(a, sort_keys=True) for a in am.alerts(False)
                      if a.get("cluster") == "east")

    # West's source becomes unreadable: west's SourceDown, nothing for east.
    os.remove(lives["west"])
    west_down = wait_for_peer(
        lambda: am.named("SchedwatchSourceDown", cluster="west", source="cluster",
                         severity="critical"), 30, "SchedwatchSourceDown for west")
    check("west's source unreadable: SchedwatchSourceDown (critical) for west", west_down,
          am.alerts(False))
    check("west's source unreadable: nothing about east",
          wait_for_peer(lambda: held(lambda: east_alerts() == [], 3),
              20, "east to stay quiet for 3s"),
          east_alerts())
    west_roles = [a for a in firing(global_url) if a["alertname"].startswith("SchedwatchJob")]
    check("west's source unreadable: no per-role alert for west either (rules gate it)",
          not west_roles, west_roles)

    # East is still watched, and its pages are not held back by west's outage.
    incident = time.time()
    write_live_state(lives["east"], [("gate", "3")])
    missing = wait_for_peer(
        lambda: am.named("SchedwatchJobMissing", cluster="east", role="retry"),
            30, "SchedwatchJobMissing for east's retry at Alertmanager")
    check("east's incident pages although west's source is down (inhibition scoped to the "
          "watcher)", missing, am.alerts(False))
    check("east's incident pages once, not once per replica, without instance",
          missing and len(missing) == 1 and "instance" not in missing[0], missing)
    delivered = wait_for_peer(
        lambda: [a for _, a in receiver.alerts("/alerts", incident)
                 if a["labels"]["alertname"] == "SchedwatchJobMissing"],
                     20, "the missing alert at the receiver")
    check("east's incident is delivered to the receiver", delivered)
    write_live_state(lives["east"], ROLES)
    check("east's retry back: the missing alert resolves", wait_for_peer(
        lambda: not am.named("SchedwatchJobMissing", pages_only=False, cluster="east"),
            30, "the missing alert to resolve"),
        am.alerts(False))

    # One replica of east dies: a warning for it, no per-role page.
    peers["east-2"].stop(signal.SIGKILL)
    killed = time.time()
    warning = wait_for_peer(
        lambda: am.named("SchedwatchExporterDown", severity="warning",
                         instance=instance["east-2"]),
                             30, "SchedwatchExporterDown warning for east-2")
    check("one replica killed: SchedwatchExporterDown warning for it", warning,
          am.alerts(False))
    settled = wait_for_peer(lambda: unchanged(
        lambda: sorted(json.dumps(a, sort_keys=True) for a in am.alerts()), 3),
            20, "3s without a change")
    pages = [a for a in am.alerts() if a["alertname"].startswith("Schedwatch")
             and a.get("cluster") == "east"]
    check("one replica killed: exactly one alert about east, the warning", settled and
          len(pages) == 1 and pages[0]["severity"] == "warning", pages)
    per_role = [a for a in firing(global_url) if a["alertname"].startswith("SchedwatchJob")]
    check("one replica killed: no per-role alert (east-1 still watches)", not per_role,
          per_role)

    # Both die: critical for the watcher, and still no per-role page.
    peers["east-1"].stop(signal.SIGKILL)
    critical = wait_for_peer(
        lambda: am.named("SchedwatchExporterDown", severity="critical", cluster="east"),
            30, "SchedwatchExporterDown critical for east")
    check("both replicas killed: SchedwatchExporterDown critical for east", critical,
          am.alerts(False))
    check("both replicas killed: the critical alert names the watcher, not a replica",
          critical and "instance" not in critical[0], critical)
    check("both replicas killed: the warning resolves", wait_for_peer(
        lambda: not am.named("SchedwatchExporterDown", pages_only=False, severity="warning"),
        30, "the warning to go"), am.alerts(False))
    per_role_pages = [a["labels"] for t, a in receiver.alerts("/alerts", killed)
                      if a["labels"]["alertname"].startswith("SchedwatchJob")]
    check("replicas killed: no per-role alert reached the receiver", not per_role_pages,
          per_role_pages)
    still_west = am.named("SchedwatchSourceDown", cluster="west")
    check("west's outage is still reported as its own", still_west, am.alerts(False))


if __name__ == "__main__":
    sys.exit(main())
