#!/usr/bin/python3
"""Writes a spec and a file-source snapshot with N roles in a realistic mix of conditions."""
import argparse
import os
import random


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--roles", type=int, default=10000)
    parser.add_argument("--out", required=True, help="directory for spec.yaml and live.yaml")
    args = parser.parse_args()
    random.seed(7)
    os.makedirs(args.out, exist_ok=True)
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
