#!/usr/bin/python3
"""The sidekiq_cron source end to end: a real redis-server (loopback, a password, an append-only
file so a restart keeps the jobs), a real Sidekiq 6.4 process with Sidekiq-cron 1.8 loading
app/app.rb and a schedule.yml written here, and the real schedwatch_exporter.

Covers jobs that succeed, raise (retry set, then dead) and hang; a disabled one; a drifted one;
two with one role; discover drafting the spec and the descriptions to set; a job removed from the schedule and Sidekiq restarted (missing); Redis
stopped (unknown, never missing) and started again (ok); a wrong password (unknown, the password
nowhere in logs, pages or metrics); a unix socket to database 1 with a namespace; reconcile
re-creating the removed job (and one under the namespace) from its template, which Sidekiq-cron
loads and the running Sidekiq enqueues, leaving a disabled, a drifted and an unmarked job
alone, and a job written between its WATCH and EXEC. Waits with deadlines. Prints 'N passed, N failed'.
"""
import argparse
import contextlib
import os
import re
import socket
import subprocess
import sys
import threading

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "harness"))
from schedwatch_test import (Exporter, Process, check, conditions, free_port,  # noqa: E402
                             require_tools, status_by_name, summary,
                             temporary_directory, wait_for, write_text)

PASSWORD = "redis-SECRET-pw-0123456789"
WRONG = "wrong-SECRET-pw-9876543210"


def marker(role, version="1"):
    return f"[schedwatch: role={role} spec_version={version}]"


def schedule(removed=True):
    jobs = {
        "ok": ("*/2 * * * * *", "OkJob", "Succeeds " + marker("ok")),
        "boom": ("*/3 * * * * *", "BoomJob", "Raises " + marker("failing")),
        "hang": ("*/10 * * * * *", "HangJob", marker("hung")),
        # Not "off": YAML reads that name as false, and Sidekiq-cron's load stops there.
        "switched-off": ("0 3 * * * Europe/Berlin", "OkJob", marker("off")),
        "drifted": ("0 4 * * * Europe/Berlin", "OkJob", marker("drifted")),
        "twice-a": ("0 2 * * *", "OkJob", marker("twice")),
        "twice-b": ("0 2 * * *", "OkJob", marker("twice")),
        "plain": ("15 6 * * 1-5 America/New_York", "OkJob", "Weekday report"),
    }
    if removed:
        jobs["removed"] = ("*/2 * * * * *", "OkJob", marker("removed"))
    lines = []
    for name, (cron, klass, description) in jobs.items():
        lines += [f"{name}:", f"  cron: \"{cron}\"", f"  class: {klass}",
                  f"  description: \"{description}\""]
        if name == "switched-off":
            lines.append("  status: disabled")
    return "\n".join(lines) + "\n"


# The sources the exporter's and reconcile's specs share.
SOURCES = """\
version: 1
sources:
  app:
    type: sidekiq_cron
    url: redis://127.0.0.1:{port}/0
    password_file: {workdir}/password
    local_timezone: UTC
    timeout: 3s
  socket:
    type: sidekiq_cron
    url: unix:{workdir}/redis.sock?db=1
    password_env: SCHEDWATCH_TEST_REDIS_PASSWORD
    namespace: other
"""

SPEC = SOURCES + """\
  wrong:
    type: sidekiq_cron
    url: redis://127.0.0.1:{port}/0
    password_file: {workdir}/wrong-password
jobs:
  - {{role: ok, source: app, schedule: "*/2 * * * * *", max_runtime: 30s, spec_version: "1"}}
  - {{role: failing, source: app, schedule: "*/3 * * * * *", spec_version: "1"}}
  - {{role: hung, source: app, schedule: "*/10 * * * * *", max_runtime: 3s, spec_version: "1"}}
  - {{role: off, source: app, schedule: "0 3 * * *", timezone: Europe/Berlin, spec_version: "1"}}
  - {{role: drifted, source: app, schedule: "0 3 * * *", timezone: Europe/Berlin, spec_version: "1"}}
  - {{role: twice, source: app, schedule: "0 2 * * *", spec_version: "1"}}
  - {{role: removed, source: app, schedule: "*/2 * * * * *", spec_version: "1"}}
  - {{role: ok-socket, source: socket, schedule: "0 2 * * *", spec_version: "1"}}
  - {{role: wrong-job, source: wrong, schedule: "0 2 * * *", spec_version: "1"}}
"""


class Redis(Process):
    def __init__(self, workdir, port):
        super().__init__(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                          "--unixsocket", os.path.join(workdir, "redis.sock"),
                          "--requirepass", PASSWORD, "--dir", workdir, "--save", "",
                          "--appendonly", "yes", "--appendfsync", "always"],
                         os.path.join(workdir, "redis.log"))
        self.port = port
        check("redis-server answers", wait_for(lambda: self.cli("PING") == "PONG", 20, "redis"),
              self.logs()[-500:])

    def cli(self, *args):
        result = subprocess.run(["redis-cli", "-p", str(self.port), "--no-auth-warning",
                                 "-a", PASSWORD] + list(args), capture_output=True, text=True,
                                timeout=10)
        return result.stdout.strip()


def sidekiq(workdir, port):
    return Process(["sidekiq", "-r", os.path.join(HERE, "app", "app.rb"), "-c", "20", "-t", "1"],
                   os.path.join(workdir, "sidekiq.log"), cwd=workdir,
                   env=dict(os.environ, REDIS_URL=f"redis://:{PASSWORD}@127.0.0.1:{port}/0",
                            SCHEDULE=os.path.join(workdir, "schedule.yml"), TZ="UTC"))


RECONCILE_SPEC = SOURCES + """\
jobs:
  - {{role: removed, source: app, schedule: "*/2 * * * * *", template: removed.yml,
      spec_version: "1"}}
  - {{role: off, source: app, schedule: "0 3 * * *", timezone: Europe/Berlin, template: off.yml,
      spec_version: "1"}}
  - {{role: drifted, source: app, schedule: "0 3 * * *", timezone: Europe/Berlin,
      template: drifted.yml, spec_version: "1"}}
  - {{role: taken, source: app, schedule: "15 6 * * 1-5", timezone: America/New_York,
      template: taken.yml, spec_version: "1"}}
  - {{role: sock-gone, source: socket, schedule: "0 2 * * *", template: sock-gone.yml,
      spec_version: "1"}}
"""


def job_template(name, cron, role, klass="OkJob"):
    return (f"name: {name}\ncron: \"{cron}\"\nclass: {klass}\nargs: [1, two]\n"
            f"description: \"Re-created {marker(role)}\"\n")


def check_reconcile(args, workdir, redis):
    """reconcile re-creates the removed job as Job#save writes it; Sidekiq-cron runs it."""
    for name, text in {
            "reconcile.yaml": RECONCILE_SPEC.format(workdir=workdir, port=redis.port),
            "removed.yml": job_template("removed", "*/2 * * * * *", "removed"),
            "off.yml": job_template("switched-off", "0 3 * * * Europe/Berlin", "off"),
            "drifted.yml": job_template("drifted", "0 3 * * * Europe/Berlin", "drifted"),
            "taken.yml": job_template("plain", "15 6 * * 1-5 America/New_York", "taken"),
            "sock-gone.yml": job_template("gone", "0 2 * * *", "sock-gone")}.items():
        write_text(os.path.join(workdir, name), text)
    state = os.path.join(workdir, "state")
    os.makedirs(state, mode=0o700, exist_ok=True)
    command = [args.exporter, "reconcile", "--config.file", os.path.join(workdir, "reconcile.yaml"),
               "--lock-file", os.path.join(state, "reconcile.lock"),
               "--ledger", os.path.join(state, "ledger.json")]
    env = dict(os.environ, SCHEDWATCH_TEST_REDIS_PASSWORD=PASSWORD)
    reconcile = lambda *more: subprocess.run(command + list(more), capture_output=True,
                                             text=True, timeout=60, env=env)
    others = {k: redis.cli("HGETALL", k) for k in ("cron_job:plain", "cron_job:switched-off",
                                                   "cron_job:drifted")}
    dry = reconcile()
    check("reconcile dry run: would create removed and gone, writes nothing",
          re.search(r"removed\s+app\s+missing\s+would create", dry.stdout) and
          re.search(r"sock-gone\s+socket\s+missing\s+would create", dry.stdout) and
          redis.cli("EXISTS", "cron_job:removed") == "0" and
          redis.cli("-n", "1", "EXISTS", "other:cron_job:gone") == "0" and
          redis.cli("SISMEMBER", "cron_jobs", "cron_job:removed") == "0",
          dry.stdout + dry.stderr)
    applied = reconcile("--apply")
    out = applied.stdout
    check("reconcile --apply: removed created and verified",
          re.search(r"removed\s+app\s+missing\s+created", out), out + applied.stderr)
    check("reconcile --apply: the job under the namespace created",
          re.search(r"sock-gone\s+socket\s+missing\s+created", out) and
          redis.cli("-n", "1", "SISMEMBER", "other:cron_jobs", "cron_job:gone") == "1" and
          redis.cli("-n", "1", "HGET", "other:cron_job:gone", "cron") == "0 2 * * *", out)
    check("disabled, drifted and an unmarked job of the template's name are left alone",
          re.search(r"off\s+app\s+inactive\s+skipped: inactive", out) and
          re.search(r"drifted\s+app\s+drift\s+skipped: drift", out) and
          re.search(r"taken\s+app\s+missing\s+skipped: .*exists but is not this role", out) and
          {k: redis.cli("HGETALL", k) for k in others} == others, out)
    fields = redis.cli("HGETALL", "cron_job:removed").split("\n")
    fields = dict(zip(fields[0::2], fields[1::2]))
    check("the hash holds Job#save's fields, the template's cron and marker",
          fields.get("cron") == "*/2 * * * * *" and
          fields.get("description") == "Re-created " + marker("removed") and
          fields.get("klass") == "OkJob" and fields.get("status") == "enabled" and
          fields.get("args") == '[1,"two"]' and
          fields.get("message") == '{"queue":"default","class":"OkJob","args":[1,"two"]}' and
          set(fields) == {"name", "klass", "cron", "description", "args", "date_as_argument",
                          "message", "status", "active_job", "queue_name_prefix",
                          "queue_name_delimiter", "last_enqueue_time", "symbolize_args"} and
          redis.cli("SISMEMBER", "cron_jobs", "cron_job:removed") == "1", fields)
    ledger = os.path.join(state, "ledger.json")
    ledger = open(ledger).read() if os.path.exists(ledger) else ""
    check("the ledger records removed", '"removed"' in ledger, ledger)
    loaded = subprocess.run(
        ["ruby", "-e", 'require "sidekiq"; require "sidekiq-cron"; '
         'Sidekiq.configure_client { |c| c.redis = {url: ENV["REDIS_URL"]} }; '
         'j = Sidekiq::Cron::Job.find("removed"); '
         'puts [j.valid?, j.status, j.cron, j.description, j.message, '
         'Sidekiq::Cron::Job.all.any? { |a| a.name == "removed" && a.valid? }].inspect'],
        capture_output=True, text=True, timeout=60,
        env=dict(os.environ, REDIS_URL=f"redis://:{PASSWORD}@127.0.0.1:{redis.port}/0"))
    check("Sidekiq-cron's Job.find loads it valid, enabled, and Job.all lists it",
          loaded.stdout.strip() == '[true, "enabled", "*/2 * * * * *", "Re-created '
          + marker("removed") + '", "{\\"queue\\":\\"default\\",\\"class\\":\\"OkJob\\",'
          '\\"args\\":[1,\\"two\\"]}", true]', loaded.stdout + loaded.stderr)
    check("the running Sidekiq enqueues it at its next fire time",
          wait_for(lambda: redis.cli("HGET", "cron_job:removed", "last_enqueue_time") and
                   int(redis.cli("LLEN", "cron_job:removed:jid_history") or 0) > 0, 30,
                   "enqueued"), redis.cli("HGETALL", "cron_job:removed"))
    again = reconcile("--apply")
    check("a second --apply creates nothing: removed is ok, verified",
          "created" not in again.stdout and
          re.search(r"removed\s+app\s+ok\s+verified", again.stdout) and
          re.search(r"sock-gone\s+socket\s+ok\s+verified", again.stdout),
          again.stdout + again.stderr)
    before = {k: redis.cli("-n", "1", "HGETALL", k) for k in ("other:cron_job:gone",)}
    dry = reconcile()
    check("a dry run afterwards would create nothing (taken stays refused) and changes nothing",
          re.findall(r"(\S+)\s+\S+\s+\S+\s+would create", dry.stdout) == ["taken"] and
          {k: redis.cli("-n", "1", "HGETALL", k) for k in before} == before, dry.stdout)
    outputs = "".join(r.stdout + r.stderr for r in (dry, applied, again))
    check("reconcile shows no password", PASSWORD not in outputs)


class RacingProxy:
    """A loopback TCP proxy to Redis that, when the client sends MULTI, first has another
    client write `write` (a list of redis-cli commands): a job appearing between reconcile's
    WATCH/EXISTS and its EXEC."""

    def __init__(self, redis, write):
        self.redis, self.write, self.fired = redis, write, False
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.redis.port))
            threading.Thread(target=self.pipe, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self.pipe, args=(server, client, False), daemon=True).start()

    def pipe(self, source, target, upstream):
        try:
            while data := source.recv(65536):
                if upstream and b"MULTI" in data and not self.fired:
                    self.fired = True
                    for command in self.write:
                        self.redis.cli(*command)
                target.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, target):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def close(self):
        self.listener.close()


RACE_SPEC = """\
version: 1
sources:
  app: {{type: sidekiq_cron, url: "redis://127.0.0.1:{port}/0", password_file: {workdir}/password,
         local_timezone: UTC}}
jobs:
  - {{role: raced, source: app, schedule: "0 5 * * *", template: raced.yml, spec_version: "1"}}
"""


def check_reconcile_race(args, workdir, redis):
    """A job written between WATCH and EXEC (Sidekiq saving it) drops the transaction."""
    theirs = ["name", "raced", "cron", "0 5 * * *", "klass", "TheirJob", "status", "enabled",
              "description", "Theirs " + marker("raced")]
    proxy = RacingProxy(redis, [["HSET", "cron_job:raced"] + theirs,
                                ["SADD", "cron_jobs", "cron_job:raced"]])
    try:
        write_text(os.path.join(workdir, "race.yaml"),
                   RACE_SPEC.format(workdir=workdir, port=proxy.port))
        write_text(os.path.join(workdir, "raced.yml"), job_template("raced", "0 5 * * *", "raced"))
        state = os.path.join(workdir, "state")
        raced = subprocess.run(
            [args.exporter, "reconcile", "--config.file", os.path.join(workdir, "race.yaml"),
             "--lock-file", os.path.join(state, "reconcile.lock"), "--apply"],
            capture_output=True, text=True, timeout=60)
        fields = redis.cli("HGETALL", "cron_job:raced").split("\n")
        check("a job written between WATCH and EXEC is kept, not overwritten",
              proxy.fired and
              re.search(r"raced\s+app\s+missing\s+skipped: appeared before it was created",
                        raced.stdout) and fields == theirs, (raced.stdout + raced.stderr, fields))
    finally:
        proxy.close()
        redis.cli("DEL", "cron_job:raced")
        redis.cli("SREM", "cron_jobs", "cron_job:raced")


def check_discover(args, workdir, port):
    draft_path = os.path.join(workdir, "draft.yaml")
    result = subprocess.run(
        [args.exporter, "discover", "--type", "sidekiq_cron", "--source", "app",
         "--url", f"redis://127.0.0.1:{port}/0", "--password-file",
         os.path.join(workdir, "password"), "--output", draft_path],
        capture_output=True, text=True, timeout=60)
    check("discover --type sidekiq_cron exits 0", result.returncode == 0, result.stderr)
    draft = open(draft_path).read() if os.path.exists(draft_path) else ""
    jobs = {j["role"]: j for j in (yaml.safe_load(draft) or {}).get("jobs") or []}
    check("discover drafts the marked jobs with their cron and zone",
          jobs.get("ok", {}).get("schedule") == "*/2 * * * * *" and
          jobs.get("drifted", {}).get("schedule") == "0 4 * * *" and
          jobs.get("drifted", {}).get("timezone") == "Europe/Berlin", draft)
    check("discover drafts the unmarked job, zone split off",
          jobs.get("plain", {}).get("schedule") == "15 6 * * 1-5" and
          jobs.get("plain", {}).get("timezone") == "America/New_York", draft)
    check("discover prints the description to set in config/schedule.yml",
          'description: "Weekday report [schedwatch: role=plain spec_version=1]"' in
          result.stdout + result.stderr, result.stdout + result.stderr)
    check("discover lists the disabled job as not run", "status is disabled" in draft, draft)
    check("discover shows no password", PASSWORD not in draft + result.stdout + result.stderr)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    args = parser.parse_args()
    require_tools("redis-server", "redis-cli", "sidekiq", "ruby")
    with temporary_directory("schedwatch-sidekiq-") as workdir:
        run(args, workdir)
    return summary()


def run(args, workdir):
    port = free_port()
    write_text(os.path.join(workdir, "password"), PASSWORD + "\n")
    write_text(os.path.join(workdir, "wrong-password"), WRONG + "\n")
    write_text(os.path.join(workdir, "schedule.yml"), schedule())
    write_text(os.path.join(workdir, "spec.yaml"), SPEC.format(workdir=workdir, port=port))
    redis = Redis(workdir, port)
    worker = sidekiq(workdir, port)
    exporter = None
    try:
        check("Sidekiq-cron loaded the schedule",
              wait_for(lambda: redis.cli("SCARD", "cron_jobs") == "9", 60, "cron_jobs"),
              worker.logs()[-2000:])
        # Database 1, namespace "other": one job as Sidekiq-cron with redis-namespace writes it.
        redis.cli("-n", "1", "SADD", "other:cron_jobs", "cron_job:sock")
        redis.cli("-n", "1", "HSET", "other:cron_job:sock", "name", "sock", "cron", "0 2 * * *",
                  "status", "enabled", "description", marker("ok-socket"))
        exporter = Exporter(args.exporter, os.path.join(workdir, "spec.yaml"), workdir,
                            interval="1s", confirm_delay="200ms",
                            env=dict(os.environ, SCHEDWATCH_TEST_REDIS_PASSWORD=PASSWORD))
        check("ok: runs that left no trace are successes",
              wait_for(lambda: conditions(exporter, "ok") == ["ok"] and
                       status_by_name(exporter)[0]["ok"].get("last_success"), 60, "ok"),
              status_by_name(exporter)[0].get("ok"))
        check("a failing job went to the retry set",
              wait_for(lambda: int(redis.cli("ZCARD", "retry") or 0) > 0, 30, "retry"))
        check("and then to the dead set",
              wait_for(lambda: int(redis.cli("ZCARD", "dead") or 0) > 0, 30, "dead"))
        check("failing is failing",
              wait_for(lambda: "failing" in conditions(exporter, "failing"), 30, "failing"),
              status_by_name(exporter)[0].get("failing"))
        check("hung (in a process's work set past max_runtime) is hung",
              wait_for(lambda: "hung" in conditions(exporter, "hung"), 40, "hung"),
              status_by_name(exporter)[0].get("hung"))
        roles, sources = status_by_name(exporter)
        check("off (status disabled) is inactive", "inactive" in roles["off"]["conditions"],
              roles["off"])
        check("drifted (0 4 for 0 3) is drift", "drift" in roles["drifted"]["conditions"],
              roles["drifted"])
        check("twice is duplicate", "duplicate" in roles["twice"]["conditions"], roles["twice"])
        check("removed is there while scheduled", "missing" not in roles["removed"]["conditions"],
              roles["removed"])
        check("the unix socket source reads database 1 under its namespace",
              sources["socket"]["up"] and roles["ok-socket"]["conditions"] == ["ok"],
              (sources["socket"], roles["ok-socket"]))
        check("a wrong password: unknown, and the error says WRONGPASS",
              not sources["wrong"]["up"] and "WRONGPASS" in sources["wrong"]["error"] and
              roles["wrong-job"]["conditions"] == ["unknown"],
              (sources["wrong"], roles["wrong-job"]))

        check_discover(args, workdir, port)

        # Removed from the schedule, Sidekiq restarted: destroyed, then missing.
        worker.stop()
        write_text(os.path.join(workdir, "schedule.yml"), schedule(removed=False))
        worker = sidekiq(workdir, port)
        check("removed from the schedule and reloaded: missing",
              wait_for(lambda: "missing" in conditions(exporter, "removed"), 60, "removed"),
              status_by_name(exporter)[0].get("removed"))
        check_reconcile(args, workdir, redis)
        check_reconcile_race(args, workdir, redis)
        check("re-created by reconcile: removed is ok again",
              wait_for(lambda: conditions(exporter, "removed") == ["ok"], 60, "removed ok"),
              status_by_name(exporter)[0].get("removed"))

        # Redis down: unknown, never missing; back up with its jobs: ok again.
        seen = set()
        redis.stop()
        check("Redis stopped: the source is down",
              wait_for(lambda: not status_by_name(exporter)[1]["app"]["up"], 20, "app down"))

        def unknown_only():
            roles = status_by_name(exporter)[0]
            for role in ("ok", "off", "twice"):
                seen.update(roles[role]["conditions"])
            return all(roles[r]["conditions"] == ["unknown"] for r in ("ok", "off", "twice"))
        check("Redis stopped: its roles are unknown", wait_for(unknown_only, 20, "unknown"),
              status_by_name(exporter)[0].get("ok"))
        # Through several refreshes and their confirming reads.
        errors = lambda: int(sum(float(v) for v in re.findall(
            r'schedwatch_source_errors_total\{[^}]*source="app"[^}]*\} (\S+)',
            exporter.metrics())))
        first = errors()
        wait_for(lambda: unknown_only() is not None and errors() >= first + 5, 30,
                 "5 more failed reads")
        check("Redis stopped: never missing", "missing" not in seen, seen)
        redis = Redis(workdir, port)
        check("Redis back: ok is ok again",
              wait_for(lambda: conditions(exporter, "ok") == ["ok"], 60, "ok again"),
              status_by_name(exporter)[0].get("ok"))

        pages = (exporter.get("/").text + exporter.get("/api/v1/status").text +
                 exporter.metrics() + exporter.logs())
        check("neither password in logs, status page, JSON or metrics",
              PASSWORD not in pages and WRONG not in pages)
        metrics = exporter.metrics()
        check("schedwatch_source_up for the wrong source is 0",
              'schedwatch_source_up{source="wrong",type="sidekiq_cron"} 0' in metrics)
    finally:
        if exporter is not None:
            exporter.stop()
        worker.stop()
        redis.stop()


if __name__ == "__main__":
    sys.exit(main())
