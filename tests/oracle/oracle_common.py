"""What the oracle scripts share: their arguments and random source, UTC times, and running a
batch tool (ours or the peer's) over lines of cases."""
import argparse
import calendar
import random
import subprocess
import sys


def oracle_arguments(seed, random_cases, *more):
    """--tool (required), --seed and --random with these defaults, and `more` as
    (flags, add_argument keywords) pairs; returns (args, a random.Random of the seed)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", required=True)
    parser.add_argument("--seed", type=int, default=seed)
    parser.add_argument("--random", type=int, default=random_cases)
    for flag, options in more:
        parser.add_argument(flag, **options)
    args = parser.parse_args()
    return args, random.Random(args.seed)


def utc(*args):
    """Seconds since the epoch of a UTC date and time given as (year, month, day[, h[, m[, s]]])."""
    return calendar.timegm(args + (0,) * (6 - len(args)))


def run_batch(command, lines, env=None):
    """The output lines of `command` fed `lines`; exits the script when it fails."""
    result = subprocess.run(command, input="".join(lines), capture_output=True, text=True,
                            timeout=300, env=env)
    if result.returncode != 0:
        sys.exit(f"{command[0]} failed: {result.stderr}")
    return result.stdout.splitlines()
