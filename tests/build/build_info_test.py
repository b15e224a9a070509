#!/usr/bin/python3
"""The build stamps version, revision and branch when it builds, not when CMake configures:
runs cmake/stamp_build_info.cmake in a scratch git repository across two commits, and checks
that the binaries of this build carry this tree's revision."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from schedwatch_test import check, finish  # noqa: E402


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def stamp(source_dir, repo, output, env=None):
    subprocess.run(["cmake", f"-DSOURCE_DIR={repo}", f"-DOUTPUT={output}",
                    "-DSCHEDWATCH_VERSION=9.8.7", "-DSCHEDWATCH_COMPILER=GNU 1.2",
                    "-DSCHEDWATCH_PLATFORM=linux/x86_64", "-P",
                    os.path.join(source_dir, "cmake", "stamp_build_info.cmake")],
                   check=True, env={**os.environ, **(env or {})})
    with open(output) as f:
        return f.read()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--rulegen", required=True)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        repo = os.path.join(tmp, "repo")
        os.mkdir(repo)
        git(repo, "init", "-q", "-b", "release-1.0")
        git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty",
            "-m", "one")
        first = git(repo, "rev-parse", "--short=12", "HEAD")
        output = os.path.join(tmp, "build_info.cc")
        text = stamp(args.source_dir, repo, output)
        check("first commit stamped", f'"{first}"' in text, text)
        check("branch stamped", '"release-1.0"' in text, text)
        check("version, compiler and platform stamped",
              '"9.8.7"' in text and '"GNU 1.2"' in text and '"linux/x86_64"' in text, text)
        mtime = os.stat(output).st_mtime_ns
        os.utime(output, ns=(mtime - 10**9, mtime - 10**9))
        stamp(args.source_dir, repo, output)
        check("an unchanged tree leaves the file alone (nothing recompiles)",
              os.stat(output).st_mtime_ns == mtime - 10**9)
        git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty",
            "-m", "two")
        second = git(repo, "rev-parse", "--short=12", "HEAD")
        text = stamp(args.source_dir, repo, output)
        check("a new commit is stamped by the next build", f'"{second}"' in text, text)
        with open(os.path.join(repo, "tracked"), "w") as f:
            f.write("x")
        git(repo, "add", "tracked")
        text = stamp(args.source_dir, repo, output)
        check("uncommitted changes say -dirty", f'"{second}-dirty"' in text, text)
        text = stamp(args.source_dir, os.path.join(tmp, "no-git"), output,
                     {"SCHEDWATCH_REVISION": "abc123", "SCHEDWATCH_BRANCH": "tarball"})
        check("environment wins where there is no git", '"abc123"' in text and '"tarball"' in text,
              text)

    # This build's binaries carry this tree's revision.
    try:
        head = git(args.source_dir, "rev-parse", "--short=12", "HEAD")
    except subprocess.CalledProcessError:
        head = "unknown"
    for binary, name in ((args.exporter, "schedwatch_exporter"), (args.rulegen, "schedwatch_rulegen")):
        result = subprocess.run([binary, "--version"], capture_output=True, text=True)
        match = re.match(rf"{name}, version [0-9.]+ \(branch: \S+, revision: (\S+)\)\n"
                         r"  compiler: .+\n  platform: \S+/\S+\n$", result.stdout)
        check(f"{name} --version in the Prometheus layout", match is not None, result.stdout)
        check(f"{name} carries this tree's revision",
              match is not None and match.group(1).split("-dirty")[0] == head,
              (result.stdout, head))
    finish()


if __name__ == "__main__":
    main()
