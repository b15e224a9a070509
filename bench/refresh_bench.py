#!/usr/bin/python3
"""Refresh, scrape and memory benchmark: N roles (file or crontab source, bench/gen_roles.py)
served by a schedwatch_exporter binary. Prints, per binary:

  - ready: seconds from start to the first complete refresh (/-/ready answers 200);
  - refresh: wall seconds and the refresh thread's CPU seconds in classify and in publish (both
    from the exporter's debug line), and the whole process' CPU over an interval holding one
    refresh (which also counts the reads' threads, and varies with what else the machine runs);
  - /metrics right after each refresh, as Prometheus asks (gzip) and plain: time, bytes, and
    whether every answer was whole (its Content-Length arrived and the gzip member is complete);
  - /metrics from the same refresh afterwards (median of --scrapes);
  - memory: VmHWM (peak) and VmRSS (steady) after all that.

Give two binaries to compare them side by side. --checkpoints gives every role a progress file
(a checkpoint its job writes) and --records N a runs_dir with N schedwatch_run records, for
roles that have none: files each refresh reads besides the source.

  bench/refresh_bench.py --exporter build/exporter/schedwatch_exporter [--exporter OTHER]
                         [--roles 10000] [--type crontab] [--refreshes 5] [--scrapes 20]
                         [--interval 2s] [--source-timeout 60s] [--flag=--shard=0 ...]
                         [--accept openmetrics] [--checkpoints] [--records 3]
"""
import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "harness"))
from schedwatch_test import free_port, proc_status_kib  # noqa: E402
from bench_clients import scrape  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


def ready(port):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", "/-/ready")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


# What Prometheus 2.42 sends: OpenMetrics first.
OPENMETRICS_ACCEPT = (b"Accept: application/openmetrics-text;version=1.0.0,application/openmetrics-"
                      b"text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n")


def run(binary, spec, args):
    accept = OPENMETRICS_ACCEPT if args.accept == "openmetrics" else b""
    port = free_port()
    log = tempfile.TemporaryFile(mode="w+")
    started = time.monotonic()
    process = subprocess.Popen(
        [binary, "--config.file", spec, "--web.listen-address", f"127.0.0.1:{port}",
         "--refresh.interval", args.interval, "--refresh.confirm-delay", "200ms",
         "--log.level", "debug"]
        + (["--refresh.source-timeout", args.source_timeout] if args.source_timeout else [])
        + args.flag,
        stderr=log, stdout=subprocess.DEVNULL)

    def refreshes():
        """The exporter's 'refresh done' debug lines, each as {field: seconds}."""
        log.seek(0)
        return [{key: float(value) for key, value in re.findall(r' ([a-z_]+)=([0-9.]+)', line)}
                for line in log.read().splitlines() if 'msg="refresh done"' in line]

    try:
        deadline = time.monotonic() + 600
        while not ready(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{binary} never became ready (exit {process.returncode})")
            time.sleep(0.05)
        ready_seconds = time.monotonic() - started
        after_gzip, after_plain = [], []
        cpu = []
        seen = len(refreshes())
        while seen < args.refreshes and time.monotonic() < deadline:
            cpu_before = cpu_seconds(process.pid)
            while len(refreshes()) == seen:  # the next refresh is published: scrape at once
                if process.poll() is not None:
                    raise RuntimeError(f"{binary} exited with {process.returncode}")
                time.sleep(0.02)
            cpu.append(cpu_seconds(process.pid) - cpu_before)
            seen = len(refreshes())
            after_gzip.append(scrape(port, True, headers=accept))
            after_plain.append(scrape(port, False, headers=accept))
        cached_gzip = [scrape(port, True, headers=accept) for _ in range(args.scrapes)]
        cached_plain = [scrape(port, False, headers=accept)
                        for _ in range(max(1, args.scrapes // 4))]
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request("GET", "/metrics")
        reads = re.findall(r'schedwatch_source_sync_duration_seconds\{source="([^"]+)"[^}]*\} (\S+)',
                           connection.getresponse().read().decode())
        connection.close()
        hwm = proc_status_kib(process.pid, "VmHWM") / 1024
        rss = proc_status_kib(process.pid, "VmRSS") / 1024
        done = refreshes()
        walls = [refresh["seconds"] for refresh in done]
        # The first refresh finds every role new; the rest are the quiet refreshes asked about.
        quiet = done[1:] or done
        classify = statistics.median(refresh["classify_cpu_seconds"] for refresh in quiet)
        publish = statistics.median(refresh["publish_cpu_seconds"] for refresh in quiet)
        log.seek(0)
        failed_reads = log.read().count('msg="list failed"')

        def line(name, answers):
            whole = sum(1 for answer in answers if answer[2])
            return (f"  /metrics {name}: {statistics.median(a[0] for a in answers):.1f} ms median "
                    f"(max {max(a[0] for a in answers):.1f}), {answers[-1][1]} bytes, "
                    f"{whole}/{len(answers)} whole")

        print(f"{binary}:\n  ready after {ready_seconds:.2f} s\n"
              f"  refresh median {statistics.median(walls[1:] or walls):.3f} s wall "
              f"(first {walls[0]:.3f} s, {len(walls)} refreshes), "
              f"{failed_reads} failed reads\n"
              f"  refresh thread CPU median: classify {classify:.3f} s + publish {publish:.3f} s"
              f" = {classify + publish:.3f} s; whole process {statistics.median(cpu):.2f} s CPU "
              f"(interval containing one refresh)")
        print("  last read: " + ", ".join(f"{name} {float(seconds):.3f} s" for name, seconds in reads))
        print(line("gzip right after a refresh", after_gzip))
        print(line("plain right after a refresh", after_plain))
        print(line("gzip from cache", cached_gzip))
        print(line("plain from cache", cached_plain))
        print(f"  memory: peak (VmHWM) {hwm:.1f} MiB, now (VmRSS) {rss:.1f} MiB")
        return all(answer[2] for answer in after_gzip + after_plain + cached_gzip + cached_plain)
    finally:
        process.terminate()
        process.wait(timeout=30)


def add_job_files(workdir, checkpoints, records):
    """Gives each job of spec.yaml without them a checkpoint file and a runs_dir of `records`
    finished runs, an hour apart, the latest a minute ago."""
    spec = os.path.join(workdir, "spec.yaml")
    with open(spec) as f:
        lines = f.read().splitlines()
    now = time.time()
    out = []
    for line in lines:
        match = re.match(r"  - \{role: ([^,]+),", line)
        if not match or "progress:" in line or "runs_dir:" in line:
            out.append(line)
            continue
        role, extra = match.group(1), ""
        if checkpoints:
            checkpoint = os.path.join(workdir, "checkpoints", role)
            os.makedirs(os.path.dirname(checkpoint), exist_ok=True)
            with open(checkpoint, "w") as f:
                f.write(f"{int(now) - 300}\n")
            extra += f", progress: {{file: {checkpoint}, stale_after: 1h}}"
        if records:
            runs = os.path.join(workdir, "runs", role)
            os.makedirs(runs, exist_ok=True)
            for run in range(records):
                start = round(now - 60 - 30 - run * 3600, 6)
                pid = 10000 + run
                record = {"format": 1, "role": role, "state": "finished", "host": "bench",
                          "pid": pid, "start": start, "end": start + 30,
                          "duration_seconds": 30.0, "exit_code": 0, "guard": "flock"}
                with open(os.path.join(runs, f"{int(start * 1e6):020d}-{pid}.json"), "w") as f:
                    f.write(json.dumps(record) + "\n")
            extra += f", runs_dir: {os.path.join(workdir, 'runs')}"
        out.append(line[:-1] + extra + "}")
    with open(spec, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", action="append", required=True)
    parser.add_argument("--roles", type=int, default=10000)
    parser.add_argument("--type", choices=["file", "crontab"], default="crontab")
    parser.add_argument("--refreshes", type=int, default=5)
    parser.add_argument("--scrapes", type=int, default=20)
    parser.add_argument("--interval", default="2s", help="--refresh.interval of the exporter")
    parser.add_argument("--accept", choices=["text", "openmetrics"], default="text",
                        help="openmetrics: scrape with Prometheus 2.42's Accept header")
    parser.add_argument("--source-timeout",
                        help="--refresh.source-timeout of the exporter: on a loaded machine the "
                             "default 10s can cut the read of 100,000 roles short (roles unknown)")
    parser.add_argument("--flag", action="append", default=[],
                        help="a further flag of every exporter, e.g. --flag=--shard=0 "
                             "--flag=--total-shards=10 (one shard of ten)")
    parser.add_argument("--checkpoints", action="store_true",
                        help="give each role a progress file (its job's checkpoint)")
    parser.add_argument("--records", type=int, default=0,
                        help="give each role a runs_dir with this many schedwatch_run records")
    args = parser.parse_args()
    whole = True
    with tempfile.TemporaryDirectory(prefix="schedwatch-refresh-bench-") as workdir:
        subprocess.run([sys.executable, os.path.join(HERE, "gen_roles.py"), "--roles",
                        str(args.roles), "--type", args.type, "--out", workdir], check=True)
        if args.checkpoints or args.records:
            add_job_files(workdir, args.checkpoints, args.records)
        print(f"{args.roles} {args.type} roles"
              f"{', each with a checkpoint' if args.checkpoints else ''}"
              f"{f', each with {args.records} run records' if args.records else ''}"
              f", --refresh.interval {args.interval}")
        for binary in args.exporter:
            whole = run(binary, os.path.join(workdir, "spec.yaml"), args) and whole
    if not whole:
        print("some /metrics answers were cut short")
        sys.exit(1)


if __name__ == "__main__":
    main()
