#!/usr/bin/python3
"""Status pages within their memory budget, on the real binary with 20,000 roles.

Ten concurrent `/?limit=all&q=...` with ten different filters that all match every role are
one page: rendered once (schedwatch_exporter_status_pages_total), each answer the whole page,
and the process' peak RSS grows by no more than one page. Ten concurrent filters that match
ten different large sets of roles (each page about 14 MiB, together past the 96 MiB budget):
each answer is the whole page or 503 with Retry-After, and the peak RSS grows by less than the
budget plus a margin. (Before pages were charged before rendering, the ten renders of one batch
were all held: 20,000 roles grew the peak by about 350 MiB.)
Prints the figures and 'N passed, N failed'.
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from schedwatch_test import (Exporter, check, proc_status_kib, summary,  # noqa: E402
                             temporary_directory, wait_for)

ROLES = 20000
BUDGET_MIB = 96  # WebOptions::max_page_bytes
MARGIN_MIB = 40  # malloc's slack, each answer's head, the filters' role lists, MHD's buffers


def fetch(port, path, answers):
    """GET `path` read whole: (status, headers, body) appended to `answers`."""
    with socket.create_connection(("127.0.0.1", port), timeout=120) as connection:
        connection.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                           .encode())
        data = bytearray()
        while True:
            chunk = connection.recv(1 << 20)
            if not chunk:
                break
            data += chunk
    head, _, body = bytes(data).partition(b"\r\n\r\n")
    lines = head.decode(errors="replace").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    answers.append((int(lines[0].split()[1]) if lines[0].startswith("HTTP/") else 0, headers,
                    body))


def concurrently(port, paths):
    answers = []
    threads = [threading.Thread(target=fetch, args=(port, path, answers)) for path in paths]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def pages_total(exporter):
    """schedwatch_exporter_status_pages_total by outcome; empty when it is not exported."""
    return {outcome: int(float(value)) for outcome, value in re.findall(
        r'^schedwatch_exporter_status_pages_total\{outcome="(\w+)"\} (\S+)$',
        exporter.metrics(), re.M)}


def reset_peak(pid):
    """Sets VmHWM to the present VmRSS (proc(5): clear_refs 5), and returns it in KiB."""
    with open(f"/proc/{pid}/clear_refs", "w") as out:
        out.write("5")
    return proc_status_kib(pid, "VmHWM")


def whole(answer, rows):
    status, headers, body = answer
    return (status == 200 and int(headers.get("content-length", -1)) == len(body)
            and body.endswith(b"</html>\n") and body.count(b"<tr data-role=") == rows)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    with temporary_directory("schedwatch-page-budget-") as workdir:
        subprocess.run([sys.executable, os.path.join(args.source_dir, "bench", "gen_roles.py"),
                        "--roles", str(ROLES), "--out", workdir], check=True)
        # One refresh for the whole test: its pages stay cached.
        # Under ASan, freed memory waits in a quarantine instead of being reused, and the peak
        # would measure that, not the pages held: no quarantine (a release build ignores this).
        asan = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "quarantine_size_mb=0"]))
        exporter = Exporter(args.exporter, os.path.join(workdir, "spec.yaml"), workdir,
                            name="pages", interval="1h", wait="ready", timeout=120,
                            env={"ASAN_OPTIONS": asan})
        try:
            run(exporter)
        finally:
            exporter.stop()
    return summary()


def run(exporter):
    pid = exporter.process.pid
    # "job-01234": every one of these matches every role.
    same = ["job", "JOB", "Job", "jOb", "jo", "ob", "j", "o", "b", "job-"]
    before = pages_total(exporter)
    rss = reset_peak(pid)
    answers = concurrently(exporter.port, [f"/?limit=all&q={q}" for q in same])
    grown = proc_status_kib(pid, "VmHWM") - rss
    after = pages_total(exporter)
    size = max(len(body) for _, _, body in answers)
    print(f"figure: 10 concurrent filters matching all {ROLES} roles: page {size / 2**20:.1f} MiB,"
          f" statuses {sorted(status for status, _, _ in answers)}, peak RSS "
          f"+{grown / 1024:.0f} MiB, pages {after}")
    check("10 filters that match every role: each answer is the whole page",
          all(whole(answer, ROLES) for answer in answers),
          [(status, len(body)) for status, _, body in answers])
    check("... rendered once between them (schedwatch_exporter_status_pages_total)",
          after.get("rendered", 0) - before.get("rendered", 0) == 1
          and after.get("cached", 0) - before.get("cached", 0) == 9, (before, after))
    check("... the peak RSS grows by about one page, not ten",
          grown < (size + (MARGIN_MIB << 20)) / 1024, (grown, size))

    # Ten large, different sets of roles: together past the budget.
    digits = [str(d) for d in range(10)]
    rss = reset_peak(pid)
    answers = concurrently(exporter.port, [f"/?limit=all&q={d}" for d in digits])
    grown = proc_status_kib(pid, "VmHWM") - rss
    final = pages_total(exporter)
    statuses = sorted(status for status, _, _ in answers)
    print(f"figure: 10 concurrent filters matching 10 different sets of about 8,000 roles: "
          f"statuses {statuses}, peak RSS +{grown / 1024:.0f} MiB, pages {final}")

    def whole_or_busy(answer):
        status, headers, body = answer
        if status == 503:
            return headers.get("retry-after", "").isdigit()
        match = re.search(rb'<p id="shown">(\d+) of', body)
        return match is not None and whole(answer, int(match.group(1)))
    check("10 filters of different roles: each answer is the whole page or 503 with Retry-After",
          all(whole_or_busy(answer) for answer in answers),
          [(status, len(body)) for status, _, body in answers])
    check("... every 503 is counted as refused",
          final.get("refused", 0) - after.get("refused", 0) == statuses.count(503),
          (after, final, statuses))
    check(f"... the peak RSS grows by less than the {BUDGET_MIB} MiB budget and a margin",
          grown < (BUDGET_MIB + MARGIN_MIB) * 1024, grown)

    # Once those answers are sent, their pages make room: each filter is answered in turn.
    check("afterwards each of those filters alone is answered", all(
        wait_for(lambda: concurrently(exporter.port, [f"/?limit=all&q={d}"])[0][0] == 200, 60,
                 f"q={d} to be answered") for d in digits))

if __name__ == "__main__":
    sys.exit(main())
