#!/usr/bin/python3
"""The systemd source against a real systemd 252.

Boots a minimal Debian 12 root (mmdebstrap --variant=minbase --include=systemd,dbus, built once a
day and reused: /var/tmp/schedwatch-systemd-root-YYYYMMDD, or under $SCHEDWATCH_ROOTS; see
tests/harness/debian_root.py) with systemd-nspawn --volatile=overlay, so every test starts from
the same clean root and writes only to a tmpfs. Installs marked timers in it and checks what the
real schedwatch_exporter reports over the container's system bus and from its journal: timers
firing every 10 s that succeed, one whose service exits 3, one killed by a signal, a disabled
one, a masked one, a deleted one (then re-created by `reconcile --apply` from its template), one
whose service hangs, two claiming one role, a drifted OnCalendar, an unreadable marker, a bus
that goes away (unknown, never missing).
Stops the container and removes what nspawn leaves behind (init.scope cgroups, /run/systemd/
nspawn), also on failure. Needs root, mmdebstrap and systemd-nspawn: without them it FAILS.
Prints 'N passed, N failed'.

Also: a vendor timer in /lib/systemd/system marked by a drop-in and masked (inactive, and
reconcile leaves the mask), a mask with no unit (reconcile refuses to write there), and reconcile
killed at each step of a creation (the next run finishes it).
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "harness"))
from debian_root import Container, debian_root, require_root_tools  # noqa: E402
from schedwatch_test import (Exporter, StartFailed, check, fail_setup, failed,  # noqa: E402
                             finish, temporary_directory, wait_for)

DEADLINE = time.monotonic() + 420  # the whole test, the root's first build included


def wait(what, predicate, seconds, interval=0.25):
    return wait_for(predicate, seconds, what, interval=interval, until=DEADLINE)


def run(command, timeout=60, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)


def timer(role, calendar="*-*-* *:*:00/10", spec_version="1", extra=""):
    calendars = "".join(f"OnCalendar={c}\n" for c in calendar.split("\n"))
    return (f"[Unit]\nDescription=schedwatch test {role}\nX-Schedwatch-Role={role}\n"
            f"X-Schedwatch-Spec-Version={spec_version}\n\n[Timer]\n{calendars}AccuracySec=1s\n"
            f"{extra}\n[Install]\nWantedBy=timers.target\n")


def monotonic_timer(role):
    """Monotonic triggers only: at once after boot (long past: elapses when started), then 10 s
    after each activation."""
    return (f"[Unit]\nDescription=schedwatch test {role}\nX-Schedwatch-Role={role}\n"
            f"X-Schedwatch-Spec-Version=1\n\n[Timer]\nOnBootSec=1s\nOnUnitActiveSec=10s\n"
            f"AccuracySec=1s\n\n[Install]\nWantedBy=timers.target\n")


def service(command):
    return f"[Service]\nType=oneshot\nExecStart={command}\n"


def vendor_timer():
    """A package's timer, as e2scrub_all's: no marker; the administrator adds it in a drop-in."""
    return ("[Unit]\nDescription=schedwatch test vendor timer\n\n[Timer]\n"
            "OnCalendar=*-*-* *:*:00/10\nAccuracySec=1s\n\n[Install]\nWantedBy=timers.target\n")


VENDOR_DROP_IN = "/etc/systemd/system/sw-vendor.timer.d/schedwatch.conf"


ETC = "/etc/systemd/system"
UNITS = {
    # name: (directory, timer text, service command)
    "sw-ok": (ETC, timer("sw-ok"), "/bin/true"),
    "sw-fail": (ETC, timer("sw-fail"), "/bin/sh -c 'exit 3'"),
    "sw-signal": (ETC, timer("sw-signal"), "/bin/sh -c 'kill -9 $$$$'"),
    "sw-off": (ETC, timer("sw-off"), "/bin/true"),
    "sw-masked": ("/usr/local/lib/systemd/system", timer("sw-masked"), "/bin/true"),
    "sw-vendor": ("/lib/systemd/system", vendor_timer(), "/bin/true"),
    "sw-gone": (ETC, timer("sw-gone"), "/bin/true"),
    "sw-hung": (ETC, timer("sw-hung", extra="RandomizedDelaySec=2\nPersistent=true\n"),
                "/bin/sleep infinity"),
    "sw-dup-a": (ETC, timer("sw-dup"), "/bin/true"),
    "sw-dup-b": (ETC, timer("sw-dup"), "/bin/true"),
    "sw-drift": (ETC, timer("sw-drift", "*-*-* *:*:00/20"), "/bin/true"),
    "sw-version": (ETC, timer("sw-version", spec_version="1"), "/bin/true"),
    "sw-unowned": (ETC, timer("sw-unowned"), "/bin/true"),
    "sw-mono": (ETC, monotonic_timer("sw-mono"), "/bin/true"),
    "sw-mono-fail": (ETC, monotonic_timer("sw-mono-fail"), "/bin/sh -c 'exit 3'"),
    "sw-mono-drift": (ETC, timer("sw-mono-drift"), "/bin/true"),
    "sw-bad": (ETC, timer("sw-bad").replace("X-Schedwatch-Role=sw-bad",
                                            "X-Schedwatch-Role=sw bad!"), "/bin/true"),
}

SPEC = """version: 1
defaults:
  timezone: UTC
  start_grace: 5s
  max_runtime: 4s
sources:
  box:
    type: systemd
    bus_address: "{bus}"
    journal_directory: {journal}
    root: {root}
    timeout: 10s
jobs:
  - {{role: sw-ok, source: box, schedule: "*-*-* *:*:00/10", spec_version: "1"}}
  - {{role: sw-fail, source: box, schedule: "*-*-* *:*:00/10", spec_version: "1"}}
  - {{role: sw-signal, source: box, schedule: "*-*-* *:*:00/10", spec_version: "1"}}
  - {{role: sw-off, source: box, schedule: "*-*-* *:*:00/10", spec_version: "1"}}
  - {{role: sw-masked, source: box, schedule: "*-*-* *:*:00/10", spec_version: "1"}}
  - {{role: sw-vendor, source: box, schedule: "*-*-* *:*:00/10", spec_version: "1",
      template: sw-vendor.timer}}
  - {{role: sw-veiled, source: box, schedule: "*-*-* *:*:00/10", spec_version: "1",
      template: sw-veiled.timer}}
  - {{role: sw-crash, source: box, schedule: "*-*-* *:*:00/10", spec_version: "1",
      template: sw-crash.timer}}
  - {{role: sw-gone, source: box, schedule: "*-*-* *:*:00/10", spec_version: "1",
      template: sw-gone.timer}}
  - {{role: sw-hung, source: box, schedule: "*-*-* *:*:00/10", spec_version: "1"}}
  - {{role: sw-dup, source: box, schedule: "*-*-* *:*:00/10", spec_version: "1"}}
  - {{role: sw-drift, source: box, schedule: "*-*-* *:*:00/10", spec_version: "1"}}
  - {{role: sw-version, source: box, schedule: "*-*-* *:*:00/10", spec_version: "2"}}
  - {{role: sw-never, source: box, schedule: "*-*-* *:*:00/10", spec_version: "1"}}
  - {{role: sw-mono, source: box, schedule: monotonic, stale_after: 1m, spec_version: "1"}}
  - {{role: sw-mono-fail, source: box, schedule: monotonic, stale_after: 1m, spec_version: "1"}}
  - {{role: sw-mono-drift, source: box, schedule: monotonic, stale_after: 1m, spec_version: "1"}}
"""


def install(container):
    for name, (directory, timer_text, command) in UNITS.items():
        container.write(f"{directory}/{name}.timer", timer_text)
        container.write(f"{directory}/{name}.service", service(command))
    container.write(VENDOR_DROP_IN, "[Unit]\nX-Schedwatch-Role=sw-vendor\n"
                    "X-Schedwatch-Spec-Version=1\n")
    result = container.systemctl("daemon-reload")
    check("daemon-reload in the container", result.returncode == 0, result.stderr)
    started = [n + ".timer" for n in UNITS if n not in ("sw-off", "sw-masked")]
    result = container.systemctl("enable", "--now", *started)
    check("timers enabled and started", result.returncode == 0, result.stderr)
    result = container.systemctl("mask", "sw-masked.timer")
    check("sw-masked masked", result.returncode == 0, result.stderr)
    # The operator masks a package's enabled timer, and a name no unit has.
    result = container.systemctl("mask", "--now", "sw-vendor.timer")
    check("sw-vendor masked", result.returncode == 0, result.stderr)
    result = container.systemctl("mask", "sw-veiled.timer")
    check("sw-veiled masked", result.returncode == 0, result.stderr)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--capture", required=True)
    args = parser.parse_args()
    require_root_tools()
    root = debian_root("systemd", ["systemd", "dbus"])
    with temporary_directory("schedwatch-systemd-") as workdir:
        container = None
        exporter = None
        started = time.monotonic()
        try:
            container = Container(root, workdir, until=DEADLINE)
            print(f"figure: nspawn boot to running: {time.monotonic() - started:.1f} s")
            exporter = checks(args, workdir, container)
        finally:
            if exporter:
                exporter.stop()
                if failed():
                    print("--- exporter log ---\n" + exporter.logs()[-4000:])
            if container:
                container.stop()
                if failed():
                    print("--- nspawn log ---\n" + container.log())
    finish()


def checks(args, workdir, container):
    install(container)
    spec = os.path.join(workdir, "spec.yaml")
    with open(spec, "w") as f:
        f.write(SPEC.format(bus=container.bus, journal=container.journal, root=container.root))
    with open(os.path.join(workdir, "sw-gone.timer"), "w") as f:
        f.write(UNITS["sw-gone"][1])
    with open(os.path.join(workdir, "sw-gone.service"), "w") as f:
        f.write(service("/bin/true"))
    for name in ("sw-vendor", "sw-veiled", "sw-crash"):
        with open(os.path.join(workdir, f"{name}.timer"), "w") as f:
            f.write(timer(name))
        with open(os.path.join(workdir, f"{name}.service"), "w") as f:
            f.write(service("/bin/true"))

    # What the source reads over the bus, as the fixtures hold it.
    capture = run([args.capture, container.bus], 30)
    reading = json.loads(capture.stdout) if capture.returncode == 0 else {}
    timers = {t["name"]: t for t in reading.get("timers", [])}
    ok_timer = timers.get("sw-ok.timer", {})
    check("bus read: every timer, the masked one included",
          all(n + ".timer" in timers for n in UNITS), sorted(timers))
    check("bus read: TimersCalendar as systemd normalises it",
          ok_timer.get("kind", {}).get("TimersCalendar", [None, []])[1][:1] and
          ok_timer["kind"]["TimersCalendar"][1][0][:2] == ["OnCalendar", "*-*-* *:*:00/10"],
          ok_timer.get("kind", {}).get("TimersCalendar"))

    try:
        exporter = Exporter(args.exporter, spec, workdir, interval="1s", confirm_delay="200ms",
                            timeout=30)
    except StartFailed as error:
        fail_setup(f"exporter did not start: {error}")

    def roles():
        status = exporter.status() or {}
        return {r["role"]: r for r in status.get("roles", [])}, (status.get("sources") or [{}])[0]

    def conditions(role):
        return roles()[0].get(role, {}).get("conditions") or []

    expected = {
        "sw-ok": ["ok"], "sw-fail": ["failing"], "sw-signal": ["failing"],
        "sw-off": ["inactive"], "sw-masked": ["inactive"], "sw-hung": ["hung"],
        "sw-dup": ["duplicate"], "sw-drift": ["drift"], "sw-version": ["drift"],
        "sw-never": ["missing"], "sw-mono": ["ok"], "sw-mono-fail": ["failing"],
        "sw-mono-drift": ["drift"], "sw-vendor": ["inactive"], "sw-veiled": ["missing"],
        "sw-crash": ["missing"],
    }

    def all_seen():
        by_role, _ = roles()
        return all(set(want) <= set(by_role.get(role, {}).get("conditions") or [])
                   for role, want in expected.items()) and by_role

    by_role = wait("every condition", all_seen, 60) or roles()[0]
    for role, want in expected.items():
        got = by_role.get(role, {}).get("conditions")
        check(f"{role}: {', '.join(want)}", set(want) <= set(got or []), by_role.get(role))
    ok = by_role.get("sw-ok", {})
    check("sw-ok: exactly ok, with a start and a success",
          ok.get("conditions") == ["ok"] and ok.get("last_success") and ok.get("last_started"),
          ok)
    mono = by_role.get("sw-mono", {})
    check("sw-mono (monotonic triggers only): exactly ok, after a run that succeeded",
          mono.get("conditions") == ["ok"] and mono.get("last_success"), mono)
    check("sw-mono: the next fire time is the timer's own next elapse, within 10 s",
          mono.get("next_scheduled") and time.time() - 2 < mono["next_scheduled"] < time.time() + 12
          and not mono.get("last_scheduled"), mono)
    check("sw-mono: the live schedule is monotonic, like the spec's",
          [o.get("schedule") for o in mono.get("objects", [])] == ["monotonic"], mono)
    check("sw-mono-fail: exactly failing (its service exits 3)",
          by_role.get("sw-mono-fail", {}).get("conditions") == ["failing"],
          by_role.get("sw-mono-fail"))
    check("sw-dup: two timers", by_role.get("sw-dup", {}).get("registered_objects") == 2,
          by_role.get("sw-dup"))
    objects = {o["id"]: o for r in by_role.values() for o in r.get("objects", [])}
    check("sw-masked: not enabled, because masked",
          objects.get("sw-masked.timer", {}).get("enabled") is False and
          "masked" in objects.get("sw-masked.timer", {}).get("state", ""),
          objects.get("sw-masked.timer"))
    vendor = by_role.get("sw-vendor", {})
    check("sw-vendor (masked, its marker in a drop-in): exactly inactive, the timer masked",
          vendor.get("conditions") == ["inactive"] and
          [(o.get("id"), o.get("enabled"), o.get("state")) for o in vendor.get("objects", [])] ==
          [("sw-vendor.timer", False, "masked")] and
          [r.get("reason") for r in vendor.get("reasons", []) if r.get("condition") == "inactive"]
          == ["1 live object, none enabled: sw-vendor.timer (masked)"], vendor)
    check("sw-off: disabled and stopped",
          "disabled" in objects.get("sw-off.timer", {}).get("state", ""),
          objects.get("sw-off.timer"))
    check("sw-hung: Persistent=true reported",
          "Persistent=true" in objects.get("sw-hung.timer", {}).get("state", ""),
          objects.get("sw-hung.timer"))

    # The journal holds earlier runs: more than the service's newest.
    fail_runs = wait("sw-fail's runs from the journal", lambda: len(
        roles()[0].get("sw-fail", {}).get("runs") or []) >= 2, 30)
    check("journal: sw-fail's earlier runs, all failed",
          fail_runs and all(r.get("outcome") == "failed"
                            for r in roles()[0]["sw-fail"]["runs"]),
          roles()[0].get("sw-fail", {}).get("runs"))

    _, source = roles()
    problems = [p for p in source.get("problems", []) if p["reason"] == "malformed_marker"]
    check("a marker that is not a role name: a problem naming the file, not its value",
          any("sw-bad.timer" in p["message"] and "sw bad!" not in p["message"]
              for p in problems), source.get("problems"))

    metrics = exporter.metrics()
    for role, want in expected.items():
        for condition in want:
            line = (f'schedwatch_job_condition{{role="{role}",source="box",'
                    f'condition="{condition}"}} 1')
            check(f"/metrics: {role} {condition}", line in metrics,
                  [l for l in metrics.splitlines() if f'role="{role}"' in l and "condition" in l])
    check("/metrics: the unowned marked timer counted",
          re.search(r'schedwatch_source_unowned_objects\{source="box"\} 1\b', metrics),
          [l for l in metrics.splitlines() if "unowned" in l])
    check("/metrics: sw-mono's next fire time from the timer, no period",
          re.search(r'^schedwatch_job_next_scheduled_timestamp_seconds\{role="sw-mono",'
                    r'source="box"\} \d', metrics, re.M) and
          not re.search(r'^schedwatch_job_period_seconds\{role="sw-mono",', metrics, re.M),
          [l for l in metrics.splitlines() if 'role="sw-mono"' in l and "sched" in l])
    checked = run([args.exporter, "check", "--config.file", spec, "--count", "2"], 30)
    check("check: a monotonic job has no fire times, and says so",
          checked.returncode == 0 and re.search(
              r"^sw-mono \(source box, systemd\)\n  schedule     monotonic in UTC\n"
              r"  period       none\n  stale_after  1m \(set in the spec\)\n.*\n"
              r"  next         none \(a monotonic timer", checked.stdout, re.M),
          checked.stdout[-1500:] + checked.stderr)
    check("/metrics: the bad marker counted",
          'schedwatch_source_errors_total{reason="malformed_marker",source="box"}' in metrics,
          [l for l in metrics.splitlines() if "errors_total" in l])

    discover_checks(args, workdir, container)

    # A deleted timer: missing after the re-read; reconcile --apply re-creates it from its
    # template, and it runs again.
    check("sw-gone: present before", "ok" in wait("sw-gone ok", lambda: conditions("sw-gone"),
                                                  30) or "ok" in conditions("sw-gone"),
          roles()[0].get("sw-gone"))
    container.systemctl("disable", "--now", "sw-gone.timer")
    for suffix in (".timer", ".service"):
        os.remove(container.path(f"{ETC}/sw-gone{suffix}"))
    container.systemctl("daemon-reload")
    gone = wait("sw-gone missing", lambda: "missing" in conditions("sw-gone"), 20)
    check("deleted timer: missing after the re-read", gone, roles()[0].get("sw-gone"))

    reconcile = [args.exporter, "reconcile", "--config.file", spec,
                 "--refresh.confirm-delay", "200ms", "--lock-file",
                 os.path.join(workdir, "reconcile.lock")]
    dry = run(reconcile, 60)
    check("reconcile dry run: would create, writes nothing",
          re.search(r"^sw-gone +box +missing +would create$", dry.stdout, re.M) and
          not os.path.exists(container.path(f"{ETC}/sw-gone.timer")), dry.stdout + dry.stderr)
    ledger = os.path.join(workdir, "ledger.json")
    applied = run(reconcile + ["--apply", "--ledger", ledger], 120)
    check("reconcile --apply: created and verified",
          re.search(r"^sw-gone +box +missing +created$", applied.stdout, re.M) and
          os.path.exists(container.path(f"{ETC}/sw-gone.timer")), applied.stdout + applied.stderr)
    check("reconcile --apply: other timers not touched",
          re.search(r"^sw-dup .* skipped: duplicate$", applied.stdout, re.M) and
          re.search(r"^sw-masked .* skipped: inactive", applied.stdout, re.M) and
          open(container.path(f"{ETC}/sw-dup-a.timer")).read() == UNITS["sw-dup-a"][1],
          applied.stdout)
    recorded = json.load(open(ledger))["roles"].get("sw-gone", {}) if os.path.exists(
        ledger) else {}
    check("reconcile --apply: the ledger records the timer", recorded.get("id") == "sw-gone.timer",
          recorded)
    for name in ("sw-vendor", "sw-veiled"):
        check(f"reconcile --apply: {name}'s mask is left, no service written beside it",
              os.readlink(container.path(f"{ETC}/{name}.timer")) == "/dev/null" and
              not os.path.lexists(container.path(f"{ETC}/{name}.service")) and
              container.systemctl("is-enabled", f"{name}.timer").stdout.strip() == "masked",
              sorted(os.listdir(container.path(ETC))))
    check("reconcile --apply: a masked vendor timer is inactive and says it is masked",
          re.search(r"^sw-vendor +box +inactive +skipped: inactive, enable explicitly "
                    r"\(sw-vendor\.timer: masked\)$", applied.stdout, re.M), applied.stdout)
    check("reconcile --apply: refuses to write where the operator masked the unit",
          re.search(r"^sw-veiled +box +missing +create failed: masked by the operator: "
                    r"systemctl unmask sw-veiled\.timer$", applied.stdout, re.M) and
          applied.returncode == 1, applied.stdout)
    enabled = container.systemctl("is-enabled", "sw-gone.timer").stdout.strip()
    check("re-created timer: enabled", enabled == "enabled", enabled)
    rerun = wait("the re-created timer to run and be ok",
                 lambda: conditions("sw-gone") == ["ok"] and
                 (roles()[0]["sw-gone"].get("last_success") or 0) > time.time() - 30, 40)
    check("re-created timer: runs again, ok", rerun, roles()[0].get("sw-gone"))

    crash_checks(reconcile, workdir, container)

    # The bus goes away: the roles become unknown, never missing.
    container.systemctl("stop", "dbus.service", "dbus.socket")
    unknown = wait("unknown without a bus", lambda: conditions("sw-ok") == ["unknown"], 30)
    check("no bus: unknown, not missing", unknown and "missing" not in conditions("sw-never"),
          roles()[0].get("sw-ok"))
    return exporter


def crash_checks(reconcile, workdir, container):
    """reconcile --apply killed at each step of a creation (the files it would have left are
    written, then a real SIGKILL): the next run finishes the creation and removes its stale
    temporary; a person's disabled copy of the same files (no intent) is left alone."""
    intent = container.path(f"{ETC}/.schedwatch.sw-crash.timer.creating")
    units = {suffix: container.path(f"{ETC}/sw-crash{suffix}") for suffix in (".timer",
                                                                               ".service")}
    texts = {suffix: open(os.path.join(workdir, "sw-crash" + suffix)).read()
             for suffix in units}
    temporaries = container.path(f"{ETC}/.schedwatch-*.tmp")

    def write(path, text):
        with open(path, "w") as f:
            f.write(text)

    def reset():
        container.systemctl("disable", "--now", "sw-crash.timer")
        for path in list(units.values()) + [intent]:
            if os.path.lexists(path):
                os.remove(path)
        container.systemctl("daemon-reload")

    def converged(case, output, action="created"):
        enabled = container.systemctl("is-enabled", "sw-crash.timer").stdout.strip()
        active = container.systemctl("is-active", "sw-crash.timer").stdout.strip()
        check(f"killed {case}: the next reconcile --apply finishes: {action}, enabled, active, "
              "the files the template's, no intent or temporary left",
              re.search(rf"^sw-crash +box +\S+ +{action}$", output, re.M) and
              (enabled, active) == ("enabled", "active") and not os.path.lexists(intent) and
              not glob.glob(temporaries) and
              all(open(units[s]).read() == texts[s] for s in units),
              (output, enabled, active, os.path.lexists(intent), glob.glob(temporaries)))

    reset()  # the apply above created it
    gone = subprocess.Popen(["true"])
    gone.wait()  # a process that is no more: its temporary is stale
    write(intent, "")
    write(container.path(f"{ETC}/.schedwatch-{gone.pid}.sw-crash.service.tmp"), "[Serv")
    applied = run(reconcile + ["--apply"], 120)
    converged("while writing the service", applied.stdout + applied.stderr)
    reset()

    write(intent, "")
    write(units[".service"], texts[".service"])
    applied = run(reconcile + ["--apply"], 120)
    converged("after the service, before the timer", applied.stdout + applied.stderr)
    reset()

    write(intent, "")
    for suffix, path in units.items():
        write(path, texts[suffix])
    applied = run(reconcile + ["--apply"], 120)
    converged("after both files, before the manager was told", applied.stdout + applied.stderr,
              "finished an interrupted creation")
    reset()

    for suffix, path in units.items():
        write(path, texts[suffix])
    applied = run(reconcile + ["--apply"], 120)
    enabled = container.systemctl("is-enabled", "sw-crash.timer").stdout.strip()
    check("a person's disabled copy of the same files (no intent): reported, left disabled",
          re.search(r"^sw-crash +box +inactive +skipped: inactive, enable explicitly "
                    r"\(sw-crash\.timer: disabled, stopped \(inactive\)\)$", applied.stdout,
                    re.M) and enabled == "disabled", (applied.stdout, enabled))
    reset()

    # A real kill, as soon as the intent is on disk (the manager's reloads follow).
    process = subprocess.Popen(reconcile + ["--apply"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    announced = wait("the intent of a creation", lambda: os.path.lexists(intent) or
                     process.poll() is not None, 60, interval=0.001)
    process.kill()
    process.wait()
    left = sorted(os.path.basename(p) for p in glob.glob(container.path(f"{ETC}/*sw-crash*")) +
                  glob.glob(container.path(f"{ETC}/.*sw-crash*")))
    check("reconcile --apply killed mid-creation", announced and process.returncode == -9 and
          os.path.lexists(intent), (process.returncode, left))
    print(f"figure: killed with {left} on disk")
    applied = run(reconcile + ["--apply"], 120)
    converged("by SIGKILL once its intent was on disk", applied.stdout + applied.stderr,
              "(created|finished an interrupted creation)")


def discover_checks(args, workdir, container):
    """discover on the container: Debian's own timers and the test's, a draft check accepts."""
    draft_path = os.path.join(workdir, "draft.yaml")
    before = {name: open(container.path(f"{d}/{name}.timer")).read()
              for name, (d, _, _) in UNITS.items()}
    found = run([args.exporter, "discover", "--type", "systemd", "--source", "box",
                 "--bus-address", container.bus, "--journal-directory", container.journal,
                 "--root", container.root, "--output", draft_path], 60)
    check("discover --type systemd exits 0", found.returncode == 0, found.stderr[-3000:])
    draft = open(draft_path).read() if os.path.exists(draft_path) else ""
    jobs = {j["role"]: j for j in (yaml.safe_load(draft) or {}).get("jobs") or []}
    ok = jobs.get("sw-ok", {})
    check("discover: a marked timer keeps its role and version, its OnCalendar as the schedule",
          ok.get("schedule") == "*-*-* *:*:00/10" and ok.get("spec_version") == "1", draft)
    check("discover: max_runtime from the service's runs in the journal",
          ok.get("max_runtime") == "1m" and re.search(r"max_runtime: 1m +# twice the longest of "
                                                      r"\d+ runs seen", draft), draft)
    mono = jobs.get("sw-mono", {})
    check("discover: a monotonic timer is `monotonic` with a stale_after from OnUnitActiveSec=",
          mono.get("schedule") == "monotonic" and mono.get("stale_after") == "1m20s" and
          re.search(r"schedule: monotonic +# (OnUnitActiveSec=10s, OnBootSec=1s|"
                    r"OnBootSec=1s, OnUnitActiveSec=10s)\n", draft), draft)
    tmpfiles = jobs.get("systemd-tmpfiles-clean", {})
    check("discover: Debian's own unmarked monotonic timer, its role from the unit name",
          tmpfiles.get("schedule") == "monotonic" and tmpfiles.get("spec_version") == "1",
          sorted(jobs))
    for name, why in (("sw-off", "timer disabled"), ("sw-masked", "timer masked")):
        check(f"discover: {name} is a comment ({why})",
              f"# not a job (box): {name}.timer: {why}" in draft and name not in jobs, draft)
    check("discover: two timers with one role make one job",
          "sw-dup" in jobs and "# not a job (box): sw-dup-b.timer: its marker claims role "
          "sw-dup, as sw-dup-a.timer does" in draft, draft)
    check("discover: the bad marker is a note, no job",
          "sw-bad.timer" in found.stderr and not any("bad" in r for r in jobs), found.stderr)
    check("discover: a drop-in's lines for a package's timer",
          "systemd-tmpfiles-clean.timer: create the drop-in /etc/systemd/system/"
          "systemd-tmpfiles-clean.timer.d/schedwatch.conf" in found.stderr and
          "  [Unit]\n  X-Schedwatch-Role=systemd-tmpfiles-clean\n  X-Schedwatch-Spec-Version=1\n"
          in found.stderr, found.stderr[-3000:])
    check("discover: no marker asked for a marked timer", "sw-ok.timer:" not in found.stderr,
          found.stderr[-3000:])
    after = {name: open(container.path(f"{d}/{name}.timer")).read()
             for name, (d, _, _) in UNITS.items()}
    check("discover wrote nothing to the units",
          before == after and glob.glob(container.path(f"{ETC}/*.timer.d/schedwatch.conf")) ==
          [container.path(VENDOR_DROP_IN)])
    checked = run([args.exporter, "check", "--config.file", draft_path], 30)
    check("check accepts the discovered draft", checked.returncode == 0,
          checked.stdout[-500:] + checked.stderr)


if __name__ == "__main__":
    main()
