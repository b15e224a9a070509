#!/usr/bin/python3
"""Checks schedwatch's systemd calendar expressions against systemd-analyze, systemd's own reading.

For systemd.time(7)'s examples, a few hundred expressions drawn at random from the grammar
(seeded, some of them broken on purpose) and base times beside DST changes in several zones,
compares what calendar_tool (CalendarSpec) and `systemd-analyze calendar --iterations=N
--base-time=@T` say: whether the expression is refused, its normalised form and its next elapse
times, with TZ set to the zone (expressions without a zone suffix use it) and with a zone suffix.
Where systemd itself gives up computing an elapse ("Resource deadlock avoided", a loop in its
search), the expression is counted, not compared.

Elapse times at or after 2037 are not compared: the system zoneinfo files carry explicit DST
transitions only up to 2037 and date (USE_OS_TZDB) does not read the POSIX rule that continues
them, while glibc does. Exits 1 on any difference, printing them.

Run: /usr/bin/python3 tests/oracle/systemd_calendar_oracle.py --tool build/tests/oracle/calendar_tool
"""

import os
import re
import subprocess
import sys
from datetime import datetime, timezone

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from oracle_common import oracle_arguments  # noqa: E402

ITERATIONS = 5
GAVE_UP = ("gave up", [])
LIMIT = int(datetime(2037, 1, 1, tzinfo=timezone.utc).timestamp())

# systemd.time(7)'s examples, and cases of systemd's own tests (test-calendarspec.c).
DOCUMENTED = [
    "Sat,Thu,Mon..Wed,Sat..Sun", "Mon,Sun 12-*-* 2,1:23", "Wed *-1", "Wed..Wed,Wed *-1",
    "Wed, 17:48", "Wed..Sat,Tue 12-10-15 1:2:3", "*-*-7 0:0:0", "10-15", "monday *-12-* 17:00",
    "Mon,Fri *-*-3,1,2 *:30:45", "12,14,13,12:20,10,30", "12..14:10,20,30",
    "mon,fri *-1/2-1,3 *:30:45", "03-05 08:05:40", "08:05:40", "05:40", "Sat,Sun 12-05 08:05:40",
    "Sat,Sun 08:05:40", "2003-03-05 05:40", "05:40:23.4200004/3.1700005", "2003-02..04-05",
    "2003-03-05 05:40 UTC", "2003-03-05", "03-05", "hourly", "daily", "daily UTC", "monthly",
    "weekly", "weekly Pacific/Auckland", "yearly", "annually", "*:2/3", "minutely", "quarterly",
    "semiannually", "semi-annually", "biannually", "bi-annually", "anually", "*-*~1", "*-*~01",
    "*-02~03", "Mon *-05~07/1", "*-05~07/2", "*-*~5/2", "*-*~3..1", "*-*~2..4/2",
    "Fri *-*~7/1 00:00", "*-*-* *:*:*", "*-*-* *:*:0/0.25", "*:0/15", "*:*:5/10",
    "00:00:00.5..10/2.5", "2024-02-29", "*-02-29 12:00", "*-02-30", "*-04-31", "2199-12-31",
    "@0", "@1700000000", "@1700000000 Europe/Berlin", "Mon..Fri 09:00 America/New_York",
    "Sat..Sun 10:00 Asia/Seoul", "*-*-* 02:30", "*-*-* 02:15,02:45", "*-*-* 01,02,03:00,30",
    "*-*-* 2:00", "*-*-* 1..3:*/10", "*-*-* *:00,10,20,30,40,50", "*-*-* 02:00:30",
    "Sun *-*-* 02:30", "*-03,10,11-* 01..03:00/20", "12:00 UTC", "12:00 utc",
    "Mon-Fri 09:00", "mon..fri 17:30:15", "Tuesday..Thursday 00:00", "*-*-1/10",
    "*-1/3-1 00:00", "1..2:*:0/30", "*-*-* 00/6:00", "2024..2026-01-01",
    "2024..2030/2-06-15 08:00", "24-06-15", "99-01-01", "70-01-01",
]

# Expressions systemd refuses; both must refuse them.
REFUSED = [
    "", " daily", "daily ", "*:*/15", "*-*~01/2", "*-*-* *:*:*.5", "*:*:1.5..1.7", "5..3:00",
    "2200-01-01", "00:00:60", "*-*~29", "1/0:00", "*-*-* 24:00", "*-13-01", "*-*-32",
    "*-*-0", "Mon..", "Mo", "Monx", "Sat..Mon", "Mon-", "1~2-3", "2024-01~02~03", "12", "12:",
    "12:00:", "12:00:00:00", "*-*-* 12:00 Nowhere/Zone", "@", "@-5", "@99999999999",
    "1969-01-01", "*:60", "*-*-* 1,:00", "*-*-* ,1:00", "0/61:00", "weekly-ish", "Mon Tue",
    "*-*-* 00:00:00.", "*-*-* 00:00..1:00", "*-*-* 12:00 Europe/berlin", "UTC", "12:00 UTC UTC",
]

ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Seoul"]
SUFFIX_ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Seoul",
                "Pacific/Auckland", "Asia/Kolkata"]

# DST changes (UTC): spring forward and fall back of each zone, Seoul's of 1987.
TRANSITIONS = {
    "Europe/Berlin": [1711846800, 1729990800, 1679792400, 1698541200],
    "America/New_York": [1710054000, 1730613600, 1678604400, 1699164000],
    "Australia/Lord_Howe": [1712415600, 1728142200],
    "Asia/Seoul": [547581600, 560887200],
    "UTC": [1704067200, 1735689600],
}


def chain(rng, low, high, width=1, usec=False):
    """One field: `*`, or a list of values, ranges and repetitions (sometimes out of range)."""
    if rng.random() < 0.35:
        return "*"
    items = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        start = rng.randint(low, high + (1 if rng.random() < 0.03 else 0))
        kind = rng.random()
        text = f"{start:0{width}d}"
        if usec and rng.random() < 0.2:
            text += "." + str(rng.randint(0, 999999)).zfill(rng.choice([1, 3, 6]))
        if kind < 0.25 and start < high:
            text += f"..{rng.randint(start, high):0{width}d}"
        if 0.25 <= kind < 0.5:
            text += f"/{rng.randint(1, max(1, (high - low) // 2))}"
        if 0.5 <= kind < 0.6 and start < high:
            text += f"..{rng.randint(start, high):0{width}d}/{rng.randint(1, 5)}"
        items.append(text)
    return ",".join(items)


def random_expression(rng):
    if rng.random() < 0.06:
        text = rng.choice(["minutely", "hourly", "daily", "weekly", "monthly", "yearly",
                           "quarterly", "semiannually"])
        return text + (" " + rng.choice(SUFFIX_ZONES) if rng.random() < 0.4 else "")
    parts = []
    if rng.random() < 0.3:
        names = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
        days = []
        for _ in range(rng.choice([1, 2])):
            a = rng.randrange(7)
            if rng.random() < 0.4:
                b = rng.randrange(a, 7)
                days.append(f"{names[a]}{rng.choice(['..', '-'])}{names[b]}")
            else:
                days.append(names[a])
        parts.append(",".join(days))
    if rng.random() < 0.7:
        separator = "~" if rng.random() < 0.15 else "-"
        day = chain(rng, 1, 28 if separator == "~" else 31, 2)
        date = f"{chain(rng, 1, 12, 2)}{separator}{day}"
        if rng.random() < 0.6:
            date = f"{chain(rng, 2020, 2036, 4)}-{date}"
        parts.append(date)
    if rng.random() < 0.9:
        time = f"{chain(rng, 0, 23, 2)}:{chain(rng, 0, 59, 2)}"
        if rng.random() < 0.6:
            time += ":" + chain(rng, 0, 59, 2, usec=True)
        parts.append(time)
    if not parts:
        parts.append("*-*-*")
    if rng.random() < 0.25:
        parts.append(rng.choice(SUFFIX_ZONES))
    return " ".join(parts)


def to_unix(text):
    # "Sun 2024-10-27 00:00:00 UTC"
    stamp = datetime.strptime(text.split(" ", 1)[1].rsplit(" ", 1)[0], "%Y-%m-%d %H:%M:%S")
    return int(stamp.replace(tzinfo=timezone.utc).timestamp())


def systemd(expressions, zone, base):
    """{expression: (normalized, [elapse seconds]) or None when refused}."""
    env = dict(os.environ, TZ=zone, LC_ALL="C", SYSTEMD_COLORS="0", SYSTEMD_PAGER="")
    result = subprocess.run(
        ["systemd-analyze", "calendar", f"--iterations={ITERATIONS}", f"--base-time=@{base}",
         "--"] + expressions, env=env, capture_output=True, text=True, timeout=60)
    answers = {expression: None for expression in expressions}
    # systemd 252 sometimes gives up ("Resource deadlock avoided": its search went round in
    # circles, e.g. `*-*-11/14` in southern-hemisphere zones): not compared, only counted.
    for line in result.stderr.splitlines():
        match = re.match(r"Failed to determine next elapse for '(.*)': ", line)
        if match:
            answers[match.group(1)] = GAVE_UP
    current = None
    for line in result.stdout.splitlines():
        field, _, value = line.strip().partition(": ")
        if field == "Original form":
            current = value
            answers[current] = ("", [])
        elif field == "Normalized form":
            # The original form is left out when it is the normalised one.
            if current is None or answers[current] != ("", []):
                current = value
            answers[current] = (value, [])
        elif not line.strip():
            if current is not None and answers[current] == ("", []):
                continue
            current = None
        elif field in ("Next elapse", "(in UTC)") or field.startswith("Iter. #"):
            if value == "never":
                continue
            if zone == "UTC" or field == "(in UTC)":
                answers[current][1].append(to_unix(value))
    return answers


def ours(tool, expressions, zone, base):
    lines = "".join(f"{e}\t{zone}\t{base * 1000000}\t{ITERATIONS}\n" for e in expressions)
    result = subprocess.run([tool], input=lines, capture_output=True, text=True, timeout=60,
                            check=True)
    answers = {}
    for expression, line in zip(expressions, result.stdout.splitlines()):
        fields = line.split("\t")
        if fields[0] == "error":
            answers[expression] = None
        else:
            answers[expression] = (fields[1], [int(t) // 1000000 for t in fields[2:]])
    return answers


def main():
    args, rng = oracle_arguments(20261202, 300)

    generated = list(dict.fromkeys(random_expression(rng) for _ in range(args.random)))
    cases = []  # (zone, base, expressions)
    for zone in ZONES:
        cases.append((zone, TRANSITIONS[zone][0] - 3600, REFUSED))
        for transition in TRANSITIONS[zone]:
            cases.append((zone, transition - rng.choice([7200, 1800]), DOCUMENTED))
            picked = rng.sample(generated, len(generated) // 5)
            cases.append((zone, transition - rng.randint(60, 4 * 3600), picked))
    # Every random expression at least once, from a random base time.
    for start in range(0, len(generated), 60):
        zone = rng.choice(ZONES)
        cases.append((zone, rng.randint(946684800, 2082758400), generated[start:start + 60]))

    compared = refused = elapses = gave_up = 0
    failures = []
    for zone, base, expressions in cases:
        expressions = [e for e in dict.fromkeys(expressions) if e != ""]
        theirs = systemd(expressions, zone, base)
        mine = ours(args.tool, expressions, zone, base)
        for expression in expressions:
            a, b = theirs[expression], mine.get(expression)
            compared += 1
            if a is GAVE_UP:
                gave_up += 1
                continue
            if a is None or b is None:
                if (a is None) != (b is None):
                    failures.append(f"{expression!r} TZ={zone}: systemd {'refuses' if a is None else 'accepts'}, "
                                    f"schedwatch {'refuses' if b is None else 'accepts'}")
                else:
                    refused += 1
                continue
            if a[0] != b[0]:
                failures.append(f"{expression!r}: normalized {a[0]!r} by systemd, {b[0]!r} by schedwatch")
                continue
            times_a = [t for t in a[1] if t < LIMIT]
            times_b = [t for t in b[1][:len(a[1])] if t < LIMIT]
            if len(b[1]) < len(a[1]) and (not b[1] or b[1][-1] < LIMIT):
                times_b.append(None)
            elapses += len(times_a)
            if times_a != times_b:
                failures.append(f"{expression!r} TZ={zone} base=@{base}: systemd {times_a}, "
                                f"schedwatch {times_b}")
    # The empty expression is refused by both (systemd-analyze cannot be given it).
    if ours(args.tool, [""], "UTC", 0)[""] is not None:
        failures.append("'' is accepted")
    for failure in failures:
        print("MISMATCH", failure)
    print(f"compared {compared} expressions ({refused} refused by both, {gave_up} where systemd "
          f"gave up), {elapses} elapse times, {len(failures)} differences")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
