#!/usr/bin/python3
"""/metrics content negotiation and exemplars with the real exporter, and Debian's Prometheus 2.42
scraping it.

Accept headers pick the form (text 0.0.4 or OpenMetrics 1.0.0, each plain or gzip); promtool
checks the text form; a real Prometheus scrapes through a loopback proxy that records the Accept
header it sends and the Content-Type it gets, and the series only the OpenMetrics form carries
(`_created`) arrive. Runs named in UTF-8, with quotes, a newline and a backslash, with a url too
long to fit beside its id and an id too long for any exemplar: the exemplars Prometheus returns
from /api/v1/query_exemplars are the names as written, without what would not read back. Prints 'N passed,
N failed'.
"""
import argparse
import http.server
import json
import time
import os
import re
import shutil
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from schedwatch_test import (Exporter, StartFailed, check, get_json,  # noqa: E402
                             prometheus_query, require_tools, start_prometheus, summary,
                             temporary_directory, wait_for)

TEXT = "text/plain; version=0.0.4; charset=utf-8"
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
PROMETHEUS_242_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                         "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


# Runs of the example's snapshot given names: with what needs escaping (Prometheus would keep
# the escapes in an exemplar: left out), UTF-8, too long for the url, too long for any.
HOSTILE_ID = 'run "7"\nü\\x'
UTF8_ID = "läuft-7 ✓"
UTF8_URL = "https://ci.example.org/ü?q=%22x%22"
LONG_URL = "https://ci.example.org/" + "a" * 120
LONG_ID = "r" * 123  # with "run_id", past the 128 characters an exemplar's labels may hold
NAMED_RUNS = {
    "  - {role: gate, started: -3m, finished: -2m, result: success":
        {"id": HOSTILE_ID, "url": "https://ci.example.org/gate"},
    "  - {role: billing, started: -20m, finished: -19m, result: success":
        {"id": UTF8_ID, "url": UTF8_URL},
    "  - {role: digest, started: -30m, finished: -29m, result: success":
        {"id": "d1", "url": 'https://ci.example.org/"q"'},
    "  - {role: sync, started: -3m, finished: -2m, result: failure": {"id": "7731", "url": LONG_URL},
    "  - {role: ingest, started: -2m, finished: -1m, result: success": {"id": LONG_ID},
}


def name_runs(live_state):
    with open(live_state) as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        for start, names in NAMED_RUNS.items():
            if line.startswith(start):  # JSON strings are YAML's double-quoted strings
                fields = ", ".join(f"{key}: {json.dumps(value)}" for key, value in names.items())
                lines[i] = f"{start}, {fields}}}"
    with open(live_state, "w") as f:
        f.write("\n".join(lines) + "\n")


def exemplars_in_body(om, text):
    def line(role, outcome):
        found = re.search(rf'^schedwatch_job_runs_total\{{role="{role}",source="demo",'
                          rf'outcome="{outcome}"\}} \d+(.*)$', om, re.M)
        return found.group(1) if found else None
    check("exemplar: an id that needs escaping gives none", line("gate", "success") == "",
          line("gate", "success"))
    billing = line("billing", "success")
    check("exemplar: UTF-8 id and url as written, value 1, a timestamp",
          billing and re.fullmatch(r' # \{run_id="' + re.escape(UTF8_ID) + r'",run_url="' +
                                   re.escape(UTF8_URL) + r'"\} 1 \d{10}', billing), billing)
    digest = line("digest", "success")
    check("exemplar: a url that needs escaping is left out",
          digest and re.fullmatch(r' # \{run_id="d1"\} 1 \d{10}', digest), digest)
    sync = line("sync", "failure")
    check("exemplar: a url that does not fit beside its id is left out",
          sync and re.fullmatch(r' # \{run_id="7731"\} 1 \d{10}', sync), sync)
    check("exemplar: an id past the limit gives none", line("ingest", "success") == "",
          line("ingest", "success"))
    check("exemplar: on the histogram bucket of the newest named run's duration (300 s)",
          re.search(r'^schedwatch_job_run_duration_seconds_bucket\{role="export",source="demo",'
                    r'le="300"\} 1 # \{run_id="5120",run_url="https://ci.example.org/demo/export/'
                    r'runs/5120"\} 300 \d{10}$', om, re.M), om[:0])
    check("no exemplar in the text form", " # {" not in text)


def query_exemplars(url, metric):
    now = time.time()
    query = urllib.parse.urlencode({"query": metric, "start": now - 86400, "end": now + 60})
    return get_json(f"{url}/api/v1/query_exemplars?{query}")["data"]


def exemplars_in_prometheus(url):
    def by_role():
        found = {}
        for series in query_exemplars(url, "schedwatch_job_runs_total"):
            labels = series["seriesLabels"]
            found[(labels["role"], labels["outcome"])] = series["exemplars"][-1]["labels"]
        return found if ("billing", "success") in found and ("sync", "failure") in found else None
    found = wait_for(by_role, 30, "exemplars in Prometheus", ignore=(OSError, KeyError)) or {}
    check("Prometheus returns the UTF-8 run's exemplar as written",
          found.get(("billing", "success")) == {"run_id": UTF8_ID, "run_url": UTF8_URL},
          found.get(("billing", "success")))
    check("Prometheus returns the exemplars without the urls left out",
          found.get(("sync", "failure")) == {"run_id": "7731"}
          and found.get(("digest", "success")) == {"run_id": "d1"}, found)
    check("no exemplar for the runs whose id needs escaping or does not fit",
          ("ingest", "success") not in found and ("gate", "success") not in found, found)
    buckets = query_exemplars(url, "schedwatch_job_run_duration_seconds_bucket")
    check("Prometheus returns the histogram's exemplar",
          any(e["labels"].get("run_id") == "5120" and float(e["value"]) == 300
              for series in buckets for e in series["exemplars"]), buckets)


def cached_part(text):
    """The exposition without what each scrape reads itself (process_*, page counters)."""
    return text.split("# HELP schedwatch_exporter_status_pages")[0]


def negotiation(exporter):
    cases = [(None, TEXT), ("*/*", TEXT), ("text/plain", TEXT), ("garbage;;,q=", TEXT),
             (PROMETHEUS_242_ACCEPT, OPENMETRICS),
             ("application/openmetrics-text;version=1.0.0;q=0", TEXT),
             ("text/plain;q=0.2," + ",".join(f"a/b{i};q=0.{i % 9 + 1}" for i in range(300)) +
              ",application/openmetrics-text;version=1.0.0;q=0.3", OPENMETRICS)]
    bodies = {}
    for accept, expected in cases:
        headers = {} if accept is None else {"Accept": accept}
        reply = exporter.get("/metrics", headers)
        check(f"Accept {str(accept)[:40]!r}: {expected.split(';')[0]}",
              reply.status == 200 and reply.headers.get("Content-Type") == expected,
              (reply.status, reply.headers.get("Content-Type")))
        bodies[expected] = reply.text
    check("Vary names Accept and Accept-Encoding",
          reply.headers.get("Vary") == "Accept, Accept-Encoding", reply.headers.get("Vary"))

    om = bodies[OPENMETRICS]
    check("OpenMetrics ends with # EOF", om.endswith("\n# EOF\n"), om[-80:])
    check("text has no # EOF", "# EOF" not in bodies[TEXT])
    check("OpenMetrics: counter family without _total, samples with _total and _created",
          "# TYPE schedwatch_job_runs counter\n" in om
          and re.search(r'^schedwatch_job_runs_total\{role="backup",source="demo",'
                        r'outcome="success"\} 1\nschedwatch_job_runs_created\{role="backup",'
                        r'source="demo",outcome="success"\} \d+\n', om, re.M), om[:0])
    check("OpenMetrics: process_cpu_seconds with # UNIT and _created",
          "# TYPE process_cpu_seconds counter\n# UNIT process_cpu_seconds seconds\n"
          "process_cpu_seconds_total " in om and "\nprocess_cpu_seconds_created " in om)
    check("OpenMetrics: # UNIT on a _bytes gauge",
          "# UNIT process_resident_memory_bytes bytes\n" in om)
    check("text keeps counters' _total family names, no _created, no # UNIT",
          "# TYPE schedwatch_job_runs_total counter\n" in bodies[TEXT]
          and "_created" not in bodies[TEXT] and "# UNIT" not in bodies[TEXT])

    for accept, expected in ((None, TEXT), (PROMETHEUS_242_ACCEPT, OPENMETRICS)):
        headers = {"Accept-Encoding": "gzip", **({} if accept is None else {"Accept": accept})}
        reply = exporter.get("/metrics", headers)
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        unzipped = inflater.decompress(reply.body).decode()
        check(f"{expected.split(';')[0]} gzip: one whole member, the same exposition",
              reply.headers.get("Content-Encoding") == "gzip" and inflater.eof
              and reply.headers.get("Content-Type") == expected
              and cached_part(unzipped) == cached_part(bodies[expected]),
              (reply.headers, inflater.eof))
    return bodies


def promtool_check(bodies):
    """Debian's promtool 2.42 `check metrics` reads the text format only (expfmt's TextParser):
    the text form must pass; OpenMetrics input is not its format (its `# UNIT` and `# EOF` are
    comments to it, each `_total` and `_created` a family without help), so the OpenMetrics form
    is judged by Prometheus' own OpenMetrics parser below."""
    promtool = shutil.which("promtool")
    result = subprocess.run([promtool, "check", "metrics"], input=bodies[TEXT],
                            capture_output=True, text=True)
    check("promtool check metrics passes the text form", result.returncode == 0,
          result.stdout + result.stderr)
    result = subprocess.run([promtool, "check", "metrics"], input=bodies[OPENMETRICS],
                            capture_output=True, text=True)
    complaints = (result.stdout + result.stderr).strip().splitlines()
    check("promtool on the OpenMetrics form: only the text format's lint of _total/_created, or "
          "a text-parser error at an exemplar",
          all(re.match(r"^\S+_(total|created) no help text$", line) for line in complaints)
          or "text format parsing error" in result.stderr, complaints[:5])


class RecordingProxy(http.server.ThreadingHTTPServer):
    """Forwards GET /metrics to the exporter and records each scrape's Accept header and the
    Content-Type answered."""

    def __init__(self, upstream):
        self.upstream = upstream
        self.seen = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                headers = {name: self.headers[name] for name in ("Accept", "Accept-Encoding")
                           if self.headers[name]}
                request = urllib.request.Request(proxy.upstream + self.path, headers=headers)
                with urllib.request.urlopen(request, timeout=10) as response:
                    body = response.read()
                    answered = dict(response.headers)
                proxy.seen.append((self.headers["Accept"], answered.get("Content-Type")))
                self.send_response(200)
                for name in ("Content-Type", "Content-Encoding"):
                    if name in answered:
                        self.send_header(name, answered[name])
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def address(self):
        return f"127.0.0.1:{self.server_address[1]}"

    def close(self):
        self.shutdown()
        self.server_close()


def prometheus_scrape(exporter, workdir):
    proxy = RecordingProxy(exporter.base)
    config = {"global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
              "scrape_configs": [{"job_name": "schedwatch",
                                  "static_configs": [{"targets": [proxy.address]}]}]}
    try:
        with start_prometheus(workdir, "prometheus", config,
                              "--enable-feature=exemplar-storage") as prometheus:
            prometheus.wait_ready(60)
            check("Prometheus 2.42 sends its OpenMetrics-first Accept header and gets OpenMetrics",
                  wait_for(lambda: proxy.seen and proxy.seen[-1] == (PROMETHEUS_242_ACCEPT,
                                                                    OPENMETRICS),
                           30, "a scrape through the proxy"), proxy.seen[-3:])

            def target():
                targets = get_json(f"{prometheus.url}/api/v1/targets")["data"]["activeTargets"]
                return targets[0] if targets and targets[0]["health"] == "up" else None
            found = wait_for(target, 30, "the target to be up", ignore=(OSError, KeyError))
            check("the target is up with no scrape error",
                  found and found["lastError"] == "" and found["scrapeUrl"].endswith("/metrics"),
                  found)
            created = wait_for(lambda: prometheus_query(
                prometheus.url, 'schedwatch_job_runs_created{role="backup",outcome="success"}'),
                30, "the _created series", ignore=(OSError,))
            check("samples arrive: _created, a series only the OpenMetrics form has",
                  created and float(created[0]["value"][1]) > 1e9, created)
            runs = prometheus_query(
                prometheus.url, 'schedwatch_job_runs_total{role="backup",outcome="success"}')
            check("samples arrive: schedwatch_job_runs_total",
                  runs and float(runs[0]["value"][1]) >= 1, runs)
            up = prometheus_query(prometheus.url, "process_cpu_seconds_total")
            check("samples arrive: the scrape's own process_* lines", bool(up), up)
            exemplars_in_prometheus(prometheus.url)
    finally:
        proxy.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    require_tools("prometheus", "promtool")
    with temporary_directory("schedwatch-openmetrics-") as workdir:
        examples = os.path.join(args.source_dir, "examples")
        for name in ("desired-state.yaml", "live-state.yaml", "ledger.json"):
            shutil.copy(os.path.join(examples, name), workdir)
        name_runs(os.path.join(workdir, "live-state.yaml"))
        try:
            with Exporter(args.exporter, os.path.join(workdir, "desired-state.yaml"), workdir,
                          "--ledger.file", os.path.join(workdir, "ledger.json"),
                          wait="ready") as exporter:
                bodies = negotiation(exporter)
                exemplars_in_body(bodies[OPENMETRICS], bodies[TEXT])
                promtool_check(bodies)
                prometheus_scrape(exporter, workdir)
        except StartFailed as error:
            check("the exporter starts", False, error)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
