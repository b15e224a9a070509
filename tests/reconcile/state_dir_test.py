#!/usr/bin/python3
"""The real `reconcile --apply` on a first run: its state directory (the lock's and the
ledger's) is missing. Under a trusted parent it is made, mode 0700, and the job created; on a
read-only file system (a tmpfs remounted read-only in a mount namespace of its own) nothing is
made, the row says why and the one `install -d` command, and after that command the same run
succeeds. Prints 'N passed, N failed'.
"""
import argparse
import os
import stat
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
sys.path.insert(0, HERE)
from reconcile_crash_test import NAME, Host  # noqa: E402
from schedwatch_test import check, finish, require_tools, temporary_directory  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exporter", required=True)
    args = parser.parse_args()
    require_tools("unshare")
    with temporary_directory("schedwatch-state-dir-") as workdir:
        host = Host(args.exporter, workdir)
        state = os.path.join(workdir, "fresh", "schedwatch")
        os.makedirs(os.path.dirname(state), mode=0o755)
        host.lock = os.path.join(state, "reconcile.lock")
        host.ledger = os.path.join(state, "ledger.json")
        code, out, err = host.reconcile()
        mode = stat.S_IMODE(os.lstat(state).st_mode) if os.path.isdir(state) else None
        check("first run: the state directory is made, mode 0700, the job created, exit 0",
              code == 0 and mode == 0o700 and host.action(out) == "created" and
              os.path.exists(host.ledger), (code, oct(mode or 0), out, err))

        os.unlink(os.path.join(host.cron_d, NAME))
        readonly = os.path.join(workdir, "ro")
        os.mkdir(readonly, 0o755)
        host.lock = os.path.join(readonly, "schedwatch", "reconcile.lock")
        host.ledger = os.path.join(readonly, "schedwatch", "ledger.json")
        command = " ".join(f"'{part}'" for part in host.command())
        script = f"""
mount -t tmpfs -o mode=0755 none {readonly} && mount -o remount,ro {readonly} || exit 99
{command}; echo "read-only: exit $?"
mount -o remount,rw {readonly}
{command}; echo "writable: exit $?"
"""
        run = subprocess.run(["unshare", "-rm", "sh", "-c", script], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=120)
        action = host.action(run.stdout) or ""
        check("read-only file system: the row says why and the one command, exit 1",
              "Read-only file system" in run.stdout and "install -d -m 0700 " in run.stdout and
              "read-only: exit 1" in run.stdout, run.stdout)
        check("then writable: the state directory is made and the job created, exit 0",
              "writable: exit 0" in run.stdout and "created" in run.stdout, (action, run.stdout))
    return finish()


if __name__ == "__main__":
    sys.exit(main())
