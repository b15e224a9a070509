#!/usr/bin/python3
"""schedwatch_run end to end on this host (flock guard), and the real exporter reading its records.

The command gets its arguments unchanged (no shell), its output is not swallowed, its exit status
and a signal's 128+N come back; SIGTERM, SIGINT and SIGHUP reach it and the wrapper waits for it;
a copy that finds the lock held records a skipped duplicate and exits 200; kill -9 of the
command is a recorded failure, kill -9 of the wrapper takes the command along and leaves the lock
free and a "running" record. A lock directory that cannot be made is a guard error: run (the
default, recorded) or skip (201). Then schedwatch_exporter, with `runs_dir:` on a file source,
reports exact history, duration, exit code, guarded, the prevented-duplicates counter,
`hung` for a run started and never finished past max_runtime, and counts a bad record
(bad_run_record) without stopping. Prints 'N passed, N failed'.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from schedwatch_test import (Exporter, check, run_in_temporary_directory, run_records,  # noqa: E402
                             wait_for)


def main():
    return run_in_temporary_directory("schedwatch-run-", run, "--run", "--exporter")


def run(args, workdir):
    locks, runs = os.path.join(workdir, "locks"), os.path.join(workdir, "runs")
    exporter = None

    def wrapper(role, command, *extra, **popen):
        return subprocess.Popen([args.run, "--role", role, "--lock-dir", locks, "--record-dir",
                                 runs, *extra, "--", *command], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, **popen)

    def records(role):
        return run_records(runs, role)

    try:
        # Arguments unchanged, no shell; output passes through; the exit status is kept.
        p = wrapper("args", ["/usr/bin/printf", "%s|", "a b", "$HOME", "*", "'q'"])
        out, err = p.communicate(timeout=20)
        check("arguments reach the command unchanged (no shell)",
              out == "a b|$HOME|*|'q'|" and p.returncode == 0, (out, err))
        p = wrapper("status", ["/bin/sh", "-c", "echo to-out; echo to-err >&2; exit 7"])
        out, err = p.communicate(timeout=20)
        check("stdout and stderr pass through; exit status 7 kept",
              out == "to-out\n" and "to-err" in err and p.returncode == 7, (out, err, p.returncode))
        last = records("status")[-1]
        check("record: role, host, pid, start, end, duration, exit status",
              last["state"] == "finished" and last["exit_code"] == 7 and last["host"] and
              last["pid"] == p.pid and last["end"] >= last["start"] and
              abs(last["duration_seconds"] - (last["end"] - last["start"])) < 1e-5, last)
        p = wrapper("checkpoint", ["/bin/sh", "-c", 'echo "$SCHEDWATCH_CHECKPOINT_FILE"'])
        out, _ = p.communicate(timeout=20)
        check("SCHEDWATCH_CHECKPOINT_FILE names the role's checkpoint file",
              out.strip() == os.path.join(runs, "checkpoint", "checkpoint"), out)
        p = wrapper("missing", ["/no/such/command"])
        _, err = p.communicate(timeout=20)
        check("a command that cannot be run: 127, as shells say", p.returncode == 127 and
              "No such file" in err and records("missing")[-1]["exit_code"] == 127, err)

        # Signals are passed on and waited for; a signal's death is 128+N.
        for name, number in (("SIGTERM", signal.SIGTERM), ("SIGINT", signal.SIGINT),
                             ("SIGHUP", signal.SIGHUP)):
            p = wrapper("signals", ["/bin/sh", "-c", f"trap 'echo got-{name}; exit 42' {name[3:]}; "
                                    "echo ready; while :; do sleep 0.05; done"])
            ready = p.stdout.readline()
            p.send_signal(number)
            out, _ = p.communicate(timeout=20)
            check(f"{name} reaches the command, which exits its own way (42)",
                  ready == "ready\n" and f"got-{name}" in out and p.returncode == 42,
                  (ready, out, p.returncode))
        p = wrapper("signals", ["/bin/sleep", "30"])
        wait_for(lambda: len(records("signals")) == 4, 5, "the four signal records")
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=20)
        check("a command killed by SIGTERM: exit 143, recorded as signal 15",
              p.returncode == 143 and records("signals")[-1].get("signal") == 15,
              (p.returncode, records("signals")[-1]))

        # The guard: a second copy does not run.
        holder = wrapper("dup", ["/bin/sleep", "2"])
        wait_for(lambda: records("dup"), 5, "the first copy's record")
        second = wrapper("dup", ["/bin/echo", "second"])
        out, err = second.communicate(timeout=20)
        check("a second copy while the first runs: not run, exit 200",
              second.returncode == 200 and out == "" and "skipped" in err, (out, err))
        holder.communicate(timeout=20)
        states = sorted(r["state"] for r in records("dup"))
        check("records: one finished, one skipped (held_by names the holder)",
              states == ["finished", "skipped"] and
              [r for r in records("dup") if r["state"] == "skipped"][0]["held_by"] ==
              f"{os.uname().nodename}_{holder.pid}", records("dup"))
        third = wrapper("dup", ["/bin/true"])
        third.communicate(timeout=20)
        check("after the first ends, the next copy runs", third.returncode == 0)

        # kill -9 of the command: a recorded failure; of the wrapper: command gone, lock free.
        p = wrapper("crash", ["/bin/sh", "-c", "echo $$; exec sleep 30"])
        child = int(p.stdout.readline())
        os.kill(child, signal.SIGKILL)
        p.communicate(timeout=20)
        check("command killed -9: exit 137, recorded signal 9",
              p.returncode == 137 and records("crash")[-1].get("signal") == 9, records("crash"))
        p = wrapper("crash", ["/bin/sh", "-c", "echo $$; exec sleep 30"])
        child = int(p.stdout.readline())
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=20)
        check("wrapper killed -9: its command is killed with it",
              wait_for(lambda: not os.path.exists(f"/proc/{child}") or
                       open(f"/proc/{child}/stat").read().split()[2] == "Z", 5,
                       "the command to die with its wrapper"), child)
        check("wrapper killed -9: the record shows started, never finished",
              records("crash")[-1]["state"] == "running", records("crash")[-1])
        p = wrapper("crash", ["/bin/true"])
        p.communicate(timeout=20)
        check("wrapper killed -9: the lock is free, the next copy runs", p.returncode == 0)

        # Fail safe: a lock directory that cannot be made.
        blocker = os.path.join(workdir, "not-a-dir")
        open(blocker, "w").close()
        p = subprocess.run([args.run, "--role", "fs", "--lock-dir", blocker + "/locks",
                            "--record-dir", runs, "--", "/bin/echo", "ran"],
                           capture_output=True, text=True, timeout=20)
        check("guard error, default run: runs, says so, records guard_error",
              p.returncode == 0 and p.stdout == "ran\n" and "guard error" in p.stderr and
              "guard_error" in records("fs")[-1], (p.stderr, records("fs")))
        p = subprocess.run([args.run, "--role", "fs", "--lock-dir", blocker + "/locks",
                            "--record-dir", runs, "--on-guard-error", "skip", "--", "/bin/echo",
                            "ran"], capture_output=True, text=True, timeout=20)
        check("guard error, --on-guard-error=skip: exit 201, not run, recorded not_run",
              p.returncode == 201 and p.stdout == "" and records("fs")[-1]["state"] == "not_run",
              (p.returncode, p.stderr))
        p = subprocess.run([args.run, "--role", "fs", "--lock-dir", locks, "--record-dir",
                            blocker + "/runs", "--on-guard-error", "skip", "--", "/bin/echo",
                            "ran"], capture_output=True, text=True, timeout=20)
        check("record cannot be written, skip: exit 201, not run, said on stderr",
              p.returncode == 201 and p.stdout == "" and "cannot record" in p.stderr, p.stderr)

        # The exporter reads the records (file source with runs_dir).
        for role in ("dup", "crash", "hang"):
            shutil.copytree(os.path.join(runs, role), os.path.join(workdir, "exp", role),
                            dirs_exist_ok=True) if os.path.isdir(os.path.join(runs, role)) else None
        hang = {"format": 1, "role": "hang", "state": "running", "host": "h", "pid": 99,
                "start": time.time() - 600, "guard": "flock"}
        os.makedirs(os.path.join(workdir, "exp", "hang"), exist_ok=True)
        with open(os.path.join(workdir, "exp", "hang", "00000000000000000001-99.json"), "w") as f:
            json.dump(hang, f)
        with open(os.path.join(workdir, "exp", "hang", "00000000000000000002-99.json"), "w") as f:
            f.write('{"format": 1, "role": "hang", "state": "fin')  # torn by hand
        with open(os.path.join(workdir, "live.yaml"), "w") as f:
            f.write("objects:\n" + "".join(
                f"  - {{id: {r}, role: {r}, schedule: '* * * * *', spec_version: '1'}}\n"
                for r in ("dup", "crash", "hang")) +
                "  - {id: dup2, role: dup, schedule: '* * * * *', spec_version: '1'}\n")
        with open(os.path.join(workdir, "spec.yaml"), "w") as f:
            f.write("version: 1\nsources:\n  host: {type: file, path: live.yaml, runs_dir: exp}\n"
                    "jobs:\n" + "".join(
                        f"  - {{role: {r}, source: host, schedule: '* * * * *', spec_version: "
                        f"'1', max_runtime: 5m}}\n" for r in ("dup", "crash", "hang")))
        exporter = Exporter(args.exporter, os.path.join(workdir, "spec.yaml"), workdir)

        def status():
            data = exporter.status()
            return data if data and data["roles"] and data["roles"][0]["last_started"] else None

        data = wait_for(status, 15, "the records' history on /api/v1/status") or {
            "roles": [], "sources": [{}]}
        roles = {r["role"]: r for r in data["roles"]}
        dup = roles.get("dup", {})
        finished = [r for r in records("dup") if r["state"] == "finished"]
        check("exporter: exact start and end of the latest run from the record",
              finished and dup.get("last_started") == int(finished[-1]["start"]) and
              dup.get("last_success") == int(finished[-1]["end"]), (dup, finished))
        check("exporter: duplicate, and guarded (the guard holds the copies apart)",
              "duplicate" in dup.get("conditions", []) and dup.get("guarded") is True and
              dup.get("skipped_duplicates") == 1, dup)
        crash = roles.get("crash", {})
        check("exporter: the run whose wrapper was killed is failed once the next one ran",
              crash.get("last_exit_code") == 0 and crash.get("running_since") is None and
              crash.get("last_failure"), crash)
        check("exporter: started, never finished, past max_runtime: hung",
              "hung" in roles.get("hang", {}).get("conditions", []), roles.get("hang"))
        metrics = exporter.metrics()
        check("metrics: prevented duplicates counted per role",
              'schedwatch_job_duplicate_runs_prevented_total{role="dup",source="host"} 1' in
              metrics, [l for l in metrics.splitlines() if "prevented" in l])
        check("metrics: last duration, exit code and guarded",
              f'schedwatch_job_last_duration_seconds{{role="dup",source="host"}} '
              f'{finished[-1]["duration_seconds"]}\n' in metrics and
              'schedwatch_job_last_exit_code{role="crash",source="host"} 0' in metrics and
              'schedwatch_job_guarded{role="dup",source="host"} 1' in metrics,
              ([l for l in metrics.splitlines() if "duration" in l or "exit" in l or "guarded" in l], finished[-1]))
        check("metrics: the torn record counted once as bad_run_record",
              'schedwatch_source_errors_total{reason="bad_run_record",source="host"} 1' in
              metrics, [l for l in metrics.splitlines() if "errors_total" in l])
        # The counters above are cumulative: later refreshes must not recount.
        cycle = re.compile(r"schedwatch_exporter_last_cycle_timestamp_seconds (\d+)")
        again = wait_for(lambda: int(cycle.search(exporter.metrics()).group(1)) >
                         int(cycle.search(metrics).group(1)), 5, "a later refresh")
        later = exporter.metrics()
        check("a later refresh counts neither again",
              again and 'prevented_total{role="dup",source="host"} 1' in later and
              'errors_total{reason="bad_run_record",source="host"} 1' in later)
    finally:
        if exporter:
            exporter.stop()


if __name__ == "__main__":
    sys.exit(main())
