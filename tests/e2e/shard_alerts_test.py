#!/usr/bin/python3
"""Sharded exporters, end to end on loopback, with Debian's prometheus and
prometheus-alertmanager: one page for a dead shard, not one per role.

  shard-0..2    three schedwatch_exporter --shard K --total-shards 3 on one spec of 1,000 roles
                (one snapshot file)
  prometheus    scraping the three, evaluating the rules of schedwatch_rulegen --total-shards 3
                (--mode joined by default, or per-role: 9,000 rules), sending to
  alertmanager  with the generated snippet; a loopback receiver records what it delivers

Scenarios:
  - healthy: every role served once over the three shards, no alert but the Watchdog;
  - one shard killed: exactly one SchedwatchShardDown (its schedwatch_shard) reaches the
    receiver, and nothing else: none of the shard's role alerts, no SchedwatchExporterDown
    warning, no SchedwatchShardCoverage; the other shards' roles are still watched (a role
    alert posted with a live shard's label is delivered, one with the dead shard's is
    inhibited).
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
                             check, firing, get_json, held, post, prometheus_query, replace_file,
                             require_tools, start_alertmanager, start_prometheus, summary,
                             temporary_directory, unchanged, wait_for_peer)

ROLES = 1000
SHARDS = 3


def write_spec(path):
    lines = ["version: 1", "defaults:", "  timezone: UTC", "  start_grace: 0s",
             "  max_runtime: 10m", "  alert_for: 2s", "sources:",
             "  fleet: {type: file, path: live.yaml}", "jobs:"]
    lines += [f'  - {{role: role-{i}, source: fleet, schedule: "* * * * *", spec_version: "1", '
              f"stale_after: 10m}}" for i in range(ROLES)]
    with open(path, "w") as out:
        out.write("\n".join(lines) + "\n")


def write_live_state(path):
    lines = ["objects:"]
    lines += [f'  - {{id: live/role-{i}, role: role-{i}, schedule: "* * * * *", '
              f'spec_version: "1"}}' for i in range(ROLES)]
    lines += ["runs:"]
    lines += [f"  - {{role: role-{i}, started: -20s, finished: -15s, result: success}}"
              for i in range(ROLES)]
    replace_file(path, "\n".join(lines) + "\n")


class Alertmanager:
    def __init__(self, url):
        self.url = url

    def alerts(self, pages_only=True):
        """Active alerts; pages_only: neither inhibited nor silenced (what gets delivered)."""
        query = "?active=true" + ("&inhibited=false&silenced=false" if pages_only else "")
        return get_json(f"{self.url}/api/v2/alerts{query}")

    def labels(self, pages_only=True):
        return [a["labels"] for a in self.alerts(pages_only)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--rulegen", required=True)
    parser.add_argument("--mode", default="joined")
    args = parser.parse_args()
    require_tools("prometheus", "prometheus-alertmanager")
    started = time.time()
    with temporary_directory("schedwatch-shards-") as workdir, Receiver() as receiver, \
            Peers(show=("prometheus", "alertmanager", "shard-0")) as peers:
        run(args, workdir, receiver, peers)
    print(f"     whole run: {time.time() - started:.0f}s")
    return summary()


def run(args, workdir, receiver, peers):
    spec = os.path.join(workdir, "spec.yaml")
    write_spec(spec)
    write_live_state(os.path.join(workdir, "live.yaml"))
    rules = os.path.join(workdir, "rules")
    generated = subprocess.run(
        [args.rulegen, "--config.file", spec, "--out", rules, "--mode", args.mode,
         "--total-shards", str(SHARDS), "--watcher-stale-after", "30s",
         "--exporter-alert-for", "2s", "--watchdog-url", f"{receiver.url}/heartbeat"],
        capture_output=True, text=True)
    if not check("rulegen --total-shards 3 writes the rules", generated.returncode == 0,
                 generated.stderr):
        return
    with open(os.path.join(rules, "alertmanager.yml")) as snippet:
        am_config = alertmanager_config(yaml.safe_load(snippet), f"{receiver.url}/alerts",
                                        watchdog_repeat="1h")
    am_file = os.path.join(workdir, "alertmanager.yml")
    with open(am_file, "w") as out:
        yaml.safe_dump(am_config, out)

    for k in range(SHARDS):
        peers[f"shard-{k}"] = Exporter(args.exporter, spec, workdir, "--shard", str(k),
                                       "--total-shards", str(SHARDS), name=f"shard-{k}",
                                       confirm_delay="200ms", timeout=60)
    peers["alertmanager"] = start_alertmanager(workdir, am_file)
    instance = {k: f"127.0.0.1:{peers[f'shard-{k}'].port}" for k in range(SHARDS)}
    peers["prometheus"] = start_prometheus(workdir, "prometheus", {
        # 3 s, not 1 s: per-role mode's ~500 groups at 1 s starve Prometheus on 2 busy cores.
        "global": {"scrape_interval": "1s", "evaluation_interval": "3s"},
        "rule_files": [os.path.join(rules, "schedwatch.rules.yml"),
                       os.path.join(rules, "schedwatch-global.rules.yml")],
        "alerting": {"alertmanagers": [
            {"static_configs": [{"targets": [peers["alertmanager"].address]}]}]},
        "scrape_configs": [{"job_name": "schedwatch", "static_configs": [
            {"targets": list(instance.values())}]}]},
        "--rules.alert.resend-delay=1s")
    prometheus = peers["prometheus"].url
    am = Alertmanager(peers["alertmanager"].url)

    def value(expr):
        result = prometheus_query(prometheus, expr)
        return float(result[0]["value"][1]) if len(result) == 1 else None

    check("the three shards are up and serve ordinals 0, 1, 2", wait_for_peer(
        lambda: value('count(up{job="schedwatch"} == 1)') == SHARDS and sorted(
            r["value"][1] for r in prometheus_query(
                prometheus, "schedwatch_exporter_shard_ordinal")) == ["0", "1", "2"],
        60, "three shards up"), prometheus_query(prometheus, "up"))
    check(f"every one of the {ROLES} roles is served by exactly one shard", wait_for_peer(
        lambda: value('count(count by (role) (schedwatch_job_registered_objects == 1) == 1)')
        == ROLES and value("count(schedwatch_job_registered_objects)") == ROLES,
        60, "each role's series once"),
        (value("count(schedwatch_job_registered_objects)"),
         prometheus_query(prometheus, "schedwatch_exporter_shard_roles")))
    shard_of = {i: k for k, i in instance.items()}
    roles_of = {shard_of[r["metric"]["instance"]]: int(r["value"][1])
                for r in prometheus_query(prometheus, "schedwatch_exporter_shard_roles")}
    # A role of each shard, for the alerts posted below.
    role_of = {shard_of[r["metric"]["instance"]]: r["metric"]["role"] for r in
               prometheus_query(prometheus, "topk by (instance) (1, schedwatch_job_info)")}
    check("the shards' roles add up to the spec's", sum(roles_of.values()) == ROLES and
          value("max(schedwatch_exporter_spec_roles)") == ROLES, roles_of)

    check("healthy: the Watchdog reaches Alertmanager", wait_for_peer(
        lambda: [a for a in am.labels(False) if a["alertname"] == "Watchdog"], 60,
        "the Watchdog at Alertmanager"), am.labels(False))
    quiet = wait_for_peer(
        lambda: held(lambda: prometheus_query(prometheus, 'ALERTS{alertname!="Watchdog"}')
                      == [], 4), 60, "4s with nothing but the Watchdog pending or firing")
    check("healthy: no alert but the Watchdog", quiet is not None and
          [a for a in am.labels(False) if a["alertname"] != "Watchdog"] == [],
          (prometheus_query(prometheus, 'ALERTS{alertname!="Watchdog"}'), am.labels(False)))

    # Kill the shard with the most roles.
    dead = max(roles_of, key=roles_of.get)
    killed = time.time()
    peers[f"shard-{dead}"].stop(signal.SIGKILL)

    def delivered():
        return [a["labels"] for _, a in receiver.alerts("/alerts", killed)]

    shard_down = wait_for_peer(
        lambda: [a for a in delivered() if a["alertname"] == "SchedwatchShardDown"], 30,
        "SchedwatchShardDown at the receiver")
    check(f"shard {dead} killed ({roles_of[dead]} roles): SchedwatchShardDown reaches the "
          "receiver", shard_down, (am.labels(False), firing(prometheus)))
    # Every rule's for: is 2s: give anything else time to fire and be delivered. The Watchdog
    # is left out: per-role mode writes ~500 groups, which on 2 busy cores can take longer than
    # the Watchdog's validity (4 evaluation intervals), so it may come and go.
    settled = wait_for_peer(lambda: unchanged(
        lambda: sorted(json.dumps(a, sort_keys=True) for a in am.labels(False)
                       if a["alertname"] != "Watchdog"), 5),
        90, "5s without a change at Alertmanager")
    pages = delivered()
    distinct = {json.dumps(a, sort_keys=True) for a in pages}
    check("exactly one alert reached the receiver: SchedwatchShardDown for the dead shard",
          settled and len(distinct) == 1 and pages[0]["alertname"] == "SchedwatchShardDown"
          and pages[0].get("schedwatch_shard") == str(dead)
          and pages[0].get("severity") == "critical",
          (pages, "settled" if settled else "Alertmanager still changing", am.labels(False)))
    of_shard = [a for a in pages if a.get("schedwatch_shard") == str(dead)
                and a["alertname"] != "SchedwatchShardDown"]
    check("none of the dead shard's role alerts reached the receiver", not of_shard, of_shard)
    others = [a for a in firing(prometheus) if a["alertname"] not in
              ("Watchdog", "SchedwatchShardDown")]
    check("Prometheus fires nothing else: no role alert, no SchedwatchExporterDown warning, no "
          "SchedwatchShardCoverage", not others, others)

    # The snippet holds back any alert of the dead shard's and none of the live shards'.
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    live_shard = min(k for k in range(SHARDS) if k != dead)
    posted = time.time()
    for shard in (dead, live_shard):
        post(f"{peers['alertmanager'].url}/api/v2/alerts", json.dumps([{
            "labels": {"alertname": "SchedwatchJobMissing", "job": "schedwatch",
                       "severity": "critical", "source": "fleet", "role": role_of[shard],
                       "schedwatch_shard": str(shard)},
            "startsAt": now}]).encode(), headers={"Content-Type": "application/json"})
    live_page = wait_for_peer(
        lambda: [a for _, a in receiver.alerts("/alerts", posted)
                 if a["labels"].get("alertname") == "SchedwatchJobMissing"], 20,
        "the live shard's role alert at the receiver")
    check("a role alert of a live shard is still delivered", live_page and all(
        a["labels"]["schedwatch_shard"] == str(live_shard) for a in live_page), live_page)
    inhibited = [a for a in am.alerts(False) if a["labels"]["alertname"] ==
                 "SchedwatchJobMissing" and a["labels"]["schedwatch_shard"] == str(dead)]
    check("a role alert of the dead shard is inhibited by its SchedwatchShardDown",
          inhibited and inhibited[0]["status"]["inhibitedBy"], inhibited)


if __name__ == "__main__":
    sys.exit(main())
