#!/usr/bin/python3
"""A read of N Sidekiq-cron jobs (default 10,000): schedwatch's sidekiq_cron source
(bench/sidekiq_cron_bench.cc) against Sidekiq-cron 1.8's own Sidekiq::Cron::Job.all in Ruby,
on the same data in a loopback redis-server. Each job as Job#save writes it, with 10 jid history
entries; 1,000 failed payloads in the retry set. Prints wall time, peak RSS (/usr/bin/time -v)
and the bytes Redis sent (INFO stats total_net_output_bytes).

  bench/sidekiq_cron_bench.py --bench build/sidekiq_cron_bench [--jobs 10000] [--no-ruby]
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        arg = arg.encode() if isinstance(arg, str) else arg
        out.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(out)


def send_all(port, commands):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"".join(commands) + resp("PING"))
        data = b""
        while not data.endswith(b"+PONG\r\n"):
            data += s.recv(1 << 20)


def net_output(port):
    info = subprocess.run(["redis-cli", "-p", str(port), "INFO", "stats"], capture_output=True,
                          text=True).stdout
    return int(re.search(r"total_net_output_bytes:(\d+)", info).group(1))


def measured(command, port):
    before = net_output(port)
    start = time.monotonic()
    result = subprocess.run(["/usr/bin/time", "-v"] + command, capture_output=True, text=True)
    wall = time.monotonic() - start
    after = net_output(port)
    if result.returncode != 0:
        sys.exit(f"{command[0]} failed: {result.stderr[-2000:]}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr).group(1))
    # INFO's own answer counts in `after`: it is a few KiB, the same for both.
    return wall, rss, after - before, result.stdout.strip()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", required=True)
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--no-ruby", action="store_true", help="schedwatch's read only")
    parser.add_argument("--wrap", default="", help="a command line before the bench's (perf record)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                                  "--save", "", "--appendonly", "no", "--dir", workdir],
                                 stdout=subprocess.DEVNULL)
        try:
            for _ in range(100):
                if subprocess.run(["redis-cli", "-p", str(port), "PING"], capture_output=True,
                                  text=True).stdout.strip() == "PONG":
                    break
                time.sleep(0.1)
            now = int(time.time())
            commands = []
            for n in range(args.jobs):
                name = f"job-{n}"
                key = f"cron_job:{name}"
                enqueued = time.strftime("%Y-%m-%d %H:%M:%S +0000", time.gmtime(now - 3600))
                commands.append(resp("SADD", "cron_jobs", key))
                commands.append(resp(
                    "HSET", key, "name", name, "klass", "ReportJob", "cron", "0 * * * *",
                    "description", f"Report {n} [schedwatch: role=r{n} spec_version=1]",
                    "args", "[]", "date_as_argument", "false",
                    "message", json.dumps({"retry": True, "queue": "default",
                                           "class": "ReportJob", "args": []}),
                    "status", "enabled", "active_job", "false", "queue_name_prefix", "",
                    "queue_name_delimiter", "", "last_enqueue_time", enqueued,
                    "symbolize_args", "false"))
                for h in range(10):
                    commands.append(resp("LPUSH", key + ":jid_history", json.dumps(
                        {"jid": f"{n:012x}{h:012x}", "enqueued": enqueued})))
                if n % 10 == 0:
                    commands.append(resp("ZADD", "retry", str(now + 60), json.dumps(
                        {"class": "ReportJob", "args": [], "queue": "default",
                         "jid": f"{n:012x}{0:012x}", "failed_at": now - 3000,
                         "error_message": "boom", "error_class": "RuntimeError",
                         "retry_count": 0})))
            send_all(port, commands)
            spec = os.path.join(workdir, "spec.yaml")
            with open(spec, "w") as out:
                out.write(f"version: 1\nsources:\n  app: {{type: sidekiq_cron, url: "
                          f"\"redis://127.0.0.1:{port}/0\", timeout: 60s}}\njobs:\n")
                for n in range(args.jobs):
                    out.write(f"  - {{role: r{n}, source: app, schedule: \"0 * * * *\", "
                              f"spec_version: \"1\"}}\n")
            ruby = ("require 'sidekiq'; require 'sidekiq-cron'; "
                    f"Sidekiq.configure_client {{ |c| c.redis = {{ url: 'redis://127.0.0.1:{port}/0' }} }}; "
                    "t = Process.clock_gettime(Process::CLOCK_MONOTONIC); "
                    "jobs = Sidekiq::Cron::Job.all; "
                    "hist = jobs.map { |j| j.jid_history_from_redis }; "
                    "printf(\"jobs=%d histories=%d seconds=%.3f\\n\", jobs.size, hist.size, "
                    "Process.clock_gettime(Process::CLOCK_MONOTONIC) - t)")
            only_all = ruby.replace("hist = jobs.map { |j| j.jid_history_from_redis }; ",
                                    "hist = []; ")
            runs = [("schedwatch sidekiq_cron", args.wrap.split() + [args.bench, spec]),
                    ("Sidekiq::Cron::Job.all", ["ruby", "-e", only_all]),
                    ("Sidekiq::Cron::Job.all + jid_history_from_redis", ["ruby", "-e", ruby])]
            for label, command in runs[:1] if args.no_ruby else runs:
                wall, rss, sent, out = measured(command, port)
                print(f"{label}: wall {wall:.2f} s, peak RSS {rss / 1024:.1f} MiB, "
                      f"Redis sent {sent / 1e6:.2f} MB ({out})")
        finally:
            redis.terminate()
            redis.wait()


if __name__ == "__main__":
    main()
