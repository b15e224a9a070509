#!/usr/bin/python3
"""A read of 10,000 django-celery-beat periodic tasks (a crontab each, every tenth marked) by
the celery_beat source (celery_beat_bench) against Celery's own tooling on the same SQLite
database: django-celery-beat's DatabaseScheduler loading its schedule (all_as_schedule), in
Debian's /usr/bin/python3. Prints time and peak memory of each.

  bench/celery_beat_bench.py --bench build/celery_beat_bench [--tasks 10000]
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

MAKE = """
import django, sys
django.setup()
from django_celery_beat.models import CrontabSchedule, PeriodicTask
count = int(sys.argv[1])
CrontabSchedule.objects.bulk_create(
    [CrontabSchedule(id=i + 1, minute=str(i % 60), hour=str(i % 24), timezone="Europe/Berlin")
     for i in range(count)])
PeriodicTask.objects.bulk_create(
    [PeriodicTask(name=f"task-{i}", task="app.tasks.work", crontab_id=i + 1,
                  description=f"[schedwatch: role=role-{i} spec_version=1]" if i % 10 == 0 else "")
     for i in range(count)])
"""

LOAD = """
import django, resource, time
django.setup()
from celery import Celery
from django_celery_beat.schedulers import DatabaseScheduler
app = Celery("bench")
start = time.monotonic()
schedule = DatabaseScheduler(app=app, lazy=True).all_as_schedule()
print(f"entries={len(schedule)} seconds={time.monotonic() - start:.3f} "
      f"peak={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} kB")
"""

SETTINGS = """
SECRET_KEY = "bench"
USE_TZ = True
INSTALLED_APPS = ["django_celery_beat"]
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": %r}}
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", required=True)
    parser.add_argument("--tasks", type=int, default=10000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        db = os.path.join(work, "db.sqlite3")
        with open(os.path.join(work, "bench_settings.py"), "w") as f:
            f.write(SETTINGS % db)
        env = {**os.environ, "PYTHONPATH": work, "DJANGO_SETTINGS_MODULE": "bench_settings",
               "PYTHONDONTWRITEBYTECODE": "1"}
        py = "/usr/bin/python3"
        subprocess.run([py, "-m", "django", "migrate", "-v0"], env=env, check=True)
        subprocess.run([py, "-c", MAKE, str(args.tasks)], env=env, check=True)
        print(f"database: {os.path.getsize(db)} bytes, {args.tasks} tasks")
        start = time.monotonic()
        ours = subprocess.run([args.bench, "sqlite://" + db], capture_output=True, text=True,
                              check=True)
        print(f"schedwatch celery_beat read: {ours.stdout.strip()} "
              f"(process {time.monotonic() - start:.3f} s)")
        start = time.monotonic()
        theirs = subprocess.run([py, "-c", LOAD], env=env, capture_output=True, text=True,
                                check=True)
        print(f"DatabaseScheduler.all_as_schedule: {theirs.stdout.strip()} "
              f"(process {time.monotonic() - start:.3f} s, Django start-up included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
