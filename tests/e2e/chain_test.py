#!/usr/bin/python3
"""End to end: real Prometheus scrapes the exporter and a Pushgateway, evaluates the rules that
schedwatch_rulegen generated, and fires them into real Alertmanager, which delivers to webhook
receivers recorded by this test.

Scenarios (asserted through Prometheus's /api/v1/alerts and what the receivers got):
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
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import yaml

RESULTS = {"passed": 0, "failed": 0}
HERE = os.path.dirname(os.path.abspath(__file__))


def check(name, condition, detail=""):
    RESULTS["passed" if condition else "failed"] += 1
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"  {detail}"),
          flush=True)
    return condition


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url):
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read()


def wait_until(what, predicate, timeout):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except Exception as error:  # noqa: BLE001 -- a peer still starting
            last = error
        time.sleep(0.5)
    print(f"     (gave up waiting for {what} after {timeout}s: {last!r})")
    return None


class Receiver:
    """Records every webhook POST: (time, path, body)."""

    def __init__(self):
        self.posts = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 -- http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver.lock:
                    receiver.posts.append((time.time(), self.path, json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def alerts(self, path, since=0.0):
        with self.lock:
            return [(t, alert) for t, p, body in self.posts if p == path and t >= since
                    for alert in body.get("alerts", [])]

    def last_heartbeat(self):
        with self.lock:
            times = [t for t, p, _ in self.posts if p == "/heartbeat"]
        return max(times) if times else None


class Processes:
    def __init__(self, workdir):
        self.workdir = workdir
        self.running = {}

    def start(self, name, command):
        log = open(os.path.join(self.workdir, f"{name}.log"), "w")
        self.running[name] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)

    def stop(self, name, sig=signal.SIGTERM):
        process = self.running.pop(name, None)
        if process:
            process.send_signal(sig)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()

    def stop_all(self):
        for name in list(self.running):
            self.stop(name)

    def log(self, name):
        with open(os.path.join(self.workdir, f"{name}.log")) as log:
            return log.read()


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
    with open(path + ".tmp", "w") as out:
        out.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)


def firing(prometheus):
    data = json.loads(http_get(f"{prometheus}/api/v1/alerts"))["data"]["alerts"]
    return [alert["labels"] for alert in data if alert["state"] == "firing"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--rulegen", required=True)
    parser.add_argument("--mode", default="per-role")
    args = parser.parse_args()
    for tool in ("prometheus", "prometheus-alertmanager", "prometheus-pushgateway"):
        if not shutil.which(tool):
            check(f"{tool} is installed (scripts/install-deps.sh with-test-tools)", False)
            print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
            return 1
    started = time.time()
    workdir = tempfile.mkdtemp(prefix="schedwatch-e2e-")
    processes = Processes(workdir)
    receiver = Receiver()
    try:
        spec = os.path.join(workdir, "spec.yaml")
        shutil.copy(os.path.join(HERE, "chain", "spec.yaml"), spec)
        live = os.path.join(workdir, "live.yaml")
        aging_success = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        write_live_state(live, with_retry=True, aging_success=aging_success)

        rules_dir = os.path.join(workdir, "rules")
        generated = subprocess.run(
            [args.rulegen, "--config.file", spec, "--out", rules_dir, "--mode", args.mode,
             "--watcher-stale-after", "30s", "--exporter-alert-for", "2s",
             "--watchdog-url", f"http://127.0.0.1:{receiver.port}/heartbeat"],
            capture_output=True, text=True)
        if not check("rulegen writes the rules", generated.returncode == 0, generated.stderr):
            return 1

        # Alertmanager: the generated snippet is a complete config; point its receiver at ours and
        # shorten the timers for the test.
        with open(os.path.join(rules_dir, "alertmanager.yml")) as snippet:
            am_config = yaml.safe_load(snippet)
        for receiver_config in am_config["receivers"]:
            if receiver_config["name"] != "schedwatch-watchdog":
                receiver_config["webhook_configs"] = [
                    {"url": f"http://127.0.0.1:{receiver.port}/alerts", "send_resolved": False}]
        am_config["route"].update(group_wait="1s", group_interval="2s", repeat_interval="1h")
        for route in am_config["route"]["routes"]:
            route.update(group_wait="0s" if "Watchdog" in str(route) else "1s", group_interval="2s",
                         repeat_interval="2s" if "Watchdog" in str(route) else "1h")
        am_file = os.path.join(workdir, "alertmanager.yml")
        with open(am_file, "w") as out:
            yaml.safe_dump(am_config, out)

        ports = {name: free_port() for name in ("exporter", "prometheus", "alertmanager", "pushgateway")}
        processes.start("pushgateway", ["prometheus-pushgateway",
                                        f"--web.listen-address=127.0.0.1:{ports['pushgateway']}"])
        processes.start("exporter", [args.exporter, "--config.file", spec,
                                     "--web.listen-address", f"127.0.0.1:{ports['exporter']}",
                                     "--refresh.interval", "1s", "--refresh.confirm-delay", "200ms"])
        processes.start("alertmanager", [
            "prometheus-alertmanager", f"--config.file={am_file}",
            f"--storage.path={workdir}/am-data", f"--web.listen-address=127.0.0.1:{ports['alertmanager']}",
            "--cluster.listen-address="])
        prometheus_config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [os.path.join(rules_dir, "schedwatch.rules.yml"),
                           os.path.join(rules_dir, "schedwatch-global.rules.yml")],
            "alerting": {"alertmanagers": [
                {"static_configs": [{"targets": [f"127.0.0.1:{ports['alertmanager']}"]}]}]},
            "scrape_configs": [
                {"job_name": "schedwatch",
                 "static_configs": [{"targets": [f"127.0.0.1:{ports['exporter']}"]}]},
                {"job_name": "pushgateway", "honor_labels": True,
                 "static_configs": [{"targets": [f"127.0.0.1:{ports['pushgateway']}"]}]}]}
        prometheus_file = os.path.join(workdir, "prometheus.yml")
        with open(prometheus_file, "w") as out:
            yaml.safe_dump(prometheus_config, out)
        processes.start("prometheus", [
            "prometheus", f"--config.file={prometheus_file}", f"--storage.tsdb.path={workdir}/tsdb",
            f"--web.listen-address=127.0.0.1:{ports['prometheus']}", "--rules.alert.resend-delay=1s"])
        prometheus = f"http://127.0.0.1:{ports['prometheus']}"

        # The Pushgateway holds one success of "report", an hour old, forever.
        push = urllib.request.Request(
            f"http://127.0.0.1:{ports['pushgateway']}/metrics/job/report",
            data=f"report_last_success_timestamp_seconds {int(time.time()) - 3600}\n".encode(),
            method="PUT")
        wait_until("the pushgateway", lambda: urllib.request.urlopen(push, timeout=5).status == 200, 30)
        check("everything started", wait_until(
            "prometheus to scrape the exporter",
            lambda: json.loads(http_get(f"{prometheus}/api/v1/query?query=up%7Bjob%3D%22schedwatch%22%7D"))
            ["data"]["result"][0]["value"][1] == "1", 60), processes.log("prometheus")[-2000:])

        # The Watchdog reaches the dead-man receiver, again and again.
        beats = wait_until("two heartbeats",
                           lambda: len([t for t, p, _ in receiver.posts if p == "/heartbeat"]) >= 2, 60)
        check("the Watchdog reaches the dead-man receiver repeatedly", beats)

        # Nothing about the healthy retry and gate before the incident.
        time.sleep(4)
        roles_firing = {labels.get("role") for labels in firing(prometheus)}
        check("no alert for retry or gate while both exist", not {"retry", "gate"} & roles_firing,
              roles_firing)

        # The incident: retry disappears from the scheduler; gate keeps running.
        incident = time.time()
        write_live_state(live, with_retry=False, aging_success=aging_success)
        missing = wait_until(
            "SchedwatchJobMissing{role=retry} in Prometheus",
            lambda: [a for a in firing(prometheus)
                     if a["alertname"] == "SchedwatchJobMissing" and a.get("role") == "retry"], 60)
        check("incident: SchedwatchJobMissing fires for retry", missing)
        delivered = wait_until(
            "the missing alert at the receiver",
            lambda: [a for _, a in receiver.alerts("/alerts", incident)
                     if a["labels"]["alertname"] == "SchedwatchJobMissing"
                     and a["labels"].get("role") == "retry"], 30)
        check("incident: SchedwatchJobMissing for retry delivered to the receiver", delivered)
        gate_alerts = [a for a in firing(prometheus) if a.get("role") == "gate"]
        gate_delivered = [a for _, a in receiver.alerts("/alerts") if a["labels"].get("role") == "gate"]
        check("incident: gate fires nothing", not gate_alerts and not gate_delivered,
              (gate_alerts, gate_delivered))
        other_missing = [a for a in firing(prometheus)
                         if a["alertname"] == "SchedwatchJobMissing" and a.get("role") != "retry"]
        check("incident: the missing alert is for retry only", not other_missing, other_missing)

        # A success that grows old: aging succeeded once at the start, stale_after 20s.
        stale = wait_until(
            "SchedwatchJobSuccessStale{role=aging}",
            lambda: [a for a in firing(prometheus)
                     if a["alertname"] == "SchedwatchJobSuccessStale" and a.get("role") == "aging"], 60)
        check("a success that grows old fires SchedwatchJobSuccessStale", stale)

        # The Pushgateway's old success is present, but old: stale, not healthy.
        pushed = wait_until(
            "SchedwatchJobSuccessStale{role=report}",
            lambda: [a for a in firing(prometheus)
                     if a["alertname"] == "SchedwatchJobSuccessStale" and a.get("role") == "report"], 60)
        check("a Pushgateway holding only an old success fires SchedwatchJobSuccessStale", pushed)

        # The exporter dies: SchedwatchExporterDown, and no per-role alert reaches the receiver.
        processes.stop("exporter", signal.SIGKILL)
        killed = time.time()
        down = wait_until(
            "SchedwatchExporterDown",
            lambda: [a for a in firing(prometheus) if a["alertname"] == "SchedwatchExporterDown"], 60)
        check("exporter killed: SchedwatchExporterDown fires", down)
        down_delivered = wait_until(
            "SchedwatchExporterDown at the receiver",
            lambda: [a for _, a in receiver.alerts("/alerts", killed)
                     if a["labels"]["alertname"] == "SchedwatchExporterDown"], 30)
        check("exporter killed: SchedwatchExporterDown delivered", down_delivered)
        time.sleep(8)
        per_role_after = [a["labels"] for t, a in receiver.alerts("/alerts", killed + 3)
                          if a["labels"]["alertname"].startswith("SchedwatchJob")]
        check("exporter killed: no per-role alert reaches the receiver", not per_role_after,
              per_role_after)

        # Alertmanager stops: the heartbeats stop, and an external monitor sees them go old.
        before = time.time() - (receiver.last_heartbeat() or 0)
        processes.stop("alertmanager")
        time.sleep(8)
        after = time.time() - (receiver.last_heartbeat() or 0)
        print(f"     dead man's switch: last heartbeat {before:.1f}s old while Alertmanager ran, "
              f"{after:.1f}s old 8s after it stopped (a monitor alarms past its threshold, e.g. 3 min)")
        check("Alertmanager stopped: the heartbeat goes old", before < 4 and after > 7, (before, after))
    finally:
        processes.stop_all()
        receiver.server.shutdown()
        print(f"     whole run: {time.time() - started:.0f}s")
        if RESULTS["failed"]:
            for name in ("exporter", "prometheus", "alertmanager"):
                path = os.path.join(workdir, f"{name}.log")
                if os.path.exists(path):
                    print(f"--- {name}.log (tail)\n" + open(path).read()[-1500:])
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
