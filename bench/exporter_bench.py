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
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        fields = dict(line.split(":", 1) for line in status if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def wait_http(url, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        result = subprocess.run(["curl", "-sf", "-o", "/dev/null", url])
        if result.returncode == 0:
            return
        time.sleep(0.2)
    raise RuntimeError(f"{url} never answered")


def scrape_times(url, count, gzip_header=False):
    command = ["curl", "-s", "-o", "/dev/null", "-w", "%{time_total} %{size_download}\n"]
    if gzip_header:
        command += ["-H", "Accept-Encoding: gzip"]
    times, size = [], 0
    for _ in range(count):
        out = subprocess.run(command + [url], capture_output=True, text=True).stdout.split()
        times.append(float(out[0]) * 1000)
        size = int(out[1])
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.9) - 1], size


def report(name, url, pid, count):
    median, p90, size = scrape_times(url, count)
    gz_median, gz_p90, gz_size = scrape_times(url, count, gzip_header=True)
    rss, hwm = rss_mib(pid)
    print(f"{name:28s} plain {median:7.1f} ms median {p90:7.1f} ms p90 ({size / 1e6:.1f} MB) | "
          f"gzip {gz_median:7.1f} ms median ({gz_size / 1e6:.2f} MB) | RSS {rss:.0f} MiB "
          f"(peak {hwm:.0f})")
    return median, gz_median, rss


def concurrent_scrapers(port, pid, seconds, clients=100):
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
    samples = [rss_mib(pid)[0]]
    while time.time() < stop:
        time.sleep(1)
        samples.append(rss_mib(pid)[0])
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
    workdir = tempfile.mkdtemp(prefix="schedwatch-bench-")
    processes = []
    try:
        subprocess.run([sys.executable, os.path.join(HERE, "gen_roles.py"), "--roles",
                        str(args.roles), "--out", workdir], check=True)
        port = free_port()
        exporter = subprocess.Popen(
            [os.path.join(args.build, "exporter/schedwatch_exporter"), "--config.file",
             os.path.join(workdir, "spec.yaml"), "--web.listen-address", f"127.0.0.1:{port}",
             "--refresh.interval", "30s"], stderr=subprocess.DEVNULL)
        processes.append(exporter)
        base = f"http://127.0.0.1:{port}"
        deadline = time.time() + 60
        while subprocess.run(["curl", "-sf", "-o", "/dev/null", base + "/-/ready"]).returncode:
            if time.time() > deadline:
                raise RuntimeError("exporter never ready")
            time.sleep(0.2)
        metrics = subprocess.run(["curl", "-s", base + "/metrics"], capture_output=True,
                                 text=True).stdout
        series = sum(1 for line in metrics.splitlines() if line and not line.startswith("#"))
        print(f"{args.roles} roles, {series} series, {len(metrics) / 1e6:.1f} MB of exposition text")
        ours = report("schedwatch_exporter", base + "/metrics", exporter.pid, args.scrapes)

        prom_file = os.path.join(workdir, "schedwatch.prom")
        with open(prom_file, "w") as out:
            out.write(metrics)
        peer_port = free_port()
        peer = subprocess.Popen([os.path.join(args.build, "bench/promcpp_peer"), prom_file,
                                 str(peer_port)], stderr=subprocess.DEVNULL)
        processes.append(peer)
        wait_http(f"http://127.0.0.1:{peer_port}/metrics", 120)
        cpp = report("prometheus-cpp registry", f"http://127.0.0.1:{peer_port}/metrics", peer.pid,
                     max(3, args.scrapes // 10))
        peer.terminate()

        node = shutil.which("prometheus-node-exporter")
        if node:
            node_port = free_port()
            node_exporter = subprocess.Popen(
                [node, "--collector.disable-defaults", "--collector.textfile",
                 f"--collector.textfile.directory={workdir}",
                 f"--web.listen-address=127.0.0.1:{node_port}"], stderr=subprocess.DEVNULL)
            processes.append(node_exporter)
            wait_http(f"http://127.0.0.1:{node_port}/metrics", 60)
            textfile = report("node_exporter textfile", f"http://127.0.0.1:{node_port}/metrics",
                              node_exporter.pid, max(3, args.scrapes // 10))
            node_exporter.terminate()
        else:
            textfile = None
            print("node_exporter textfile: prometheus-node-exporter is not installed")

        print(f"ratio, plain scrape median: prometheus-cpp / schedwatch = {cpp[0] / ours[0]:.1f}x"
              + (f", node_exporter / schedwatch = {textfile[0] / ours[0]:.1f}x" if textfile else ""))
        print(f"ratio, resident memory: prometheus-cpp / schedwatch = {cpp[2] / ours[2]:.1f}x"
              + (f", node_exporter / schedwatch = {textfile[2] / ours[2]:.1f}x" if textfile else ""))
        if args.concurrent_seconds > 0:
            concurrent_scrapers(port, exporter.pid, args.concurrent_seconds)
    finally:
        for process in processes:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
