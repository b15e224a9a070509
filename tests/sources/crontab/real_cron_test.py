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
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
CRON_D = "/etc/cron.d"
PREFIX = "schedwatch-test-"
RESULTS = {"passed": 0, "failed": 0}
DEADLINE = time.monotonic() + 200  # the whole test, waits included


def check(name, condition, detail=""):
    RESULTS["passed" if condition else "failed"] += 1
    print(("ok   " if condition else "FAIL ") + name + ("" if condition or detail == "" else
                                                     f"  {detail}"))
    return condition


def fail_setup(message):
    check("setup: " + message, False)
    finish()


def finish():
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    sys.exit(1 if RESULTS["failed"] else 0)


def wait_for(what, predicate, seconds):
    """Polls predicate (bounded by `seconds` and the test's deadline); returns its last value."""
    until = min(time.monotonic() + seconds, DEADLINE)
    while True:
        value = predicate()
        if value or time.monotonic() >= until:
            if not value:
                print(f"note: gave up waiting for {what}")
            return value
        time.sleep(0.5)


def running(name):
    """PIDs of processes whose command name is `name`."""
    pids = []
    for comm in glob.glob("/proc/[0-9]*/comm"):
        try:
            with open(comm) as f:
                if f.read().strip() == name:
                    pids.append(int(comm.split("/")[2]))
        except OSError:
            pass
    return pids


def dev_log_owner():
    """'' when /dev/log is free (absent, or a stale socket nobody listens on), else a description."""
    if not os.path.exists("/dev/log"):
        return ""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        probe.connect("/dev/log")
        return "a live syslog socket (journald or another syslog daemon listens on it)"
    except OSError:
        return ""
    finally:
        probe.close()


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


def stop(process, name):
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        print(f"note: {name} ignored SIGTERM; killing it")
        process.kill()
        process.wait(timeout=10)


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    args = parser.parse_args()

    if os.geteuid() != 0:
        fail_setup("must run as root: it starts cron and writes /etc/cron.d (CI runs as root)")
    cron = shutil.which("cron") or ("/usr/sbin/cron" if os.path.exists("/usr/sbin/cron") else None)
    rsyslogd = shutil.which("rsyslogd") or (
        "/usr/sbin/rsyslogd" if os.path.exists("/usr/sbin/rsyslogd") else None)
    if not cron or not rsyslogd:
        fail_setup("Debian's cron and rsyslog must be installed (apt-get install cron rsyslog)")
    if running("cron"):
        fail_setup(f"cron is already running (pid {running('cron')}); stop it first: this test "
                   "starts its own with -L 15")
    owner = dev_log_owner()
    if owner:
        fail_setup(f"/dev/log is {owner}; this test needs it for its own rsyslogd")
    if glob.glob(os.path.join(CRON_D, PREFIX + "*")):
        fail_setup(f"{CRON_D}/{PREFIX}* exist: another run of this test? remove them first")

    workdir = tempfile.mkdtemp(prefix="schedwatch-cron-")
    os.chmod(workdir, 0o755)
    cron_log = os.path.join(workdir, "cron.log")
    spec = os.path.join(workdir, "spec.yaml")
    shutil.copy(os.path.join(HERE, "real_cron_spec.yaml"), spec)
    conf = os.path.join(workdir, "rsyslog.conf")
    with open(conf, "w") as f:
        f.write(f'global(workDirectory="{workdir}")\n'
                'module(load="imuxsock")\n'
                f'cron.* action(type="omfile" file="{cron_log}")\n')
    had_reboot_flag = os.path.exists("/run/crond.reboot")
    stale_socket = os.path.exists("/dev/log")
    rsyslog = cron_process = exporter = None
    exporter_log = open(os.path.join(workdir, "exporter.log"), "w+")
    try:
        if stale_socket:
            os.remove("/dev/log")  # nobody listens on it (checked above)
        rsyslog = subprocess.Popen([rsyslogd, "-n", "-f", conf, "-i",
                                    os.path.join(workdir, "rsyslogd.pid")])

        def probe_logged():
            subprocess.run(["logger", "-p", "cron.info", "-t", "schedwatch-probe", "probe"],
                           stderr=subprocess.DEVNULL)
            return os.path.exists(cron_log) and "schedwatch-probe" in open(cron_log).read()

        if not wait_for("rsyslogd", probe_logged, 15):
            fail_setup("rsyslogd did not write facility cron to " + cron_log)

        install_entries()
        cron_process = subprocess.Popen([cron, "-f", "-L", "15"])
        exporter = subprocess.Popen(
            [args.exporter, "--config.file", spec, "--web.listen-address", "127.0.0.1:0",
             "--refresh.interval", "2s", "--refresh.confirm-delay", "200ms"],
            stdout=exporter_log, stderr=exporter_log)

        def port():
            exporter_log.seek(0)
            match = re.search(r"msg=listening .*port=(\d+)", exporter_log.read())
            return match and int(match.group(1))

        if not wait_for("the exporter", port, 15):
            exporter_log.seek(0)
            fail_setup("exporter did not start: " + exporter_log.read())
        base = f"http://127.0.0.1:{port()}"

        def roles():
            try:
                status = get_json(base + "/api/v1/status")
            except OSError:
                return {}, {}
            return {r["role"]: r for r in status["roles"]}, (status["sources"] or [{}])[0]

        # Real runs at the next minute boundary, seen by the exporter in cron's log lines.
        def ran():
            by_role, _ = roles()
            return (by_role.get("sw-ok", {}).get("last_success") and
                    by_role.get("sw-fail", {}).get("last_failure") and by_role)

        by_role = wait_for("runs at a minute boundary", ran, 130)
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
        gone = wait_for("sw-gone missing",
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
        rerun = wait_for(
            "cron to run the re-created job",
            lambda: open(cron_log, errors="replace").read().count(
                "/bin/true schedwatch-gone)") > runs_before and
            "ok" in (roles()[0].get("sw-gone", {}).get("conditions") or []), 150)
        check("re-created job: cron runs it again and the exporter reports it ok", rerun,
              roles()[0].get("sw-gone"))
        with urllib.request.urlopen(base + "/metrics", timeout=10) as response:
            metrics = response.read().decode()
        check("metrics: errors counted by reason",
              'schedwatch_source_errors_total{reason="crontab_ignored",source="host-cron"}' in
              metrics, [l for l in metrics.splitlines() if "errors_total" in l])
    finally:
        stop(exporter, "exporter")
        stop(cron_process, "cron")
        stop(rsyslog, "rsyslogd")
        remove_entries()
        if os.path.exists(os.path.join(CRON_D, "schedwatch-sw-gone")):
            os.remove(os.path.join(CRON_D, "schedwatch-sw-gone"))
        if not had_reboot_flag and os.path.exists("/run/crond.reboot"):
            os.remove("/run/crond.reboot")
        exporter_log.seek(0)
        if RESULTS["failed"]:
            print("--- exporter log ---\n" + exporter_log.read()[-4000:])
            if os.path.exists(cron_log):
                print("--- cron log ---\n" + open(cron_log, errors="replace").read()[-4000:])
        exporter_log.close()
        shutil.rmtree(workdir, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
