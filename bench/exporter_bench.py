#!/usr/bin/python3
"""Exporter scrape benchmark (issue 3): 10,000 roles served by schedwatch_exporter, compared with a
plain prometheus-cpp registry and node_exporter's textfile collector serving the same series.

Prints scrape times (median, p90) measured with curl, resident memory, the ratios, and 100
concurrent gzip scrapers for 30 s (errors, memory over time). Stops everything it starts.

  bench/exporter_bench.py --build build [--roles 10000] [--concurrent-seconds 30]
"""
import argparse
import gzip
import http.client
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "harness"))
from schedwatch_test import Exporter, Peer, free_port, temporary_directory  # noqa: E402
from schedwatch_test import scrape_times as harness_scrape_times  # noqa: E402


def rss_mib(process):
    return process.rss_kib() / 1024, process.rss_kib("VmHWM") / 1024


def scrape_times(url, count, gzip_header=False):
    times, size = harness_scrape_times(url, count, gzip=gzip_header)
    return statistics.median(times), times[int(len(times) * 0.9) - 1], size


def report(name, url, process, count):
    median, p90, size = scrape_times(url, count)
    gz_median, gz_p90, gz_size = scrape_times(url, count, gzip_header=True)
    rss, hwm = rss_mib(process)
    print(f"{name:28s} plain {median:7.1f} ms median {p90:7.1f} ms p90 ({size / 1e6:.1f} MB) | "
          f"gzip {gz_median:7.1f} ms median ({gz_size / 1e6:.2f} MB) | RSS {rss:.0f} MiB "
          f"(peak {hwm:.0f})")
    return median, gz_median, rss


def concurrent_scrapers(port, process, seconds, clients=100):
    errors, done = [0], [0]
    stop = time.time() + seconds
    lock = threading.Lock()

    def client():
        while time.time() < stop:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                connection.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
                response = connection.getresponse()
                body = response.read()
                ok = response.status == 200 and gzip.decompress(body).startswith(b"# HELP")
                connection.close()
            except Exception:  # noqa: BLE001 -- any failure counts as an error
                ok = False
            with lock:
                done[0] += 1
                errors[0] += 0 if ok else 1

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    samples = [rss_mib(process)[0]]
    while time.time() < stop:
        time.sleep(1)
        samples.append(rss_mib(process)[0])
    for thread in threads:
        thread.join()
    print(f"{clients} concurrent gzip scrapers for {seconds} s: {done[0]} scrapes, {errors[0]} errors, "
          f"RSS min {min(samples):.0f} / max {max(samples):.0f} / last {samples[-1]:.0f} MiB")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--roles", type=int, default=10000)
    parser.add_argument("--scrapes", type=int, default=30)
    parser.add_argument("--concurrent-seconds", type=int, default=30)
    args = parser.parse_args()
    with temporary_directory("schedwatch-bench-") as workdir:
        processes = []
        try:
            bench(args, workdir, processes)
        finally:
            for process in processes:
                process.stop()


def bench(args, workdir, processes):
    subprocess.run([sys.executable, os.path.join(HERE, "gen_roles.py"), "--roles",
                    str(args.roles), "--out", workdir], check=True)
    exporter = Exporter(os.path.join(args.build, "exporter/schedwatch_exporter"),
                        os.path.join(workdir, "spec.yaml"), workdir, interval="30s",
                        confirm_delay=None, wait="ready", timeout=60)
    processes.append(exporter)
    port, base = exporter.port, exporter.base
    metrics = subprocess.run(["curl", "-s", base + "/metrics"], capture_output=True,
                             text=True).stdout
    series = sum(1 for line in metrics.splitlines() if line and not line.startswith("#"))
    print(f"{args.roles} roles, {series} series, {len(metrics) / 1e6:.1f} MB of exposition text")
    ours = report("schedwatch_exporter", base + "/metrics", exporter, args.scrapes)

    prom_file = os.path.join(workdir, "schedwatch.prom")
    with open(prom_file, "w") as out:
        out.write(metrics)
    peer_port = free_port()
    peer = Peer([os.path.join(args.build, "bench/promcpp_peer"), prom_file, str(peer_port)],
                workdir, "promcpp_peer", peer_port)
    processes.append(peer)
    peer.wait_ready(120, path="/metrics")
    cpp = report("prometheus-cpp registry", peer.url + "/metrics", peer,
                 max(3, args.scrapes // 10))
    peer.stop()

    node = shutil.which("prometheus-node-exporter")
    if node:
        node_port = free_port()
        node_exporter = Peer(
            [node, "--collector.disable-defaults", "--collector.textfile",
             f"--collector.textfile.directory={workdir}",
             f"--web.listen-address=127.0.0.1:{node_port}"], workdir, "node_exporter",
            node_port)
        processes.append(node_exporter)
        node_exporter.wait_ready(60, path="/metrics")
        textfile = report("node_exporter textfile", node_exporter.url + "/metrics",
                          node_exporter, max(3, args.scrapes // 10))
        node_exporter.stop()
    else:
        textfile = None
        print("node_exporter textfile: prometheus-node-exporter is not installed")

    print(f"ratio, plain scrape median: prometheus-cpp / schedwatch = {cpp[0] / ours[0]:.1f}x"
          + (f", node_exporter / schedwatch = {textfile[0] / ours[0]:.1f}x" if textfile else ""))
    print(f"ratio, resident memory: prometheus-cpp / schedwatch = {cpp[2] / ours[2]:.1f}x"
          + (f", node_exporter / schedwatch = {textfile[2] / ours[2]:.1f}x" if textfile else ""))
    if args.concurrent_seconds > 0:
        concurrent_scrapers(port, exporter, args.concurrent_seconds)


if __name__ == "__main__":
    main()
