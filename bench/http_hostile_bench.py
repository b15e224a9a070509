#!/usr/bin/python3
"""/metrics latency of schedwatch_exporter under hostile clients: with no other client, with
1,000 idle TCP connections held open, and during a storm of concurrent POST /-/reload while a
refresh waits for a source that never answers. Prints median and max per case and VmRSS.

  bench/http_hostile_bench.py --exporter build/exporter/schedwatch_exporter
"""
import argparse
import os
import re
import resource
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request


def latency(url, max_time=30):
    result = subprocess.run(["curl", "-s", "-o", "/dev/null", "--max-time", str(max_time), "-w",
                             "%{http_code} %{time_total}", url], capture_output=True, text=True)
    code, seconds = result.stdout.split()
    return int(code), float(seconds)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        return int(re.search(r"VmRSS:\s+(\d+) kB", status.read()).group(1))


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
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    workdir = tempfile.mkdtemp(prefix="schedwatch-hostile-bench-")
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
    log_path = os.path.join(workdir, "exporter.log")
    log = open(log_path, "w+")
    exporter = subprocess.Popen([args.exporter, "--config.file", spec, "--web.listen-address",
                                 "127.0.0.1:0", "--web.enable-lifecycle"], stderr=log, stdout=log)
    idle = []
    try:
        port = None
        deadline = time.time() + 15
        while port is None and time.time() < deadline:
            match = re.search(r"msg=listening .*port=(\d+)", open(log_path).read())
            port = match and int(match.group(1))
            time.sleep(0.05)
        base = f"http://127.0.0.1:{port}"
        url = base + "/metrics"
        rss = [("start", rss_kib(exporter.pid))]
        summary("no other client", [latency(url) for _ in range(args.samples)])
        for i in range(args.idle):
            connection = socket.create_connection(("127.0.0.1", port))
            if i % 2:
                connection.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            idle.append(connection)
        summary(f"{args.idle} idle connections", [latency(url) for _ in range(args.samples)])
        rss.append((f"{args.idle} idle", rss_kib(exporter.pid)))

        def reload():
            request = urllib.request.Request(base + "/-/reload", method="POST")
            try:
                urllib.request.urlopen(request, timeout=120).read()
            except Exception:  # noqa: BLE001 - a failed reload is part of the figure
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
        rss.append(("after storm", rss_kib(exporter.pid)))
        print("VmRSS: " + ", ".join(f"{name} {kib} KiB" for name, kib in rss))
    finally:
        for connection in idle:
            connection.close()
        exporter.send_signal(signal.SIGKILL)  # a refresh waits 60 s for the hung source
        exporter.wait()
        blackhole.close()


if __name__ == "__main__":
    main()
