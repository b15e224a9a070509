#!/usr/bin/python3
"""End to end: real Prometheus scrapes the exporter and a Pushgateway, evaluates the rules that
schedwatch_rulegen generated, and fires them into real Alertmanager, which delivers to webhook
receivers recorded by this test.

Scenarios (asserted through Prometheus's /api/v1/alerts and what the receivers got):
  - rulegen --route-by team gives each team of the spec a receiver; retry's alert, labelled
    team=payments, reaches payments' receiver and no other;
  - the Watchdog reaches the dead-man receiver repeatedly;
  - the incident: retry removed from the live list while gate keeps running -> SchedwatchJobMissing
    for retry only, delivered; nothing for gate;
  - a success that grows old -> SchedwatchJobSuccessStale;
  - a Pushgateway holding only an old success -> SchedwatchJobSuccessStale for the pushed role;
  - the exporter killed -> SchedwatchExporterDown, and no per-role alert reaches the receiver;
  - Alertmanager stopped -> the dead-man receiver's last heartbeat goes old, as an external
    monitor would see it.
Prints 'N passed, N failed'.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from datetime import datetime, timezone

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from schedwatch_test import (Exporter, Peers, Receiver, alertmanager_config,  # noqa: E402
                             check, firing, prometheus_query, replace_file, require_tools,
                             start_alertmanager, start_prometheus, start_pushgateway, summary,
                             temporary_directory, wait_for_peer)


def write_live_state(path, with_retry, aging_success):
    objects = [("gate", "3"), ("aging", "1"), ("report", "2")] + ([("retry", "7")] if with_retry else [])
    lines = ["objects:"]
    lines += [f'  - {{id: live/{role}, role: {role}, schedule: "* * * * *", spec_version: "{version}"}}'
              for role, version in objects]
    lines += ["runs:",
              "  - {role: retry, started: -20s, finished: -15s, result: success}",
              "  - {role: gate, started: -20s, finished: -15s, result: success}",
              f"  - {{role: aging, started: {aging_success}, finished: {aging_success}, result: success}}",
              "  - {role: report, started: -20s, result: running}"]
    replace_file(path, "\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--rulegen", required=True)
    parser.add_argument("--mode", default="per-role")
    args = parser.parse_args()
    require_tools("prometheus", "prometheus-alertmanager", "prometheus-pushgateway")
    started = time.time()
    with temporary_directory("schedwatch-e2e-") as workdir, Receiver() as receiver, \
            Peers(show=("exporter", "prometheus", "alertmanager")) as peers:
        run(args, workdir, receiver, peers)
    print(f"     whole run: {time.time() - started:.0f}s")
    return summary()


def run(args, workdir, receiver, peers):
    spec = os.path.join(workdir, "spec.yaml")
    shutil.copy(os.path.join(HERE, "chain", "spec.yaml"), spec)
    live = os.path.join(workdir, "live.yaml")
    aging_success = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    write_live_state(live, with_retry=True, aging_success=aging_success)

    rules_dir = os.path.join(workdir, "rules")
    generated = subprocess.run(
        [args.rulegen, "--config.file", spec, "--out", rules_dir, "--mode", args.mode,
         "--watcher-stale-after", "30s", "--exporter-alert-for", "2s",
         "--watchdog-url", f"{receiver.url}/heartbeat", "--route-by", "team"],
        capture_output=True, text=True)
    if not check("rulegen writes the rules", generated.returncode == 0, generated.stderr):
        return

    # Alertmanager: the generated snippet is a complete config; point its receiver at ours and
    # shorten the timers for the test.
    with open(os.path.join(rules_dir, "alertmanager.yml")) as snippet:
        am_config = alertmanager_config(yaml.safe_load(snippet), f"{receiver.url}/alerts",
                                        watchdog_repeat="2s")
    # --route-by team: each team's placeholder receiver gets a webhook path of its own.
    team_receivers = [r for r in am_config["receivers"] if r["name"].startswith("schedwatch-team-")]
    check("--route-by team: a receiver per team in the spec",
          sorted(r["name"] for r in team_receivers)
          == ["schedwatch-team-payments", "schedwatch-team-platform"], am_config["receivers"])
    for team_receiver in team_receivers:
        team = team_receiver["name"][len("schedwatch-team-"):]
        team_receiver["webhook_configs"] = [{"url": f"{receiver.url}/team/{team}",
                                             "send_resolved": False}]
    am_file = os.path.join(workdir, "alertmanager.yml")
    with open(am_file, "w") as out:
        yaml.safe_dump(am_config, out)

    peers["pushgateway"] = start_pushgateway(workdir)
    peers["exporter"] = Exporter(args.exporter, spec, workdir, confirm_delay="200ms")
    peers["alertmanager"] = start_alertmanager(workdir, am_file)
    peers["prometheus"] = start_prometheus(workdir, "prometheus", {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [os.path.join(rules_dir, "schedwatch.rules.yml"),
                       os.path.join(rules_dir, "schedwatch-global.rules.yml")],
        "alerting": {"alertmanagers": [
            {"static_configs": [{"targets": [peers["alertmanager"].address]}]}]},
        "scrape_configs": [
            {"job_name": "schedwatch",
             "static_configs": [{"targets": [f"127.0.0.1:{peers['exporter'].port}"]}]},
            {"job_name": "pushgateway", "honor_labels": True,
             "static_configs": [{"targets": [peers["pushgateway"].address]}]}]},
        "--rules.alert.resend-delay=1s")
    prometheus = peers["prometheus"].url

    # The Pushgateway holds one success of "report", an hour old, forever.
    push = urllib.request.Request(
        f"{peers['pushgateway'].url}/metrics/job/report",
        data=f"report_last_success_timestamp_seconds {int(time.time()) - 3600}\n".encode(),
        method="PUT")
    wait_for_peer(lambda: urllib.request.urlopen(push, timeout=5).status == 200, 30,
                  "the pushgateway")
    check("everything started", wait_for_peer(
        lambda: prometheus_query(prometheus, 'up{job="schedwatch"}')[0]["value"][1] == "1",
        60, "prometheus to scrape the exporter"), peers["prometheus"].logs()[-2000:])

    # The Watchdog reaches the dead-man receiver, again and again.
    beats = wait_for_peer(lambda: len(receiver.heartbeats()) >= 2, 60, "two heartbeats")
    check("the Watchdog reaches the dead-man receiver repeatedly", beats)

    # Nothing about the healthy retry and gate before the incident.
    time.sleep(4)
    roles_firing = {labels.get("role") for labels in firing(prometheus)}
    check("no alert for retry or gate while both exist", not {"retry", "gate"} & roles_firing,
          roles_firing)

    # The incident: retry disappears from the scheduler; gate keeps running.
    incident = time.time()
    write_live_state(live, with_retry=False, aging_success=aging_success)
    missing = wait_for_peer(
        lambda: [a for a in firing(prometheus)
                 if a["alertname"] == "SchedwatchJobMissing" and a.get("role") == "retry"],
                     60, "SchedwatchJobMissing{role=retry} in Prometheus")
    check("incident: SchedwatchJobMissing fires for retry", missing)
    check("incident: the alert carries the spec's label team=payments",
          missing and all(a.get("team") == "payments" for a in missing), missing)
    delivered = wait_for_peer(
        lambda: [a for _, a in receiver.alerts("/team/payments", incident)
                 if a["labels"]["alertname"] == "SchedwatchJobMissing"
                 and a["labels"].get("role") == "retry"], 30, "the missing alert at the receiver")
    check("incident: SchedwatchJobMissing for retry delivered to team payments' receiver",
          delivered)
    elsewhere = [(p, a["labels"]) for p in ("/alerts", "/team/platform")
                 for _, a in receiver.alerts(p) if a["labels"].get("role") == "retry"]
    check("incident: retry's alert reaches no other receiver", not elsewhere, elsewhere)
    gate_alerts = [a for a in firing(prometheus) if a.get("role") == "gate"]
    gate_delivered = [a for p in ("/alerts", "/team/platform", "/team/payments")
                      for _, a in receiver.alerts(p) if a["labels"].get("role") == "gate"]
    check("incident: gate fires nothing", not gate_alerts and not gate_delivered,
          (gate_alerts, gate_delivered))
    other_missing = [a for a in firing(prometheus)
                     if a["alertname"] == "SchedwatchJobMissing" and a.get("role") != "retry"]
    check("incident: the missing alert is for retry only", not other_missing, other_missing)

    # A success that grows old: aging succeeded once at the start, stale_after 20s.
    stale = wait_for_peer(
        lambda: [a for a in firing(prometheus)
                 if a["alertname"] == "SchedwatchJobSuccessStale" and a.get("role") == "aging"],
                     60, "SchedwatchJobSuccessStale{role=aging}")
    check("a success that grows old fires SchedwatchJobSuccessStale", stale)

    # The Pushgateway's old success is present, but old: stale, not healthy.
    pushed = wait_for_peer(
        lambda: [a for a in firing(prometheus)
                 if a["alertname"] == "SchedwatchJobSuccessStale" and a.get("role") == "report"],
                     60, "SchedwatchJobSuccessStale{role=report}")
    check("a Pushgateway holding only an old success fires SchedwatchJobSuccessStale", pushed)

    # The exporter dies: SchedwatchExporterDown, and no per-role alert reaches the receiver.
    peers["exporter"].stop(signal.SIGKILL)
    killed = time.time()
    down = wait_for_peer(
        lambda: [a for a in firing(prometheus) if a["alertname"] == "SchedwatchExporterDown"],
            60, "SchedwatchExporterDown")
    check("exporter killed: SchedwatchExporterDown fires", down)
    down_delivered = wait_for_peer(
        lambda: [a for _, a in receiver.alerts("/alerts", killed)
                 if a["labels"]["alertname"] == "SchedwatchExporterDown"],
                     30, "SchedwatchExporterDown at the receiver")
    check("exporter killed: SchedwatchExporterDown delivered", down_delivered)
    time.sleep(8)
    per_role_after = [a["labels"] for p in ("/alerts", "/team/payments", "/team/platform")
                      for t, a in receiver.alerts(p, killed + 3)
                      if a["labels"]["alertname"].startswith("SchedwatchJob")]
    check("exporter killed: no per-role alert reaches the receiver", not per_role_after,
          per_role_after)

    # Alertmanager stops: the heartbeats stop, and an external monitor sees them go old.
    before = time.time() - (receiver.last_heartbeat() or 0)
    peers["alertmanager"].stop()
    time.sleep(8)
    after = time.time() - (receiver.last_heartbeat() or 0)
    print(f"     dead man's switch: last heartbeat {before:.1f}s old while Alertmanager ran, "
          f"{after:.1f}s old 8s after it stopped (a monitor alarms past its threshold, e.g. 3 min)")
    check("Alertmanager stopped: the heartbeat goes old", before < 4 and after > 7, (before, after))


if __name__ == "__main__":
    sys.exit(main())
