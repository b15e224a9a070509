#!/usr/bin/python3
"""A test or benchmark object compiles the same in every clone, so that ccache shares it between
clones (a CI machine kept between runs, a second worktree): no -D flag of a test's or benchmark's
compile command names the clone or the build directory (benchmarks get the clone's path from
bench/CMakeLists.txt's schedwatch_bench_paths). ccache takes the paths of -I, -include and the
source file relative to the clone (scripts/configure), but a path inside a -D value is hashed as it
is."""
import argparse
import json
import os
import shlex
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from schedwatch_test import check, fail_setup, finish  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--benches", action="store_true",
                        help="the build has the benchmarks (not a sanitizer build)")
    args = parser.parse_args()
    commands_file = os.path.join(args.build_dir, "compile_commands.json")
    if not os.path.exists(commands_file):
        fail_setup(f"{commands_file} missing (CMAKE_EXPORT_COMPILE_COMMANDS)")
    with open(commands_file) as f:
        commands = json.load(f)
    places = [os.path.realpath(args.source_dir), os.path.realpath(args.build_dir)]
    def under(command, folder):
        return os.path.realpath(command["file"]).startswith(os.path.join(places[0], folder) + os.sep)
    tests = [c for c in commands if under(c, "tests")]
    check("the build compiles test files", len(tests) > 10, len(tests))
    if args.benches:
        benches = [c for c in commands if under(c, "bench")]
        check("the build compiles benchmark files", len(benches) > 5, len(benches))
        tests += benches
    naming = []
    for command in tests:
        defines = [word for word in shlex.split(command["command"]) if word.startswith("-D")]
        naming += [f"{os.path.basename(command['file'])}: {word}" for word in defines
                   if any(place in word for place in places)]
    check("no test or benchmark file's -D flag names the clone or the build directory", not naming,
          "\n".join(naming[:10]))
    finish()


if __name__ == "__main__":
    main()
