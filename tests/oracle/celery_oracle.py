#!/usr/bin/python3
"""The Celery oracle: schedwatch's Celery crontab dialect (CronDialect::kCelery, DstPolicy::
kCeleryBeat) against Debian's python3-celery and python3-django-celery-beat, whose
TzAwareCrontab (the schedule DatabaseScheduler builds from a crontab row) is the judge.

Celery's fire times are those of a running beat: it asks is_due(last_run_at) and sleeps the
seconds it answers, at most 5 (DatabaseScheduler's max interval), so the wall clock it waits
for is looked at again right after any UTC offset change. The simulation below does the same
with a patched clock: it sleeps what is_due says, cut at the next offset change. A real beat run
under libfaketime across Europe/Berlin's changes of 2026 (docs/sources/celery_beat.md) fired as
this simulation does.

Cases: documented and quirky syntax, expressions Celery refuses, seeded random expressions in
zones with DST changes (30-minute ones included), base times in the 36 hours before a change.
Prints the first disagreements and 'N passed, N failed'.
"""
import datetime
import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "django.conf.global_settings")
from celery import Celery  # noqa: E402
from django_celery_beat.tzcrontab import TzAwareCrontab  # noqa: E402
from zoneinfo import ZoneInfo  # noqa: E402

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from oracle_common import oracle_arguments, run_batch, utc  # noqa: E402

COUNT = 5
UTC = datetime.timezone.utc

DOCUMENTED = [
    "* * * * *", "0 0 * * *", "*/15 1-2 * * *", "30 2 * * *", "0 3 * * *", "0 0 1 * *",
    "0 0 1,15 * 3", "0 22-2 * * *", "50-10/5 * * * *", "0 0 10-5 * *", "0 0 * 11-2 *",
    "0 0 * * fri-mon", "0 0 * * MON-FRI", "0 0 * * monday", "0 0 * * sunday,sat", "0 0 29 2 *",
    "0 0 13 * fri", "0 0 */10 * 0", "0 9-17/2 * * 1-5", "0 0 31 * *", "0 12 * */3 *",
    # Quirks of crontab_parser: names in any field (`mon` is 1), Python's int(), what follows a
    # matched range or step, a step over a wrapping range.
    "mon * * * *", "0 tue * * *", "1_0 * * * *", "+5 * * * *", "1-5! * * * *", "1-5/2! * * * *",
    "*/7- * * * *", "0 22-2/3 * * *", "0 0 * * thursday-sat",
    "0 0 * * fridge", "0 0 1-5/0_2 * *", "0 0 * mon *",
]

REFUSED = [
    "5/15 * * * *", "*/0 * * * *", "0 0 * * 7", "0 0 * jan *", "0 0 0 * *", "60 * * * *",
    "0 24 * * *", "0 0 32 * *", "0 0 * 13 *", "-1 * * * *", "1- * * * *", "0 0 L * *",
    "0 0 ? * *", "1-5/ * * * *", "*/ * * * *", "1,,2 * * * *", ", * * * *", "0 0 31 2 *",
    "0 0 30 2 *", "*/2x * * * *", "0 0 * * 1#2", "0 0 * * mo", "@daily", "@hourly",
    "0 0 * *", "0 0 * * * *", "1-5/2x * * * *", "** * * * *", "0 0 * * sun-7",
]

# Celery's day search (crontab._delta_to_next, when day_of_month or month_of_year is not `*`)
# skips the rest of a month when the next listed day's midnight UTC is before the last run: west
# of UTC a run late in the evening (after 19:00 in New York) skips the next days of the month
# (`0 22 1,2,3 * *` fires on the 1st only). schedwatch expects those days; the differences this
# makes are counted apart, each checked to be that and only that: with midnight read in the
# schedule's zone Celery agrees with schedwatch.
KNOWN = "Celery's midnight-UTC day skip"

ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Europe/London",
         "Pacific/Chatham", "Asia/Kolkata"]


# The zones' changes of 2026 (UTC), each a base time's anchor; UTC and Kolkata take any.
CHANGES = {
    "Europe/Berlin": [utc(2026, 3, 29, 1), utc(2026, 10, 25, 1)],
    "Europe/London": [utc(2026, 3, 29, 1), utc(2026, 10, 25, 1)],
    "America/New_York": [utc(2026, 3, 8, 7), utc(2026, 11, 1, 6)],
    "Australia/Lord_Howe": [utc(2026, 4, 4, 15), utc(2026, 10, 3, 15, 30)],
    "Pacific/Chatham": [utc(2026, 4, 4, 14), utc(2026, 9, 26, 14)],
}


def random_field(rng, low, high, weekdays=False):
    kind = rng.random()
    if kind < 0.25:
        return "*"
    if kind < 0.35:
        return f"*/{rng.randint(2, max(2, (high - low) // 2))}"
    names = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
    items = []
    for _ in range(rng.randint(1, 3)):
        a = rng.randint(low, high)
        if rng.random() < 0.3:
            b = rng.randint(low, high)  # below a: the range wraps
            item = f"{a}-{b}"
            if weekdays and rng.random() < 0.5:
                item = f"{names[a]}-{names[b]}"
            if rng.random() < 0.3:
                item += f"/{rng.randint(1, 5)}"
        else:
            item = names[a] if weekdays and rng.random() < 0.3 else str(a)
        items.append(item)
    return ",".join(items)


def random_expression(rng):
    return " ".join([random_field(rng, 0, 59), random_field(rng, 0, 23), random_field(rng, 1, 31),
                     random_field(rng, 1, 12), random_field(rng, 0, 6, weekdays=True)])


class Clock:
    now = None


def celery_fires(expr, zone, base, midnight_in_zone=False):
    """'ok\tt1...' as a running DatabaseScheduler beat fires, or 'error\t...'. With
    midnight_in_zone, Celery's day search compares a day's midnight in the schedule's zone with
    the last run, not midnight UTC (see KNOWN)."""
    fields = expr.split()
    if len(fields) != 5:
        return f"error\t{len(fields)} fields"
    minute, hour, dom, month, dow = fields
    tz = ZoneInfo(zone)
    clock = Clock()
    try:
        cron = TzAwareCrontab(minute=minute, hour=hour, day_of_week=dow, day_of_month=dom,
                              month_of_year=month, tz=tz, app=APP)
    except Exception as e:  # Celery refuses it
        return f"error\t{type(e).__name__}: {e}"
    cron.nowfun = lambda: clock.now.astimezone(tz)
    if midnight_in_zone:
        cron.maybe_make_aware = lambda dt: dt.replace(tzinfo=tz) if dt.tzinfo is None else dt
    last = clock.now = datetime.datetime.fromtimestamp(base, UTC)
    fires = []
    horizon = clock.now + datetime.timedelta(days=30 * 366)
    try:
        while len(fires) < COUNT and clock.now < horizon:
            due, rem = cron.is_due(last)
            if due:
                fires.append(int(clock.now.timestamp()))
                last = clock.now
                continue
            # Beat looks again every 5 seconds: cut the sleep at an offset change (30 days at
            # most, so that one sleep crosses one change).
            step = min(max(int(rem), 1), 30 * 86400)
            wake = clock.now + datetime.timedelta(seconds=step)
            if clock.now.astimezone(tz).utcoffset() != wake.astimezone(tz).utcoffset():
                low, high = int(clock.now.timestamp()), int(wake.timestamp())
                offset = clock.now.astimezone(tz).utcoffset()
                while high - low > 1:
                    mid = (low + high) // 2
                    if datetime.datetime.fromtimestamp(mid, tz).utcoffset() == offset:
                        low = mid
                    else:
                        high = mid
                wake = datetime.datetime.fromtimestamp(high, UTC)
            clock.now = wake
    except RuntimeError as e:  # "unable to rollover": a day that never comes
        return f"error\t{e}"
    return "ok" + "".join(f"\t{t}" for t in fires)


APP = Celery("oracle", set_as_current=True)


def main():
    args, rng = oracle_arguments(20261205, 300)

    def base_for(zone):
        anchor = rng.choice(CHANGES.get(zone, [utc(2026, 1, 1), utc(2026, 6, 30, 12)]))
        return anchor - rng.randint(1, 36 * 3600)

    cases = []  # (expr, zone, base, must_refuse)
    for expr in DOCUMENTED:
        for zone in ZONES:
            cases.append((expr, zone, base_for(zone), False))
    for expr in REFUSED:
        cases.append((expr, "UTC", utc(2026, 1, 1), True))
    for _ in range(args.random):
        zone = rng.choice(ZONES)
        cases.append((random_expression(rng), zone, base_for(zone), False))

    ours = run_batch([args.tool, "--dialect", "celery", "--policy", "celery", "--count",
                      str(COUNT)], [f"{e}\t{z}\t{b}\n" for e, z, b, _ in cases])
    passed = failed = known = 0
    for (expr, zone, base, refuse), mine in zip(cases, ours):
        theirs = celery_fires(expr, zone, base)
        if theirs != mine and theirs.startswith("ok") and (
                celery_fires(expr, zone, base, midnight_in_zone=True) == mine):
            known += 1
            continue
        theirs_ok = theirs.startswith("ok")
        mine_ok = mine.startswith("ok")
        if refuse and theirs_ok:
            print(f"FAIL Celery accepts {expr!r}, which this test expects it to refuse")
            failed += 1
            continue
        if theirs_ok != mine_ok or (theirs_ok and theirs != mine):
            failed += 1
            if failed <= 20:
                print(f"FAIL {expr!r} {zone} from {base}:\n  celery {theirs}\n  ours   {mine}")
            continue
        passed += 1
    if len(ours) != len(cases):
        print(f"FAIL answers: {len(ours)} from the tool, {len(cases)} asked")
        failed += 1
    print(f"{passed} passed, {failed} failed, {known} known differences (see KNOWN)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
