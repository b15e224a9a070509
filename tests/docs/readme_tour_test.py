#!/usr/bin/python3
"""README's "A short tour", run top to bottom as written, on a fresh clone.

The repository is cloned (its committed state: what a new user gets) into a scratch directory
whose `build` is this build tree (what scripts/demo would have built there). The tour's block
runs as one `sh` script from the clone's top, in network and PID namespaces of its own (its
:9762 is no one else's; what it leaves running goes with them), each line followed by a note of its exit status. Every line must exit 0, or 1
where README says it does (explain and reconcile: `retry` needs a person); never 2 (bad input)
or more. What each line shows is checked too, and that the served exporter was stopped.

  readme_tour_test.py --source-dir DIR --build-dir DIR

Needs root (unshare --net --pid). Prints 'N passed, N failed'.
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from schedwatch_test import check, fail_setup, summary, temporary_directory  # noqa: E402

# The lines that exit 1 by design, by their first words.
EXPECTED_ONE = ("schedwatch_exporter explain", "schedwatch_exporter reconcile")


def tour(readme):
    section = readme.split("## A short tour", 1)[-1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    if not block:
        fail_setup("README has no ```sh block under \"A short tour\"")
    return [line for line in block.group(1).splitlines() if line.strip()]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--build-dir", required=True)
    args = parser.parse_args()
    if os.geteuid() != 0:
        fail_setup("needs root (unshare --net --pid)")
    with temporary_directory("schedwatch-tour-") as workdir:
        clone = os.path.join(workdir, "schedwatch")
        result = subprocess.run(["git", "clone", "-q", args.source_dir, clone],
                                capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            fail_setup("git clone: " + result.stderr)
        os.symlink(os.path.abspath(args.build_dir), os.path.join(clone, "build"))
        lines = tour(open(os.path.join(clone, "README.md")).read())
        check("the tour serves in the background and stops what it served",
              any(line.split("#")[0].rstrip().endswith("&") for line in lines) and
              lines[-1].startswith("kill $!"), lines)
        # Then `wait`: the script's sh is the namespace's PID 1, and its exit would SIGKILL an
        # exporter still logging its shutdown after `kill $!`.
        script = "".join(f'{line}\necho "tour-exit {n} $?"\n' for n, line in enumerate(lines))
        script += "wait\n"
        result = subprocess.run(
            ["unshare", "--net", "--pid", "--fork", "sh", "-c",
             "ip link set lo up && exec sh -c \"$0\"", script],
            cwd=clone, capture_output=True, text=True, timeout=180,
            env={"PATH": os.environ["PATH"], "HOME": workdir, "LANG": "C.UTF-8"})
        output = result.stdout + result.stderr
        exits = {int(n): int(code) for n, code in re.findall(r"^tour-exit (\d+) (\d+)$",
                                                             result.stdout, re.M)}
        check("every line of the tour ran", sorted(exits) == list(range(len(lines))),
              output[-3000:])
        for n, line in enumerate(lines):
            allowed = (0, 1) if line.startswith(EXPECTED_ONE) else (0,)
            check(f"tour line {n + 1} exits {' or '.join(map(str, allowed))}: {line[:60]}",
                  exits.get(n) in allowed, (exits.get(n), output[-2000:]))
        check("check lists the roles with their fire times", "retry (source demo, file)" in
              result.stdout, result.stdout[:1000])
        check("the exporter became ready", "schedwatch is ready." in result.stdout,
              output[-2000:])
        check("explain says why retry is missing", re.search(r"retry.*missing", result.stdout,
                                                             re.S), result.stdout[-3000:])
        check("reconcile prints its table and says it was a dry run",
              "ROLE" in result.stdout and "dry run: nothing was changed" in result.stdout,
              result.stdout[-2000:])
        check("rulegen wrote the joined rules",
              os.path.exists(os.path.join(clone, "out", "schedwatch.rules.yml")),
              os.listdir(clone))
        check("kill $! stopped the exporter (it logs its shutdown)",
              "msg=\"shutting down\"" in output or "msg=shutting" in output, output[-1500:])
    return summary()


if __name__ == "__main__":
    sys.exit(main())
