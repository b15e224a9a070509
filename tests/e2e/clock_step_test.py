#!/usr/bin/python3
"""The real schedwatch_exporter under libfaketime, its wall clock stepped while it runs.

A job's runs are dated by a clock; the watcher's own clock can jump (NTP stepping, `date -s`,
a VM resumed). The exporter runs with libfaketime reading its offset from a file (re-read at
every call), the monotonic clock left real as a real step leaves it:

- +1h: /metrics says schedwatch_exporter_clock_step_seconds 3600; the role that is healthy by
  the clock without the step is not hung, not_started or stale (all three would follow from
  the step alone), and /api/v1/status and the role's page say those are held because the
  clock moved
- back to +0 (a step of -1h, cancelling the first): nothing held, nothing raised
- -1h: the runs of the last hour are not "in the future", nothing raised
- all along, a run dated 2099 in the snapshot is a counted run_in_future problem (counted
  once), and its role is not ok on the strength of it
Prints 'N passed, N failed'.
"""
import argparse
import glob
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from schedwatch_test import (Exporter, check, fail_setup, finish, replace_file,  # noqa: E402
                             temporary_directory, wait_for, write_text)

SPEC = """version: 1
sources: {s: {type: file, path: live.yaml}}
jobs:
  - {role: tick, source: s, schedule: "*/10 * * * *", spec_version: "1", max_runtime: 5m}
  - {role: ahead, source: s, schedule: "*/10 * * * *", spec_version: "1"}
"""


def rfc3339(unix_seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(unix_seconds))


def snapshot(now):
    # Absolute times: a relative "-3m" would move with the stepped clock.
    return f"""objects:
  - {{id: t, role: tick, schedule: '*/10 * * * *', spec_version: '1'}}
  - {{id: a, role: ahead, schedule: '*/10 * * * *', spec_version: '1'}}
runs:
  - {{role: tick, started: {rfc3339(now - 180)}, finished: {rfc3339(now - 120)}, result: success}}
  - {{role: tick, started: {rfc3339(now - 60)}, result: running}}
  - {{role: ahead, started: {rfc3339(now - 7200)}, finished: {rfc3339(now - 7100)}, result: success}}
  - {{role: ahead, started: 2099-01-01T00:00:00Z, finished: 2099-01-01T00:01:00Z, result: success}}
"""


def libfaketime():
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))
    if not found:
        fail_setup("libfaketime is not installed (apt-get install faketime)")
    return found[0]


def metric(text, name):
    match = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(match.group(1)) if match else None


def role(status, name):
    return next(r for r in status["roles"] if r["role"] == name)


def held(status, name):
    return sorted(r["condition"] for r in role(status, name)["reasons"] if r.get("held"))


TIME_BASED = ("hung", "not_started", "stale")


def no_false_conditions(exporter, label):
    metrics = exporter.metrics()
    for condition in TIME_BASED:
        line = f'schedwatch_job_condition{{role="tick",source="s",condition="{condition}"}} 0'
        check(f"{label}: /metrics, tick not {condition}", line in metrics)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    args = parser.parse_args()
    library = libfaketime()
    with temporary_directory("schedwatch-clock-") as workdir:
        spec = write_text(os.path.join(workdir, "spec.yaml"), SPEC)
        write_text(os.path.join(workdir, "live.yaml"), snapshot(int(time.time())))
        offset_file = write_text(os.path.join(workdir, "faketime.rc"), "+0\n")
        env = {"LD_PRELOAD": library, "FAKETIME_TIMESTAMP_FILE": offset_file,
               "FAKETIME_NO_CACHE": "1",
               # A real step moves the wall clock only; the exporter's monotonic clock is its
               # reference.
               "FAKETIME_DONT_FAKE_MONOTONIC": "1",
               # An ASan build wants its runtime first; libfaketime preloaded before it is fine.
               "ASAN_OPTIONS": ":".join(filter(None, [os.environ.get("ASAN_OPTIONS", ""),
                                                      "verify_asan_link_order=0"]))}
        with Exporter(args.exporter, spec, workdir, env=env, interval="500ms") as exporter:
            status, ok = exporter.wait_status(
                lambda s: role(s, "tick")["conditions"] == ["ok"], what="tick ok")
            check("before: tick ok", ok, role(status, "tick") if status.get("roles") else status)
            check("before: no clock step metric",
                  metric(exporter.metrics(), "schedwatch_exporter_clock_step_seconds") is None)

            # The 2099 run: a counted problem, and no success.
            ahead = role(status, "ahead")
            check("2099 run: ahead not ok", "ok" not in ahead["conditions"], ahead)
            check("2099 run: its last success is the real one",
                  ahead["last_success"] is not None and ahead["last_success"] < time.time(),
                  ahead)
            problems = status["sources"][0]["problems"]
            check("2099 run: a run_in_future problem that names the role",
                  any(p["reason"] == "run_in_future" and "role ahead" in p["message"]
                      for p in problems), problems)
            future_total = 'schedwatch_source_errors_total{reason="run_in_future",source="s"}'
            check("2099 run: counted", metric(exporter.metrics(), future_total) == 1)

            replace_file(offset_file, "+1h\n")
            step = wait_for(lambda: metric(exporter.metrics(),
                                           "schedwatch_exporter_clock_step_seconds"),
                            20, "the +1h step in /metrics")
            check("+1h: /metrics shows the step", step is not None and abs(step - 3600) <= 2,
                  step)
            status, ok = exporter.wait_status(lambda s: "clock_step" in s, what="clock_step")
            check("+1h: /api/v1/status shows the step",
                  ok and abs(status["clock_step"]["seconds"] - 3600) <= 2, status.get("clock_step"))
            tick = role(status, "tick")
            check("+1h: tick still ok", tick["conditions"] == ["ok"], tick)
            check("+1h: hung, not_started and stale held", held(status, "tick") == sorted(TIME_BASED),
                  tick["reasons"])
            check("+1h: the reasons say the clock moved",
                  all("clock moved forward" in r["reason"] for r in tick["reasons"]),
                  tick["reasons"])
            no_false_conditions(exporter, "+1h")
            page = exporter.get("/roles/tick").text
            check("+1h: the role's page says held", 'data-held="true"' in page and
                  "clock moved forward" in page)
            check("+1h: the overview says the clock moved",
                  'id="clock-step"' in exporter.get("/").text)
            check("+1h: logged", "wall clock stepped" in exporter.logs())

            replace_file(offset_file, "+0\n")
            step = wait_for(lambda: (metric(exporter.metrics(),
                                            "schedwatch_exporter_clock_step_seconds") or 0) < 0,
                            20, "the step back in /metrics")
            check("back to +0: /metrics shows a step of -1h",
                  step and abs(metric(exporter.metrics(),
                                      "schedwatch_exporter_clock_step_seconds") + 3600) <= 2)
            status, ok = exporter.wait_status(
                lambda s: abs(s.get("clock_step", {}).get("seconds", 99)) <= 2,
                what="the steps to cancel")
            check("back to +0: the steps cancel", ok, status.get("clock_step"))
            check("back to +0: tick ok, nothing held",
                  role(status, "tick")["conditions"] == ["ok"] and not held(status, "tick"),
                  role(status, "tick"))
            no_false_conditions(exporter, "back to +0")

            before = metric(exporter.metrics(), "schedwatch_exporter_clock_step_timestamp_seconds")
            replace_file(offset_file, "-1h\n")
            wait_for(lambda: metric(exporter.metrics(),
                                    "schedwatch_exporter_clock_step_timestamp_seconds") != before,
                     20, "the -1h step in /metrics")
            status, ok = exporter.wait_status(
                lambda s: s.get("clock_step", {}).get("seconds", 0) < -3500, what="-1h")
            check("-1h: /api/v1/status shows the step", ok, status.get("clock_step"))
            tick = role(status, "tick")
            check("-1h: tick ok", tick["conditions"] == ["ok"], tick)
            check("-1h: the last hour's runs are not in the future",
                  "in_future" not in tick and tick["last_success"] is not None, tick)
            no_false_conditions(exporter, "-1h")
            check("-1h: the 2099 run still counted once",
                  metric(exporter.metrics(), future_total) == 1)
    finish()


if __name__ == "__main__":
    main()
