#!/usr/bin/python3
"""Memory of schedwatch_exporter serving the status JSON and page at 10,000 roles (about
17.5 MiB each) to many clients at once: 50 concurrent GET /api/v1/status read at full speed,
then 150 slow readers (a few KiB a second, from several loopback addresses) holding the JSON and
the page while 50 more concurrent requests come, across refreshes. Prints peak RSS (VmHWM)
against the example Deployment's 256 MiB limit, the answers by status, and /metrics latency.
With --filters, only 10 concurrent `/?limit=all` with 10 different filters that all match every
role: peak RSS, answer times and RSS after (issue #34 item 6).

  bench/page_memory_bench.py --exporter build/exporter/schedwatch_exporter
  bench/page_memory_bench.py --exporter build/exporter/schedwatch_exporter --roles 100000 \
      --filters --interval 1h [--fleet]
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "harness"))
from schedwatch_test import Exporter, curl_timed, temporary_directory, wait_for  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_clients import crowd, fetch, tally  # noqa: E402


def write_spec(workdir, roles):
    with open(os.path.join(workdir, "live.yaml"), "w") as out:
        out.write("objects:\n")
        for i in range(roles):
            out.write(f"  - {{id: o{i}, role: r{i}, schedule: '*/5 * * * *', spec_version: '1'}}\n")
    spec = os.path.join(workdir, "spec.yaml")
    with open(spec, "w") as out:
        out.write("version: 1\nsources:\n  big: {type: file, path: live.yaml}\njobs:\n")
        for i in range(roles):
            out.write(f"  - {{role: r{i}, source: big, schedule: '*/5 * * * *', "
                      f"spec_version: '1'}}\n")
    return spec


# Different filters that all match every role r<i> of write_spec's spec.
EVERY_ROLE = ["/?limit=all&q=r", "/?limit=all&q=R", "/?limit=all&source=big",
              "/?limit=all&q=r&source=big", "/?limit=all&q=R&source=big", "/?limit=999999&q=r",
              "/?limit=999999&q=R", "/?limit=999999&source=big", "/?limit=999999",
              "/?limit=500000&q=r"]
# The same for bench/gen_roles.py's fleet (--fleet), whose roles are job-01234.
EVERY_FLEET_ROLE = [f"/?limit=all&q={q}"
                    for q in ["job", "JOB", "Job", "jOb", "jo", "ob", "j", "o", "b", "job-"]]


def filters_case(exporter, args):
    idle, idle_peak = exporter.rss_kib(), exporter.rss_kib("VmHWM")
    statuses, sizes = [], []
    threads = [threading.Thread(target=fetch, args=(exporter.port, path, "127.0.0.1", statuses),
                                kwargs={"sizes": sizes})
               for path in (EVERY_FLEET_ROLE if args.fleet else EVERY_ROLE)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = sorted(s for _, s in sizes)
    print(f"{args.roles} roles, 10 concurrent /?limit=all with different filters matching every "
          f"role: {tally(statuses)}; answers {max(b for b, _ in sizes) / 2**20:.0f} MiB, "
          f"{seconds[0]:.1f}-{seconds[-1]:.1f} s")
    print(f"before: VmRSS {idle / 1024:.0f} MiB, VmHWM {idle_peak / 1024:.0f} MiB; peak (VmHWM) "
          f"{exporter.rss_kib('VmHWM') / 1024:.0f} MiB, VmRSS {exporter.rss_kib() / 1024:.0f} MiB "
          f"after")
    print("pages: " + " ".join(line.split("{")[1] for line in exporter.metrics().splitlines()
                               if line.startswith("schedwatch_exporter_status_pages_total{")))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--roles", type=int, default=10000)
    parser.add_argument("--concurrent", type=int, default=50)
    parser.add_argument("--slow", type=int, default=150)
    parser.add_argument("--slow-seconds", type=int, default=30)
    parser.add_argument("--interval", default="10s", help="refresh interval during the test")
    parser.add_argument("--filters", action="store_true",
                        help="only 10 concurrent different filters that match every role")
    parser.add_argument("--fleet", action="store_true",
                        help="bench/gen_roles.py's mix of conditions, not identical roles")
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    sources = [f"127.0.0.{i}" for i in range(2, 10)]
    with temporary_directory("schedwatch-page-bench-") as workdir:
        if args.fleet:
            subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "gen_roles.py"),
                            "--roles", str(args.roles), "--out", workdir], check=True)
            spec = os.path.join(workdir, "spec.yaml")
        else:
            spec = write_spec(workdir, args.roles)
        exporter = Exporter(args.exporter, spec, workdir,
                            name="pages", interval=args.interval, timeout=120, wait="ready")
        port = exporter.port
        try:
            if args.filters:
                return filters_case(exporter, args)
            size = len(exporter.get("/api/v1/status", timeout=120).body)
            idle = exporter.rss_kib()
            print(f"{args.roles} roles: /api/v1/status is {size / 2**20:.1f} MiB; "
                  f"VmRSS {idle / 1024:.0f} MiB after one request")
            threads, statuses = crowd(port, "/api/v1/status", args.concurrent, sources)
            for thread in threads:
                thread.join()
            print(f"{args.concurrent} concurrent /api/v1/status: {tally(statuses)}; "
                  f"VmHWM {exporter.rss_kib('VmHWM') / 1024:.0f} MiB")

            slow_threads, slow_statuses = [], []
            for path in ("/api/v1/status", "/?limit=all"):
                threads, statuses = crowd(port, path, args.slow // 2, sources,
                                          bytes_per_second=4096, seconds=args.slow_seconds)
                slow_threads += threads
                slow_statuses.append(statuses)
            time.sleep(2)
            threads, statuses = crowd(port, "/api/v1/status", args.concurrent, sources)
            scrapes = []
            while any(t.is_alive() for t in slow_threads):
                scrapes.append(curl_timed(exporter.base + "/metrics", "--interface", "127.0.0.20",
                                          max_time=30))
                time.sleep(0.5)
            for thread in threads + slow_threads:
                thread.join()
            print(f"{args.slow} slow readers ({args.slow_seconds} s, 4 KiB/s) of the JSON and "
                  f"?limit=all: {tally(slow_statuses[0] + slow_statuses[1])}; "
                  f"{args.concurrent} more concurrent meanwhile: {tally(statuses)}")
            seconds = [s for _, s in scrapes]
            print(f"/metrics meanwhile: n={len(scrapes)} median {statistics.median(seconds):.3f} s "
                  f"max {max(seconds):.3f} s, non-200 {sum(c != 200 for c, _ in scrapes)}")
            peak = exporter.rss_kib("VmHWM")
            print(f"peak RSS (VmHWM) {peak / 1024:.0f} MiB of the Deployment's 256 MiB limit; "
                  f"VmRSS now {exporter.rss_kib() / 1024:.0f} MiB")
        finally:
            exporter.kill()


if __name__ == "__main__":
    main()
