#!/usr/bin/python3
"""The github_actions source end to end: the real schedwatch_exporter binary against a loopback
fake GitHub API (fake_github.py) over HTTPS (a CA made here with openssl, trusted through
ca_file) and plain HTTP.

Covers multi-page Link headers, a disabled_inactivity workflow, a deleted and a never-created
workflow, a schedule changed in the file, a run in progress past max_runtime, a failed latest
run, a primary rate limit, 401 then a rotated token file, 404, token_env, an untrusted
certificate, the min_interval floor, 304 answers on later refreshes, and that no token leaks.
Prints 'N passed, N failed'.
"""
import os
import re
import sys
import time

from croniter import croniter

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "harness"))
from fake_github import FakeGitHub, Repo, make_run, make_server  # noqa: E402
from fake_http import make_pki  # noqa: E402
from schedwatch_test import (Exporter, check, run_in_temporary_directory,  # noqa: E402
                             status_by_name, wait_for)

TOKENS = {"widgets": "ghp_widgetsTOKEN0123456789", "wrong": "ghp_wrongSECRET0123456789",
          "right": "ghp_rightSECRET0123456789", "env": "ghp_envTOKEN0123456789"}


def previous_fires(cron, now, count):
    """The `count` most recent fire times at least 5 minutes before now, newest first."""
    it = croniter(cron, now - 300)
    return [int(it.get_prev()) for _ in range(count)]


def build_state(now):
    state = FakeGitHub(workflows_per_page=2)  # small pages: the workflow list spans several
    widgets = state.add_repo(Repo("acme/widgets", 5001, token=TOKENS["widgets"]))

    def runs(workflow, cron, count, conclusions=None):
        fires = previous_fires(cron, now, count)
        return [make_run(widgets, workflow, count - n, fire + 20,
                         conclusion=(conclusions or {}).get(n, "success"))
                for n, fire in enumerate(fires)]

    nightly = widgets.add_workflow(61234567, ".github/workflows/nightly.yml",
                                   crons=["0 3 * * *"], spec_version="2")
    widgets.runs[nightly["id"]] = runs(nightly, "0 3 * * *", 30)  # 2 pages of 20
    cleanup = widgets.add_workflow(61234999, ".github/workflows/cleanup.yml",
                                   state="disabled_inactivity", crons=["0 4 * * 0"],
                                   spec_version="1")
    widgets.runs[cleanup["id"]] = runs(cleanup, "0 4 * * 0", 3)
    widgets.add_workflow(61235000, ".github/workflows/old.yml", state="deleted", file=False)
    drift = widgets.add_workflow(61235001, ".github/workflows/drift.yml", crons=["0 6 * * *"],
                                 spec_version="1")
    widgets.runs[drift["id"]] = runs(drift, "0 6 * * *", 3)
    hung = widgets.add_workflow(61235002, ".github/workflows/hung.yml", crons=["0 */6 * * *"],
                                spec_version="1")
    widgets.runs[hung["id"]] = [make_run(widgets, hung, 9, now - 7200, status="in_progress")] + \
        runs(hung, "0 */6 * * *", 3)
    failing = widgets.add_workflow(61235003, ".github/workflows/failing.yml",
                                   crons=["30 1 * * *"], spec_version="1")
    # 20 newest runs without a success (one cancelled), then successes: the newest page of 20
    # holds no success, so one status=success query finds it.
    conclusions = {n: "cancelled" if n == 1 else "failure" for n in range(20)}
    widgets.runs[failing["id"]] = runs(failing, "30 1 * * *", 24, conclusions)
    widgets.runs[failing["id"]].insert(2, {
        "id": 1, "event": "schedule", "status": 42, "workflow_id": failing["id"],
        "path": failing["path"], "created_at": widgets.runs[failing["id"]][2]["created_at"]})
    twice = widgets.add_workflow(61235004, ".github/workflows/twice.yml",
                                 crons=["0 2 * * *", "0 14 * * *"], spec_version="1")
    widgets.runs[twice["id"]] = runs(twice, "0 2,14 * * *", 4)
    zoned = widgets.add_workflow(61235005, ".github/workflows/zoned.yml",
                                 crons=[("0 9 * * *", "Asia/Seoul")], spec_version="1")
    widgets.runs[zoned["id"]] = runs(zoned, "0 0 * * *", 3)  # 09:00 Seoul = 00:00 UTC
    widgets.add_workflow(61235006, ".github/workflows/ci.yml", crons=[])  # push-only, unnamed

    floor = state.add_repo(Repo("acme/floor", 5002))
    workflow = floor.add_workflow(71000001, ".github/workflows/hourly.yml", crons=["0 * * * *"],
                                  spec_version="1")
    floor.runs[workflow["id"]] = [make_run(floor, workflow, 3 - n, fire + 20) for n, fire in
                                  enumerate(previous_fires("0 * * * *", now, 3))]
    env = state.add_repo(Repo("acme/env", 5003, token=TOKENS["env"]))
    workflow = env.add_workflow(72000001, ".github/workflows/hourly.yml", crons=["0 * * * *"],
                                spec_version="1")
    env.runs[workflow["id"]] = [make_run(env, workflow, 3 - n, fire + 20) for n, fire in
                                enumerate(previous_fires("0 * * * *", now, 3))]
    state.add_repo(Repo("acme/limited", 5004, mode="rate_limited"))
    secret = state.add_repo(Repo("acme/secret", 5005, token=TOKENS["right"]))
    secret.add_workflow(73000001, ".github/workflows/hourly.yml", crons=["0 * * * *"],
                        spec_version="1")
    state.add_repo(Repo("acme/private", 5006, mode="not_found"))
    # The workflows answer, their runs do not: existence is still judged.
    norun = state.add_repo(Repo("acme/norun", 5008, mode="runs_error"))
    norun.add_workflow(75000001, ".github/workflows/hourly.yml", crons=["0 * * * *"],
                       spec_version="1")

    # 110 daily workflows, one run each, newest first: the repository's runs span two pages of
    # 100, and the oldest 10 workflows' only runs are on page 2. Its limit is large, so that the
    # read floor (half of 900 points a minute) is what spaces its reads.
    fleet = state.add_repo(Repo("acme/fleet", 5007, workflows_per_page=100, rate_limit=10**6))
    for i in range(FLEET):
        workflow = fleet.add_workflow(74000000 + i, f".github/workflows/f{i:03d}.yml",
                                      crons=["0 3 * * *"], spec_version="1")
        fleet.runs[workflow["id"]] = [make_run(fleet, workflow, 1, now - 600 - 60 * i)]
    return state


FLEET = 110


SPEC = """\
version: 1
defaults:
  max_runtime: 30m
sources:
  ci:
    type: github_actions
    repository: acme/widgets
    token_file: {workdir}/widgets-token
    api_url: https://127.0.0.1:{https_port}
    ca_file: {workdir}/ca.crt
    min_interval: 1s
  floor:
    type: github_actions
    repository: acme/floor
    api_url: http://127.0.0.1:{http_port}/
    min_interval: 1h
  env:
    type: github_actions
    repository: acme/env
    token_env: SCHEDWATCH_TEST_GH_TOKEN
    api_url: https://127.0.0.1:{https_port}
    ca_file: {workdir}/ca.crt
    branch: main
  limited:
    type: github_actions
    repository: acme/limited
    api_url: http://127.0.0.1:{http_port}
    min_interval: 1s
  secret:
    type: github_actions
    repository: acme/secret
    token_file: {workdir}/secret-token
    api_url: http://127.0.0.1:{http_port}
    min_interval: 1s
  private:
    type: github_actions
    repository: acme/private
    api_url: http://127.0.0.1:{http_port}
    min_interval: 1s
  fleet:
    type: github_actions
    repository: acme/fleet
    token_file: {workdir}/widgets-token
    api_url: https://127.0.0.1:{https_port}
    ca_file: {workdir}/ca.crt
    min_interval: 1s
  norun:
    type: github_actions
    repository: acme/norun
    api_url: http://127.0.0.1:{http_port}
    min_interval: 1s
  untrusted:
    type: github_actions
    repository: acme/floor
    api_url: https://127.0.0.1:{https_port}
    min_interval: 1s
jobs:
  - {{role: nightly, source: ci, workflow: .github/workflows/nightly.yml, schedule: "0 3 * * *", spec_version: "2"}}
  - {{role: cleanup, source: ci, workflow: cleanup.yml, schedule: "0 4 * * 0", spec_version: "1"}}
  - {{role: old, source: ci, workflow: .github/workflows/old.yml, schedule: "0 2 * * *", spec_version: "1"}}
  - {{role: ghost, source: ci, workflow: .github/workflows/ghost.yml, schedule: "0 2 * * *", spec_version: "1"}}
  - {{role: drifted, source: ci, workflow: .github/workflows/drift.yml, schedule: "0 5 * * *", spec_version: "1"}}
  - {{role: hung, source: ci, workflow: .github/workflows/hung.yml, schedule: "0 */6 * * *", spec_version: "1"}}
  - {{role: failing, source: ci, workflow: .github/workflows/failing.yml, schedule: "30 1 * * *", spec_version: "1"}}
  - {{role: twice, source: ci, workflow: .github/workflows/twice.yml, schedule: "0 14 * * *", spec_version: "1"}}
  - {{role: zoned, source: ci, workflow: .github/workflows/zoned.yml, schedule: "0 9 * * *", timezone: Asia/Seoul, spec_version: "1"}}
  - {{role: floor-job, source: floor, workflow: .github/workflows/hourly.yml, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: env-job, source: env, workflow: .github/workflows/hourly.yml, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: limited-job, source: limited, workflow: .github/workflows/x.yml, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: secret-job, source: secret, workflow: .github/workflows/hourly.yml, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: private-job, source: private, workflow: .github/workflows/x.yml, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: untrusted-job, source: untrusted, workflow: .github/workflows/hourly.yml, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: norun-job, source: norun, workflow: .github/workflows/hourly.yml, schedule: "0 * * * *", spec_version: "1"}}
  - {{role: norun-gone, source: norun, workflow: .github/workflows/gone.yml, schedule: "0 * * * *", spec_version: "1"}}
""" + "".join(
    f'  - {{{{role: fleet-{i:03d}, source: fleet, workflow: f{i:03d}.yml, schedule: "0 3 * * *", '
    f'spec_version: "1"}}}}\n' for i in range(FLEET))


def fleet_reads(state):
    """The requests of acme/fleet, one list per read (a read starts with the repository's)."""
    reads = []
    for entry in state.requests("acme/fleet"):
        if entry["path"] == "/repos/acme/fleet":
            reads.append([])
        if reads:
            reads[-1].append(entry)
    return reads


def metric_value(metrics, series):
    match = re.search("^" + re.escape(series) + r" (\S+)$", metrics, re.M)
    return float(match.group(1)) if match else None


def check_fleet(exporter, state, now):
    """110 workflows over real HTTPS: requests per read, page-2 attribution, 304s counted."""
    check("acme/fleet read twice (the second past the read floor its first read set)",
          wait_for(lambda: len(fleet_reads(state)) >= 3, 90, "three reads of acme/fleet"),
          len(fleet_reads(state)))
    roles, sources = status_by_name(exporter)
    check("fleet source is up", sources["fleet"]["up"], sources["fleet"])
    cold, warm = fleet_reads(state)[0], fleet_reads(state)[1]
    paths = [e["path"] for e in cold]
    # The repository, 2 workflow pages, 2 pages of runs, the listing, 110 files.
    check("cold read of 110 workflows: 6 + 110 requests, no run request per workflow",
          len(cold) == 6 + FLEET and not any("/actions/workflows/" in p for p in paths),
          (len(cold), [p for p in paths if "/contents/.github/workflows/" not in p]))
    check("the second page of runs followed by its Link",
          "/repositories/5007/actions/runs" in paths, paths)
    check("warm read: 6 requests, every one conditional and answered 304",
          len(warm) == 6 and all(e["status"] == 304 and e["conditional"] for e in warm),
          [(e["path"], e["status"]) for e in warm])
    last = roles[f"fleet-{FLEET - 1:03d}"]
    started = now - 600 - 60 * (FLEET - 1)
    check("a run only on page 2 of the repository's runs is its workflow's",
          last["last_started"] == started and last["last_success"] == started + 120 and
          "ok" in last["conditions"], last)
    metrics = exporter.metrics()
    fleet_304 = sum(1 for e in state.requests("acme/fleet") if e["status"] == 304)
    fleet_200 = sum(1 for e in state.requests("acme/fleet") if e["status"] == 200)
    counted_304 = metric_value(metrics, 'schedwatch_source_requests_total{outcome="304",source="fleet"}')
    counted_200 = metric_value(metrics, 'schedwatch_source_requests_total{outcome="200",source="fleet"}')
    # The server logs a request before the exporter counts its answer: the counts may trail.
    check("304s and 200s counted in schedwatch_source_requests_total",
          counted_304 is not None and 6 <= counted_304 <= fleet_304 and
          counted_200 is not None and 6 + FLEET <= counted_200 <= fleet_200,
          (counted_304, fleet_304, counted_200, fleet_200))
    remaining = metric_value(metrics, 'schedwatch_source_rate_limit_remaining{source="fleet"}')
    check("remaining quota from x-ratelimit-remaining", remaining is not None and remaining > 0,
          remaining)
    floor = metric_value(metrics, 'schedwatch_source_read_floor_seconds{source="fleet"}')
    check("the read floor is exported", floor is not None and floor >= 1, floor)
    check("/metrics passes promtool check metrics", promtool_ok(metrics), metrics[-500:])


def promtool_ok(metrics):
    import subprocess
    result = subprocess.run(["promtool", "check", "metrics"], input=metrics.encode(),
                            capture_output=True, timeout=60)
    if result.returncode != 0:
        print(result.stdout.decode(), result.stderr.decode())
    return result.returncode == 0


def main():
    return run_in_temporary_directory("schedwatch-gh-", run, "--exporter")


def run(args, workdir):
    now = int(time.time())
    ca, cert, key = make_pki(workdir)
    state = build_state(now)
    https_server = make_server(state, cert, key)
    http_server = make_server(state)
    with open(os.path.join(workdir, "widgets-token"), "w") as out:
        out.write(TOKENS["widgets"] + "\n")
    with open(os.path.join(workdir, "secret-token"), "w") as out:
        out.write(TOKENS["wrong"] + "\n")
    spec = os.path.join(workdir, "spec.yaml")
    with open(spec, "w") as out:
        out.write(SPEC.format(workdir=workdir, https_port=https_server.server_address[1],
                              http_port=http_server.server_address[1]))
    exporter = Exporter(args.exporter, spec, workdir, "--web.enable-lifecycle", interval="2s",
                        confirm_delay="200ms", env={"SCHEDWATCH_TEST_GH_TOKEN": TOKENS["env"]})
    try:
        # Three real reads of the widgets repository (min_interval 1s, refresh every 2s), the
        # third one past its workflow listing (a read's first request is the repository's).
        check("three refreshes of acme/widgets",
              wait_for(lambda: len(state.requests("acme/widgets", "/repos/acme/widgets")) >= 3 and
                       len(state.requests("acme/widgets", "/contents/.github/workflows")) >= 3,
                       90, "three reads of acme/widgets"),
              exporter.logs())
        roles, sources = status_by_name(exporter)

        check("ci source is up", sources["ci"]["up"], sources.get("ci"))
        check("nightly is ok", roles["nightly"]["conditions"] == ["ok"], roles["nightly"])
        nightly = roles["nightly"]["objects"]
        check("nightly object: workflow id, cron, UTC, spec_version from the marker",
              nightly == [{"id": "61234567", "schedule": "0 3 * * *", "timezone": "UTC",
                           "spec_version": "2", "enabled": True, "drift_fields": []}], nightly)
        newest_fire = previous_fires("0 3 * * *", now, 1)[0]
        check("nightly: started at the newest run, success at its updated_at",
              roles["nightly"]["last_started"] == newest_fire + 20 and
              roles["nightly"]["last_success"] == newest_fire + 140, roles["nightly"])
        check("disabled_inactivity is inactive",
              "inactive" in roles["cleanup"]["conditions"] and
              roles["cleanup"]["objects"][0]["enabled"] is False, roles["cleanup"])
        check("deleted workflow is missing", roles["old"]["conditions"] == ["missing"],
              roles["old"])
        check("never-created workflow is missing", roles["ghost"]["conditions"] == ["missing"],
              roles["ghost"])
        check("schedule changed in the file is drift",
              "drift" in roles["drifted"]["conditions"] and
              roles["drifted"]["objects"][0]["schedule"] == "0 6 * * *", roles["drifted"])
        check("run in progress past max_runtime is hung", "hung" in roles["hung"]["conditions"],
              roles["hung"])
        check("failed latest run is failing", "failing" in roles["failing"]["conditions"],
              roles["failing"])
        check("of two crons the one equal to the spec is reported, no drift",
              roles["twice"]["objects"][0]["schedule"] == "0 14 * * *" and
              "drift" not in roles["twice"]["conditions"], roles["twice"])
        check("a schedule entry's timezone is the object's zone",
              roles["zoned"]["objects"][0]["timezone"] == "Asia/Seoul" and
              roles["zoned"]["conditions"] == ["ok"], roles["zoned"])
        problems = sources["ci"]["problems"]
        check("malformed run is a malformed_object problem",
              any(p["reason"] == "malformed_object" and "failing.yml" in p["message"]
                  for p in problems), problems)

        check("token_env source is up and ok",
              sources["env"]["up"] and roles["env-job"]["conditions"] == ["ok"],
              (sources["env"], roles["env-job"]))

        limited = sources["limited"]
        check("rate limited: unknown with the reason",
              roles["limited-job"]["conditions"] == ["unknown"] and not limited["up"] and
              "rate limited until" in limited["error"] and "403" in limited["error"], limited)
        check("rate limited: no request until the reset",
              len(state.requests("acme/limited")) == 1, len(state.requests("acme/limited")))
        check("401: unknown with the reason",
              roles["secret-job"]["conditions"] == ["unknown"] and
              "401" in sources["secret"]["error"], sources["secret"])
        check("404 repository: unknown, not missing",
              roles["private-job"]["conditions"] == ["unknown"] and
              "not found" in sources["private"]["error"], sources["private"])
        check("untrusted certificate: unknown",
              roles["untrusted-job"]["conditions"] == ["unknown"] and
              sources["untrusted"]["error"] != "", sources["untrusted"])

        check("runs answering 500: the workflows still listed, norun-gone missing",
              wait_for(lambda: "missing" in status_by_name(exporter)[0].get("norun-gone", {}).get(
                  "conditions", []), 30, "norun-gone missing"),
              status_by_name(exporter)[0].get("norun-gone"))
        roles, sources = status_by_name(exporter)
        check("runs answering 500: the source lists, its history is down, and says why",
              sources["norun"]["up"] and not sources["norun"]["history_up"] and
              "HTTP 500" in sources["norun"]["history_error"], sources["norun"])
        check("runs answering 500: the present role is unknown only, the absent one missing too",
              roles["norun-job"]["conditions"] == ["unknown"] and
              roles["norun-gone"]["conditions"] == ["unknown", "missing"],
              (roles["norun-job"], roles["norun-gone"]))

        metrics = exporter.metrics()
        check("runs answering 500: schedwatch_source_history_up 0 beside schedwatch_source_up 1",
              'schedwatch_source_history_up{source="norun",type="github_actions"} 0' in metrics
              and 'schedwatch_source_up{source="norun",type="github_actions"} 1' in metrics
              and 'schedwatch_source_history_up{source="ci",type="github_actions"} 1' in metrics)
        check("schedwatch_source_up per source",
              'schedwatch_source_up{source="ci",type="github_actions"} 1' in metrics and
              'schedwatch_source_up{source="limited",type="github_actions"} 0' in metrics,
              re.findall(r"schedwatch_source_up.*", metrics))

        # Requests as GitHub wants them.
        first = state.requests("acme/widgets")[0]["headers"]
        check("headers: bearer token, API version, JSON media type, User-Agent",
              first.get("authorization") == "Bearer " + TOKENS["widgets"] and
              first.get("x-github-api-version") == "2022-11-28" and
              first.get("accept") == "application/vnd.github+json" and
              first.get("user-agent", "").startswith("schedwatch/"), first)
        followed = [e for e in state.requests("acme/widgets")
                    if e["path"] == "/repositories/5001/actions/workflows"]
        check("Link next URLs followed verbatim (all workflow pages)",
              {e["query"].get("page") for e in followed} == {"2", "3", "4", "5"},
              sorted({e["query"].get("page") for e in followed}))

        # Conditional requests: later reads of unchanged answers are 304.
        first_pages = [e for e in state.requests("acme/widgets", "/acme/widgets/actions/workflows")]
        check("workflow page 1: 200 first, 304 afterwards",
              len(first_pages) >= 3 and first_pages[0]["status"] == 200 and
              all(e["status"] == 304 and e["conditional"] for e in first_pages[1:]),
              [e["status"] for e in first_pages])
        widgets_log = state.requests("acme/widgets")
        second_read = [i for i, e in enumerate(widgets_log) if e["path"] == "/repos/acme/widgets"][1]
        later = widgets_log[second_read:]
        check("every request of later reads is answered 304 (nothing changed)",
              all(e["status"] == 304 and e["conditional"] for e in later),
              [(e["path"], e["status"]) for e in later if e["status"] != 304])
        nightly_file = state.requests("acme/widgets", "/contents/.github/workflows/nightly.yml")
        listings = state.requests("acme/widgets", "/contents/.github/workflows")
        check("unchanged workflow file fetched once (blob sha from the listing)",
              len(nightly_file) == 1 and len(listings) >= 3, (len(nightly_file), len(listings)))
        per_workflow = [e for e in state.requests("acme/widgets") if e["path"].endswith("/runs")
                        and "/actions/workflows/" in e["path"]]
        repository_runs = state.requests("acme/widgets", "/acme/widgets/actions/runs")
        check("the repository's runs once a read (one page holds them all), none per workflow",
              not per_workflow and len(repository_runs) >= 3 and
              all(e["query"] == {"event": "schedule", "per_page": "100"}
                  for e in repository_runs),
              ([e["path"] for e in per_workflow], [e["query"] for e in repository_runs]))
        check("failing: last success found beyond the newest page",
              roles["failing"]["last_success"] == previous_fires("30 1 * * *", now, 21)[20] + 140,
              roles["failing"])
        check_fleet(exporter, state, now)
        check("min_interval 1h: acme/floor read once",
              len(state.requests("acme/floor", "/repos/acme/floor")) == 1 and
              roles["floor-job"]["conditions"] == ["ok"],
              (len(state.requests("acme/floor", "/repos/acme/floor")), roles["floor-job"]))

        # A schedule edited on the branch: the listing's blob sha changes, the file is re-read.
        repo = state.repos["acme/widgets"]
        repo.files[".github/workflows/nightly.yml"] = repo.files[
            ".github/workflows/nightly.yml"].replace("0 3 * * *", "15 3 * * *")
        check("edited file: drift on the next read",
              wait_for(lambda: "drift" in status_by_name(exporter)[0]["nightly"]["conditions"], 30,
                       "drift of nightly"), status_by_name(exporter)[0]["nightly"])

        # Token rotation: the token file is re-read when it changes.
        with open(os.path.join(workdir, "secret-token"), "w") as out:
            out.write(TOKENS["right"] + "\n")
        check("rotated token file: source comes up",
              wait_for(lambda: status_by_name(exporter)[1]["secret"]["up"], 30,
                       "the secret source up"),
              status_by_name(exporter)[1])

        # A reload builds new sources; they inherit the cached answers and their ETags, so the
        # first read after it costs 304s, not quota.
        reload_at = len(state.requests("acme/widgets"))
        reply = exporter.post("/-/reload", timeout=30)
        check("reload accepted", reply.status == 200, reply.status)

        def reads_since_reload():
            after = state.requests("acme/widgets")[reload_at:]
            return after, [i for i, e in enumerate(after) if e["path"] == "/repos/acme/widgets"]
        check("the reloaded source reads again", wait_for(
            lambda: len(reads_since_reload()[1]) >= 2, 30, "two reads after the reload"))
        after, starts = reads_since_reload()
        first_read = after[starts[0]:starts[1]] if len(starts) >= 2 else []
        check("after a reload every request is conditional and answered 304",
              first_read and all(e["status"] == 304 and e["conditional"] for e in first_read),
              [(e["path"], e["status"]) for e in first_read])

        logs = exporter.logs()
        pages = exporter.get("/").text + exporter.get("/api/v1/status").text + \
            exporter.metrics()
        check("no token in logs, status page, JSON or metrics",
              not any(token in logs or token in pages for token in TOKENS.values()))
        check("list failures logged with their reason",
              re.search(r'msg="list failed" source=limited err="[^"]*rate limited until', logs)
              is not None, logs[-2000:])
    finally:
        code = exporter.stop()
        check("exporter exits cleanly on SIGTERM", code == 0, code)
        https_server.shutdown()
        http_server.shutdown()


if __name__ == "__main__":
    sys.exit(main())
