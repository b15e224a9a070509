#!/usr/bin/python3
"""`schedwatch_exporter discover --type gitlab` against the loopback GitLab API over TLS
(fake_gitlab.py), with marked, unmarked, half-marked, inactive and malformed schedules:

- one job per schedule, its role from the description (the marker's when it has one), its cron,
  cron_timezone (a Rails name as its IANA zone) and ref; an empty description names the
  schedule by its ID; the same words twice get -2;
- an inactive schedule is a comment saying why; a malformed marker is a note, no job;
- max_runtime from the longest successful pipeline;
- for each schedule without a full marker, the description to set and the API call that sets
  it; discover itself only reads (GET); the token never shows;
- `check` accepts the draft; after the printed calls are run (curl, as a person would), discover
  on the draft adds nothing and every schedule has its marker.
Prints 'N passed, N failed'.
"""
import os
import re
import subprocess
import sys
import time

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "harness"))
from fake_gitlab import FakeGitLab, Project, make_server, owner, pipeline  # noqa: E402
from fake_http import make_pki  # noqa: E402
from schedwatch_test import check, read_text, run_in_temporary_directory, run_tool  # noqa: E402

TOKEN = "glpat-discoverSECRET0123456789"


def build_state(now):
    state = FakeGitLab()
    widgets = state.add(Project(278964, "acme/widgets", token=TOKEN, per_page=3))
    widgets.add_schedule(11, "Nightly export [schedwatch: role=nightly spec_version=2]",
                         "0 3 * * *", "Europe/Berlin", ref="refs/heads/main")
    widgets.pipelines[11] = [pipeline(9103, now - 3600, duration=610),
                             pipeline(9102, now - 90000, "failed", duration=1500),
                             pipeline(9101, now - 180000, duration=300)]
    widgets.add_schedule(12, "Weekly cleanup", "0 4 * * 0", active=False,
                         schedule_owner=owner("former", "blocked", 7))
    widgets.add_schedule(13, "Report for finance", "30 6 * * 1-5",
                         "Pacific Time (US & Canada)", ref="reports")
    widgets.add_schedule(14, "", "*/15 * * * *")
    widgets.add_schedule(15, "Report for finance", "0 18 * * 5")
    widgets.add_schedule(16, "Broken [schedwatch: role=", "0 1 * * *")
    widgets.add_schedule(17, "Partly [schedwatch: role=partly]", "0 2 * * *")
    return state


def main():
    return run_in_temporary_directory("schedwatch-discover-gitlab-", in_workdir, "--exporter")


def in_workdir(args, work):
    ca, cert, key = make_pki(work)
    state = build_state(int(time.time()))
    server = make_server(state, cert, key)
    try:
        run(args.exporter, work, ca, state, server.server_address[1])
    finally:
        server.shutdown()


def run(exporter, work, ca, state, port):
    token_file = os.path.join(work, "token")
    with open(token_file, "w") as out:
        out.write(TOKEN + "\n")
    draft_path = os.path.join(work, "draft.yaml")
    api = f"https://127.0.0.1:{port}/api/v4"
    code, _, err = run_tool(exporter, "discover", "--type", "gitlab", "--source", "ci",
                            "--project", "acme/widgets", "--api-url", api, "--ca-file", ca,
                            "--token-file", token_file, "--output", draft_path)
    check("discover --type gitlab exits 0", code == 0, err)
    draft = read_text(draft_path)
    jobs = (yaml.safe_load(draft) or {}).get("jobs") or []
    by_role = {j["role"]: j for j in jobs}
    check("one job per active schedule, roles from the descriptions and markers",
          [j["role"] for j in jobs] ==
          ["nightly", "report-for-finance", "schedule-14", "report-for-finance-2", "partly"],
          draft)
    nightly = by_role.get("nightly", {})
    check("a marked schedule keeps its role and version; cron, zone and ref as GitLab holds them",
          nightly.get("spec_version") == "2" and nightly.get("schedule") == "0 3 * * *" and
          nightly.get("timezone") == "Europe/Berlin" and nightly.get("ref") == "main", nightly)
    check("max_runtime from the longest successful pipeline (610s: 21m)",
          nightly.get("max_runtime") == "21m", draft)
    report = by_role.get("report-for-finance", {})
    check("a Rails zone name is written as its IANA zone",
          report.get("timezone") == "America/Los_Angeles" and report.get("ref") == "reports",
          report)
    check("an inactive schedule is a comment saying why",
          re.search(r"^# not a job \(ci\): pipeline schedule 12: inactive: its owner former is "
                    r"blocked", draft, re.M), draft)
    check("a malformed marker is a note, not a job",
          "pipeline schedule 16: " in err and "pipeline schedule 16" not in draft, err)
    check("the description to set for an unmarked schedule",
          "pipeline schedule 13: set its description to\n"
          "  Report for finance [schedwatch: role=report-for-finance spec_version=1]\n" in err,
          err)
    check("a half-marked schedule gets its full marker",
          "pipeline schedule 17: set its description to\n"
          "  Partly [schedwatch: role=partly spec_version=1]\n" in err, err)
    check("an empty description becomes the marker alone",
          "pipeline schedule 14: set its description to\n"
          "  [schedwatch: role=schedule-14 spec_version=1]\n" in err, err)
    check("no marker asked for the marked schedule", "pipeline schedule 11:" not in err, err)
    check("discover only read", {e["method"] for e in state.log} == {"GET"},
          {e["method"] for e in state.log})
    check("the token never shows", TOKEN not in draft and TOKEN not in err)
    code, _, err_check = run_tool(exporter, "check", "--config.file", draft_path)
    check("check accepts the draft", code == 0, err_check)

    # A person runs the printed calls; then every schedule carries its marker.
    calls = [line.strip() for line in err.splitlines() if line.startswith("  curl ")]
    check("one call per schedule without a full marker", len(calls) == 4, calls)
    environment = dict(os.environ, GITLAB_TOKEN=TOKEN, CURL_CA_BUNDLE=ca)
    for call in calls:
        done = subprocess.run(["sh", "-c", call + " --silent --fail --output /dev/null"],
                              env=environment, capture_output=True, text=True, timeout=30)
        check(f"the printed call works: {call[:60]}...", done.returncode == 0, done.stderr)
    code, out, err = run_tool(exporter, "discover", "--config.file", draft_path)
    check("after the markers: discover on the draft adds nothing and asks for no marker",
          code == 0 and out == draft and "markers: every object has one" in err, err)


if __name__ == "__main__":
    sys.exit(main())
