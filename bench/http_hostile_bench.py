#!/usr/bin/python3
"""/metrics latency of schedwatch_exporter under hostile clients: with no other client, with
1,000 idle TCP connections held open, and during a storm of concurrent POST /-/reload while a
refresh waits for a source that never answers. Prints median and max per case and VmRSS.

Then the attacks of one client address (127.0.0.1) while another (127.0.0.2: loopback is a /8)
scrapes: 4,200 idle connections, 4,500 connections that trickle a header line every 5 s, and
slowhttptest's slowloris (-H), slow body (-B) and slow read (-X) with 4,500 connections each.
Prints the other address's scrape latency during each attack and the exporter's peak RSS.

  bench/http_hostile_bench.py --exporter build/exporter/schedwatch_exporter
"""
import argparse
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "harness"))
from schedwatch_test import Exporter, curl_timed, post, temporary_directory  # noqa: E402
from bench_clients import SLOW_MODES, open_connections, slowhttptest_command  # noqa: E402


def latency(url, *options):
    return curl_timed(url, *options, max_time=30)


def summary(name, samples):
    seconds = [s for _, s in samples]
    failed = sum(1 for code, _ in samples if code != 200)
    print(f"{name:<34} n={len(samples):<4} median {statistics.median(seconds) * 1000:8.2f} ms"
          f"  max {max(seconds) * 1000:8.2f} ms  non-200 {failed}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--reloads", type=int, default=20)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--attack-connections", type=int, default=4500)
    parser.add_argument("--attack-seconds", type=int, default=30)
    parser.add_argument("--skip-storm", action="store_true", help="only the attacks")
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with temporary_directory("schedwatch-hostile-bench-") as workdir:
        if not args.skip_storm:
            bench(args, workdir)
        attacks(args, workdir)


def attacks(args, workdir):
    with open(os.path.join(workdir, "live.yaml"), "w") as out:
        out.write("objects: [{id: g, role: gate, schedule: '*/5 * * * *', spec_version: '1'}]\n")
    spec = os.path.join(workdir, "plain.yaml")
    with open(spec, "w") as out:
        out.write("version: 1\nsources: {local: {type: file, path: live.yaml}}\njobs:\n"
                  "  - {role: gate, source: local, schedule: '*/5 * * * *', spec_version: '1'}\n")
    exporter = Exporter(args.exporter, spec, workdir, name="attacks", interval="5s",
                        listen=("127.0.0.1:0",))
    url = exporter.base + "/metrics"
    other = ("--interface", "127.0.0.2")
    count = args.attack_connections
    try:
        summary("quiet, from 127.0.0.2", [latency(url, *other) for _ in range(args.samples)])

        def during(name, started_at):
            samples = []
            while time.time() - started_at < args.attack_seconds:
                samples.append(latency(url, *other))
                time.sleep(0.2)
            summary(name, samples)

        held = open_connections(exporter.port, count, b"")
        print(f"  ({len(held)} of {count} idle connections opened)")
        during(f"{count} idle from 127.0.0.1", time.time())
        for connection in held:
            connection.close()

        held = open_connections(exporter.port, count, b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        started = time.time()
        samples = []
        while time.time() - started < args.attack_seconds:
            tick = time.time()
            for connection in held:
                try:
                    connection.sendall(b"X-Trickle: 1\r\n")
                except OSError:
                    pass
            while time.time() - tick < 5:
                samples.append(latency(url, *other))
                time.sleep(0.2)
        summary(f"{count} trickling a header / 5 s", samples)
        for connection in held:
            connection.close()

        if not shutil.which("slowhttptest"):
            print("slowhttptest is not installed (apt-get install slowhttptest): skipped its "
                  "attacks")
        else:
            for mode, name in SLOW_MODES:
                command = slowhttptest_command(mode, count, args.attack_seconds + 10, url)
                attacker = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL, start_new_session=True)
                try:
                    time.sleep(5)  # its connections ramp up at 1,000/s
                    during(f"slowhttptest {name} ({count})", time.time())
                finally:
                    os.killpg(attacker.pid, signal.SIGTERM)
                    attacker.wait()
        print(f"peak RSS (VmHWM) {exporter.rss_kib('VmHWM')} KiB, "
              f"VmRSS now {exporter.rss_kib()} KiB")
    finally:
        exporter.kill()


def bench(args, workdir):
    blackhole = socket.socket()  # accepts connections, never answers
    blackhole.bind(("127.0.0.1", 0))
    blackhole.listen(1024)
    with open(os.path.join(workdir, "live.yaml"), "w") as out:
        out.write("objects: [{id: g, role: gate, schedule: '*/5 * * * *', spec_version: '1'}]\n")
    spec = os.path.join(workdir, "spec.yaml")
    with open(spec, "w") as out:
        out.write(f"""version: 1
sources:
  local: {{type: file, path: live.yaml}}
  hung: {{type: github_actions, repository: acme/hung,
          api_url: "http://127.0.0.1:{blackhole.getsockname()[1]}", timeout: 60s}}
jobs:
  - {{role: gate, source: local, schedule: "*/5 * * * *", spec_version: "1"}}
  - {{role: nightly, source: hung, workflow: .github/workflows/n.yml, schedule: "0 3 * * *",
     spec_version: "1"}}
""")
    # A refresh waits 60 s for the hung source: no readiness to wait for, and SIGKILL to stop.
    exporter = Exporter(args.exporter, spec, workdir, "--web.enable-lifecycle", interval=None,
                        confirm_delay=None, timeout=15)
    port, base = exporter.port, exporter.base
    idle = []
    try:
        url = base + "/metrics"
        rss = [("start", exporter.rss_kib())]
        summary("no other client", [latency(url) for _ in range(args.samples)])
        for i in range(args.idle):
            connection = socket.create_connection(("127.0.0.1", port))
            if i % 2:
                connection.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            idle.append(connection)
        summary(f"{args.idle} idle connections", [latency(url) for _ in range(args.samples)])
        rss.append((f"{args.idle} idle", exporter.rss_kib()))

        def reload():
            try:
                post(base + "/-/reload", timeout=120)
            except OSError:  # a failed reload is part of the figure
                pass

        threads = [threading.Thread(target=reload) for _ in range(args.reloads)]
        started = time.time()
        for thread in threads:
            thread.start()
        during = []
        while any(t.is_alive() for t in threads) or len(during) < args.samples:
            during.append(latency(url))
        for thread in threads:
            thread.join()
        summary(f"{args.reloads} reloads + {args.idle} idle", during)
        print(f"reload storm answered in {time.time() - started:.2f} s")
        rss.append(("after storm", exporter.rss_kib()))
        print("VmRSS: " + ", ".join(f"{name} {kib} KiB" for name, kib in rss))
    finally:
        for connection in idle:
            connection.close()
        exporter.kill()
        blackhole.close()


if __name__ == "__main__":
    main()
