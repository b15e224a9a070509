#!/usr/bin/python3
"""Checks schedwatch's next fire times against croniter, an independent implementation.

Generates a few thousand random cron expressions (lists, ranges, steps, month and weekday
names, macros), starts each from a random instant in one of several zones, and compares the
next fire times printed by next_fire_tool (schedwatch's Schedule::Next, wall-clock policy)
with croniter's. Two known differences are handled explicitly rather than ignored (see
README.md next to this file):

* Day-of-month / day-of-week rule. Debian cron ORs the two fields when neither *starts with*
  '*'; croniter 1.3.5 ORs them when neither *expands to the full set*. Where the two rules
  disagree (`*/2` with a weekday, `1-31` with a weekday, `0-7`...), the expression is compared
  through croniter with the Debian meaning spelled out (day_or=False for AND, or both fields '*'
  when the OR includes a full field), and the script counts how often croniter's own rule would
  have given different fire times.
* Month ends. croniter 1.3.5 moves to "the next listed day-of-month" by adding the difference
  in days, even when that day does not exist in the current month (`1,31` from February 27
  adds 4 days and lands on March 3), so it skips the first days of the next month and returns
  a later fire time (March 31 instead of March 1). A mismatch where croniter's answer is later,
  the day-of-month list holds a day past the end of the month of the last agreeing fire time,
  and croniter restarted at the beginning of the next month agrees with schedwatch is counted
  as this bug; comparison of that expression stops there.
* DST transitions. croniter has its own ad-hoc DST handling: it returns non-existent wall-clock
  times in the spring gap, skips the repeated hour, and when a step crosses a transition it
  often keeps the old UTC offset (`@yearly` in New York from a summer instant gives 01:00 on
  January 1). For a mismatch whose step (from the last agreeing fire time, or the start, to the
  differing one) crosses a transition, croniter is asked again starting at the last transition
  before both answers (or at the last agreeing fire time, if later): if it then agrees with
  schedwatch, the mismatch is counted as "croniter kept the old offset" and checked. Otherwise
  it is excluded and counted only when schedwatch's fire time lies within 26 hours of a
  transition (the skipped or repeated wall-clock hour, or croniter's shifted time on the day
  after); anything else is an unexplained mismatch. Either way comparison of that expression
  stops there.

Fire times at or after 2037 are not compared: the system zoneinfo files carry explicit DST
transitions only up to 2037 and date 3.0.1 (USE_OS_TZDB) does not read the POSIX rule that
continues them, while Python's zoneinfo does.

Exits 1 on any unexplained mismatch, 0 otherwise; prints
`compared N expressions, M fire times, K excluded (reason)`.

Run: /usr/bin/python3 tests/oracle/croniter_oracle.py --tool build/tests/oracle/next_fire_tool
"""

import argparse
import bisect
import calendar
import random
import subprocess
import sys
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

from croniter import croniter
from croniter.croniter import CroniterBadDateError

ZONES = ["UTC", "Asia/Seoul", "Asia/Kolkata", "Europe/Berlin", "America/New_York"]
START_MIN = int(datetime(2001, 1, 1, tzinfo=timezone.utc).timestamp())
START_MAX = int(datetime(2035, 6, 30, tzinfo=timezone.utc).timestamp())
# An excluded DST mismatch must have schedwatch's answer this close to a transition.
DST_DAY = 26 * 3600
COMPARE_BEFORE = int(datetime(2037, 1, 1, tzinfo=timezone.utc).timestamp())

MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
WEEKDAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
MACROS = ["@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually"]


def random_case(rng, name):
    return rng.choice([name, name.upper(), name.capitalize()])


def random_item(rng, lo, hi, names, base):
    """One list item: a value, a range, a stepped range, `a/n`, or a name."""
    kind = rng.randrange(6 if names else 5)
    a = rng.randint(lo, hi)
    if kind == 0:
        return str(a)
    if kind == 1:
        return "%d-%d" % (a, rng.randint(a, hi))
    if kind == 2:
        return "%d-%d/%d" % (a, rng.randint(a, hi), rng.randint(1, max(1, (hi - lo) // 2)))
    if kind == 3:
        return "%d/%d" % (a, rng.randint(1, max(1, (hi - lo) // 2)))
    if kind == 4:
        return "*/%d" % rng.randint(1, max(1, (hi - lo) // 2 + 1))
    return random_case(rng, names[rng.randrange(len(names))])


def random_field(rng, lo, hi, star_weight, names=None, base=0):
    roll = rng.randrange(10)
    if roll < star_weight:
        return "*"
    if roll < star_weight + 2:
        return "*/%d" % rng.randint(1, max(1, (hi - lo) // 2 + 1))
    count = 1 if roll < 8 else rng.randint(2, 4)
    return ",".join(random_item(rng, lo, hi, names, base) for _ in range(count))


def random_expression(rng):
    if rng.randrange(40) == 0:
        return random_case(rng, rng.choice(MACROS))
    return " ".join([
        random_field(rng, 0, 59, 1),
        random_field(rng, 0, 23, 3),
        random_field(rng, 1, 31, 6),
        random_field(rng, 1, 12, 7, MONTHS, 1),
        random_field(rng, 0, 7, 6, WEEKDAYS, 0),
    ])


def day_fields(expression):
    """(day-of-month, day-of-week) text, macros expanded as croniter and cron do."""
    fields = expression.split()
    if len(fields) == 1:
        fields = {
            "@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
            "@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *",
            "@annually": "0 0 1 1 *",
        }[expression.lower()].split()
    return fields


def croniter_spelling(expression):
    """How to ask croniter for Debian's meaning: (expression, day_or, rule_differs)."""
    fields = day_fields(expression)
    debian_or = fields[2][0] != "*" and fields[4][0] != "*"
    expanded, _ = croniter.expand(expression)
    croniter_or = expanded[2] != ["*"] and expanded[4] != ["*"]
    if debian_or == croniter_or:
        return expression, True, False
    if not debian_or:
        # Debian: AND (a field starts with '*' but is not the full set, e.g. `*/2`).
        return expression, False, True
    # Debian: OR, and one field is the full set (e.g. `1-31` or `0-7`): every day matches.
    return " ".join(fields[:2] + ["*", fields[3], "*"]), True, True


def croniter_fires(expression, zone, start, count, day_or=True):
    it = croniter(expression, datetime.fromtimestamp(start, zone), day_or=day_or)
    fires = []
    try:
        for _ in range(count):
            t = int(it.get_next(float))
            if t >= COMPARE_BEFORE:
                break
            fires.append(t)
    except CroniterBadDateError:
        pass
    return fires


def month_end_overshoot(spelled, day_or, zone, previous, ours, theirs):
    """Whether croniter's later answer comes from its month-end day arithmetic."""
    if theirs <= ours:
        return False
    last = datetime.fromtimestamp(previous, zone)
    days = croniter.expand(spelled)[0][2]
    if days == ["*"] or max(d for d in days if d != "l") <= calendar.monthrange(last.year,
                                                                             last.month)[1]:
        return False
    year, month = (last.year + 1, 1) if last.month == 12 else (last.year, last.month + 1)
    restart = int(datetime(year, month, 1, tzinfo=zone).timestamp()) - 1
    if not previous <= restart < ours:
        return False
    return croniter_fires(spelled, zone, restart, 1, day_or) == [ours]


def dst_restart_agrees(spelled, day_or, zone, crossing, previous, ours, theirs):
    """Whether croniter, restarted after the last transition before both answers, agrees.

    croniter remembers the UTC offset of the instant it started from, so one restarted after
    the transition (or at the last agreeing fire time, if that is later) no longer carries it.
    """
    k = bisect.bisect_right(crossing, min(ours, theirs) - 1) - 1  # last transition < both
    restart = max(previous, crossing[k]) if k >= 0 else previous
    return croniter_fires(spelled, zone, restart, 1, day_or) == [ours]


def transitions(zone_name):
    """UTC instants where the zone's offset changes, 2000-2037 (found by bisection)."""
    zone = ZoneInfo(zone_name)

    def offset(t):
        return datetime.fromtimestamp(t, zone).utcoffset()

    result = []
    t = int(datetime(2000, 1, 1, tzinfo=timezone.utc).timestamp())
    step = 7 * 86400
    while t < COMPARE_BEFORE + 366 * 86400:
        if offset(t) != offset(t + step):
            lo, hi = t, t + step
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if offset(mid) == offset(lo):
                    lo = mid
                else:
                    hi = mid
            result.append(hi)
        t += step
    return result


def run_tool(tool, cases, count):
    lines = "".join("%s\t%s\t%d\n" % (expr, zone, start) for expr, zone, start in cases)
    out = subprocess.run([tool, "--count", str(count), "--policy", "wallclock"], input=lines,
                         capture_output=True, text=True, check=True).stdout.splitlines()
    if len(out) != len(cases):
        sys.exit("next_fire_tool printed %d lines for %d cases" % (len(out), len(cases)))
    results = []
    for line in out:
        parts = line.split("\t")
        if parts[0] != "ok":
            results.append(("error", "\t".join(parts[1:])))
        else:
            results.append(("ok", [int(p) for p in parts[1:] if int(p) < COMPARE_BEFORE]))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tool", required=True, help="path to next_fire_tool")
    parser.add_argument("--expressions", type=int, default=3000)
    parser.add_argument("--dst-expressions", type=int, default=400,
                        help="extra expressions started just before a DST transition")
    parser.add_argument("--count", type=int, default=6, help="fire times per expression")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    cases = []
    for i in range(args.expressions):
        cases.append((random_expression(rng), ZONES[i % len(ZONES)],
                      rng.randint(START_MIN, START_MAX)))
    zone_transitions = {name: transitions(name) for name in ZONES}
    # Wall-clock times around 01:00-03:00 started a few hours before a transition: the skipped
    # and repeated hours of Europe/Berlin and America/New_York.
    for i in range(args.dst_expressions):
        zone_name = ["Europe/Berlin", "America/New_York"][i % 2]
        candidates = [t for t in zone_transitions[zone_name] if START_MIN <= t <= START_MAX]
        expression = "%s %s * * *" % (random_field(rng, 0, 59, 2),
                                      rng.choice(["2", "1-3", "*", "*/2", "2,3", "1,2"]))
        cases.append((expression, zone_name, rng.choice(candidates) - rng.randint(60, 6 * 3600)))
    ours = run_tool(args.tool, cases, args.count)

    compared_expressions = compared_fires = 0
    dst_excluded = month_end_excluded = dst_restarted = 0
    rule_cases = rule_native_differs = 0
    unexplained = []
    for (expression, zone_name, start), (status, result) in zip(cases, ours):
        zone = ZoneInfo(zone_name)
        if status != "ok":
            unexplained.append("%r in %s: schedwatch rejects it: %s" % (expression, zone_name,
                                                                        result))
            continue
        spelled, day_or, rule_differs = croniter_spelling(expression)
        theirs = croniter_fires(spelled, zone, start, args.count, day_or)
        if rule_differs:
            rule_cases += 1
            if croniter_fires(expression, zone, start, args.count) != result:
                rule_native_differs += 1
        compared_expressions += 1
        previous = start
        for i in range(max(len(result), len(theirs))):
            a = result[i] if i < len(result) else None
            b = theirs[i] if i < len(theirs) else None
            if a is None or b is None:
                # One list stopped at 2037 or at its search limit: nothing more to compare.
                break
            if a == b:
                compared_fires += 1
                previous = a
                continue
            crossing = zone_transitions[zone_name]
            k = bisect.bisect_right(crossing, start)  # first transition after the start
            if month_end_overshoot(spelled, day_or, zone, previous, a, b):
                month_end_excluded += 1
                if args.verbose:
                    print("month end: %r in %s from %d: schedwatch %s, croniter %s" % (
                        expression, zone_name, start,
                        datetime.fromtimestamp(a, zone).isoformat(),
                        datetime.fromtimestamp(b, zone).isoformat()))
            elif k < len(crossing) and crossing[k] <= max(a, b):
                if dst_restart_agrees(spelled, day_or, zone, crossing, previous, a, b):
                    dst_restarted += 1
                    compared_fires += 1
                    break
                j = bisect.bisect_left(crossing, a)
                near = [crossing[x] for x in (j - 1, j) if 0 <= x < len(crossing)]
                if not any(abs(a - t) <= DST_DAY for t in near):
                    unexplained.append("%r in %s from %d: fire #%d schedwatch %s, croniter %s "
                                       "(not next to a DST transition)" % (
                                           expression, zone_name, start, i + 1,
                                           datetime.fromtimestamp(a, zone).isoformat(),
                                           datetime.fromtimestamp(b, zone).isoformat()))
                    break
                dst_excluded += 1
                if args.verbose:
                    print("DST: %r in %s from %d: schedwatch %s, croniter %s" % (
                        expression, zone_name, start,
                        datetime.fromtimestamp(a, zone).isoformat(),
                        datetime.fromtimestamp(b, zone).isoformat()))
            else:
                unexplained.append("%r in %s from %d (%s): fire #%d schedwatch %s, croniter %s" % (
                    expression, zone_name, start, datetime.fromtimestamp(start, zone).isoformat(),
                    i + 1, datetime.fromtimestamp(a, zone).isoformat(),
                    datetime.fromtimestamp(b, zone).isoformat()))
            break

    print("compared %d expressions, %d fire times, %d excluded (%d: a DST transition inside the "
          "step, where croniter's own DST handling differs; %d: croniter's month-end day "
          "arithmetic skipping the first days of a month)" % (
              compared_expressions, compared_fires, dst_excluded + month_end_excluded,
              dst_excluded, month_end_excluded))
    print("croniter kept the old UTC offset across a DST transition for %d expressions: "
          "restarted after the transition it agrees with schedwatch" % dst_restarted)
    print("day-of-month/day-of-week rule: %d expressions where croniter's full-set rule and "
          "Debian's first-character rule disagree, compared with the Debian meaning spelled out; "
          "croniter's own rule would have given different fire times for %d of them" % (
              rule_cases, rule_native_differs))
    for line in unexplained[:20]:
        print("MISMATCH " + line)
    if unexplained:
        print("%d unexplained mismatches" % len(unexplained))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
