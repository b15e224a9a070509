#!/usr/bin/python3
"""/metrics content negotiation with the real exporter, and Debian's Prometheus 2.42 scraping it.

Accept headers pick the form (text 0.0.4 or OpenMetrics 1.0.0, each plain or gzip); promtool
checks the text form; a real Prometheus scrapes through a loopback proxy that records the Accept
header it sends and the Content-Type it gets, and the series only the OpenMetrics form carries
(`_created`) arrive. Prints 'N passed, N failed'.
"""
import argparse
import http.server
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
            return prometheus.url
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
        try:
            with Exporter(args.exporter, os.path.join(workdir, "desired-state.yaml"), workdir,
                          "--ledger.file", os.path.join(workdir, "ledger.json"),
                          wait="ready") as exporter:
                bodies = negotiation(exporter)
                promtool_check(bodies)
                prometheus_scrape(exporter, workdir)
        except StartFailed as error:
            check("the exporter starts", False, error)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
