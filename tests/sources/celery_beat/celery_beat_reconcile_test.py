#!/usr/bin/python3
"""reconcile for celery_beat against the real thing (the PostgreSQL 15 cluster and Django project
of celery_beat_e2e_test.py, then SQLite): a deleted periodic task is inserted again from its
template by `schedwatch_exporter reconcile --apply` through a role with only the GRANTs of
docs/sources/celery_beat.md, with its crontab (an equal schedule row reused) or interval, its
marker, and a newer PeriodicTasks.last_update; django-celery-beat's own DatabaseScheduler loads
it, and a running `celery beat` sends it; a dry run changes nothing, a second run creates
nothing, and disabled or drifted tasks and a name taken by another task are never touched. Prints 'N passed, N failed'.
"""
import json
import os
import subprocess
import sys
import textwrap

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "harness"))
from celery_beat_e2e_test import (PYTHON, django, make_project,  # noqa: E402
                                  migrated_database, psql, run_scenarios)
from schedwatch_test import Process, check, wait_for  # noqa: E402

MAKE_TASKS = textwrap.dedent("""\
    import django
    django.setup()
    from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask
    def mark(role):
        return f"[schedwatch: role={role} spec_version=1]"
    every5 = CrontabSchedule.objects.create(minute="*/5", hour="*", timezone="Europe/Berlin")
    PeriodicTask.objects.create(name="export", task="proj.ok", crontab=every5,
                                description="Export " + mark("export"))
    PeriodicTask.objects.create(name="heartbeat", task="proj.ok", description=mark("heartbeat"),
        interval=IntervalSchedule.objects.create(every=30, period="seconds"))
    PeriodicTask.objects.create(name="switched-off", task="proj.ok", crontab=every5,
                                description=mark("disabled"), enabled=False)
    PeriodicTask.objects.create(name="reshaped", task="proj.ok", description=mark("drifted"),
        crontab=CrontabSchedule.objects.create(minute="7", timezone="Europe/Berlin"))
    PeriodicTask.objects.create(name="taken", task="proj.ok", crontab=every5,
                                description="someone else's, no marker")
    """)

TEMPLATES = {
    "export": textwrap.dedent("""\
        name: export
        task: proj.ok
        description: "Export [schedwatch: role=export spec_version=1]"
        crontab: "*/5 * * * *"
        timezone: Europe/Berlin
        args: '["s3://exports"]'
        queue: exports
        """),
    "heartbeat": textwrap.dedent("""\
        name: heartbeat
        task: proj.ok
        description: "[schedwatch: role=heartbeat spec_version=1]"
        every: "30"
        period: seconds
        """),
}
for role in ("disabled", "drifted", "stranger"):
    TEMPLATES[role] = TEMPLATES["export"].replace("export", role)
# A name taken by a task that is not the role's; a name that would be SQL if pasted into it.
TEMPLATES["stranger"] = TEMPLATES["stranger"].replace("name: stranger", "name: taken")
HOSTILE = "it's'); DROP TABLE django_celery_beat_periodictask; --"
TEMPLATES["hostile"] = TEMPLATES["export"].replace("export", "hostile").replace(
    "name: hostile", f"name: \"{HOSTILE}\"")

SPEC = textwrap.dedent("""\
    version: 1
    sources:
      beat:
        type: celery_beat
        {dsn}
        timeout: 10s
    jobs:
      - {{role: export, source: beat, schedule: "*/5 * * * *", timezone: Europe/Berlin,
          spec_version: "1", template: {dir}/export.yaml}}
      - {{role: heartbeat, source: beat, schedule: "@every 30s", spec_version: "1",
          template: {dir}/heartbeat.yaml}}
      - {{role: disabled, source: beat, schedule: "*/5 * * * *", timezone: Europe/Berlin,
          spec_version: "1", template: {dir}/disabled.yaml}}
      - {{role: drifted, source: beat, schedule: "*/5 * * * *", timezone: Europe/Berlin,
          spec_version: "1", template: {dir}/drifted.yaml}}
      - {{role: stranger, source: beat, schedule: "*/5 * * * *", timezone: Europe/Berlin,
          spec_version: "1", template: {dir}/stranger.yaml}}
      - {{role: hostile, source: beat, schedule: "*/5 * * * *", timezone: Europe/Berlin,
          spec_version: "1", template: {dir}/hostile.yaml}}
    """)

# The rows as Django reads them back, and whether DatabaseScheduler loads them.
INSPECT = textwrap.dedent("""\
    import json, django
    django.setup()
    from django_celery_beat.models import PeriodicTask, PeriodicTasks
    rows = {}
    for t in PeriodicTask.objects.all():
        rows[t.name] = {"description": t.description, "enabled": t.enabled, "args": t.args,
                        "queue": t.queue, "crontab": t.crontab_id and str(t.crontab.minute) + " "
                        + str(t.crontab.timezone), "crontab_id": t.crontab_id,
                        "interval": t.interval_id and str(t.interval), "date": str(t.date_changed)}
    from celery import Celery
    from django_celery_beat.schedulers import DatabaseScheduler
    app = Celery("proj", broker="memory://")
    app.conf.timezone = "UTC"
    scheduler = DatabaseScheduler(app=app, lazy=True)
    print(json.dumps({"rows": rows, "last_update": str(PeriodicTasks.last_change()),
                      "loaded": sorted(scheduler.all_as_schedule())}))
    """)


def reconcile(args, spec, workdir, *extra):
    result = subprocess.run([args.exporter, "reconcile", "--config.file", spec, "--lock-file",
                             os.path.join(workdir, "reconcile.lock"), *extra],
                            capture_output=True, text=True, timeout=60)
    return result.returncode, result.stdout + result.stderr


def row(output, role):
    return next((line.split() for line in output.splitlines()
                 if line.split()[:1] == [role]), [])


def scenario(args, workdir, db):
    env = make_project(workdir, db)
    for role, text in TEMPLATES.items():
        with open(os.path.join(workdir, f"{role}.yaml"), "w") as f:
            f.write(text)
    secret = "s3cret-Repairer-9"
    servers = []
    try:
        dsn = migrated_database(workdir, db, env, servers)
        sock, port = env.get("PGSOCK"), env.get("PGPORT")
        spec = os.path.join(workdir, "spec.yaml")
        if db == "postgres":
            # The two roles of docs/sources/celery_beat.md: the source's SELECT, reconcile's
            # INSERT (with a password, which no output may show).
            psql(sock, port, "CREATE ROLE monitor LOGIN; GRANT SELECT ON "
                 "django_celery_beat_periodictask, django_celery_beat_crontabschedule, "
                 "django_celery_beat_intervalschedule, django_celery_beat_solarschedule, "
                 "django_celery_beat_clockedschedule TO monitor", db="app")
            psql(sock, port, f"CREATE ROLE repairer LOGIN PASSWORD '{secret}'; "
                 "GRANT SELECT, INSERT ON django_celery_beat_periodictask, "
                 "django_celery_beat_crontabschedule, django_celery_beat_intervalschedule "
                 "TO repairer; GRANT SELECT, INSERT, UPDATE ON django_celery_beat_periodictasks "
                 "TO repairer; GRANT USAGE ON SEQUENCE django_celery_beat_periodictask_id_seq, "
                 "django_celery_beat_crontabschedule_id_seq, "
                 "django_celery_beat_intervalschedule_id_seq TO repairer", db="app")
            # Password auth for the repairer only: trust would accept any password.
            hba = os.path.join(workdir, "pg", "pg_hba.conf")
            with open(hba, "w") as f:
                f.write("local all repairer scram-sha-256\nlocal all all trust\n")
            psql(sock, port, "SELECT pg_reload_conf()")
            repair_dsn = os.path.join(workdir, "repair-dsn")
            with open(repair_dsn, "w") as f:
                f.write(f"host={sock} port={port} dbname=app user=repairer password={secret}\n")
            dsn += f"\n    repair_dsn_file: {repair_dsn}"
        with open(spec, "w") as f:
            f.write(SPEC.format(dsn=dsn, dir=workdir))
        django(workdir, env, "-c", MAKE_TASKS)
        before = json.loads(django(workdir, env, "-c", INSPECT))
        django(workdir, env, "-c", "import django; django.setup(); "
               "from django_celery_beat.models import PeriodicTask; "
               "PeriodicTask.objects.filter(name__in=['export', 'heartbeat']).delete()")
        deleted = json.loads(django(workdir, env, "-c", INSPECT))

        code, out = reconcile(args, spec, workdir)
        check(f"{db}: a dry run would create both, exit 1",
              code == 1 and row(out, "export")[-2:] == ["would", "create"]
              and row(out, "heartbeat")[-2:] == ["would", "create"], out)
        check(f"{db}: a dry run changes nothing",
              json.loads(django(workdir, env, "-c", INSPECT)) == deleted)

        code, out = reconcile(args, spec, workdir, "--apply", "--ledger",
                              os.path.join(workdir, "ledger.json"))
        after = json.loads(django(workdir, env, "-c", INSPECT))
        rows = after["rows"]
        check(f"{db}: --apply creates the two deleted tasks",
              row(out, "export")[-1:] == ["created"] and row(out, "heartbeat")[-1:] == ["created"],
              out)
        check(f"{db}: disabled and drifted tasks are never touched",
              "created" not in " ".join(row(out, "disabled") + row(out, "drifted"))
              and {k: rows.get(k) for k in ("switched-off", "reshaped")}
              == {k: before["rows"][k] for k in ("switched-off", "reshaped")}, out)
        check(f"{db}: a name taken by another task is left alone",
              "exists but is not this role's job" in " ".join(row(out, "stranger"))
              and rows.get("taken") == before["rows"]["taken"], (row(out, "stranger"),
                                                                 rows.get("taken")))
        check(f"{db}: a name with quotes and SQL in it is stored as written",
              row(out, "hostile")[-1:] == ["created"]
              and rows.get(HOSTILE, {}).get("description", "").endswith("role=hostile "
                                                                       "spec_version=1]"), out)
        export = rows.get("export", {})
        check(f"{db}: the crontab task is back with its template's schedule and marker",
              export.get("description") == "Export [schedwatch: role=export spec_version=1]"
              and export.get("crontab") == "*/5 Europe/Berlin" and export.get("enabled")
              and export.get("args") == '["s3://exports"]' and export.get("queue") == "exports",
              export)
        check(f"{db}: the equal crontab row is reused, not copied",
              export.get("crontab_id") == before["rows"]["switched-off"]["crontab_id"],
              (export, before["rows"]["switched-off"]))
        check(f"{db}: the interval task is back", rows.get("heartbeat", {}).get("interval")
              == "every 30 seconds", rows.get("heartbeat"))
        check(f"{db}: PeriodicTasks.last_update moved (a running beat reloads)",
              after["last_update"] > deleted["last_update"], (deleted, after))
        check(f"{db}: DatabaseScheduler loads the re-created tasks",
              {"export", "heartbeat"} <= set(after["loaded"]), after["loaded"])
        check(f"{db}: no output holds the repairer's password", secret not in out)

        code, out = reconcile(args, spec, workdir, "--apply")
        check(f"{db}: a second run reads the roles ok and creates nothing",
              row(out, "export")[2:] == ["ok", "verified"]
              and row(out, "heartbeat")[2:] == ["ok", "verified"]
              and json.loads(django(workdir, env, "-c", INSPECT))["rows"] == rows, out)
        # A running beat notices a task reconcile inserts (last_update) and sends it.
        django(workdir, env, "-c", "import django; django.setup(); "
               "from django_celery_beat.models import PeriodicTask; "
               "PeriodicTask.objects.filter(name='heartbeat').delete()")
        servers.append(Process(["redis-server", "--port", "0", "--unixsocket",
                                env["REDIS_SOCKET"], "--save", "", "--appendonly", "no"],
                               os.path.join(workdir, "redis.log")))
        beat = Process([PYTHON, "-m", "celery", "-A", "proj", "beat", "-S",
                        "django_celery_beat.schedulers:DatabaseScheduler", "-l", "debug", "-s",
                        os.path.join(workdir, "beat-schedule")],
                       os.path.join(workdir, "beat.log"), env=env, cwd=workdir)
        servers.append(beat)
        check(f"{db}: beat runs", wait_for(lambda: "beat: Starting" in beat.logs(), 60,
                                           "beat to start"), beat.logs()[-2000:])
        code, out = reconcile(args, spec, workdir, "--apply")
        check(f"{db}: a running beat sends the re-created task without a restart",
              row(out, "heartbeat")[-1:] == ["created"] and wait_for(
                  lambda: "Sending due task heartbeat" in beat.logs(), 60, "beat to send it"),
              out + beat.logs()[-2000:])
        if db == "postgres":
            # The source's own role cannot write: reconcile without repair_dsn_file fails.
            with open(spec, "w") as f:
                f.write(SPEC.format(dsn=dsn.split("\n")[0], dir=workdir))
            django(workdir, env, "-c", "import django; django.setup(); "
                   "from django_celery_beat.models import PeriodicTask; "
                   "PeriodicTask.objects.filter(name='export').delete()")
            code, out = reconcile(args, spec, workdir, "--apply")
            check(f"{db}: the SELECT-only role cannot insert",
                  code == 1 and "permission denied" in " ".join(row(out, "export")), out)
    finally:
        for server in reversed(servers):
            server.stop()


def main():
    return run_scenarios(scenario, "schedwatch-celery-reconcile-")


if __name__ == "__main__":
    sys.exit(main())
