#!/usr/bin/python3
"""Starts the real schedwatch_exporter binary on an ephemeral port and talks to it over HTTP.

Checks /metrics (plain and gzip), the Prometheus endpoints, reload by POST and by SIGHUP with a
good and a bad spec, the status page and the JSON API, and `promtool check metrics` when
promtool is installed. Prints 'N passed, N failed'.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from schedwatch_test import Exporter, check, run_in_temporary_directory, wait_for  # noqa: E402


def serve(binary, spec, workdir, *extra, interval="1s"):
    return Exporter(binary, spec, workdir, *extra, "--web.enable-lifecycle", interval=interval,
                    wait="ready", timeout=15)


def open_fds(exporter):
    text = exporter.metrics()
    return float(re.search(r"^process_open_fds ([0-9.e+]+)$", text, re.M).group(1))


def scrape_time_phase(binary, spec, workdir):
    """process_* are read when scraped, as the client libraries do, not at the last refresh."""
    exporter = serve(binary, spec, workdir, interval="1h")
    sockets = []
    try:
        # After the first refresh, and the least of a few readings: a descriptor open in passing
        # (a file being read) must not raise the count the 20 connections are added to.
        wait_for(lambda: exporter.get("/-/ready").status == 200, 30, "the first refresh")
        before = min(open_fds(exporter) for _ in range(3))
        sockets = [socket.create_connection(("127.0.0.1", exporter.port)) for _ in range(20)]
        seen = wait_for(lambda: (lambda n: n if n >= before + 20 else None)(open_fds(exporter)),
                        15, "process_open_fds to count 20 more connections") or open_fds(exporter)
        check("process_open_fds counts connections made since the last refresh",
              seen >= before + 20, (before, seen))
    finally:
        for s in sockets:
            s.close()
        exporter.stop()


def main():
    return run_in_temporary_directory("schedwatch-http-", run, "--exporter", "--source-dir")


def run(args, workdir):
    examples = os.path.join(args.source_dir, "examples")
    spec = os.path.join(workdir, "desired-state.yaml")
    for name in ("desired-state.yaml", "live-state.yaml", "ledger.json"):
        shutil.copy(os.path.join(examples, name), workdir)

    exporter = serve(args.exporter, spec, workdir, "--ledger.file",
                     os.path.join(workdir, "ledger.json"))
    try:
        status, headers, body = exporter.get("/metrics")
        text = body.decode()
        check("metrics answers 200", status == 200, status)
        check("metrics content type is exposition 0.0.4",
              headers.get("Content-Type") == "text/plain; version=0.0.4; charset=utf-8",
              headers.get("Content-Type"))
        check("incident: retry missing",
              'schedwatch_job_condition{role="retry",source="demo",condition="missing"} 1\n' in text)
        check("incident: gate ok",
              'schedwatch_job_condition{role="gate",source="demo",condition="ok"} 1\n' in text)
        check("heartbeat exported", "schedwatch_exporter_last_cycle_timestamp_seconds " in text)

        status, headers, body = exporter.get("/metrics", {"Accept-Encoding": "gzip"})
        check("gzip when asked", headers.get("Content-Encoding") == "gzip", headers)
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        unzipped = inflater.decompress(body).decode()
        check("gzip body is one complete gzip member (CRC and length right)",
              inflater.eof and not inflater.unused_data, (inflater.eof, inflater.unused_data[:20]))
        check("gzip body is the same exposition",
              unzipped.split("schedwatch_job_condition")[1:3]
              == text.split("schedwatch_job_condition")[1:3])
        check("gzip body ends with the process metrics",
              re.search(r"\nprocess_virtual_memory_bytes [0-9.e+]+\n$", unzipped), unzipped[-300:])
        for family in ("process_cpu_seconds_total", "process_resident_memory_bytes",
                       "process_virtual_memory_bytes", "process_open_fds", "process_max_fds",
                       "process_start_time_seconds"):
            check(f"{family} exported", re.search(rf"^{family} [0-9.e+]+$", text, re.M), family)
        start = re.search(r"^process_start_time_seconds ([0-9.e+]+)$", text, re.M)
        check("process_start_time_seconds is when the exporter started",
              start and time.time() - 120 < float(start.group(1)) <= time.time() + 1,
              start and start.group(1))

        promtool = shutil.which("promtool")
        if promtool:
            result = subprocess.run([promtool, "check", "metrics"], input=text,
                                    capture_output=True, text=True)
            check("promtool check metrics passes", result.returncode == 0,
                  result.stdout + result.stderr)
        else:
            print("note: promtool not installed here; CI runs this check")

        check("healthy", exporter.get("/-/healthy")[0] == 200)
        check("ready", exporter.get("/-/ready")[0] == 200)
        check("unknown path is 404", exporter.get("/nope")[0] == 404)
        check("reload needs POST", exporter.get("/-/reload")[0] == 405)

        status, headers, body = exporter.get("/")
        page = body.decode()
        check("status page is HTML", status == 200 and "text/html" in headers["Content-Type"])
        check("status page lists the missing retry role",
              'data-role="retry"' in page and ">missing<" in page)

        status, _, body = exporter.get("/api/v1/status")
        roles = {r["role"]: r for r in json.loads(body)["roles"]}
        check("JSON API has every role", len(roles) == 11, len(roles))
        check("JSON API: retry missing", "missing" in roles["retry"]["conditions"])

        # A bad spec: 500 with the exact error, the old spec keeps running.
        good = open(spec).read()
        with open(spec, "w") as out:
            out.write(good.replace('schedule: "*/10 * * * *"', 'schedule: "*/10 * * *"'))
        status, _, body = exporter.post("/-/reload")
        check("bad reload answers 500", status == 500, status)
        line = good[:good.index('schedule: "*/10 * * * *"')].count("\n") + 1
        check("bad reload names file, line and field",
              f"{spec}:{line}:15: jobs[0].schedule: expected 5 fields" in body.decode(), body)
        # The very next scrape says so, not the one after the next refresh.
        text = exporter.metrics()
        check("bad reload sets reload_successful 0",
              "schedwatch_exporter_config_last_reload_successful 0\n" in text,
              re.findall(r"schedwatch_exporter_config_last_reload_successful.*", text))
        check("old spec still served", 'role="retry"' in text)

        # A good spec by SIGHUP: a role removed.
        with open(spec, "w") as out:
            out.write(good.replace("role: partner-feed", "role: partner-feed-renamed"))
        exporter.send_signal(signal.SIGHUP)
        text = wait_for(lambda: (lambda t: t if 'role="partner-feed-renamed"' in t else None)(
            exporter.metrics()), 10, "the renamed role after SIGHUP") or exporter.metrics()
        check("SIGHUP reload picks up the new spec", 'role="partner-feed-renamed"' in text)
        check("good reload sets reload_successful 1",
              "schedwatch_exporter_config_last_reload_successful 1\n" in text)
        stamp = re.search(
            r"^schedwatch_exporter_config_last_reload_success_timestamp_seconds (\S+)$", text, re.M)
        check("last successful reload time is exported and recent",
              stamp is not None and abs(float(stamp.group(1)) - time.time()) < 60,
              stamp and stamp.group(0))
        check("logs are logfmt", re.search(r'level=info msg="spec reloaded"', exporter.logs()))
    finally:
        code = exporter.stop()
    check("exits 0 on SIGTERM", code == 0, code)

    bad = os.path.join(workdir, "bad.yaml")
    with open(bad, "w") as out:
        out.write("version: 1\nsources: {}\njobs: []\n")
    result = subprocess.run([args.exporter, "--config.file", bad], capture_output=True, text=True)
    check("bad spec at start exits 2", result.returncode == 2, result.returncode)
    check("bad spec at start says where",
          result.stderr.strip() == f"{bad}:2:10: sources: at least one source is needed",
          result.stderr)
    result = subprocess.run([args.exporter, "--config.file"], capture_output=True, text=True)
    check("bad arguments exit 2", result.returncode == 2, result.returncode)
    result = subprocess.run([args.exporter, "--version"], capture_output=True, text=True)
    check("--version", result.returncode == 0 and "schedwatch_exporter, version" in result.stdout)

    example = os.path.join(examples, "desired-state.yaml")
    result = subprocess.run([args.exporter, "check", "--config.file", example, "--from",
                             "2026-11-30T12:00:00Z", "--count", "2", "--output", "json"],
                            capture_output=True, text=True)
    check("check exits 0 on the example", result.returncode == 0, result.stderr)
    jobs = {job["role"]: job for job in json.loads(result.stdout)["jobs"]}
    check("check json: next fire times in the job's zone with offset",
          jobs["retry"]["next"] == ["2026-11-30T21:10:00+09:00", "2026-11-30T21:20:00+09:00"],
          jobs["retry"])
    check("check json: period and stale_after",
          (jobs["retry"]["period_seconds"], jobs["retry"]["stale_after_seconds"]) == (600, 1500))
    result = subprocess.run([args.exporter, "check", "--config.file", example, "--from",
                             "2026-11-30T12:00:00Z", "--count", "1"], capture_output=True, text=True)
    check("check text output", "retry (source demo, file)" in result.stdout
          and "next         2026-11-30T21:10:00+09:00" in result.stdout, result.stdout[:400])
    # A systemd timer with two OnCalendar lines, across Berlin's spring-forward change: 02:30 on
    # 2024-03-31 does not exist and is skipped, as systemd skips it.
    timer_spec = os.path.join(workdir, "systemd.yaml")
    with open(timer_spec, "w") as out:
        out.write("version: 1\nsources: {host: {type: systemd}}\njobs:\n"
                  "  - {role: backup, source: host, timezone: Europe/Berlin, spec_version: '1',\n"
                  "     schedule: ['*-*-* 02:30', 'Sun 12:00 UTC']}\n")
    result = subprocess.run([args.exporter, "check", "--config.file", timer_spec, "--from",
                             "2024-03-30T00:00:00Z", "--count", "3", "--output", "json"],
                            capture_output=True, text=True)
    check("check exits 0 on a systemd spec", result.returncode == 0, result.stderr)
    backup = json.loads(result.stdout)["jobs"][0]
    check("check json: a systemd job's fire times, DST gap skipped",
          backup["next"] == ["2024-03-30T02:30:00+01:00", "2024-03-31T14:00:00+02:00",
                             "2024-04-01T02:30:00+02:00"], backup)
    check("check json: a systemd job's schedule and period",
          (backup["schedule"], backup["period_seconds"]) == ("*-*-* 02:30\nSun 12:00 UTC", 124200),
          backup)
    result = subprocess.run([args.exporter, "check", "--config.file", timer_spec, "--from",
                             "2024-03-30T00:00:00Z", "--count", "1"], capture_output=True, text=True)
    check("check text: one OnCalendar expression per line",
          "  schedule     *-*-* 02:30\n               Sun 12:00 UTC in Europe/Berlin\n"
          in result.stdout, result.stdout[:400])
    result = subprocess.run([args.exporter, "check", "--config.file", example, "--count", "0"],
                            capture_output=True, text=True)
    check("check --count 0: no fire times and no 'runs at boot only'",
          result.returncode == 0 and "retry (source demo, file)" in result.stdout
          and "next" not in result.stdout, result.stdout[:400])
    result = subprocess.run([args.exporter, "check", "--config.file", bad], capture_output=True,
                            text=True)
    check("check exits 2 on a bad spec with the message",
          result.returncode == 2 and result.stderr.strip().endswith(
              "sources: at least one source is needed"), (result.returncode, result.stderr))

    # The example systemd unit: valid for systemd, pointing at this build's binary.
    unit = open(os.path.join(examples, "schedwatch-exporter.service")).read()
    unit_path = os.path.join(workdir, "schedwatch-exporter.service")
    with open(unit_path, "w") as out:
        out.write(unit.replace("/usr/bin/schedwatch_exporter", os.path.abspath(args.exporter)))
    shutil.copy(os.path.join(examples, "schedwatch-exporter.socket"), workdir)
    analyze = shutil.which("systemd-analyze")
    if analyze:
        result = subprocess.run([analyze, "verify", unit_path,
                                 os.path.join(workdir, "schedwatch-exporter.socket")],
                                capture_output=True, text=True)
        check("systemd-analyze verify accepts the example unit and its socket",
              result.returncode == 0 and not result.stderr.strip(), result.stderr)
    check("the unit sandboxes the exporter", all(
        line in unit for line in ("NoNewPrivileges=yes", "ProtectSystem=strict", "User=schedwatch",
                                  "CapabilityBoundingSet=\n", "ExecReload=/bin/kill -HUP $MAINPID")))

    scrape_time_phase(args.exporter, spec, workdir)


if __name__ == "__main__":
    sys.exit(main())
