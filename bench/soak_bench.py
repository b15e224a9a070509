#!/usr/bin/python3
"""Soak: --refreshes refreshes of --roles crontab roles (bench/gen_roles.py) at a short
--refresh.interval, with reloads, scrapes and hostile clients running the whole time; is the
exporter's RSS flat?

The exporter serves basic auth (bcrypt) and --web.enable-lifecycle; its spec has, beside the
crontab fleet, a gitlab source on a loopback GitLab whose schedules page is one valid schedule
followed by --gitlab-zeros zeros (1,000,000). Meanwhile, each loop bounded in count and ending
with the soak, all on 127.0.0.0/8 (the exporter limits connections per client address, so each
client has an address of its own):

  - Prometheus (127.0.0.2): /metrics with gzip every 2 s, each answer checked whole (its
    Content-Length arrived, the gzip member complete); every --reload-every refreshes the spec
    is rewritten, invalid and valid in turn, and POST /-/reload (500, then 200, expected);
  - --idle idle TCP connections (100 an address from 127.0.0.10 on), reopened as they close;
  - 100 connections trickling a header line every 2 s (127.0.0.20);
  - slowhttptest's slowloris, slow body and slow read in turn, 300 connections for 30 s each
    (127.0.0.1; it sends no credentials, so what it reads is a 401);
  - in rounds 15 s apart: 20 slow readers (4 KiB/s for 20 s) of /api/v1/status and /?limit=all
    and 50 concurrent /api/v1/status (127.0.0.3-6), and at once 10 concurrent /?limit=all&q=X,
    ten filters that each match every role (127.0.0.7);
  - every 10 s, 20 concurrent wrong passwords, each new so bcrypt checks it (127.0.0.8);
  - every 60 s, a storm of 5 concurrent POST /-/reload (127.0.0.9).

Refreshes are counted from the exporter's debug log ('refresh done'): /metrics has no refresh
counter, and its last cycle time changes faster than a scrape can see every value. VmRSS is
read from /proc/PID/status every 2 s, VmHWM at the end. Prints refreshes, reloads, scrapes, each
client's answers, RSS at the start (after the first refresh), at the end and its peak (VmHWM),
and the slope of a linear fit over the second half (MiB per 100 refreshes) of every sample and
of the lowest of each 15 s pause between page rounds (the pages and crowds come and go, and a
page is held while its refresh stands; a leak raises what is left between them), the lowest RSS
of each tenth of the refreshes, then 'RSS flat: yes' when the lowest of the last three tenths is
within --flat-tolerance MiB of the lowest of the first half; exits 1 unless every scrape was whole,
the exporter lived, every refresh was done and RSS was flat.

  nice -n 10 bench/soak_bench.py --exporter build/exporter/schedwatch_exporter
                                 [--roles 100000] [--refreshes 1000] [--interval 1s]
"""
import argparse
import base64
import itertools
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "harness"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "sources", "gitlab"))
from bench_clients import (SLOW_MODES, crowd, open_connections, scrape,  # noqa: E402
                           slowhttptest_command, tally)
from fake_gitlab import FakeGitLab, Project, make_server  # noqa: E402
from schedwatch_test import (Exporter, curl_timed, get, replace_file,  # noqa: E402
                             temporary_directory, wait_for, write_text)

GITLAB_FIXTURES = os.path.join(HERE, "..", "tests", "sources", "gitlab", "fixtures")
PASSWORD = "soak horse"
QUIET_SECONDS = 15  # between two rounds of pages and status crowds
# Every role's name holds "job-": each of these filters matches them all.
FILTERS = ["j", "o", "b", "-", "jo", "ob", "b-", "job", "ob-", "job-"]
MIB = 1024


class HostileGitLab(FakeGitLab):
    """The fake GitLab, its schedules page one valid schedule followed by `zeros` zeros."""

    def __init__(self, zeros):
        super().__init__()
        self.padding = b", 0" * zeros

    def page(self, project, items, query, base, path, quota):
        status, headers, body = super().page(project, items, query, base, path, quota)
        if path.endswith("/pipeline_schedules"):
            body = body[:-1] + self.padding + b"]"
        return status, headers, body


class Soak:
    """What the clients share: the exporter's port and credentials, the end, the tally."""

    def __init__(self, port, deadline):
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        token = base64.b64encode(f"prometheus:{PASSWORD}".encode()).decode()
        self.auth = f"Authorization: Basic {token}\r\n"
        self.deadline = deadline
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.counts = {}  # client -> {outcome: count}
        self.scrape_ms = []
        self.quiet = None  # the number of the pause between page rounds going on, if one is

    def running(self):
        return not self.stop.is_set() and time.monotonic() < self.deadline

    def pause(self, seconds):
        """Waits `seconds`; False when the soak ended meanwhile."""
        return not self.stop.wait(seconds) and self.running()

    def add(self, client, outcome, count=1):
        with self.lock:
            outcomes = self.counts.setdefault(client, {})
            outcomes[outcome] = outcomes.get(outcome, 0) + count

    def add_all(self, client, statuses):
        for status in statuses:
            self.add(client, str(status))

    def curl(self, path, *options, source, max_time=120):
        return curl_timed(self.base + path, "--interface", source, *options, max_time=max_time)[0]


def closed(connection):
    """Whether the exporter closed (or answered) a connection we only hold."""
    try:
        connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)  # its end, or an answer
    except BlockingIOError:
        return False
    except OSError:
        pass
    return True


def hold(soak, client, count, sources, first_line, every, trickle=None):
    """`count` connections spread over `sources`, reopened when closed; every `every` seconds
    each is sent `trickle` (if any)."""
    held = {source: [] for source in sources}
    per_source = -(-count // len(sources))
    try:
        while soak.running():
            for source, connections in held.items():
                for connection in [c for c in connections if closed(c)]:
                    connection.close()
                    connections.remove(connection)
                    soak.add(client, "closed by the exporter")
                opened = open_connections(soak.port, per_source - len(connections), first_line,
                                          source)
                connections += opened
                soak.add(client, "opened", len(opened))
                for connection in connections if trickle else ():
                    try:
                        connection.sendall(trickle)
                        soak.add(client, "lines sent")
                    except OSError:
                        pass
            if not soak.pause(every):
                break
    finally:
        for connections in held.values():
            for connection in connections:
                connection.close()


def slow_attacks(soak):
    """slowhttptest's three attacks in turn, 30 s each, until the soak ends."""
    url = soak.base + "/metrics"
    for turn in range(1_000_000):
        seconds = min(30, int(soak.deadline - time.monotonic()))
        if not soak.running() or seconds < 5:
            return
        mode, name = SLOW_MODES[turn % len(SLOW_MODES)]
        attacker = subprocess.Popen(slowhttptest_command(mode, 300, seconds, url, rate=100),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True)
        try:
            soak.stop.wait(seconds + 5)
        finally:
            if attacker.poll() is None:
                os.killpg(attacker.pid, signal.SIGTERM)
            attacker.wait()
        soak.add("slowhttptest (300 connections, 127.0.0.1)", name)


def every(soak, seconds, body):
    """body(soak) every `seconds` until the soak ends."""
    while soak.running():
        body(soak)
        if not soak.pause(seconds):
            return


def page_rounds(soak):
    """Rounds of the status crowd and the filtered pages at once, each round followed by
    QUIET_SECONDS without them: the RSS of those pauses is what the pages leave behind."""
    for pause in itertools.count():
        rounds = [threading.Thread(target=round_, args=(soak,))
                  for round_ in (status_crowd, filtered_pages)]
        for thread in rounds:
            thread.start()
        for thread in rounds:
            thread.join()
        soak.quiet = pause
        resting = soak.pause(QUIET_SECONDS)
        soak.quiet = None
        if not resting:
            return


def status_crowd(soak):
    sources = [f"127.0.0.{i}" for i in range(3, 7)]
    slow_threads, slow_statuses = [], []
    for path in ("/api/v1/status", "/?limit=all"):
        threads, statuses = crowd(soak.port, path, 10, sources, bytes_per_second=4096,
                                  seconds=20, headers=soak.auth)
        slow_threads += threads
        slow_statuses.append(statuses)
    threads, statuses = crowd(soak.port, "/api/v1/status", 50, sources, headers=soak.auth)
    for thread in threads + slow_threads:
        thread.join()
    soak.add_all("50 concurrent /api/v1/status (127.0.0.3-6)", statuses)
    soak.add_all("20 slow readers of /api/v1/status and /?limit=all", sum(slow_statuses, []))


def filtered_pages(soak):
    threads, statuses = [], []
    for query in FILTERS:
        more_threads, more = crowd(soak.port, f"/?limit=all&q={query}", 1, ["127.0.0.7"],
                                   headers=soak.auth)
        threads += more_threads
        statuses.append(more)
    for thread in threads:
        thread.join()
    soak.add_all("10 concurrent /?limit=all&q=X (127.0.0.7)", sum(statuses, []))


WRONG = itertools.count()  # each password new: bcrypt checks every one


def password_flood(soak):
    def wrong(index):
        soak.add("20 concurrent wrong passwords (127.0.0.8)",
                 soak.curl("/metrics", "-u", f"prometheus:wrong{index}", source="127.0.0.8",
                           max_time=30))
    threads = [threading.Thread(target=wrong, args=(next(WRONG),)) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def reload_storm(soak):
    def reload():
        soak.add("reload storms of 5 (127.0.0.9)",
                 soak.curl("/-/reload", "-X", "POST", "-u", f"prometheus:{PASSWORD}",
                           source="127.0.0.9"))
    threads = [threading.Thread(target=reload) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def scrapes(soak):
    elapsed, _, whole = scrape(soak.port, True, timeout=60, source="127.0.0.2",
                               headers=soak.auth.encode())
    soak.add("scrapes", "whole" if whole else "failed")
    with soak.lock:
        soak.scrape_ms.append(elapsed)


class RefreshLog:
    """The exporter's 'refresh done' lines, read as the log grows: their count and seconds."""

    def __init__(self, path):
        self.file = open(path, "rb")
        self.rest = b""
        self.seconds = []

    def count(self):
        data = self.rest + self.file.read()
        lines, _, self.rest = data.rpartition(b"\n")
        self.seconds += [float(s) for s in
                         re.findall(rb'msg="refresh done".*?seconds=([0-9.]+)', lines)]
        return len(self.seconds)


def write_specs(workdir, roles, gitlab_port):
    """The valid spec (the crontab fleet and the gitlab source) and an invalid one."""
    subprocess.run([sys.executable, os.path.join(HERE, "gen_roles.py"), "--roles", str(roles),
                    "--type", "crontab", "--out", workdir], check=True)
    with open(os.path.join(workdir, "spec.yaml")) as generated:
        crontab, _, jobs = generated.read().partition("jobs:\n")
    valid = (f"{crontab}  lab:\n    type: gitlab\n    project: acme/widgets\n"
             f"    api_url: http://127.0.0.1:{gitlab_port}/api/v4\n    ref: main\n"
             f"jobs:\n{jobs}  - {{role: job-gitlab, source: lab, schedule: \"0 3 * * *\", "
             "timezone: Europe/Berlin, spec_version: \"7\"}\n")
    invalid = valid + '  - {role: job-broken, source: nowhere, schedule: "61 * * * *"}\n'
    return valid, invalid


def hostile_gitlab(zeros):
    state = HostileGitLab(zeros)
    project = state.add(Project(278964, "acme/widgets"))
    with open(os.path.join(GITLAB_FIXTURES, "schedules_page1.json")) as page:
        schedule = json.load(page)[0]
    schedule["description"] = schedule["description"].replace("role=nightly", "role=job-gitlab")
    project.schedules.append(schedule)
    with open(os.path.join(GITLAB_FIXTURES, "pipelines_nightly.json")) as pipelines:
        project.pipelines[schedule["id"]] = json.load(pipelines)
    return state, make_server(state)


def web_config(workdir):
    with warnings.catch_warnings():  # deprecated in 3.11, still in Debian's; libxcrypt's bcrypt
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt
    hashed = crypt.crypt(PASSWORD, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=2 ** 10))
    return write_text(os.path.join(workdir, "web.yml"),
                      f"basic_auth_users:\n  prometheus: '{hashed}'\n")


def slope_per_100(samples, refreshes):
    """MiB of VmRSS per 100 refreshes: a linear fit over the samples of the second half of
    `refreshes` (None with fewer than two refresh counts there), and how many samples that was."""
    half = [(done, rss) for done, rss, _ in samples if done >= refreshes / 2]
    if len({done for done, _ in half}) < 2:
        return None, len(half)
    fit = statistics.linear_regression([done for done, _ in half], [rss / MIB for _, rss in half])
    return fit.slope * 100, len(half)


def block_floors(samples, refreshes, blocks=10):
    """The lowest VmRSS of each tenth of the refreshes: a leak raises every floor after it; the
    swing of freed memory that malloc keeps or returns (130-235 MiB at 100,000 roles, with no
    trend) moves single samples and the fitted slope, not the floors' order."""
    floors = {}
    for done, rss, _ in samples:
        block = min(blocks - 1, done * blocks // max(refreshes, 1))
        floors[block] = min(rss, floors.get(block, rss))
    return [floors[block] for block in sorted(floors)]


def between_rounds(samples):
    """The lowest sample of each pause between page rounds: what the pages, status crowds and
    slow readers leave behind once gone (a leak raises it; a page held for a while does not)."""
    lowest = {}
    for sample in samples:
        pause = sample[2]
        if pause is not None and (pause not in lowest or sample[1] < lowest[pause][1]):
            lowest[pause] = sample
    return [lowest[pause] for pause in sorted(lowest)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--roles", type=int, default=100000)
    parser.add_argument("--refreshes", type=int, default=1000)
    parser.add_argument("--interval", default="1s", help="--refresh.interval of the exporter")
    parser.add_argument("--reload-every", type=int, default=10, help="refreshes between reloads")
    parser.add_argument("--idle", type=int, default=1000, help="idle connections held")
    parser.add_argument("--gitlab-zeros", type=int, default=1_000_000,
                        help="zeros after the one schedule of the GitLab schedules page")
    parser.add_argument("--flat-tolerance", type=float, default=16.0,
                        help="MiB the last tenths' lowest RSS may sit above the first half's")
    parser.add_argument("--max-minutes", type=float,
                        help="stop by then whatever the count (default 10 + 1/3 a refresh)")
    args = parser.parse_args()
    if not shutil.which("slowhttptest"):
        sys.exit("slowhttptest is not installed (scripts/install-deps.sh with-test-tools)")
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    minutes = args.max_minutes or 10 + args.refreshes / 3
    state, gitlab = hostile_gitlab(args.gitlab_zeros)
    with temporary_directory("schedwatch-soak-bench-") as workdir:
        valid, invalid = write_specs(workdir, args.roles, gitlab.server_address[1])
        spec = replace_file(os.path.join(workdir, "spec.yaml"), valid)
        started = time.monotonic()
        exporter = Exporter(args.exporter, spec, workdir, "--web.enable-lifecycle",
                            "--web.config.file", web_config(workdir), "--log.level", "debug",
                            "--refresh.source-timeout", "60s", name="soak",
                            interval=args.interval, timeout=120)
        soak = Soak(exporter.port, started + minutes * 60)
        clients = []
        try:
            headers = {"Authorization": soak.auth.split(": ", 1)[1].strip()}
            wait_for(lambda: get(soak.base + "/-/ready", headers=headers).status == 200, 600,
                     "the first refresh", interval=0.2, ignore=(OSError,), required=True)
            log = RefreshLog(exporter.log_path)
            start_rss = exporter.rss_kib()
            print(f"{args.roles} crontab roles and a gitlab role (its schedules page: one "
                  f"schedule and {args.gitlab_zeros:,} zeros), --refresh.interval "
                  f"{args.interval}; ready after {time.monotonic() - started:.1f} s, VmRSS "
                  f"{start_rss / MIB:.1f} MiB",
                  flush=True)
            idle_sources = [f"127.0.0.{10 + i}" for i in range(-(-args.idle // 100))]
            for name, target, *rest in [
                    ("idle", hold, soak, f"{args.idle} idle connections", args.idle,
                     idle_sources, b"", 5),
                    ("trickle", hold, soak, "100 trickling a header line / 2 s", 100,
                     ["127.0.0.20"], b"GET /metrics HTTP/1.1\r\nHost: x\r\n", 2,
                     b"X-Trickle: 1\r\n"),
                    ("slow", slow_attacks, soak),
                    ("pages", page_rounds, soak),
                    ("passwords", every, soak, 10, password_flood),
                    ("storm", every, soak, 60, reload_storm),
                    ("scrapes", every, soak, 2, scrapes)]:
                clients.append(threading.Thread(target=target, args=rest, name=name))
                clients[-1].start()

            samples = []  # (refreshes, VmRSS KiB, the pause between page rounds or None)
            reloads = []  # (valid?, status)
            refreshes = log.count()
            while refreshes < args.refreshes and soak.running() and exporter.alive():
                refreshes = log.count()
                try:
                    samples.append((refreshes, exporter.rss_kib(), soak.quiet))
                except OSError:  # it died: said below
                    break
                if refreshes >= (len(reloads) + 1) * args.reload_every:
                    good = len(reloads) % 2 == 1  # invalid first, then valid, in turn
                    replace_file(spec, valid if good else invalid)
                    reloads.append((good, soak.curl("/-/reload", "-X", "POST", "-u",
                                                    f"prometheus:{PASSWORD}",
                                                    source="127.0.0.2")))
                soak.stop.wait(2)
            alive = exporter.alive() and bool(samples)
            end_rss = exporter.rss_kib() if alive else 0
            peak = exporter.rss_kib("VmHWM") if alive else 0
            seconds = time.monotonic() - started
        finally:
            soak.stop.set()
            for client in clients:
                client.join(timeout=180)
            exporter.stop()
            gitlab.shutdown()
        report(args, soak, log.seconds[:refreshes], samples, reloads, state, start_rss,
               end_rss, peak, alive, seconds)


def report(args, soak, walls, samples, reloads, state, start_rss, end_rss, peak, alive, seconds):
    refreshes = len(walls)
    print(f"refreshes: {refreshes} in {seconds:.0f} s (median {statistics.median(walls):.2f} s, "
          f"max {max(walls):.2f} s each){'' if alive else '; THE EXPORTER DIED'}")
    valid = [status for good, status in reloads if good]
    invalid = [status for good, status in reloads if not good]
    print(f"reloads: {len(reloads)}, valid spec {{{tally(valid)}}}, invalid spec "
          f"{{{tally(invalid)}}}")
    counts = soak.counts.pop("scrapes", {})
    whole, failed = counts.get("whole", 0), counts.get("failed", 0)
    ms = soak.scrape_ms or [0]
    print(f"scrapes (gzip): {whole} whole, {failed} failed; median "
          f"{statistics.median(ms):.0f} ms, max {max(ms):.0f} ms")
    for client, outcomes in sorted(soak.counts.items()):
        print(f"  {client}: " + ", ".join(f"{o} {n}" for o, n in sorted(outcomes.items())))
    print(f"  hostile GitLab schedules pages served: "
          f"{len(state.requests('acme/widgets', '/pipeline_schedules'))}")
    lowest = between_rounds(samples) or [(0, 0, None)]
    print(f"RSS: start {start_rss / MIB:.1f} MiB (after the first refresh), end "
          f"{end_rss / MIB:.1f} MiB, peak (VmHWM) {peak / MIB:.1f} MiB; sampled VmRSS "
          f"{min(s[1] for s in samples) / MIB:.1f}-{max(s[1] for s in samples) / MIB:.1f} MiB, "
          f"between page rounds {lowest[0][1] / MIB:.1f} MiB first, "
          f"{lowest[-1][1] / MIB:.1f} MiB last")
    shown = lowest[::-(-len(lowest) // 20)]  # at most 20
    print("  between page rounds, refreshes done: MiB  " + ", ".join(
        f"{done}: {rss / MIB:.0f}" for done, rss, _ in shown))
    slope, count = slope_per_100(samples, refreshes)
    floor_slope, pauses = slope_per_100(lowest, refreshes)
    print("slope over the second half, MiB per 100 refreshes: " + ", ".join(
        f"{value:+.2f} ({what})" if value is not None else f"too few samples ({what})"
        for value, what in ((slope, f"all {count} samples"),
                            (floor_slope, f"the lowest of each pause between page rounds, "
                                          f"{pauses}"))))
    floors = block_floors(samples, refreshes)
    print("lowest VmRSS of each tenth of the refreshes, MiB: " +
          ", ".join(f"{rss / MIB:.0f}" for rss in floors))
    # Flat: the last three tenths never sit above the lowest of the first half (after the first
    # tenth, which is still growing to its working size) by more than --flat-tolerance.
    flat = len(floors) >= 6 and \
        min(floors[-3:]) <= min(floors[1:len(floors) // 2]) + args.flat_tolerance * MIB
    print(f"RSS flat: {'yes' if flat else 'no'}")
    if not (flat and alive and failed == 0 and refreshes >= args.refreshes):
        sys.exit(1)


if __name__ == "__main__":
    main()
