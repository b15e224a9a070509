#!/usr/bin/python3
"""README's "Getting started on your own jobs", run as written on a stock Debian 12 host.

The host: a minimal Debian 12 root (mmdebstrap minbase with systemd, dbus, cron, git and sudo,
and the Debian packages of the libraries the built schedwatch_exporter links; built once a day
and reused, tests/harness/debian_root.py) WITHOUT rsyslog, as bookworm installs by default: cron
logs only to the journal. Booted with systemd-nspawn --volatile=overlay, so cron really runs. One
user crontab job fires every minute beside Debian's own entries.

Inside the container, the README block's lines are run one by one with `sh -c` as they are
written (EDITOR=true for the review, a git repository to commit into): discover drafts the spec,
check accepts it, git commits it, discover --write-markers marks every entry, and the last line
serves (started with systemd-run, so the container's end stops it). Then /api/v1/status and
/metrics (read from the container's network namespace) must show: the draft reads the journal
(`history: journal`, because /var/log/syslog does not exist), every drafted role registered (not
unknown, not missing) and `ok`, and the every-minute job's last start from the journal.
Stops the container and removes what nspawn leaves behind, also on failure.
Prints figures and 'N passed, N failed'.
"""
import argparse
import json
import os
import re
import shutil
import sys
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "harness"))
from debian_root import Container, debian_root, require_root_tools, run  # noqa: E402
from schedwatch_test import check, fail_setup, failed, finish, temporary_directory  # noqa: E402

DEADLINE = time.monotonic() + 780  # the whole test, the root's first build included
README = os.path.join(HERE, "..", "..", "..", "README.md")
WORK = "/root/jobs"  # where the steps run, inside the container
EXPORTER = "/usr/local/bin/schedwatch_exporter"
ALICE_LINE = "* * * * * date >> /tmp/alice-ticks"
ALICE_ROLE = "alice-date"
# The environment of an interactive root shell; EDITOR=true stands for the review.
ENV = ["env", "-i", "HOME=/root", "USER=root", "LOGNAME=root", "EDITOR=true",
       "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]


def readme_steps():
    """The command lines of README's "Getting started on your own jobs" block."""
    text = open(README).read()
    section = text.split("## Getting started on your own jobs", 1)[-1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    if not block:
        fail_setup("README has no ```sh block under \"Getting started on your own jobs\"")
    return [line for line in block.group(1).splitlines() if line.strip()]


def library_packages(exporter):
    """The Debian packages holding the shared libraries `exporter` links (ldd, dpkg -S)."""
    result = run(["ldd", exporter])
    if result.returncode != 0:
        fail_setup("ldd " + exporter + ": " + result.stderr)
    packages = set()
    for path in re.findall(r"=> (/\S+)", result.stdout):
        owner = None
        for candidate in (path, os.path.realpath(path),
                          re.sub(r"^/usr/", "/", path), "/usr" + path):
            found = run(["dpkg", "-S", candidate])
            if found.returncode == 0:
                owner = found.stdout.split(":")[0].strip()
                break
        if owner is None:
            fail_setup(f"{path} (linked by the exporter) belongs to no Debian package")
        packages.add(owner)
    return sorted(packages)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    args = parser.parse_args()
    require_root_tools()
    for tool in ("ldd", "dpkg", "curl"):
        if not shutil.which(tool):
            fail_setup(f"{tool} is not installed")
    libraries = library_packages(args.exporter)
    print(f"figure: the exporter's libraries come from {len(libraries)} packages: "
          f"{' '.join(libraries)}")
    started = time.monotonic()
    root = debian_root("crontab", ["systemd", "dbus", "cron", "git", "sudo"] + libraries)
    print(f"figure: the root ready in {time.monotonic() - started:.1f} s")
    with temporary_directory("schedwatch-stock-host-") as workdir:
        container = None
        try:
            started = time.monotonic()
            container = Container(root, workdir, until=DEADLINE)
            print(f"figure: nspawn boot to running: {time.monotonic() - started:.1f} s")
            checks(args, container)
        finally:
            if container:
                if failed():
                    print("--- the exporter's journal ---\n" + container_run(
                        container, "journalctl", "-u", "schedwatch-serve", "--no-pager", "-n",
                        "60").stdout[-4000:])
                container.stop()
                if failed():
                    print("--- nspawn log ---\n" + container.log())
    finish()


def container_run(container, *command, timeout=120):
    return run(container.enter(*ENV, *command), timeout)


def shell(container, line, timeout=120):
    """`line` as sh runs it in WORK, inside the container."""
    return container_run(container, "sh", "-c", f"cd {WORK} && {line}", timeout=timeout)


def checks(args, container):
    # A stock bookworm host: no rsyslog, so no /var/log/syslog; cron runs and logs to the journal.
    rsyslog = container_run(container, "dpkg-query", "-W", "rsyslog")
    check("the host has no rsyslog and no /var/log/syslog",
          rsyslog.returncode != 0 and not os.path.exists(container.path("/var/log/syslog")),
          rsyslog.stdout)
    active = container.wait("cron to run", lambda: container.systemctl(
        "is-active", "cron.service").stdout.strip() == "active", 30)
    check("cron.service is active", active, container.systemctl("status", "cron.service").stdout)
    logged = container.wait("cron's lines in the journal", lambda: container_run(
        container, "journalctl", "-t", "cron", "-t", "CRON", "-q", "-n", "1", "--no-pager")
        .stdout.strip(), 30)
    check("cron logs to the journal", logged, logged)

    # The built exporter, as a person would install a binary; and alice's every-minute job.
    shutil.copyfile(args.exporter, container.path(EXPORTER))
    os.chmod(container.path(EXPORTER), 0o755)
    linked = container_run(container, "ldd", EXPORTER)
    check("the exporter finds every library it links in the root",
          linked.returncode == 0 and "not found" not in linked.stdout, linked.stdout)
    setup = container_run(container, "sh", "-c", (
        f"useradd -m alice && echo '{ALICE_LINE}' | crontab -u alice - && "
        f"mkdir -p {WORK} && git init -q {WORK} && "
        "git config --global user.email root@stock-host && "
        "git config --global user.name 'stock host'"))
    check("alice's crontab and a git repository", setup.returncode == 0, setup.stderr)

    steps = readme_steps()
    check("README's block has the five steps, the last one serving",
          len(steps) == 5 and steps[-1].startswith("schedwatch_exporter --config.file spec.yaml"),
          steps)
    for number, line in enumerate(steps[:-1], 1):
        started = time.monotonic()
        result = shell(container, line)
        print(f"figure: step {number}: {time.monotonic() - started:.1f} s")
        check(f"step {number} exits 0: {line.split('#')[0].strip()}", result.returncode == 0,
              result.stdout[-2000:] + result.stderr[-3000:])
        if number == 1:
            print("--- step 1's report ---\n" + result.stderr)
            draft = open(container.path(f"{WORK}/spec.yaml")).read() if os.path.exists(
                container.path(f"{WORK}/spec.yaml")) else ""
            spec = yaml.safe_load(draft) or {}
            source = (spec.get("sources") or {}).get("host") or {}
            check("the draft reads cron's runs from the journal, and says why",
                  source.get("history") == "journal" and re.search(
                      r"    # /var/log/syslog does not exist; cron logs to the journal\n"
                      r"    history: journal\n", draft), draft[:1500])
            roles = [job["role"] for job in spec.get("jobs") or []]
            check("the draft has alice's job and Debian's /etc/crontab entries",
                  {ALICE_ROLE, "cron-hourly", "cron-daily", "cron-weekly",
                   "cron-monthly"} <= set(roles), roles)
            check("the draft's jobs have no max_runtime from runs that never ended (-L 1)",
                  "max_runtime" not in draft, draft)
        if number == 4:
            check("step 4 wrote the markers of every file",
                  re.search(r"/var/spool/cron/crontabs/alice: added 1 marker", result.stderr) and
                  re.search(r"/etc/crontab: added \d+ markers", result.stderr), result.stderr)
    again = shell(container, "schedwatch_exporter discover --config.file spec.yaml")
    check("discover again: every object has its marker",
          "markers: every object has one" in again.stderr, again.stderr)
    alice = open(container.path("/var/spool/cron/crontabs/alice")).read()
    check("alice's crontab carries her marker above her line",
          f"# schedwatch: role={ALICE_ROLE} spec_version=1\n{ALICE_LINE}\n" in alice, alice)

    # Step 5 serves in the foreground: started as a unit, so it runs beside the test.
    serve = container_run(container, "systemd-run", "--unit=schedwatch-serve", "--collect",
                          f"--working-directory={WORK}", "--setenv=HOME=/root", "sh", "-c",
                          steps[-1])
    check("step 5 started: " + steps[-1].split("#")[0].strip(), serve.returncode == 0,
          serve.stderr)
    served = time.monotonic()

    def get(path):
        result = run(["nsenter", "-t", str(container.leader), "-n", "curl", "-sf", "--max-time",
                      "5", "http://127.0.0.1:9762" + path], 15)
        return result.stdout if result.returncode == 0 else ""

    def status():
        try:
            return json.loads(get("/api/v1/status"))
        except ValueError:
            return {}

    def by_role():
        return {r["role"]: r for r in status().get("roles", [])}

    def settled():
        roles = by_role()
        return roles if roles and all(r.get("conditions") == ["ok"] for r in roles.values()) and \
            (roles.get(ALICE_ROLE) or {}).get("last_started") else None

    roles = container.wait("every role ok, alice's job started", settled, 150, 1) or by_role()
    print(f"figure: from serving to every role ok with alice's start: "
          f"{time.monotonic() - served:.1f} s")
    drafted = [job["role"] for job in yaml.safe_load(
        open(container.path(f"{WORK}/spec.yaml")).read()).get("jobs") or []]
    print(f"figure: {len(drafted)} roles drafted: {' '.join(drafted)}")
    check("the status has every drafted role", sorted(roles) == sorted(drafted),
          f"status {sorted(roles)} draft {sorted(drafted)}")
    for role in drafted:
        got = roles.get(role) or {}
        check(f"{role}: registered, ok", got.get("registered_objects") == 1 and
              got.get("conditions") == ["ok"], {k: got.get(k) for k in (
                  "conditions", "registered_objects", "last_started", "objects")})
    last = (roles.get(ALICE_ROLE) or {}).get("last_started") or 0
    check(f"{ALICE_ROLE}: its last start from the journal, within the last two minutes",
          time.time() - 130 < last <= time.time() + 1, roles.get(ALICE_ROLE))
    source = (status().get("sources") or [{}])[0]
    check("the source is up, reading the journal", source.get("up") is True, source)
    metrics = get("/metrics")
    check("/metrics: the source up",
          'schedwatch_source_up{source="host",type="crontab"} 1' in metrics,
          [line for line in metrics.splitlines() if line.startswith("schedwatch_source_up")])
    check(f"/metrics: {ALICE_ROLE}'s last start",
          re.search(r'^schedwatch_job_last_started_timestamp_seconds\{role="' + ALICE_ROLE +
                    r'",source="host"\} \d', metrics, re.M),
          [line for line in metrics.splitlines() if ALICE_ROLE in line][:20])
    for condition in ("unknown", "missing"):
        check(f"/metrics: no role {condition}",
              not re.search(r'condition="' + condition + r'"\} 1$', metrics, re.M),
              [line for line in metrics.splitlines() if f'condition="{condition}"' in line])


if __name__ == "__main__":
    main()
