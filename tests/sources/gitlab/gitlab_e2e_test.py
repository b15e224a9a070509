#!/usr/bin/python3
"""The gitlab source end to end: the real schedwatch_exporter binary against a loopback fake
GitLab API (fake_gitlab.py) over HTTPS (a CA made here with openssl, trusted through ca_file).

Covers pagination by x-next-page and by Link, a deactivated schedule whose owner is blocked, a
deleted (never present) one, a drifted one, two schedules with one role, pipelines running
past max_runtime and failed, a Rails time zone name, a numeric project ID with slow answers,
401, 403 (insufficient scope), 404, a 429 with Retry-After, 500s, a CI job token refused,
that the token reaches no log, page or metric, and reconcile re-creating a missing schedule. Prints 'N passed, N failed'.
"""
import datetime
import os
import re
import subprocess
import sys
import time
from zoneinfo import ZoneInfo

from croniter import croniter

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "harness"))
from fake_gitlab import FakeGitLab, Project, owner, pipeline, make_server  # noqa: E402
from fake_http import make_pki  # noqa: E402
from schedwatch_test import (Exporter, check, conditions, run_in_temporary_directory,  # noqa: E402
                             status_by_name, wait_for)

TOKEN = "glpat-widgetsSECRET0123456789"
WRONG = "glpat-wrongSECRET0123456789"


def previous_fires(cron, zone, now, count):
    """The `count` most recent fire times of `cron` in `zone` at least 5 minutes before now."""
    start = datetime.datetime.fromtimestamp(now - 300, ZoneInfo(zone))
    it = croniter(cron, start)
    return [int(it.get_prev(float)) for _ in range(count)]


def marker(role, version="1"):
    return f"[schedwatch: role={role} spec_version={version}]"


def build_state(now):
    state = FakeGitLab()
    widgets = state.add(Project(278964, "acme/widgets", token=TOKEN, per_page=2))
    nightly = widgets.add_schedule(11, "Nightly export " + marker("nightly", "2"), "0 3 * * *",
                                   "Europe/Berlin", ref="refs/heads/main")
    widgets.pipelines[11] = [pipeline(9100 + n, fire + 40) for n, fire in
                             enumerate(previous_fires("0 3 * * *", "Europe/Berlin", now, 3))]
    widgets.add_schedule(12, "Weekly cleanup " + marker("cleanup"), "0 4 * * 0", active=False,
                         schedule_owner=owner("former", "blocked", 7))
    widgets.add_schedule(13, "Report " + marker("drifted"), "0 6 * * *")
    widgets.add_schedule(14, marker("twice"), "0 2 * * *")
    widgets.add_schedule(15, marker("twice"), "0 2 * * *")
    widgets.add_schedule(16, marker("hung"), "0 */6 * * *")
    widgets.pipelines[16] = [pipeline(9200, now - 7200, "running")]
    widgets.add_schedule(17, marker("failing"), "30 1 * * *")
    widgets.pipelines[17] = [pipeline(9301, now - 3600, "failed"),
                             pipeline(9300, now - 90000, "success")]
    widgets.add_schedule(18, marker("zoned"), "0 9 * * *", "Tokyo")
    widgets.pipelines[18] = [pipeline(9400, previous_fires("0 9 * * *", "Asia/Tokyo", now, 1)[0]
                                      + 30, "success")]
    widgets.add_schedule(19, "Someone's own", "*/5 * * * *")
    # Pipelines in every other status, older, under the hung role.
    for status in ("created", "waiting_for_resource", "preparing", "pending", "manual",
                   "scheduled", "canceled", "skipped", "success", "failed"):
        widgets.pipelines[16].append(pipeline(9000 + len(widgets.pipelines[16]),
                                              now - 86400 * 10 - len(widgets.pipelines[16]),
                                              status))
    numeric = state.add(Project(4242, "acme/numeric", token=TOKEN, paging="link", per_page=1,
                                delay=0.3))
    for n in range(3):
        numeric.add_schedule(40 + n, marker(f"linked-{n}"), "0 * * * *")
        numeric.pipelines[40 + n] = [pipeline(9500 + n, fire + 20, "success") for fire in
                                     previous_fires("0 * * * *", "UTC", now, 2)]
    state.add(Project(5001, "acme/denied", token=TOKEN, mode="forbidden"))
    state.add(Project(5002, "acme/gone", token=TOKEN, mode="not_found"))
    limited = state.add(Project(5003, "acme/limited", token=TOKEN, mode="rate_limited_once"))
    limited.add_schedule(50, marker("limited-job"), "0 * * * *")
    state.add(Project(5004, "acme/broken", token=TOKEN, mode="error"))
    state.add(Project(5005, "acme/secret", token=TOKEN, echo_token=True))
    slow = state.add(Project(5006, "acme/slow", token=TOKEN, delay=3.0))
    slow.add_schedule(60, marker("slow-job"), "0 * * * *")
    # The schedules answer, their pipelines do not: existence is still judged.
    nohistory = state.add(Project(5007, "acme/nohistory", token=TOKEN, mode="pipelines_error"))
    nohistory.add_schedule(70, marker("nohistory-job"), "0 * * * *")
    return state


SPEC = """\
version: 1
defaults:
  max_runtime: 30m
sources:
  ci:
    type: gitlab
    project: acme/widgets
    token_file: {workdir}/token
    api_url: https://127.0.0.1:{port}/api/v4
    ca_file: {workdir}/ca.crt
    ref: main
    worker_interval: 5m
  numeric:
    type: gitlab
    project: "4242"
    token_env: SCHEDWATCH_TEST_GITLAB_TOKEN
    api_url: https://127.0.0.1:{port}/api/v4/
    ca_file: {workdir}/ca.crt
  denied: {{type: gitlab, project: acme/denied, token_file: {workdir}/token, api_url: "https://127.0.0.1:{port}/api/v4", ca_file: {workdir}/ca.crt}}
  gone: {{type: gitlab, project: acme/gone, token_file: {workdir}/token, api_url: "https://127.0.0.1:{port}/api/v4", ca_file: {workdir}/ca.crt}}
  limited: {{type: gitlab, project: acme/limited, token_file: {workdir}/token, api_url: "https://127.0.0.1:{port}/api/v4", ca_file: {workdir}/ca.crt, timeout: 20s}}
  broken: {{type: gitlab, project: acme/broken, token_file: {workdir}/token, api_url: "https://127.0.0.1:{port}/api/v4", ca_file: {workdir}/ca.crt}}
  secret: {{type: gitlab, project: acme/secret, token_file: {workdir}/wrong-token, api_url: "https://127.0.0.1:{port}/api/v4", ca_file: {workdir}/ca.crt}}
  slow: {{type: gitlab, project: acme/slow, token_file: {workdir}/token, api_url: "https://127.0.0.1:{port}/api/v4", ca_file: {workdir}/ca.crt, timeout: 1s}}
  jobtoken: {{type: gitlab, project: acme/secret, token_file: {workdir}/job-token, api_url: "https://127.0.0.1:{port}/api/v4", ca_file: {workdir}/ca.crt}}
  nohistory: {{type: gitlab, project: acme/nohistory, token_file: {workdir}/token, api_url: "https://127.0.0.1:{port}/api/v4", ca_file: {workdir}/ca.crt}}
jobs:
  - {{role: nightly, source: ci, schedule: "0 3 * * *", timezone: Europe/Berlin, spec_version: "2"}}
  - {{role: cleanup, source: ci, schedule: "0 4 * * 0", spec_version: "1"}}
  - {{role: ghost, source: ci, schedule: "0 2 * * *", spec_version: "1"}}
  - {{role: drifted, source: ci, schedule: "0 5 * * *", spec_version: "1"}}
  - {{role: twice, source: ci, schedule: "0 2 * * *", spec_version: "1"}}
  - {{role: hung, source: ci, schedule: "0 */6 * * *", spec_version: "1"}}
  - {{role: failing, source: ci, schedule: "30 1 * * *", spec_version: "1"}}
  - {{role: zoned, source: ci, schedule: "0 9 * * *", timezone: Asia/Tokyo, spec_version: "1"}}
  - {{role: linked-0, source: numeric, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: linked-1, source: numeric, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: linked-2, source: numeric, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: denied-job, source: denied, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: gone-job, source: gone, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: limited-job, source: limited, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: broken-job, source: broken, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: secret-job, source: secret, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: jobtoken-job, source: jobtoken, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: slow-job, source: slow, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: nohistory-job, source: nohistory, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: nohistory-gone, source: nohistory, schedule: "0 * * * *", spec_version: "1"}}
"""


def main():
    return run_in_temporary_directory("schedwatch-gitlab-", run, "--exporter")


def run(args, workdir):
    now = int(time.time())
    ca, cert, key = make_pki(workdir)
    state = build_state(now)
    server = make_server(state, cert, key)
    for name, text in (("token", TOKEN), ("wrong-token", WRONG),
                       ("job-token", "glcbt-64_jobTOKEN0123456789")):
        with open(os.path.join(workdir, name), "w") as out:
            out.write(text + "\n")
    spec = os.path.join(workdir, "spec.yaml")
    with open(spec, "w") as out:
        out.write(SPEC.format(workdir=workdir, port=server.server_address[1]))
    exporter = Exporter(args.exporter, spec, workdir, interval="1s", confirm_delay="200ms",
                        env={"SCHEDWATCH_TEST_GITLAB_TOKEN": TOKEN})
    del ca
    try:
        check("two reads of acme/widgets and of acme/numeric",
              wait_for(lambda: len(state.requests("acme/widgets", "/pipeline_schedules")) >= 10
                       and len(state.requests("acme/numeric", "/pipeline_schedules")) >= 6,
                       60, "reads"), exporter.logs()[-2000:])
        check("the ghost role is confirmed missing",
              wait_for(lambda: "missing" in status_by_name(exporter)[0].get("ghost", {}).get(
                  "conditions", []), 30, "ghost missing"), status_by_name(exporter)[0].get("ghost"))
        roles, sources = status_by_name(exporter)
        check("ci source is up", sources["ci"]["up"], sources.get("ci"))
        check("nightly is ok (refs/heads/main is main, Europe/Berlin)",
              roles["nightly"]["conditions"] == ["ok"], roles["nightly"])
        check("cleanup is inactive", "inactive" in roles["cleanup"]["conditions"],
              roles["cleanup"])
        problems = " ".join(p.get("message", "") for p in sources["ci"].get("problems", []))
        check("the status says the owner is blocked",
              "its owner former is blocked" in problems, sources["ci"].get("problems"))
        check("drifted is drift", "drift" in roles["drifted"]["conditions"], roles["drifted"])
        check("twice is duplicate", "duplicate" in roles["twice"]["conditions"], roles["twice"])
        check("hung is hung", "hung" in roles["hung"]["conditions"], roles["hung"])
        check("failing is failing", "failing" in roles["failing"]["conditions"],
              roles["failing"])
        check("zoned (Rails name Tokyo) is ok", roles["zoned"]["conditions"] == ["ok"],
              roles["zoned"])
        paths = [e["query"].get("page") for e in state.requests("acme/widgets",
                                                               "/pipeline_schedules")]
        check("x-next-page followed through 5 pages of 2",
              all(str(n) in paths for n in range(1, 6)), paths)
        check("numeric project: Link pages followed, slow answers waited for",
              all(roles[f"linked-{n}"]["conditions"] == ["ok"] for n in range(3)),
              [roles[f"linked-{n}"] for n in range(3)])
        numeric = state.requests("acme/numeric", "/pipeline_schedules")
        check("numeric project asked by its ID", numeric and all(
            e["path"] == "/api/v4/projects/4242/pipeline_schedules" for e in numeric), numeric[:2])
        check("the token went as a bearer token", all(
            e["authorization"] == "Bearer " + TOKEN for e in numeric), numeric[:1])
        for source, words in (("denied", "403 forbidden"), ("gone", "404 not found"),
                              ("broken", "HTTP 500"), ("secret", "401 unauthorized"),
                              ("jobtoken", "CI/CD job token")):
            check(f"{source}: unknown, and the error says {words!r}",
                  not sources[source]["up"] and words in sources[source]["error"] and
                  roles[f"{source}-job"]["conditions"] == ["unknown"],
                  (sources[source], roles[f"{source}-job"]))
        check("slow: answers slower than the timeout leave the role unknown, never missing",
              not sources["slow"]["up"] and roles["slow-job"]["conditions"] == ["unknown"],
              (sources["slow"], roles["slow-job"]))
        check("nohistory: pipelines answering 500 leave the schedules listed, history down",
              wait_for(lambda: "missing" in conditions(exporter, "nohistory-gone"), 30,
                       "nohistory-gone missing"), status_by_name(exporter)[0]["nohistory-gone"])
        roles, sources = status_by_name(exporter)
        check("nohistory: the source lists, its history is down, and says why",
              sources["nohistory"]["up"] and not sources["nohistory"]["history_up"] and
              "HTTP 500" in sources["nohistory"]["history_error"], sources["nohistory"])
        check("nohistory: the present role is unknown only, the absent one missing too",
              roles["nohistory-job"]["conditions"] == ["unknown"] and
              roles["nohistory-gone"]["conditions"] == ["unknown", "missing"],
              (roles["nohistory-job"], roles["nohistory-gone"]))
        check("limited: up after waiting out a 429's Retry-After",
              wait_for(lambda: status_by_name(exporter)[1]["limited"]["up"], 30, "limited up"),
              status_by_name(exporter)[1]["limited"])
        check("the 429 counted", any(e["status"] == 429 for e in
                                     state.requests("acme/limited")))
        check("the job token was never sent", not any(
            "glcbt" in e["authorization"] for e in state.log))
        metrics = exporter.metrics()
        check("requests counted by outcome",
              re.search(r'schedwatch_source_requests_total\{outcome="200",source="ci"\} \d+',
                        metrics) is not None and
              re.search(r'schedwatch_source_requests_total\{outcome="429",source="limited"\} 1',
                        metrics) is not None, metrics[-1500:])
        check("nohistory: schedwatch_source_history_up 0 beside schedwatch_source_up 1",
              'schedwatch_source_history_up{source="nohistory",type="gitlab"} 0' in metrics and
              'schedwatch_source_up{source="nohistory",type="gitlab"} 1' in metrics and
              'schedwatch_source_history_up{source="ci",type="gitlab"} 1' in metrics)
        check("RateLimit-Remaining exported",
              'schedwatch_source_rate_limit_remaining{source="ci"} 1990' in metrics)
        result = subprocess.run(["promtool", "check", "metrics"], input=metrics.encode(),
                                capture_output=True, timeout=60)
        check("/metrics passes promtool check metrics", result.returncode == 0,
              result.stdout.decode() + result.stderr.decode())
        logs = exporter.logs()
        pages = exporter.get("/").text + exporter.get("/api/v1/status").text + metrics
        check("no token in logs, status page, JSON or metrics", not any(
            secret in logs or secret in pages for secret in (TOKEN, WRONG, "jobTOKEN")))
        # The 401 of acme/secret echoed the wrong token split and upper-cased: no run of 8 of
        # its characters, in any case, is anywhere.
        seen = (logs + pages).lower()
        check("no piece of an echoed token in logs, status page, JSON or metrics",
              not any(WRONG.lower()[i:i + 8] in seen for i in range(len(WRONG) - 7)),
              [WRONG[i:i + 8] for i in range(len(WRONG) - 7) if WRONG.lower()[i:i + 8] in seen])
    finally:
        code = exporter.stop()
        check("exporter exits cleanly on SIGTERM", code == 0, code)
    try:
        check_reconcile(args, workdir, state, server.server_address[1])
        check_reconcile_resumes(args, workdir, state, server.server_address[1])
    finally:
        server.shutdown()


RECONCILE_SPEC = """\
version: 1
sources:
  ci:
    type: gitlab
    project: acme/widgets
    token_file: {workdir}/token
    api_url: https://127.0.0.1:{port}/api/v4
    ca_file: {workdir}/ca.crt
    ref: main
jobs:
  - {{role: nightly, source: ci, schedule: "0 3 * * *", timezone: Europe/Berlin, spec_version: "2"}}
  - {{role: ghost, source: ci, schedule: "0 2 * * *", timezone: Asia/Tokyo, spec_version: "1",
     template: ghost.yaml}}
  - {{role: refused, source: ci, schedule: "0 2 * * *", spec_version: "1", template: refused.yaml}}
"""

GHOST_TEMPLATE = """\
description: "Ghost export [schedwatch: role=ghost spec_version=1]"
ref: main
cron: "0 2 * * *"
cron_timezone: Tokyo
active: true
variables:
  - {key: EXPORT_TARGET, value: "s3://exports", variable_type: env_var}
"""


def check_reconcile(args, workdir, state, port):
    """reconcile re-creates the missing ghost schedule from its template, only with --apply."""
    spec = os.path.join(workdir, "reconcile.yaml")
    with open(spec, "w") as out:
        out.write(RECONCILE_SPEC.format(workdir=workdir, port=port))
    with open(os.path.join(workdir, "ghost.yaml"), "w") as out:
        out.write(GHOST_TEMPLATE)
    with open(os.path.join(workdir, "refused.yaml"), "w") as out:
        out.write(GHOST_TEMPLATE.replace("role=ghost", "role=refused").replace("0 2", "0 5"))
    command = [args.exporter, "reconcile", "--config.file", spec, "--lock-file",
               os.path.join(workdir, "reconcile.lock")]
    widgets = state.projects["acme/widgets"]
    before = len(widgets.schedules)
    dry = subprocess.run(command, capture_output=True, text=True, timeout=60)
    check("reconcile dry run: would create ghost, creates nothing",
          re.search(r"ghost\s+ci\s+missing\s+would create", dry.stdout) is not None and
          len(widgets.schedules) == before and
          not any(e["method"] == "POST" for e in state.log), dry.stdout + dry.stderr)
    check("reconcile refuses a template of another schedule",
          re.search(r"refused\s+ci\s+missing\s+skipped: template refused: cron", dry.stdout)
          is not None, dry.stdout)
    applied = subprocess.run(command + ["--apply"], capture_output=True, text=True, timeout=60)
    posts = [e for e in state.log if e["method"] == "POST"]
    check("reconcile --apply: ghost created and verified",
          re.search(r"ghost\s+ci\s+missing\s+created", applied.stdout) is not None,
          applied.stdout + applied.stderr)
    created = [s for s in widgets.schedules if "role=ghost" in s["description"]]
    check("one schedule POSTed with the template's attributes and its variable",
          len(created) == 1 and created[0]["cron"] == "0 2 * * *" and
          created[0]["cron_timezone"] == "Tokyo" and
          widgets.variables.get(created[0]["id"]) == [
              {"key": "EXPORT_TARGET", "value": "s3://exports", "variable_type": "env_var"}] and
          [e["path"] for e in posts] == [
              "/api/v4/projects/acme%2Fwidgets/pipeline_schedules",
              f"/api/v4/projects/acme%2Fwidgets/pipeline_schedules/{created[0]['id']}/variables"],
          (created, [e["path"] for e in posts]))
    check("nothing else was written (the nightly schedule untouched)",
          len(widgets.schedules) == before + 1, len(widgets.schedules))
    again = subprocess.run(command + ["--apply"], capture_output=True, text=True, timeout=60)
    check("a second --apply creates nothing more",
          len([e for e in state.log if e["method"] == "POST"]) == len(posts) and
          re.search(r"ghost\s+ci\s+ok", again.stdout) is not None, again.stdout)


RESUME_TEMPLATE = """\
description: "Resumed export [schedwatch: role=resumed spec_version=1]"
ref: main
cron: "0 4 * * *"
active: true
variables:
  - {key: FIRST, value: "1"}
  - {key: SECOND, value: "2"}
"""


def check_reconcile_resumes(args, workdir, state, port):
    """A create interrupted after any of its requests (the fake answers 500 once it is done, as
    a kill after the request would leave it) is finished by the next run: one schedule, active
    only once it has all its variables, never a duplicate."""
    spec = os.path.join(workdir, "resume.yaml")
    with open(spec, "w") as out:
        out.write(RECONCILE_SPEC.format(workdir=workdir, port=port).split("jobs:")[0] +
                  'jobs:\n  - {role: resumed, source: ci, schedule: "0 4 * * *", '
                  'timezone: UTC, spec_version: "1", template: resumed.yaml}\n')
    with open(os.path.join(workdir, "resumed.yaml"), "w") as out:
        out.write(RESUME_TEMPLATE)
    command = [args.exporter, "reconcile", "--config.file", spec, "--apply", "--lock-file",
               os.path.join(workdir, "reconcile.lock")]
    widgets = state.projects["acme/widgets"]

    def ours():
        return [s for s in widgets.schedules if "role=resumed" in s["description"]]

    for step, expected in (("schedule", "HTTP 500"),
                           ("variables", "inactive, but a variable was not"),
                           ("activate", "inactive, but not activated")):
        widgets.failing = {step}
        run = subprocess.run(command, capture_output=True, text=True, timeout=60)
        made = ours()
        check(f"interrupted after {step}: create failed, exit 1",
              run.returncode == 1 and re.search(r"resumed\s+ci\s+missing\s+create failed: .*" +
                                                expected, run.stdout) is not None,
              run.stdout + run.stderr)
        check(f"interrupted after {step}: one schedule, inactive, the role still missing",
              len(made) == 1 and not made[0]["active"] and
              "schedwatch-pending: role=resumed" in made[0]["description"], made)
    widgets.failing = set()
    run = subprocess.run(command, capture_output=True, text=True, timeout=60)
    made = ours()
    check("the next run finishes it: created, exit 0",
          run.returncode == 0 and re.search(r"resumed\s+ci\s+missing\s+created", run.stdout),
          run.stdout + run.stderr)
    check("one schedule, active, its marker, each variable once",
          len(made) == 1 and made[0]["active"] and
          made[0]["description"] == "Resumed export [schedwatch: role=resumed spec_version=1]" and
          sorted(v["key"] for v in widgets.variables.get(made[0]["id"], [])) == [
              "FIRST", "SECOND"], (made, widgets.variables.get(made[0]["id"]) if made else None))
    run = subprocess.run(command, capture_output=True, text=True, timeout=60)
    check("then it is verified", run.returncode == 0 and
          re.search(r"resumed\s+ci\s+ok\s+verified", run.stdout), run.stdout)


if __name__ == "__main__":
    sys.exit(main())
