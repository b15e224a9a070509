#!/usr/bin/python3
"""Files a job's user controls, attacked by a real second local user (needs root).

1. The job user links its checkpoint (progress.file) and a `file` snapshot to root-only files:
   no byte of them reaches /, /api/v1/status, /metrics or the log; each is a problem that
   names the link and its owner.
2. In a shared record directory the job user links `<record-dir>/<role>` to another directory:
   root's schedwatch_run writes nothing there and prunes nothing (150 files stay); a role
   directory the user made is refused; a lock file the user made and holds is a guard error,
   never a silent skip.
3. On a real full tmpfs, a run that started and exits 3 is still recorded (its reserved
   record), the exporter says `failing` with exit code 3 and runs_dir_full; a run with no
   room at all exits 202 instead of passing for a success.
Prints 'N passed, N failed'.
"""
import argparse
import json
import os
import pwd
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from schedwatch_test import (Exporter, check, fail_setup, finish, run_records,  # noqa: E402
                             temporary_directory, wait_for, write_text)

USER = "sw-job-attacker"
SECRET = "ghp_SECRETTOKEN0123456789abcdef"


def as_user(*command):
    return subprocess.run(["runuser", "-u", USER, "--", *command], capture_output=True,
                          text=True, timeout=30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--run", required=True)
    args = parser.parse_args()
    if os.geteuid() != 0:
        fail_setup("needs root (it adds a user and mounts a tmpfs)")
    created = False
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                        USER], check=True)
        created = True
    uid = pwd.getpwnam(USER).pw_uid
    try:
        with temporary_directory("schedwatch-jobfiles-") as workdir:
            os.chmod(workdir, 0o755)
            leaks(args, workdir, uid)
            record_dir(args, workdir, uid)
            full_disk(args, workdir)
    finally:
        if created:
            subprocess.run(["userdel", USER])
    finish()


def leaks(args, workdir, uid):
    job = os.path.join(workdir, "job")
    os.mkdir(job)
    os.chown(job, uid, -1)
    secret = write_text(os.path.join(workdir, "secret"), SECRET + "\n")
    snapshot_secret = write_text(os.path.join(workdir, "secret.yaml"),
                                 f"objects: [{{id: {SECRET}, role: leak, schedule: '* * * * *'}}]\n")
    for path in (secret, snapshot_secret):
        os.chmod(path, 0o600)
    check("the job user cannot read the secret itself",
          as_user("cat", secret).returncode != 0)
    check("the job user plants its links",
          as_user("ln", "-s", secret, os.path.join(job, "ingest.checkpoint")).returncode == 0 and
          as_user("ln", "-s", snapshot_secret, os.path.join(job, "snapshot.yaml")).returncode == 0)
    write_text(os.path.join(workdir, "live.yaml"),
               "objects: [{id: i, role: ingest, schedule: '*/10 * * * *', spec_version: '1'}]\n")
    spec = write_text(os.path.join(workdir, "spec.yaml"), f"""version: 1
sources:
  host: {{type: file, path: {workdir}/live.yaml}}
  jobsnap: {{type: file, path: {job}/snapshot.yaml}}
jobs:
  - role: ingest
    source: host
    schedule: "*/10 * * * *"
    spec_version: "1"
    progress: {{file: {job}/ingest.checkpoint, stale_after: 1h}}
  - {{role: leak, source: jobsnap, schedule: "* * * * *", spec_version: "1"}}
""")
    exporter = Exporter(args.exporter, spec, workdir)
    try:
        status, ok = exporter.wait_status(
            lambda s: any(p["reason"] == "bad_checkpoint" for src in s["sources"]
                          for p in src.get("problems", [])), what="the checkpoint problem")
        check("the planted checkpoint link is a bad_checkpoint problem naming its owner", ok and
              f"owned by uid {uid}" in json.dumps(status), json.dumps(status)[:2000])
        jobsnap = [s for s in status.get("sources", [])
                   if "jobsnap" in (s.get("name"), s.get("source"))]
        check("the planted snapshot link: the source is down, its role unknown, never missing",
              jobsnap and not jobsnap[0].get("up") and
              f"owned by uid {uid}" in jobsnap[0].get("error", "") and
              any(r["role"] == "leak" and r["conditions"] == ["unknown"]
                  for r in status["roles"]), (jobsnap, status.get("roles")))
        pages = {path: exporter.get(path).text
                 for path in ("/", "/api/v1/status", "/metrics", "/roles/ingest",
                              "/api/v1/roles/ingest")}
        pages["log"] = exporter.logs()
        for name, text in pages.items():
            check(f"no byte of the secret in {name}", "SECRETTOKEN" not in text,
                  text[text.find("SECRETTOKEN") - 200:][:400] if "SECRETTOKEN" in text else "")
    finally:
        exporter.stop()


def record_dir(args, workdir, uid):
    shared = os.path.join(workdir, "shared")
    runs, locks, victim = (os.path.join(shared, n) for n in ("runs", "locks", "victim"))
    for path in (runs, locks):
        os.makedirs(path)
        os.chmod(path, 0o1777)
    os.makedirs(victim)
    for i in range(150):
        write_text(os.path.join(victim, f"{i:020d}-1.json"), "{}")
    check("the job user links the role's record directory to another one",
          as_user("ln", "-s", victim, os.path.join(runs, "backup")).returncode == 0)

    def wrapper(role, *command, extra=()):
        return subprocess.run([args.run, "--role", role, "--record-dir", runs, "--lock-dir", locks,
                               "--keep", "5", *extra, "--", *command], capture_output=True,
                              text=True, timeout=30)

    p = wrapper("backup", "/bin/true")
    check("root's run writes and prunes nothing through the link (150 files stay)",
          len(os.listdir(victim)) == 150, len(os.listdir(victim)))
    check("and says so: exit 202, the link named on stderr", p.returncode == 202 and
          "not a directory" in p.stderr and "symbolic link" in p.stderr, (p.returncode, p.stderr))
    check("the job user makes a role directory of its own",
          as_user("mkdir", os.path.join(runs, "report")).returncode == 0)
    p = wrapper("report", "/bin/true")
    check("a role directory another user owns is refused", p.returncode == 202 and
          f"owned by uid {uid}" in p.stderr, (p.returncode, p.stderr))

    # A lock file the job user made and holds: a guard error, never "another copy holds it".
    lock = os.path.join(locks, "nightly.lock")
    holder = subprocess.Popen(["runuser", "-u", USER, "--", "flock", lock, "sleep", "60"],
                              start_new_session=True)
    try:
        wait_for(lambda: os.path.exists(lock), 10, "the job user's lock file")
        p = wrapper("nightly", "/bin/true")
        records = run_records(runs, "nightly")
        check("a stranger's lock file: the run is not skipped (not 200) and records a guard error",
              p.returncode == 0 and records and f"owned by uid {uid}" in
              records[-1].get("guard_error", ""), (p.returncode, p.stderr, records))
    finally:
        os.killpg(holder.pid, 9)
        holder.wait()
    target = write_text(os.path.join(shared, "precious"), "keep me\n")
    as_user("ln", "-s", target, os.path.join(locks, "linked.lock"))
    p = wrapper("linked", "/bin/true")
    check("a lock file linked elsewhere is not followed (the target is unchanged)",
          open(target).read() == "keep me\n" and "guard error" in p.stderr, p.stderr)


def full_disk(args, workdir):
    mount = os.path.join(workdir, "full")
    os.mkdir(mount)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mount], check=True)
    try:
        runs = os.path.join(mount, "runs")

        def wrapper(role, *command):
            return subprocess.run([args.run, "--role", role, "--record-dir", runs, "--guard",
                                   "none", "--", *command], capture_output=True, text=True,
                                  timeout=30)

        check("a first run on room to spare", wrapper("fill", "/bin/true").returncode == 0)
        # The failure must end in a later second than that success to be the latest outcome.
        first_end = run_records(runs, "fill")[-1]["end"]
        wait_for(lambda: int(time.time()) > int(first_end), 3, "the next second")
        # Fill the filesystem to the last block.
        try:
            with open(os.path.join(mount, "filler"), "wb", buffering=0) as f:
                while True:
                    f.write(b"x" * 4096)
        except OSError:
            pass
        p = wrapper("fill", "/bin/sh", "-c", "exit 3")
        records = run_records(runs, "fill")
        check("full: the run that exits 3 is recorded (in its reserved record), exit 3 kept",
              p.returncode == 3 and records and records[-1]["state"] == "finished" and
              records[-1]["exit_code"] == 3, (p.returncode, p.stderr, records))
        p = wrapper("fresh", "/bin/true")
        check("full, no reserve: a success that cannot be recorded exits 202, and says so",
              p.returncode == 202 and "not recorded" in p.stderr, (p.returncode, p.stderr))
        live = write_text(os.path.join(workdir, "full-live.yaml"), "objects: [" + ", ".join(
            f"{{id: {r}, role: {r}, schedule: '* * * * *', spec_version: '1'}}"
            for r in ("fill", "fresh")) + "]\n")
        spec = write_text(os.path.join(workdir, "full-spec.yaml"), f"""version: 1
sources: {{host: {{type: file, path: {live}, runs_dir: {runs}}}}}
jobs:
  - {{role: fill, source: host, schedule: "* * * * *", spec_version: "1"}}
  - {{role: fresh, source: host, schedule: "* * * * *", spec_version: "1"}}
""")
        exporter = Exporter(args.exporter, spec, workdir, name="full-exporter")
        try:
            status, ok = exporter.wait_status(
                lambda s: any(r["role"] == "fill" and r.get("last_exit_code") == 3
                              for r in s["roles"]), what="the recorded failure")
            fill = [r for r in status.get("roles", []) if r["role"] == "fill"]
            check("exporter: the run lost to a full disk is failing with exit code 3",
                  ok and fill and "failing" in fill[0]["conditions"], fill)
            metrics = exporter.metrics()
            check("exporter: runs_dir_full is a counted problem",
                  'reason="runs_dir_full",source="host"}' in metrics and
                  "runs_dir_full" in json.dumps(status),
                  [l for l in metrics.splitlines() if "errors_total" in l])
            check("metrics: last_exit_code 3", 'schedwatch_job_last_exit_code{role="fill",'
                  'source="host"} 3' in metrics)
        finally:
            exporter.stop()
    finally:
        subprocess.run(["umount", mount])


if __name__ == "__main__":
    main()
