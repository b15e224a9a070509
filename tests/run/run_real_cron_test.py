#!/usr/bin/python3
"""schedwatch_run under the real Debian cron daemon (as tests/sources/crontab/real_cron_test.py
runs it: its own rsyslogd and `cron -f -L LEVEL`, as root), at -L 15 and at Debian's default -L 1.

Two cron.d entries of one role (sw-run), both wrapped: at each fire time exactly one runs and
the other is recorded as skipped; the exporter (crontab source with runs_dir) reports the exact
start, end and exit status from the records, `duplicate` with guarded=1 and the prevented runs.
sw-cmdkill: its command is killed with -9: a failure, exit 137. sw-kill: its wrapper is killed
with -9: the command goes with it, the run shows as running, then `hung` after max_runtime
(20s); at the next fire time the lock is free and it runs again, and the killed run counts as
failed. One minute boundary plus one more: about two minutes. Prints 'N passed, N failed'.
"""
import argparse
import glob
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from schedwatch_test import (CRON_D, Exporter, RealCron, StartFailed, check,  # noqa: E402
                             fail_setup, failed, finish, get_json, read_text, run_records,
                             temporary_directory, wait_for)

PREFIX = "schedwatch-test-run-"
DEADLINE = time.monotonic() + 200  # the whole test, waits included


def wait(what, predicate, seconds):
    """wait_for, bounded by the test's deadline too."""
    return wait_for(predicate, seconds, what, interval=0.5, until=DEADLINE)


def processes(binary, needle):
    """PIDs of `binary` whose command line holds `needle` (bytes)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.path.realpath(f"/proc/{entry}/exe") != binary:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if needle in f.read():
                    found.append(int(entry))
        except OSError:
            pass
    return found


def children(pid):
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry))
        except (OSError, ValueError, IndexError):
            pass
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--run", required=True)
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--log-level", default="15")
    args = parser.parse_args()
    run = os.path.realpath(args.run)
    with temporary_directory("schedwatch-runcron-") as workdir:
        os.chmod(workdir, 0o755)
        cron = RealCron(workdir, args.log_level, "schedwatch-test-")
        exporters = []
        try:
            test(args, run, workdir, cron, exporters)
        finally:
            for exporter in exporters:
                exporter.stop()
            for path in glob.glob(os.path.join(CRON_D, PREFIX + "*")):
                os.remove(path)
            for pid in processes(run, b"--role"):
                os.kill(pid, signal.SIGKILL)
            cron.stop()
            if failed():
                for exporter in exporters:
                    print("--- exporter log ---\n" + exporter.logs()[-3000:])
                print("--- cron log ---\n" + cron.log()[-3000:])
    finish()


def test(args, run, workdir, cron, exporters):
    cron_log = cron.log_path
    runs = os.path.join(workdir, "runs")
    locks = os.path.join(workdir, "locks")
    kill_script = os.path.join(workdir, "kill-job.sh")
    with open(kill_script, "w") as f:
        f.write("exec /bin/sleep 50\n")  # the first run is killed; the next one ends at once

    def entry(role, command):
        return (f"# schedwatch: role={role} spec_version=1\n"
                f"* * * * * root {run} --role {role} --lock-dir {locks} --record-dir {runs} -- "
                f"{command}\n")

    entries = {
        "a": entry("sw-run", "/bin/sh -c 'sleep 2; echo done'"),
        "b": entry("sw-run", "/bin/sh -c 'sleep 2; echo done'"),
        "cmdkill": entry("sw-cmdkill", "/bin/sleep 49"),
        "kill": entry("sw-kill", f"/bin/sh {kill_script}"),
    }
    spec = os.path.join(workdir, "spec.yaml")
    with open(spec, "w") as f:
        f.write(f"version: 1\nsources:\n  host-cron:\n    type: crontab\n    paths: [{CRON_D}]\n"
                f"    syslog: {cron_log}\n    runs_dir: {runs}\njobs:\n" + "".join(
                    f"  - {{role: {role}, source: host-cron, schedule: '* * * * *', "
                    f"spec_version: '1', max_runtime: 20s}}\n"
                    for role in ("sw-run", "sw-cmdkill", "sw-kill")))

    def records(role):
        return run_records(runs, role)

    cron.start_syslog(until=DEADLINE)
    for name, text in entries.items():
        path = os.path.join(CRON_D, PREFIX + name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o644)
    cron.start_cron()
    try:
        exporter = Exporter(args.exporter, spec, workdir, confirm_delay="200ms", timeout=15)
    except StartFailed:
        fail_setup("exporter did not start")
    exporters.append(exporter)

    def roles():
        try:
            return {x["role"]: x for x in get_json(exporter.base + "/api/v1/status")["roles"]}
        except OSError:
            return {}

    def metrics():
        return exporter.metrics()

    # First fire time: the wrappers start; kill the sw-cmdkill command and the sw-kill wrapper.
    # Both wrappers have spawned their command, so their start records are written: a wrapper
    # killed before that (a loaded machine) would leave no record to check.
    def started():
        wrapper = [w for w in processes(run, b"sw-kill") if children(w)]
        command = [c for w in processes(run, b"sw-cmdkill") for c in children(w)]
        return wrapper and command and (wrapper, command)

    found = wait("the first fire time", started, 75)
    if not found:
        fail_setup("cron did not start the wrapped jobs within a minute")
    first_fire = int(time.time()) // 60 * 60
    wrappers, commands = found
    kill_children = [c for w in wrappers for c in children(w)]
    os.kill(commands[0], signal.SIGKILL)
    for pid in wrappers:
        os.kill(pid, signal.SIGKILL)
    with open(kill_script, "w") as f:
        f.write("exit 0\n")

    def first_done():
        done = [r for r in records("sw-run") if r["state"] == "finished"]
        cmd = [r for r in records("sw-cmdkill") if r["state"] == "finished"]
        return done and cmd and (done, cmd)

    done = wait("the first runs to end", first_done, 20) or ([], [])
    states = sorted(r["state"] for r in records("sw-run"))
    check("two entries of one role at one fire time: one ran, one skipped",
          states == ["finished", "skipped"], records("sw-run"))
    check("the wrapper's exit status reaches cron (skipped copy: 200)",
          args.log_level != "15" or wait(
              "cron's error line", lambda: "failed with exit status 200" in
              read_text(cron_log), 10),
          read_text(cron_log)[-1500:])
    check("the killed command: recorded signal 9",
          done[1] and done[1][0].get("signal") == 9, records("sw-cmdkill"))
    check("the killed wrapper: its command went with it",
          wait("the orphan to go", lambda: all(
              not os.path.exists(f"/proc/{c}") or c not in children(1) and
              open(f"/proc/{c}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
              for c in kill_children) or all(not os.path.exists(f"/proc/{c}")
                                             for c in kill_children), 5), kill_children)
    check("the killed wrapper: started, never finished",
          [r["state"] for r in records("sw-kill")] == ["running"], records("sw-kill"))

    ran = done[0][0] if done[0] else {}

    def reported():
        r = roles().get("sw-run", {})
        return r.get("last_success") and r
    seen = wait("the exporter to read the records", reported, 10) or {}
    check("exporter: exact start, end and exit status from the record",
          seen.get("last_started") == int(ran.get("start", -1)) and
          seen.get("last_success") == int(ran.get("end", -1)) and
          seen.get("last_exit_code") == 0 and
          abs(seen.get("last_duration_seconds", 0) - ran.get("duration_seconds", -1)) < 1e-6,
          (seen, ran))
    check("exporter: duplicate (two entries), guarded, not failing although cron saw exit 200",
          "duplicate" in seen.get("conditions", []) and seen.get("guarded") is True and
          "failing" not in seen.get("conditions", []), seen)
    check("metrics: one prevented duplicate",
          'schedwatch_job_duplicate_runs_prevented_total{role="sw-run",source="host-cron"} 1'
          in metrics(), [l for l in metrics().splitlines() if "prevented" in l])
    cmdkill = wait("sw-cmdkill failing", lambda: "failing" in roles().get(
        "sw-cmdkill", {}).get("conditions", []) and roles()["sw-cmdkill"], 10)
    check("exporter: killed command is failing, exit 137",
          cmdkill and cmdkill.get("last_exit_code") == 137, roles().get("sw-cmdkill"))
    killed = roles().get("sw-kill", {})
    check("exporter: killed wrapper's run is running",
          killed.get("running_since") == int(records("sw-kill")[0]["start"]), killed)
    hung = wait("sw-kill hung after max_runtime", lambda: "hung" in roles().get(
        "sw-kill", {}).get("conditions", []), first_fire + 40 - time.time())
    check("exporter: ... and hung once max_runtime (20s) passed", hung, roles().get("sw-kill"))

    # Next fire time: no stuck guard; the killed run is over.
    def second():
        states = [r["state"] for r in records("sw-kill")]
        return states.count("finished") == 1 and len(records("sw-run")) >= 4
    check("next fire time: the killed wrapper's role runs again (no stuck lock)",
          wait("the second fire time", second, first_fire + 80 - time.time()),
          records("sw-kill"))
    after = wait("sw-kill cleared", lambda: (lambda r: r.get("last_success") and
                                                    r.get("running_since") is None and r)(
        roles().get("sw-kill", {})), 10) or {}
    check("exporter: the killed run counts as failed, the new one succeeded, not hung",
          after.get("last_failure") and after.get("last_success") and
          "hung" not in after.get("conditions", []), after)
    states = wait("the second sw-run to end", lambda: (lambda s: s.count(
        "finished") == 2 and s)(sorted(r["state"] for r in records("sw-run"))), 10)
    check("second fire time: again one ran, one skipped",
          states and states.count("skipped") == 2, records("sw-run"))
    log = read_text(cron_log)
    if args.log_level == "1":
        check("-L 1: cron logged starts only (no END lines)",
              "CMD (" in log and " END (" not in log, log[-1500:])
    else:
        check("-L 15: cron logged CMD and END with PIDs",
              re.search(r"CMD \(\[\d+\] ", log) and re.search(r"END \(\[\d+\] ", log),
              log[-1500:])


if __name__ == "__main__":
    main()
