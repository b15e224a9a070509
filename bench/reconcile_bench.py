#!/usr/bin/python3
"""Reconcile at scale, printing figures (no assertions).

  dry run: N roles of bench/gen_roles.py's file source (about 2% missing): wall time, peak RSS.
  apply:   N crontab roles, all missing, each with its template, on a host rooted in a temporary
           directory: every cron.d file written, then verified by shared re-lists.

  bench/reconcile_bench.py --exporter build/exporter/schedwatch_exporter [--roles 10000,50000]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time


def run(command):
    """Wall seconds, peak RSS in MiB, exit code and output of one child."""
    with tempfile.TemporaryFile() as output:
        started = time.monotonic()
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.monotonic() - started
        output.seek(0)
        return elapsed, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), \
            output.read().decode()


def dry_run(exporter, roles, workdir):
    directory = os.path.join(workdir, f"dry-{roles}")
    subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "gen_roles.py"),
                    "--roles", str(roles), "--out", directory], check=True,
                   stdout=subprocess.DEVNULL)
    seconds, rss, code, output = run([exporter, "reconcile", "--config.file",
                                      os.path.join(directory, "spec.yaml"),
                                      "--refresh.confirm-delay", "0s"])
    rows = output.count("\n") - 2
    would = output.count("would create")
    print(f"dry run  {roles:>7} roles: {seconds:6.2f} s, peak {rss:6.1f} MiB, {rows} rows, "
          f"{would} would create, exit {code}")


def apply(exporter, roles, workdir):
    directory = os.path.join(workdir, f"apply-{roles}")
    root = os.path.join(directory, "root")
    os.makedirs(os.path.join(root, "etc/cron.d"))
    os.makedirs(os.path.join(directory, "templates"))
    with open(os.path.join(root, "etc/passwd"), "w") as out:
        out.write("root:x:0:0:root:/root:/bin/sh\n")
    open(os.path.join(root, "syslog"), "w").close()
    lines = ["version: 1", "sources:",
             f"  host: {{type: crontab, root: {root}, paths: [/etc/cron.d], syslog: /syslog}}",
             "jobs:"]
    for i in range(roles):
        role = f"job-{i:05d}"
        schedule = f"{i % 60} * * * *"
        with open(os.path.join(directory, "templates", f"{role}.cron"), "w") as out:
            out.write(f"# schedwatch: role={role} spec_version=1\n"
                      f"{schedule} root /usr/local/bin/{role}\n")
        lines.append(f'  - {{role: {role}, source: host, schedule: "{schedule}", '
                     f'spec_version: "1", template: templates/{role}.cron}}')
    spec = os.path.join(directory, "spec.yaml")
    with open(spec, "w") as out:
        out.write("\n".join(lines) + "\n")
    seconds, rss, code, output = run([exporter, "reconcile", "--config.file", spec, "--apply",
                                      "--refresh.confirm-delay", "0s", "--lock-file",
                                      os.path.join(directory, "lock"), "--ledger",
                                      os.path.join(directory, "ledger.json")])
    created = sum(1 for line in output.splitlines() if line.rstrip().endswith("  created"))
    files = len(os.listdir(os.path.join(root, "etc/cron.d")))
    print(f"apply    {roles:>7} roles: {seconds:6.2f} s, peak {rss:6.1f} MiB, {created} created "
          f"and verified, {files} cron.d files, exit {code}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--roles", default="10000,50000")
    parser.add_argument("--apply-roles", default="1000,5000")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="schedwatch-reconcile-bench-") as workdir:
        for roles in map(int, args.roles.split(",")):
            dry_run(args.exporter, roles, workdir)
        for roles in map(int, args.apply_roles.split(",")):
            apply(args.exporter, roles, workdir)


if __name__ == "__main__":
    main()
