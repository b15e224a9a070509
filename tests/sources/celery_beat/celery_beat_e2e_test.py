#!/usr/bin/python3
"""The celery_beat source against the real thing: a PostgreSQL 15 cluster made here (initdb in
a temporary directory, run as the postgres user, reachable by its socket only), Redis as the
broker, a Django project with django_celery_beat and django_celery_results migrated, a real
`celery beat -S django_celery_beat.schedulers:DatabaseScheduler` and a real `celery worker`,
read by the real schedwatch_exporter through a monitoring role that has only GRANT SELECT.

Tasks: one that runs every minute (ok), one disabled in the table (inactive, with its reason),
one deleted (missing), one with another crontab (drift), one listed twice (duplicate); then
beat stopped while the tasks fall due: one problem of the source (history down), not a
not_started per role. The same on SQLite. Prints 'N passed, N failed'.
"""
import argparse
import os
import pwd
import shutil
import subprocess
import sys
import textwrap

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "harness"))
from schedwatch_test import (Exporter, Process, check, conditions, fail_setup,  # noqa: E402
                             status_by_name, summary, temporary_directory, wait_for)

PG_BIN = "/usr/lib/postgresql/15/bin"
PYTHON = "/usr/bin/python3"  # Debian's Celery and Django belong to it

TASKS = textwrap.dedent("""\
    import os
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "proj.settings")
    from celery import Celery
    app = Celery("proj")
    app.config_from_object("django.conf:settings", namespace="CELERY")

    @app.task(name="proj.ok")
    def ok():
        return "ok"

    @app.task(name="proj.boom")
    def boom():
        raise RuntimeError("boom")

    @app.task(name="proj.slow")
    def slow():
        import time
        time.sleep(600)
    """)

SETTINGS = textwrap.dedent("""\
    import os
    SECRET_KEY = "test"
    USE_TZ = True
    TIME_ZONE = "UTC"
    INSTALLED_APPS = ["django_celery_beat"]
    if os.environ["DB"] == "postgres":  # SQLite: no results table, history = last_run_at
        INSTALLED_APPS.append("django_celery_results")
        CELERY_RESULT_BACKEND = "django-db"
        CELERY_RESULT_EXTENDED = True  # periodic_task_name in each result
        CELERY_TASK_TRACK_STARTED = True  # a STARTED row when a task starts
    DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
    if os.environ["DB"] == "postgres":
        DATABASES = {"default": {"ENGINE": "django.db.backends.postgresql", "NAME": "app",
                                 "USER": "postgres", "HOST": os.environ["PGSOCK"],
                                 "PORT": os.environ["PGPORT"]}}
    else:
        DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3",
                                 "NAME": os.environ["SQLITE"]}}
    CELERY_BROKER_URL = "redis+socket://" + os.environ["REDIS_SOCKET"]
    CELERY_TIMEZONE = "UTC"
    # last_run_at written back after every send, not every 3 minutes.
    CELERY_BEAT_SYNC_EVERY = 1
    """)

# The rows, made through Django's models as an application would.
MAKE_TASKS = textwrap.dedent("""\
    import django
    django.setup()
    from django_celery_beat.models import CrontabSchedule, PeriodicTask
    def cron(minute="*", hour="*"):
        return CrontabSchedule.objects.create(minute=minute, hour=hour, timezone="UTC")
    def mark(role):
        return f"[schedwatch: role={role} spec_version=1]"
    PeriodicTask.objects.create(name="every-minute", task="proj.ok", crontab=cron(),
                                description="Heartbeat " + mark("ok"))
    PeriodicTask.objects.create(name="switched-off", task="proj.ok", crontab=cron(),
                                description=mark("disabled"), enabled=False)
    PeriodicTask.objects.create(name="reshaped", task="proj.ok", crontab=cron("*/5"),
                                description=mark("drifted"))
    PeriodicTask.objects.create(name="twice-a", task="proj.ok", crontab=cron(),
                                description=mark("twice"))
    PeriodicTask.objects.create(name="twice-b", task="proj.ok", crontab=cron(),
                                description=mark("twice"))
    PeriodicTask.objects.create(name="to-delete", task="proj.ok", crontab=cron(),
                                description=mark("deleted"))
    PeriodicTask.objects.create(name="raises", task="proj.boom", crontab=cron(),
                                description=mark("failing"))
    PeriodicTask.objects.create(name="sleeps", task="proj.slow", crontab=cron(),
                                description=mark("hung"))
    """)

SPEC = textwrap.dedent("""\
    version: 1
    sources:
      beat:
        type: celery_beat
        {dsn}
        timeout: 10s
        beat_lag: 30s
    defaults:
      start_grace: 90s
    jobs:
      - {{role: ok, source: beat, schedule: "* * * * *", timezone: UTC, spec_version: "1"}}
      - {{role: disabled, source: beat, schedule: "* * * * *", timezone: UTC, spec_version: "1"}}
      - {{role: drifted, source: beat, schedule: "* * * * *", timezone: UTC, spec_version: "1"}}
      - {{role: twice, source: beat, schedule: "* * * * *", timezone: UTC, spec_version: "1"}}
      - {{role: deleted, source: beat, schedule: "* * * * *", timezone: UTC, spec_version: "1"}}
      - {{role: failing, source: beat, schedule: "* * * * *", timezone: UTC, spec_version: "1"}}
      - {{role: hung, source: beat, schedule: "* * * * *", timezone: UTC, spec_version: "1",
          max_runtime: 10s}}
    """)


def django(workdir, env, *args, timeout=120):
    result = subprocess.run([PYTHON, *args], cwd=workdir, env={**os.environ, **env},
                            capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        fail_setup(f"{' '.join(args)} failed: {result.stdout}{result.stderr}")
    return result.stdout


def start_postgres(workdir):
    """A cluster of its own, owned by postgres, reachable by its socket only."""
    postgres = pwd.getpwnam("postgres")
    data, sock = os.path.join(workdir, "pg"), os.path.join(workdir, "pgsock")
    os.chmod(workdir, 0o755)
    for directory in (data, sock):
        os.makedirs(directory, mode=0o700)
        os.chown(directory, postgres.pw_uid, postgres.pw_gid)
    run_as = ["runuser", "-u", "postgres", "--"]
    subprocess.run(run_as + [f"{PG_BIN}/initdb", "-D", data, "-U", "postgres", "--auth=trust",
                             "-E", "UTF8", "--locale=C"], check=True, capture_output=True, cwd="/")
    port = "5432"  # no TCP: the port only names the socket file
    server = Process(run_as + [f"{PG_BIN}/postgres", "-D", data, "-k", sock, "-p", port,
                               "-c", "listen_addresses="], os.path.join(workdir, "pg.log"))
    if not wait_for(lambda: subprocess.run([f"{PG_BIN}/pg_isready", "-h", sock, "-p", port],
                                           capture_output=True).returncode == 0,
                    30, "PostgreSQL to accept connections"):
        fail_setup(f"PostgreSQL did not start: {server.logs()[-2000:]}")
    return server, sock, port


def psql(sock, port, sql, db="postgres"):
    subprocess.run(["runuser", "-u", "postgres", "--", "psql", "-h", sock, "-p", port, "-d", db, "-v", "ON_ERROR_STOP=1", "-c", sql],
                   check=True, capture_output=True)


def make_project(workdir, db):
    """The Django project in workdir/proj; the environment its commands run with."""
    env = {"DB": db, "REDIS_SOCKET": os.path.join(workdir, "redis.sock"),
           "PYTHONPATH": workdir, "DJANGO_SETTINGS_MODULE": "proj.settings",
           "PYTHONDONTWRITEBYTECODE": "1"}
    os.makedirs(os.path.join(workdir, "proj"))
    for name, text in (("__init__.py", ""), ("settings.py", SETTINGS), ("celery.py", TASKS)):
        with open(os.path.join(workdir, "proj", name), "w") as f:
            f.write(text)
    return env


def migrated_database(workdir, db, env, servers):
    """The project's database, migrated (PostgreSQL: its server appended to servers, its
    socket in env); the spec's dsn line for the monitoring role."""
    if db == "postgres":
        server, sock, port = start_postgres(workdir)
        servers.append(server)
        env.update(PGSOCK=sock, PGPORT=port)
        psql(sock, port, "CREATE DATABASE app")
        dsn = f"dsn: \"host={sock} port={port} dbname=app user=monitor\""
    else:
        env["SQLITE"] = os.path.join(workdir, "db.sqlite3")
        dsn = f"dsn: \"sqlite://{env['SQLITE']}\""
    django(workdir, env, "-m", "django", "migrate", "-v0")
    return dsn


def scenario(args, workdir, db):
    env = make_project(workdir, db)
    servers = []
    try:
        servers.append(Process(["redis-server", "--port", "0", "--unixsocket", env["REDIS_SOCKET"],
                                "--save", "", "--appendonly", "no"],
                               os.path.join(workdir, "redis.log")))
        dsn = migrated_database(workdir, db, env, servers)
        sock, port = env.get("PGSOCK"), env.get("PGPORT")
        if db == "postgres":
            # The monitoring role of docs/sources/celery_beat.md: SELECT and nothing more.
            psql(sock, port, "CREATE ROLE monitor LOGIN; GRANT SELECT ON "
                 "django_celery_beat_periodictask, django_celery_beat_crontabschedule, "
                 "django_celery_beat_intervalschedule, django_celery_beat_solarschedule, "
                 "django_celery_beat_clockedschedule, django_celery_results_taskresult "
                 "TO monitor", db="app")
        django(workdir, env, "-c", MAKE_TASKS)
        celery = [PYTHON, "-m", "celery", "-A", "proj"]
        worker = Process(celery + ["worker", "-P", "threads", "-c", "4", "-l", "info"],
                         os.path.join(workdir, "worker.log"), env=env, cwd=workdir)
        servers.append(worker)
        beat = Process(celery + ["beat", "-S", "django_celery_beat.schedulers:DatabaseScheduler",
                                 "-l", "debug", "-s", os.path.join(workdir, "beat-schedule")],
                       os.path.join(workdir, "beat.log"), env=env, cwd=workdir)
        servers.append(beat)
        spec = os.path.join(workdir, "spec.yaml")
        with open(spec, "w") as f:
            f.write(SPEC.format(dsn=dsn))
        # Beat sends the every-minute tasks at the next minute: wait for that first run.
        check(f"{db}: beat sent the every-minute task",
              wait_for(lambda: "Sending due task every-minute" in beat.logs(), 90,
                       "beat to send every-minute"), beat.logs()[-2000:])
        django(workdir, env, "-c", "import django; django.setup(); "
               "from django_celery_beat.models import PeriodicTask; "
               "PeriodicTask.objects.filter(name='to-delete').delete()")
        with Exporter(args.exporter, spec, workdir, name=f"exporter-{db}") as exporter:
            check(f"{db}: ok is ok",
                  wait_for(lambda: conditions(exporter, "ok") == ["ok"], 30, "ok ok"),
                  status_by_name(exporter)[0].get("ok"))
            roles, sources = status_by_name(exporter)
            disabled = roles.get("disabled", {})
            check(f"{db}: a task disabled in the table is inactive",
                  "inactive" in disabled.get("conditions", []), disabled)
            check(f"{db}: a deleted task is missing",
                  wait_for(lambda: "missing" in conditions(exporter, "deleted"), 20,
                           "deleted missing"), status_by_name(exporter)[0].get("deleted"))
            check(f"{db}: another crontab is drift", "drift" in conditions(exporter, "drifted"),
                  roles.get("drifted"))
            check(f"{db}: two tasks with one role are duplicate",
                  "duplicate" in conditions(exporter, "twice"), roles.get("twice"))
            if db == "postgres":
                check(f"{db}: a task that raises is failing (django_celery_results)",
                      wait_for(lambda: "failing" in conditions(exporter, "failing"), 30,
                               "failing failing"), status_by_name(exporter)[0].get("failing"))
                check(f"{db}: a task that sleeps past max_runtime is hung",
                      wait_for(lambda: "hung" in conditions(exporter, "hung"), 30, "hung hung"),
                      status_by_name(exporter)[0].get("hung"))
            else:
                check(f"{db}: without django_celery_results a raising task is not failing",
                      "failing" not in conditions(exporter, "failing"),
                      status_by_name(exporter)[0].get("failing"))
            roles, sources = status_by_name(exporter)
            check(f"{db}: the source is up, its history too",
                  sources.get("beat", {}).get("up") and sources["beat"].get("history_up"),
                  sources.get("beat"))
            # Beat stops; the every-minute tasks fall due and nothing moves last_run_at.
            beat.stop()
            down = wait_for(lambda: not status_by_name(exporter)[1].get("beat", {}).get(
                "history_up", True), 240, "beat down to show")  # beat_lag after a due time
            roles, sources = status_by_name(exporter)
            check(f"{db}: beat stopped is one problem of the source", down and
                  "beat is not running" in sources["beat"].get("history_error", ""),
                  sources.get("beat"))
            check(f"{db}: no role is not_started while beat is down",
                  not any("not_started" in r["conditions"] for r in roles.values()),
                  {role: r["conditions"] for role, r in roles.items()})
            metrics = exporter.metrics()
            check(f"{db}: schedwatch_source_history_up 0",
                  'schedwatch_source_history_up{source="beat",type="celery_beat"} 0' in metrics)
    finally:
        for server in reversed(servers):
            server.stop()


def run_scenarios(scenario, prefix):
    """scenario(args, workdir, db) on PostgreSQL and SQLite (or the --db given)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--db", choices=("postgres", "sqlite"), action="append")
    args = parser.parse_args()
    for tool in ("redis-server", "psql", "runuser"):
        if shutil.which(tool) is None:
            fail_setup(f"{tool} is not installed")
    for db in args.db or ("postgres", "sqlite"):
        with temporary_directory(f"{prefix}{db}-") as workdir:
            scenario(args, workdir, db)
    return summary()


def main():
    return run_scenarios(scenario, "schedwatch-celery-")


if __name__ == "__main__":
    sys.exit(main())
