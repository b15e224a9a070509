#!/usr/bin/python3
"""Writes a spec and a file-source snapshot with N roles in a realistic mix of conditions; with
--type crontab, a crontab source instead: a root with etc/passwd, cron.d files of 1,000 marked
entries each (cron reads at most 10,000 lines a file) and a syslog with --runs runs of most roles."""
import argparse
import datetime
import os
import random


def crontab(args):
    root = os.path.join(args.out, "root")
    os.makedirs(os.path.join(root, "etc/cron.d"), exist_ok=True)
    os.makedirs(os.path.join(root, "var/log"), exist_ok=True)
    with open(os.path.join(root, "etc/passwd"), "w") as out:
        out.write("root:x:0:0:root:/root:/bin/sh\n")
    spec = ["version: 1", "sources:", "  cron:", "    type: crontab", f"    root: {root}",
            "    paths: [/etc/cron.d]", "    syslog: /var/log/syslog", "jobs:"]
    files = {}
    log = []
    now = datetime.datetime.now(datetime.timezone.utc)
    for i in range(args.roles):
        role = f"job-{i:05d}"
        schedule = random.choice(["*/5 * * * *", "*/10 * * * *", f"{i % 60} * * * *",
                                  f"{i % 60} {i % 24} * * *", f"{i % 60} 9 * * 1-5"])
        spec.append(f'  - {{role: {role}, source: cron, schedule: "{schedule}", '
                    f'spec_version: "{i % 7 + 1}"}}')
        kind = random.random()
        if kind < 0.02:
            continue  # missing
        lines = files.setdefault(f"app{i // 1000:02d}", [])
        lines.append(f"# schedwatch: role={role} spec_version={i % 7 + 1 if kind > 0.04 else 0}")
        lines.append(f"{'#' if kind < 0.05 else ''}{schedule} root /usr/local/bin/{role} --run")
        latest = now - datetime.timedelta(minutes=random.randint(2, 50))
        for run in range(args.runs):  # an hour apart, the latest first
            started = latest - datetime.timedelta(hours=run)
            pid = 10000 + i + run * args.roles
            for at, word in ((started, "CMD"), (started + datetime.timedelta(seconds=30), "END")):
                log.append((at, f"{at.isoformat(timespec='microseconds')} vm CRON[{pid}]: "
                                f"(root) {word} ([{pid + 1}] /usr/local/bin/{role} --run)"))
    for name, lines in files.items():
        with open(os.path.join(root, "etc/cron.d", name), "w") as out:
            out.write("\n".join(lines) + "\n")
    with open(os.path.join(root, "var/log/syslog"), "w") as out:
        out.write("\n".join(line for _, line in sorted(log)) + "\n")
    with open(os.path.join(args.out, "spec.yaml"), "w") as out:
        out.write("\n".join(spec) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--roles", type=int, default=10000)
    parser.add_argument("--out", required=True, help="directory for spec.yaml and live.yaml")
    parser.add_argument("--type", choices=["file", "crontab"], default="file")
    parser.add_argument("--runs", type=int, default=1,
                        help="crontab: runs of each role in the syslog (a fleet with history: 20)")
    args = parser.parse_args()
    random.seed(7)
    os.makedirs(args.out, exist_ok=True)
    if args.type == "crontab":
        crontab(args)
        return
    zones = ["UTC", "Asia/Seoul", "Europe/Berlin", "America/New_York", "Australia/Sydney"]
    spec = ["version: 1", "sources:", "  live:", "    type: file", "    path: live.yaml", "jobs:"]
    objects, runs = ["objects:"], ["runs:"]
    for i in range(args.roles):
        role = f"job-{i:05d}"
        schedule = random.choice(["*/5 * * * *", "*/10 * * * *", f"{i % 60} * * * *",
                                  f"{i % 60} {i % 24} * * *", f"{i % 60} 9 * * 1-5"])
        spec.append(f'  - {{role: {role}, source: live, schedule: "{schedule}", '
                    f'timezone: {random.choice(zones)}, spec_version: "{i % 7 + 1}"}}')
        kind = random.random()
        if kind < 0.02:
            continue  # missing
        objects.append(f'  - {{id: "live/{role}", role: {role}, schedule: "{schedule}", '
                       f'spec_version: "{i % 7 + 1 if kind > 0.04 else 0}", '
                       f'enabled: {"false" if kind < 0.05 else "true"}}}')
        runs.append(f"  - {{role: {role}, started: -{random.randint(2, 50)}m, "
                    f"finished: -1m, result: {'failure' if kind < 0.08 else 'success'}}}")
        if kind > 0.97:
            runs.append(f"  - {{role: {role}, started: -3h, result: running}}")
    with open(os.path.join(args.out, "spec.yaml"), "w") as out:
        out.write("\n".join(spec) + "\n")
    with open(os.path.join(args.out, "live.yaml"), "w") as out:
        out.write("\n".join(objects + runs) + "\n")


if __name__ == "__main__":
    main()
