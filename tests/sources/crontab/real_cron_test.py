#!/usr/bin/python3
"""The crontab source against the real Debian cron daemon.

Starts rsyslogd (its own config: facility cron to a file in a temp dir, imuxsock on /dev/log) and
`cron -f -L 15`, installs marked entries in /etc/cron.d/schedwatch-test-*, waits for real runs
at a minute boundary, then checks what the real schedwatch_exporter reports through
/api/v1/status: a succeeding job (ok, last start and success known), a failing one (`exit 3`),
a role whose file is removed (missing after the re-read), a duplicated entry, a commented-out one
(inactive), a drifted schedule, and files cron itself refuses (group-writable; an entry after
line 10,003), cross-checked against cron's own log. Everything it starts is stopped and every
file it installs removed, also on failure. Needs root, cron and rsyslog: without them it FAILS.
Prints 'N passed, N failed'.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "harness"))
from schedwatch_test import (CRON_D, Exporter, RealCron, StartFailed, check,  # noqa: E402
                             fail_setup, failed, finish, get_json, temporary_directory,
                             wait_for)

PREFIX = "schedwatch-test-"
DEADLINE = time.monotonic() + 200  # the whole test, waits included


def wait(what, predicate, seconds):
    """wait_for, bounded by the test's deadline too."""
    return wait_for(predicate, seconds, what, interval=0.5, until=DEADLINE)


def marked(role, line, spec_version="1"):
    return f"# schedwatch: role={role} spec_version={spec_version}\n{line}\n"


ENTRIES = {
    "ok": marked("sw-ok", "* * * * * root /bin/echo schedwatch-ok"),
    "fail": marked("sw-fail", '* * * * * root /bin/sh -c "exit 3"'),
    "gone": marked("sw-gone", "* * * * * root /bin/true schedwatch-gone"),
    "dup1": marked("sw-dup", "0 0 1 1 * root /bin/true schedwatch-dup"),
    "dup2": marked("sw-dup", "0 0 1 1 * root /bin/true schedwatch-dup"),
    "off": marked("sw-off", "#0 0 1 1 * root /bin/true schedwatch-off"),
    "drift": marked("sw-drift", "*/5 * * * * root /bin/true schedwatch-drift"),
    "insecure": marked("sw-insecure", "0 0 1 1 * root /bin/true schedwatch-insecure"),
    # cron allows 10,003 lines (10,000 and the header of crontab(1)); measured on 3.0pl1-162.
    "limit": "#\n" * 10001 + marked("sw-limit", "0 0 1 1 * root /bin/true limit"),
    "too-long": "#\n" * 10002 + marked("sw-too-long", "0 0 1 1 * root /bin/true too-long"),
}


def install_entries():
    for name, text in ENTRIES.items():
        path = os.path.join(CRON_D, PREFIX + name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o664 if name == "insecure" else 0o644)


def remove_entries():
    for path in glob.glob(os.path.join(CRON_D, PREFIX + "*")):
        os.remove(path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    args = parser.parse_args()

    with temporary_directory("schedwatch-cron-") as workdir:
        os.chmod(workdir, 0o755)
        cron = RealCron(workdir, 15, PREFIX)
        started = []
        try:
            run(args, workdir, cron, started)
        finally:
            for exporter in started:
                exporter.stop()
            cron.stop()
            remove_entries()
            if os.path.exists(os.path.join(CRON_D, "schedwatch-sw-gone")):
                os.remove(os.path.join(CRON_D, "schedwatch-sw-gone"))
            if failed():
                for exporter in started:
                    print("--- exporter log ---\n" + exporter.logs()[-4000:])
                print("--- cron log ---\n" + cron.log()[-4000:])
    finish()


def run(args, workdir, cron, started):
    """Appends the exporter it starts to `started`, for main() to stop."""
    cron_log = cron.log_path
    spec = os.path.join(workdir, "spec.yaml")
    shutil.copy(os.path.join(HERE, "real_cron_spec.yaml"), spec)
    cron.start_syslog(until=DEADLINE)
    install_entries()
    cron.start_cron()
    try:
        exporter = Exporter(args.exporter, spec, workdir, interval="2s", confirm_delay="200ms",
                            timeout=15)
    except StartFailed as error:
        fail_setup(f"exporter did not start: {error}")
    started.append(exporter)
    checks(args, workdir, spec, cron_log, exporter)


def checks(args, workdir, spec, cron_log, exporter):
    def roles():
        try:
            status = get_json(exporter.base + "/api/v1/status")
        except OSError:
            return {}, {}
        return {r["role"]: r for r in status["roles"]}, (status["sources"] or [{}])[0]

    # Real runs at the next minute boundary, seen by the exporter in cron's log lines.
    def ran():
        by_role, _ = roles()
        return (by_role.get("sw-ok", {}).get("last_success") and
                by_role.get("sw-fail", {}).get("last_failure") and by_role)

    by_role = wait("runs at a minute boundary", ran, 130)
    log = open(cron_log, errors="replace").read()
    check("cron logged the runs with -L 15 (CMD with the job PID, END)",
          re.search(r"CRON\[\d+\]: \(root\) CMD \(\[\d+\] /bin/echo schedwatch-ok\)", log) and
          re.search(r"CRON\[\d+\]: \(root\) END \(\[\d+\] /bin/echo schedwatch-ok\)", log),
          log[-2000:])
    check("cron logged the failure", "failed with exit status 3" in log, log[-2000:])
    if not by_role:
        by_role, _ = roles()
    _, source = roles()

    def conditions(role):
        return by_role.get(role, {}).get("conditions")

    ok = by_role.get("sw-ok", {})
    check("succeeding job: ok", conditions("sw-ok") == ["ok"], ok)
    check("succeeding job: last start and success known",
          ok.get("last_started") and ok.get("last_success") and
          ok["last_success"] >= ok["last_started"], ok)
    check("failing job (exit 3): failing", "failing" in (conditions("sw-fail") or []),
          by_role.get("sw-fail"))
    check("duplicated entry: duplicate", "duplicate" in (conditions("sw-dup") or []) and
          by_role["sw-dup"]["registered_objects"] == 2, by_role.get("sw-dup"))
    check("commented-out entry: inactive", "inactive" in (conditions("sw-off") or []) and
          by_role["sw-off"]["active_objects"] == 0, by_role.get("sw-off"))
    check("drifted schedule: drift", "drift" in (conditions("sw-drift") or []),
          by_role.get("sw-drift"))
    check("entry on line 10,003: registered", by_role.get("sw-limit", {}).get(
        "registered_objects") == 1, by_role.get("sw-limit"))
    check("source up", source.get("up") is True, source)

    # Files cron refuses: cron's own log and schedwatch agree.
    problems = [p["message"] for p in source.get("problems", [])
                if p["reason"] == "crontab_ignored"]
    check("group-writable file: cron skips it",
          f"INSECURE MODE (group/other writable) ({CRON_D}/{PREFIX}insecure)" in log,
          log[-2000:])
    check("group-writable file: reported, its role missing",
          any(PREFIX + "insecure: INSECURE MODE" in p for p in problems) and
          conditions("sw-insecure") == ["missing"], (problems, by_role.get("sw-insecure")))
    check("entry on line 10,004: cron ignores the file",
          re.search(PREFIX + r"too-long\) ERROR \(crontab must not be longer than 10000 lines",
                    log), log[-2000:])
    check("entry on line 10,004: reported, its role missing",
          any(PREFIX + "too-long: line 10004" in p for p in problems) and
          conditions("sw-too-long") == ["missing"], (problems, by_role.get("sw-too-long")))

    check("role of the file to remove: present before",
          by_role.get("sw-gone", {}).get("registered_objects") == 1, by_role.get("sw-gone"))
    os.remove(os.path.join(CRON_D, PREFIX + "gone"))
    gone = wait("sw-gone missing",
                    lambda: "missing" in (roles()[0].get("sw-gone", {}).get("conditions") or
                                          []), 20)
    check("file removed: missing after the re-read", gone, roles()[0].get("sw-gone"))

    # Reconcile: a dry run changes nothing; --apply re-creates the job from its template,
    # verifies it, records it in the ledger, and cron runs it again.
    with open(os.path.join(workdir, "sw-gone.cron"), "w") as f:
        f.write(ENTRIES["gone"])
    created_path = os.path.join(CRON_D, "schedwatch-sw-gone")
    reconcile = [args.exporter, "reconcile", "--config.file", spec,
                 "--refresh.confirm-delay", "200ms", "--lock-file",
                 os.path.join(workdir, "reconcile.lock")]
    dry = subprocess.run(reconcile, capture_output=True, text=True)
    check("reconcile dry run: would create, writes nothing, exit 1",
          re.search(r"^sw-gone +host-cron +missing +would create$", dry.stdout, re.M)
          and not os.path.exists(created_path) and dry.returncode == 1, dry.stdout + dry.stderr)
    ledger = os.path.join(workdir, "ledger.json")
    applied = subprocess.run(reconcile + ["--apply", "--ledger", ledger], capture_output=True,
                             text=True)
    check("reconcile --apply: created and verified",
          re.search(r"^sw-gone +host-cron +missing +created$", applied.stdout, re.M)
          and os.path.exists(created_path), applied.stdout + applied.stderr)
    check("reconcile --apply: duplicates, drift and inactive reported, not touched",
          re.search(r"^sw-dup .* skipped: duplicate$", applied.stdout, re.M)
          and re.search(r"^sw-drift .* skipped: drift$", applied.stdout, re.M)
          and re.search(r"^sw-off .* skipped: inactive, enable explicitly$", applied.stdout,
                        re.M)
          and open(os.path.join(CRON_D, PREFIX + "dup1")).read() == ENTRIES["dup1"],
          applied.stdout)
    recorded = json.load(open(ledger))["roles"].get("sw-gone", {})
    check("reconcile --apply: the ledger records the verified object",
          recorded.get("id") == created_path + ":2", recorded)
    runs_before = open(cron_log, errors="replace").read().count("/bin/true schedwatch-gone)")
    rerun = wait(
        "cron to run the re-created job",
        lambda: open(cron_log, errors="replace").read().count(
            "/bin/true schedwatch-gone)") > runs_before and
        "ok" in (roles()[0].get("sw-gone", {}).get("conditions") or []), 150)
    check("re-created job: cron runs it again and the exporter reports it ok", rerun,
          roles()[0].get("sw-gone"))
    metrics = exporter.metrics()
    check("metrics: errors counted by reason",
          'schedwatch_source_errors_total{reason="crontab_ignored",source="host-cron"}' in
          metrics, [l for l in metrics.splitlines() if "errors_total" in l])


if __name__ == "__main__":
    main()
