#!/usr/bin/python3
"""Refresh and memory benchmark: N roles (file or crontab source, bench/gen_roles.py) served by a
schedwatch_exporter binary refreshing every 2 s. Prints the refresh times (from the exporter's
debug log), the /metrics scrape (median time, bytes, plain and gzip) and peak resident memory
(VmHWM) after a few refreshes and scrapes. Give two binaries to compare them side by side.

  bench/refresh_bench.py --exporter build/exporter/schedwatch_exporter [--exporter OTHER]
                         [--roles 10000] [--type crontab] [--refreshes 5] [--scrapes 20]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "harness"))
from schedwatch_test import free_port, proc_status_kib, scrape_times  # noqa: E402


def scrape(url, count, gzip_header):
    times, size = scrape_times(url, count, gzip=gzip_header)
    return statistics.median(times), size


def run(binary, spec, args):
    port = free_port()
    log = tempfile.TemporaryFile(mode="w+")
    process = subprocess.Popen(
        [binary, "--config.file", spec, "--web.listen-address", f"127.0.0.1:{port}",
         "--refresh.interval", "2s", "--refresh.confirm-delay", "200ms", "--log.level", "debug"],
        stderr=log, stdout=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        refreshes = []
        deadline = time.time() + 300
        while len(refreshes) < args.refreshes and time.time() < deadline:
            time.sleep(0.5)
            log.seek(0)
            refreshes = [float(m) for m in
                         re.findall(r'msg="refresh done".*?seconds=([0-9.]+)', log.read())]
            if process.poll() is not None:
                raise RuntimeError(f"{binary} exited with {process.returncode}")
        plain, plain_bytes = scrape(base + "/metrics", args.scrapes, False)
        gz, gz_bytes = scrape(base + "/metrics", args.scrapes, True)
        hwm = proc_status_kib(process.pid, "VmHWM") / 1024
        rss = proc_status_kib(process.pid, "VmRSS") / 1024
        print(f"{binary}:\n  refresh median {statistics.median(refreshes[1:] or refreshes):.3f} s "
              f"(first {refreshes[0]:.3f} s, {len(refreshes)} refreshes)\n"
              f"  /metrics plain {plain:.1f} ms median, {plain_bytes} bytes | "
              f"gzip {gz:.1f} ms median, {gz_bytes} bytes\n"
              f"  memory: peak (VmHWM) {hwm:.1f} MiB, now (VmRSS) {rss:.1f} MiB")
    finally:
        process.terminate()
        process.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", action="append", required=True)
    parser.add_argument("--roles", type=int, default=10000)
    parser.add_argument("--type", choices=["file", "crontab"], default="crontab")
    parser.add_argument("--refreshes", type=int, default=5)
    parser.add_argument("--scrapes", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="schedwatch-refresh-bench-") as workdir:
        subprocess.run([sys.executable, os.path.join(HERE, "gen_roles.py"), "--roles",
                        str(args.roles), "--type", args.type, "--out", workdir], check=True)
        print(f"{args.roles} {args.type} roles")
        for binary in args.exporter:
            run(binary, os.path.join(workdir, "spec.yaml"), args)


if __name__ == "__main__":
    main()
