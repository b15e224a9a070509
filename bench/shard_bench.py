#!/usr/bin/python3
"""One spec of N roles (bench/gen_roles.py, crontab by default) watched by S shards, each its own
schedwatch_exporter with --shard K --total-shards S (S = 1: one exporter without them). Prints one
row per exporter:

  - ready: seconds from start to the first complete refresh (/-/ready answers 200);
  - refresh: median wall seconds (the exporter's debug log) and CPU seconds per refresh;
  - the gzip /metrics scrape right after each refresh: median time, bytes, whole answers;
  - memory: VmHWM (peak) and VmRSS (now) after all that;

then the fleet's totals. Each shard reads the whole crontab tree and log: what one shard pays
for the roles it does not watch shows as its CPU and peak beside 1/S of the unsharded one.

  bench/shard_bench.py --exporter build/exporter/schedwatch_exporter [--roles 1000000]
                       [--shards 1 --shards 10] [--together] [--refreshes 3]
                       [--interval 10s] [--source-timeout 300s] [--type crontab]
                       [--only K ...] [--workdir DIR]

Shards run one after another unless --together (then their ready and refresh times include
waiting for each other's CPU).
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
sys.path.insert(0, HERE)
from schedwatch_test import free_port, proc_status_kib  # noqa: E402
from bench_clients import scrape  # noqa: E402
from refresh_bench import cpu_seconds, ready  # noqa: E402


class Exporter:
    def __init__(self, binary, spec, args, shard, shards):
        self.port = free_port()
        self.log = tempfile.TemporaryFile(mode="w+")
        self.name = f"shard {shard}/{shards}" if shards > 1 else "unsharded"
        self.started = time.monotonic()
        self.ready_seconds = None
        self.read_up_to, self.partial, self.walls = 0, "", []
        flags = ["--shard", str(shard), "--total-shards", str(shards)] if shards > 1 else []
        self.process = subprocess.Popen(
            [binary, "--config.file", spec, "--web.listen-address", f"127.0.0.1:{self.port}",
             "--refresh.interval", args.interval, "--refresh.confirm-delay", "200ms",
             "--refresh.source-timeout", args.source_timeout, "--log.level", "debug"] + flags,
            stderr=self.log, stdout=subprocess.DEVNULL)

    def refreshes(self):
        # Only what was logged since the last look: at 1,000,000 roles the first refresh logs a
        # line per role, and reading the whole log again at each poll took more CPU than the
        # exporter did.
        self.log.seek(self.read_up_to)
        text = self.partial + self.log.read()
        end = text.rfind("\n") + 1
        self.read_up_to += len(text) - len(self.partial)
        self.partial = text[end:]
        self.walls += [float(m) for m in
                       re.findall(r'msg="refresh done".*?seconds=([0-9.]+)', text[:end])]
        return self.walls

    def check_alive(self):
        if self.process.poll() is not None:
            self.log.seek(max(0, self.read_up_to - 2000))
            raise RuntimeError(f"{self.name} exited with {self.process.returncode}: "
                               f"{self.log.read()[-2000:]}")

    def wait_ready(self, deadline):
        while not ready(self.port):
            self.check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} never became ready")
            time.sleep(0.05)
        self.ready_seconds = time.monotonic() - self.started

    def measure(self, args, deadline):
        """CPU of each refresh after the first, and a gzip scrape as soon as each is published."""
        cpu, after = [], []
        seen = len(self.refreshes())
        while len(cpu) < args.refreshes and time.monotonic() < deadline:
            before = cpu_seconds(self.process.pid)
            while len(self.refreshes()) == seen:
                self.check_alive()
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.name}: no refresh before the deadline")
                time.sleep(0.02)
            cpu.append(cpu_seconds(self.process.pid) - before)
            seen = len(self.refreshes())
            after.append(scrape(self.port, True, timeout=120))
        walls = list(self.refreshes())
        return {
            "name": self.name,
            "ready": self.ready_seconds,
            "wall": statistics.median(walls[1:] or walls),
            "cpu": statistics.median(cpu),
            "scrape_ms": statistics.median(a[0] for a in after),
            "bytes": after[-1][1],
            "whole": f"{sum(1 for a in after if a[2])}/{len(after)}",
            "peak": proc_status_kib(self.process.pid, "VmHWM") / 1024,
            "rss": proc_status_kib(self.process.pid, "VmRSS") / 1024,
        }

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=60)


def row(r):
    return (f"  {r['name']:>14} {r['ready']:8.1f} {r['wall']:8.2f} {r['cpu']:7.2f} "
            f"{r['scrape_ms']:9.1f} {r['bytes'] / 1e6:9.2f} {r['whole']:>6} {r['peak']:8.1f} "
            f"{r['rss']:8.1f}")


def run(binary, spec, args, shards):
    exporters = []
    rows = []
    deadline = time.monotonic() + args.deadline
    try:
        if args.together:
            exporters = [Exporter(binary, spec, args, k, shards) for k in range(shards)]
            for exporter in exporters:
                exporter.wait_ready(deadline)
            rows = [exporter.measure(args, deadline) for exporter in exporters]
        else:
            for k in [k for k in args.only if k < shards] if args.only else range(shards):
                exporter = Exporter(binary, spec, args, k, shards)
                exporters.append(exporter)
                exporter.wait_ready(deadline)
                rows.append(exporter.measure(args, deadline))
                exporter.stop()
    finally:
        for exporter in exporters:
            exporter.stop()
    print(f"{shards} shard(s){' (together)' if args.together and shards > 1 else ''}:")
    print(f"  {'exporter':>14} {'ready s':>8} {'wall s':>8} {'CPU s':>7} {'gzip ms':>9} "
          f"{'gzip MB':>9} {'whole':>6} {'peak MiB':>8} {'RSS MiB':>8}")
    for r in rows:
        print(row(r))
    if shards > 1:
        print(f"  {'max':>14} {max(r['ready'] for r in rows):8.1f} "
              f"{max(r['wall'] for r in rows):8.2f} {max(r['cpu'] for r in rows):7.2f} "
              f"{max(r['scrape_ms'] for r in rows):9.1f} {max(r['bytes'] for r in rows) / 1e6:9.2f} "
              f"{'':>6} {max(r['peak'] for r in rows):8.1f} {max(r['rss'] for r in rows):8.1f}")
        print(f"  {'sum':>14} {'':>8} {'':>8} {sum(r['cpu'] for r in rows):7.2f} {'':>9} "
              f"{sum(r['bytes'] for r in rows) / 1e6:9.2f} {'':>6} "
              f"{sum(r['peak'] for r in rows):8.1f} {sum(r['rss'] for r in rows):8.1f}")
    sys.stdout.flush()
    return all(r["whole"].split("/")[0] == r["whole"].split("/")[1] for r in rows)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--roles", type=int, default=1000000)
    parser.add_argument("--shards", type=int, action="append",
                        help="shard counts to run, one after another (default 1 and 10)")
    parser.add_argument("--together", action="store_true",
                        help="start a run's shards at once instead of one after another")
    parser.add_argument("--type", choices=["file", "crontab"], default="crontab")
    parser.add_argument("--refreshes", type=int, default=3)
    parser.add_argument("--interval", default="10s", help="--refresh.interval of each exporter")
    parser.add_argument("--source-timeout", default="300s",
                        help="--refresh.source-timeout: a whole 1,000,000-role read takes long")
    parser.add_argument("--deadline", type=float, default=3600,
                        help="seconds a run of S shards may take")
    parser.add_argument("--only", type=int, action="append",
                        help="run only this shard of each S (repeat; without --together): a "
                             "sample of the shards when all of them take too long")
    parser.add_argument("--workdir", help="reuse (or make) the generated roles here")
    args = parser.parse_args()
    whole = True
    with tempfile.TemporaryDirectory(prefix="schedwatch-shard-bench-") as scratch:
        workdir = args.workdir or scratch
        spec = os.path.join(workdir, "spec.yaml")
        if not os.path.exists(spec):
            subprocess.run([sys.executable, os.path.join(HERE, "gen_roles.py"), "--roles",
                            str(args.roles), "--type", args.type, "--out", workdir], check=True)
        print(f"{args.roles} {args.type} roles, {os.path.getsize(spec) / 1e6:.1f} MB spec, "
              f"--refresh.interval {args.interval}, {os.cpu_count()} CPUs")
        for shards in args.shards or [1, 10]:
            whole = run(args.exporter, spec, args, shards) and whole
    if not whole:
        print("some /metrics answers were cut short")
        sys.exit(1)


if __name__ == "__main__":
    main()
