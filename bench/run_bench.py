#!/usr/bin/python3
"""schedwatch_run's own overhead per run, printing figures (no assertions).

Runs `schedwatch_run --role bench -- /bin/true` N times (flock guard, records in a temporary
directory, the default --keep 100 so pruning is included) with SCHEDWATCH_RUN_TIMINGS=1, which
makes the wrapper print two of its own intervals on stderr:
  start_to_exec_ms   from the wrapper's main() to the command's successful exec (lock taken,
                     start record written and fsynced, fork, exec)
  exit_to_record_ms  from the command's exit to the finished record written, fsynced and renamed
                     (guard released, old records pruned)
and, for comparison, the wall time of the whole wrapped run against /bin/true alone.

  bench/run_bench.py --run build/run/schedwatch_run [--runs 200] [--dir /var/tmp]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--run", required=True)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--dir", default="/var/tmp",
                        help="where records go (/dev/shm shows the cost without disk fsyncs)")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="schedwatch-run-bench-", dir=args.dir)
    env = {**os.environ, "SCHEDWATCH_RUN_TIMINGS": "1"}
    to_exec, to_record, wrapped, bare = [], [], [], []
    try:
        for _ in range(args.runs):
            started = time.monotonic()
            done = subprocess.run([args.run, "--role", "bench", "--lock-dir",
                                   os.path.join(workdir, "locks"), "--record-dir",
                                   os.path.join(workdir, "runs"), "--", "/bin/true"],
                                  env=env, capture_output=True, text=True, check=True)
            wrapped.append((time.monotonic() - started) * 1000)
            match = re.search(r"start_to_exec_ms=([\d.]+) exit_to_record_ms=([\d.]+)",
                              done.stderr)
            to_exec.append(float(match.group(1)))
            to_record.append(float(match.group(2)))
            started = time.monotonic()
            subprocess.run(["/bin/true"], check=True)
            bare.append((time.monotonic() - started) * 1000)
        kept = len(os.listdir(os.path.join(workdir, "runs", "bench")))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"schedwatch_run overhead over {args.runs} runs of /bin/true (flock, records on "
          f"{os.path.dirname(workdir)}, {kept} kept):")
    for name, values in (("start to exec", to_exec), ("exit to record", to_record),
                         ("whole wrapped run", wrapped), ("/bin/true alone", bare)):
        print(f"  {name:<18} median {statistics.median(values):7.3f} ms   "
              f"max {max(values):7.3f} ms")


if __name__ == "__main__":
    main()
