#!/usr/bin/python3
"""Debian's real cron and what a killed reconcile left: the job's cron.d file with two links
(its temporary's and its own), which cron refuses. The next `reconcile --apply` finishes it
and cron runs the job.

Cron runs in a mount namespace of its own (tmpfs over /etc/cron.d, the crontab spool and /run,
an empty /etc/crontab), so the host's jobs do not run and the host's cron.d is not touched; it
runs under another command name, so that it is not taken for the host's cron by other tests.
Prints 'N passed, N failed'.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from schedwatch_test import (check, fail_setup, finish, require_tools,  # noqa: E402
                             temporary_directory, wait_for)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exporter", required=True)
    args = parser.parse_args()
    require_tools("unshare", "nsenter")
    if os.geteuid() != 0:
        fail_setup("must run as root: it starts cron (CI runs as root)")
    cron = shutil.which("cron") or "/usr/sbin/cron"
    if not os.path.exists(cron):
        fail_setup("Debian's cron must be installed (apt-get install cron)")
    with temporary_directory("schedwatch-reconcile-cron-", keep_on_failure=True) as workdir:
        ran = os.path.join(workdir, "ran")
        template = os.path.join(workdir, "rec.cron")
        text = f"# schedwatch: role=rec spec_version=1\n* * * * * root touch {ran}\n"
        with open(template, "w") as out:
            out.write(text)
        empty_log = os.path.join(workdir, "syslog")
        open(empty_log, "w").close()
        spec = os.path.join(workdir, "spec.yaml")
        with open(spec, "w") as out:
            out.write(f"""version: 1
sources:
  host: {{type: crontab, paths: [/etc/cron.d], syslog: {empty_log}}}
jobs:
  - {{role: rec, source: host, schedule: "* * * * *", spec_version: "1", template: {template}}}
""")
        named = os.path.join(workdir, "sw-reconcile-cron")
        os.symlink(cron, named)
        crontab = os.path.join(workdir, "crontab")
        open(crontab, "w").close()
        # What a kill between link and unlink left (as older versions' crash did), there when
        # cron starts: it refuses the file.
        daemon = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c",
             "mount -t tmpfs -o mode=0755 none /etc/cron.d && "
             "mount -t tmpfs -o mode=0730 none /var/spool/cron/crontabs && "
             "mount -t tmpfs -o mode=0755 none /run && "
             f"mount --bind {crontab} /etc/crontab && "
             f"cp {template} /etc/cron.d/schedwatch-rec && chmod 0644 /etc/cron.d/schedwatch-rec && "
             "ln /etc/cron.d/schedwatch-rec /etc/cron.d/.schedwatch-rec.4242.1.tmp && "
             f"exec {named} -f -L 0"])
        try:
            inside = ["nsenter", "-t", str(daemon.pid), "-m"]

            def cron_started():
                try:
                    with open(f"/proc/{daemon.pid}/comm") as source:
                        return source.read().strip() == "sw-reconcile-cr"  # 15 characters
                except OSError:
                    return False

            if not check("cron started in its own mount namespace",
                         wait_for(cron_started, 15, "cron")):
                finish()
            # cron runs a job at each minute: one minute passes with the two links, 5 s for cron
            # to have started the job if it took the file.
            minute = int(time.time()) // 60
            wait_for(lambda: time.time() >= (minute + 1) * 60 + 5, 70, "the next minute + 5 s")
            check("cron refuses the file with two links (the job did not run)",
                  not os.path.exists(ran))
            reconcile = inside + [os.path.abspath(args.exporter), "reconcile", "--config.file",
                                  spec, "--apply", "--refresh.confirm-delay", "10ms",
                                  "--lock-file", os.path.join(workdir, "reconcile.lock")]
            run = subprocess.run(reconcile, capture_output=True, text=True, timeout=60)
            check("reconcile --apply finishes the interrupted create: created, exit 0",
                  run.returncode == 0 and " created" in run.stdout, run.stdout + run.stderr)
            listing = subprocess.run(inside + ["ls", "-A", "/etc/cron.d"], capture_output=True,
                                     text=True).stdout.split()
            check("cron.d holds the job's file alone", listing == ["schedwatch-rec"], listing)
            # cron reads cron.d again at the next minute (its mtime changed) and runs the job.
            check("cron runs the job", wait_for(lambda: os.path.exists(ran), 150,
                                                "the job to run", interval=1))
        finally:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(timeout=10)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
    finish()


if __name__ == "__main__":
    main()
