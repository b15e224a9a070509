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
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "sources", "crontab"))
import real_cron_test as rc  # noqa: E402  (check, wait_for, stop, running, dev_log_owner)

CRON_D = "/etc/cron.d"
PREFIX = "schedwatch-test-run-"
check = rc.check


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
    rc.DEADLINE = time.monotonic() + 200
    run = os.path.realpath(args.run)

    if os.geteuid() != 0:
        rc.fail_setup("must run as root: it starts cron and writes /etc/cron.d (CI runs as root)")
    cron = shutil.which("cron") or "/usr/sbin/cron"
    rsyslogd = shutil.which("rsyslogd") or "/usr/sbin/rsyslogd"
    if not os.path.exists(cron) or not os.path.exists(rsyslogd):
        rc.fail_setup("Debian's cron and rsyslog must be installed (apt-get install cron rsyslog)")
    if rc.running("cron"):
        rc.fail_setup(f"cron is already running (pid {rc.running('cron')}); stop it first")
    if rc.dev_log_owner():
        rc.fail_setup(f"/dev/log is {rc.dev_log_owner()}; this test needs it for its own rsyslogd")
    if glob.glob(os.path.join(CRON_D, "schedwatch-test-*")):
        rc.fail_setup(f"{CRON_D}/schedwatch-test-* exist: another test? remove them first")

    workdir = tempfile.mkdtemp(prefix="schedwatch-runcron-")
    os.chmod(workdir, 0o755)
    cron_log = os.path.join(workdir, "cron.log")
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
    conf = os.path.join(workdir, "rsyslog.conf")
    with open(conf, "w") as f:
        f.write(f'global(workDirectory="{workdir}")\nmodule(load="imuxsock")\n'
                f'cron.* action(type="omfile" file="{cron_log}")\n')
    had_reboot_flag = os.path.exists("/run/crond.reboot")
    stale_socket = os.path.exists("/dev/log")
    rsyslog = cron_process = exporter = None
    exporter_log = open(os.path.join(workdir, "exporter.log"), "w+")

    def records(role):
        found = []
        for path in sorted(glob.glob(os.path.join(runs, role, "*.json"))):
            try:
                with open(path) as f:
                    found.append(json.load(f))
            except (OSError, ValueError):
                pass
        return found

    try:
        if stale_socket:
            os.remove("/dev/log")
        rsyslog = subprocess.Popen([rsyslogd, "-n", "-f", conf, "-i",
                                    os.path.join(workdir, "rsyslogd.pid")])

        def probe_logged():
            subprocess.run(["logger", "-p", "cron.info", "-t", "schedwatch-probe", "probe"],
                           stderr=subprocess.DEVNULL)
            return os.path.exists(cron_log) and "schedwatch-probe" in open(cron_log).read()

        if not rc.wait_for("rsyslogd", probe_logged, 15):
            rc.fail_setup("rsyslogd did not write facility cron to " + cron_log)
        for name, text in entries.items():
            path = os.path.join(CRON_D, PREFIX + name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o644)
        cron_process = subprocess.Popen([cron, "-f", "-L", args.log_level])
        exporter = subprocess.Popen(
            [args.exporter, "--config.file", spec, "--web.listen-address", "127.0.0.1:0",
             "--refresh.interval", "1s", "--refresh.confirm-delay", "200ms"],
            stdout=exporter_log, stderr=exporter_log)

        def port():
            exporter_log.seek(0)
            match = re.search(r"msg=listening .*port=(\d+)", exporter_log.read())
            return match and int(match.group(1))

        if not rc.wait_for("the exporter", port, 15):
            rc.fail_setup("exporter did not start")
        base = f"http://127.0.0.1:{port()}"

        def roles():
            try:
                with urllib.request.urlopen(base + "/api/v1/status", timeout=10) as r:
                    return {x["role"]: x for x in json.loads(r.read())["roles"]}
            except OSError:
                return {}

        def metrics():
            with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
                return r.read().decode()

        # First fire time: the wrappers start; kill the sw-cmdkill command and the sw-kill wrapper.
        def started():
            wrapper = processes(run, b"sw-kill")
            command = [c for w in processes(run, b"sw-cmdkill") for c in children(w)]
            return wrapper and command and (wrapper, command)

        found = rc.wait_for("the first fire time", started, 75)
        if not found:
            rc.fail_setup("cron did not start the wrapped jobs within a minute")
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

        done = rc.wait_for("the first runs to end", first_done, 20) or ([], [])
        states = sorted(r["state"] for r in records("sw-run"))
        check("two entries of one role at one fire time: one ran, one skipped",
              states == ["finished", "skipped"], records("sw-run"))
        check("the wrapper's exit status reaches cron (skipped copy: 200)",
              args.log_level != "15" or rc.wait_for(
                  "cron's error line", lambda: "failed with exit status 200" in
                  open(cron_log, errors="replace").read(), 10),
              open(cron_log, errors="replace").read()[-1500:])
        check("the killed command: recorded signal 9",
              done[1] and done[1][0].get("signal") == 9, records("sw-cmdkill"))
        check("the killed wrapper: its command went with it",
              rc.wait_for("the orphan to go", lambda: all(
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
        seen = rc.wait_for("the exporter to read the records", reported, 10) or {}
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
        cmdkill = rc.wait_for("sw-cmdkill failing", lambda: "failing" in roles().get(
            "sw-cmdkill", {}).get("conditions", []) and roles()["sw-cmdkill"], 10)
        check("exporter: killed command is failing, exit 137",
              cmdkill and cmdkill.get("last_exit_code") == 137, roles().get("sw-cmdkill"))
        killed = roles().get("sw-kill", {})
        check("exporter: killed wrapper's run is running",
              killed.get("running_since") == int(records("sw-kill")[0]["start"]), killed)
        hung = rc.wait_for("sw-kill hung after max_runtime", lambda: "hung" in roles().get(
            "sw-kill", {}).get("conditions", []), first_fire + 40 - time.time())
        check("exporter: ... and hung once max_runtime (20s) passed", hung, roles().get("sw-kill"))

        # Next fire time: no stuck guard; the killed run is over.
        def second():
            states = [r["state"] for r in records("sw-kill")]
            return states.count("finished") == 1 and len(records("sw-run")) >= 4
        check("next fire time: the killed wrapper's role runs again (no stuck lock)",
              rc.wait_for("the second fire time", second, first_fire + 80 - time.time()),
              records("sw-kill"))
        after = rc.wait_for("sw-kill cleared", lambda: (lambda r: r.get("last_success") and
                                                        r.get("running_since") is None and r)(
            roles().get("sw-kill", {})), 10) or {}
        check("exporter: the killed run counts as failed, the new one succeeded, not hung",
              after.get("last_failure") and after.get("last_success") and
              "hung" not in after.get("conditions", []), after)
        states = rc.wait_for("the second sw-run to end", lambda: (lambda s: s.count(
            "finished") == 2 and s)(sorted(r["state"] for r in records("sw-run"))), 10)
        check("second fire time: again one ran, one skipped",
              states and states.count("skipped") == 2, records("sw-run"))
        log = open(cron_log, errors="replace").read()
        if args.log_level == "1":
            check("-L 1: cron logged starts only (no END lines)",
                  "CMD (" in log and " END (" not in log, log[-1500:])
        else:
            check("-L 15: cron logged CMD and END with PIDs",
                  re.search(r"CMD \(\[\d+\] ", log) and re.search(r"END \(\[\d+\] ", log),
                  log[-1500:])
    finally:
        rc.stop(exporter, "exporter")
        rc.stop(cron_process, "cron")
        rc.stop(rsyslog, "rsyslogd")
        for path in glob.glob(os.path.join(CRON_D, PREFIX + "*")):
            os.remove(path)
        for pid in processes(run, b"--role"):
            os.kill(pid, signal.SIGKILL)
        # cron runs each job in a child of its own (also named cron) that waits for the job: the
        # next real-cron test refuses to start while one is left, so wait for them to end. Any
        # cron here is this test's: it refused to start beside another one.
        until = time.monotonic() + 20
        while rc.running("cron") and time.monotonic() < until:
            if time.monotonic() > until - 10:  # still there after 10 s: end them
                for pid in rc.running("cron"):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            time.sleep(0.1)
        if not had_reboot_flag and os.path.exists("/run/crond.reboot"):
            os.remove("/run/crond.reboot")
        if rc.RESULTS["failed"]:
            exporter_log.seek(0)
            print("--- exporter log ---\n" + exporter_log.read()[-3000:])
            if os.path.exists(cron_log):
                print("--- cron log ---\n" + open(cron_log, errors="replace").read()[-3000:])
        exporter_log.close()
        shutil.rmtree(workdir, ignore_errors=True)
    rc.finish()


if __name__ == "__main__":
    main()
