#!/usr/bin/python3
"""The real schedwatch_exporter binary with a kubernetes source, against fake_apiserver.py over
TLS on loopback (CA and certificates made by openssl for the run).

A world of CronJobs and Jobs puts every role in a known condition (ok, inactive, duplicate,
drift, hung, failing, missing), served in pages of 2 with an expired continue token and a 500
on the way. Then the server turns hostile (403, 401, a slow answer, malformed JSON, an exec
plugin in the kubeconfig): the roles must become unknown, never missing, and the token must
never show. Finally an in-cluster exporter over IPv6 follows a rotated service-account token.
Prints 'N passed, N failed'.
"""
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "harness"))
import fake_apiserver  # noqa: E402
from fake_apiserver import ApiServer  # noqa: E402
from schedwatch_test import Exporter, check, run_in_temporary_directory, wait_for  # noqa: E402

TOKEN = "e2e-secret-token-5f1d2c3b4a"
ROTATED_TOKEN = "e2e-rotated-token-9a8b7c6d"


def stamp(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def cronjob(name, role, schedule="0 * * * *", namespace="batch", zone="UTC", suspend=False,
            last_schedule=None, last_success=None, active=(), version="3"):
    spec = {"schedule": schedule, "suspend": suspend, "concurrencyPolicy": "Forbid",
            "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "main", "image": "x:1"}]}}}}}
    if zone:
        spec["timeZone"] = zone
    status = {}
    if last_schedule:
        status["lastScheduleTime"] = stamp(last_schedule)
    if last_success:
        status["lastSuccessfulTime"] = stamp(last_success)
    if active:
        status["active"] = [{"kind": "Job", "namespace": namespace, "name": job_name,
                             "uid": f"job-{job_name}", "apiVersion": "batch/v1"}
                            for job_name in active]
    return {"metadata": {"name": name, "namespace": namespace, "uid": f"cj-{namespace}-{name}",
                         "labels": {"schedwatch.io/role": role},
                         "annotations": {"schedwatch.io/spec-version": version}},
            "spec": spec, "status": status}


def job(name, owner, started, finished=None, outcome="running", namespace="batch",
        reason="BackoffLimitExceeded"):
    status = {"startTime": stamp(started)}
    if outcome == "succeeded":
        status.update(completionTime=stamp(finished), succeeded=1, conditions=[
            {"type": "Complete", "status": "True", "lastTransitionTime": stamp(finished)}])
    elif outcome == "failed":
        status.update(failed=1, conditions=[
            {"type": "Failed", "status": "True", "reason": reason,
             "message": "Job has reached the specified backoff limit",
             "lastTransitionTime": stamp(finished)}])
    else:
        status.update(active=1)
    return {"metadata": {"name": name, "namespace": namespace, "uid": f"job-{name}",
                         "creationTimestamp": stamp(started),
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob",
                                              "name": owner, "uid": f"cj-{namespace}-{owner}",
                                              "controller": True}]},
            "status": status}


def world(now):
    """Roles in known conditions; hourly schedules, the last run fresh."""
    fire = now - now % 3600
    if now - fire < 300:  # too close to the hour: the previous one is the last fire time
        fire -= 3600
    healthy = dict(last_schedule=fire, last_success=fire + 60)
    cronjobs = [
        cronjob("backup", "backup", **healthy),
        cronjob("report", "report", suspend=True, **healthy),
        cronjob("dup-a", "dup", **healthy),
        cronjob("dup-b", "dup", namespace="other", **healthy),
        cronjob("drifted", "drifted", schedule="15 * * * *", **healthy),
        cronjob("zoned", "zoned", zone=None, **healthy),
        cronjob("hung", "hung", last_schedule=now - 3 * 3600, last_success=now - 4 * 3600,
                active=["hung-1"]),
        cronjob("flaky", "flaky", last_schedule=fire, last_success=now - 2 * 3600),
        cronjob("stranger", "not-in-the-spec", **healthy),
        {"metadata": {"name": "broken", "namespace": "batch", "uid": "cj-broken",
                      "labels": {"schedwatch.io/role": "broken"}},
         "spec": {"schedule": 42}},
        {"metadata": {"name": "unlabelled", "namespace": "batch", "uid": "cj-unlabelled"},
         "spec": {"schedule": "* * * * *"}},
    ]
    jobs = [
        job("backup-1", "backup", fire + 1, fire + 60, "succeeded"),
        job("hung-1", "hung", now - 3 * 3600 + 5),
        job("flaky-1", "flaky", now - 2 * 3600 - 300, now - 2 * 3600, "succeeded"),
        job("flaky-2", "flaky", fire + 1, fire + 50, "failed"),
        job("unlabelled-1", "unlabelled", now - 100),
    ]
    return {"token": TOKEN, "cronjobs": cronjobs, "jobs": jobs}


EXPECTED = {
    "backup": ["ok"],
    "report": ["inactive"],
    "dup": ["duplicate"],
    "drifted": ["drift"],
    "zoned": ["drift"],
}


def serve(binary, spec, workdir, name, env=None, extra=()):
    return Exporter(binary, spec, workdir, *extra, name=f"exporter-{name}", interval="2s",
                    confirm_delay="200ms", env=env, stop_timeout=15)


def roles(status):
    return {role["role"]: role for role in status.get("roles", [])}


def source(status, name="prod"):
    return next((s for s in status.get("sources", []) if s["source"] == name), {})


def write_spec(path, source_block):
    with open(path, "w") as out:
        out.write(f"""version: 1
defaults:
  timezone: UTC
  start_grace: 5m
  max_runtime: 30m
sources:
  prod:
{source_block}
jobs:
  - {{role: backup, source: prod, schedule: "0 * * * *", spec_version: "3"}}
  - {{role: report, source: prod, schedule: "0 * * * *", spec_version: "3"}}
  - {{role: dup, source: prod, schedule: "0 * * * *", spec_version: "3"}}
  - {{role: drifted, source: prod, schedule: "0 * * * *", spec_version: "3"}}
  - {{role: zoned, source: prod, schedule: "0 * * * *", timezone: Asia/Seoul, spec_version: "3"}}
  - {{role: hung, source: prod, schedule: "0 * * * *", spec_version: "3"}}
  - {{role: flaky, source: prod, schedule: "0 * * * *", spec_version: "3"}}
  - {{role: gone, source: prod, schedule: "0 * * * *", spec_version: "3"}}
""")


def write_kubeconfig(path, server, user_extra="", trust="    certificate-authority: pki/ca.crt\n"):
    with open(path, "w") as out:
        out.write(f"""apiVersion: v1
kind: Config
current-context: e2e
contexts:
- name: e2e
  context: {{cluster: fake, user: watcher}}
clusters:
- name: fake
  cluster:
    server: {server}
{trust}users:
- name: watcher
  user:
    token: {TOKEN}
{user_extra}""")


def no_secret_anywhere(exporter, label):
    texts = [exporter.logs(), exporter.metrics(), exporter.get("/api/v1/status").text,
             exporter.get("/").text]
    leaked = [i for i, text in enumerate(texts) if TOKEN in text or ROTATED_TOKEN in text]
    check(f"{label}: the token appears in no log, metric, page or JSON", not leaked, leaked)


def only_unknown(status):
    return all(role["conditions"] == ["unknown"] for role in status["roles"])


def hostile_phase(exporter, server, name, config, error_pattern, good):
    """From a healthy state into a failing one and back."""
    server.configure(config)
    status, ok = exporter.wait_status(lambda s: re.search(error_pattern, source(s).get("error", "")))
    check(f"{name}: the source error says why", ok, source(status).get("error"))
    check(f"{name}: every role is unknown, none missing",
          not source(status)["up"] and only_unknown(status),
          {r: v["conditions"] for r, v in roles(status).items()})
    text = exporter.metrics()
    check(f"{name}: schedwatch_source_up is 0",
          'schedwatch_source_up{source="prod",type="kubernetes"} 0' in text)
    check(f"{name}: no registered-object counts while unknown",
          'schedwatch_job_registered_objects{role="backup"' not in text)
    server.configure(good)
    status, ok = exporter.wait_status(
        lambda s: source(s).get("up") and roles(s)["backup"]["conditions"] == ["ok"])
    check(f"{name}: recovers when the API server answers again", ok, source(status))


def main():
    return run_in_temporary_directory("schedwatch-k8s-e2e-", run, "--exporter", "--source-dir",
                                      keep_on_failure=True)


def run(args, workdir):
    pki = os.path.join(workdir, "pki")
    fake_apiserver.make_pki(pki)
    now = int(time.time())
    good = world(now)
    faults = [
        {"path": "/apis/batch/v1/cronjobs", "continue": True, "status": 410, "reason": "Expired",
         "message": "The provided continue parameter is too old", "times": 1},
        {"path": "/apis/batch/v1/namespaces/batch/jobs", "status": 500, "reason": "InternalError",
         "times": 1}]
    paged = dict(good, faults=faults)
    server = ApiServer(workdir, paged, tls_dir=pki)
    kubeconfig = os.path.join(workdir, "kubeconfig")
    write_kubeconfig(kubeconfig, server.url)
    spec = os.path.join(workdir, "spec.yaml")
    write_spec(spec, "    type: kubernetes\n    kubeconfig: kubeconfig\n"
                     "    page_size: 2\n    timeout: 3s")
    exporters = []
    try:
        result = subprocess.run([args.exporter, "check", "--config.file", spec],
                                capture_output=True, text=True)
        check("the spec passes check", result.returncode == 0, result.stdout + result.stderr)

        exporter = serve(args.exporter, spec, workdir, "kubeconfig")
        exporters.append(exporter)
        status, ok = exporter.wait_status(
            lambda s: source(s).get("up") and "missing" in roles(s)["gone"]["conditions"])
        check("kubeconfig source is up and the first refresh completed", ok, source(status))
        by_role = roles(status)
        for role, expected in EXPECTED.items():
            check(f"{role} is {','.join(expected)}", by_role[role]["conditions"] == expected,
                  by_role[role]["conditions"])
        check("hung: a Job running for 3h with max_runtime 30m",
              "hung" in by_role["hung"]["conditions"], by_role["hung"]["conditions"])
        check("flaky: a failed Job after a success", "failing" in by_role["flaky"]["conditions"],
              by_role["flaky"]["conditions"])
        check("gone: no CronJob in two reads", "missing" in by_role["gone"]["conditions"],
              by_role["gone"]["conditions"])
        check("dup lists both CronJobs",
              sorted(o["id"] for o in by_role["dup"]["objects"]) == ["batch/dup-a", "other/dup-b"],
              by_role["dup"]["objects"])
        check("zoned: a CronJob without timeZone is reported in UTC",
              by_role["zoned"]["objects"][0]["timezone"] == "UTC", by_role["zoned"]["objects"])
        check("backup history: last success from the Job and the CronJob status",
              by_role["backup"]["last_success"] is not None
              and now - by_role["backup"]["last_success"] < 3 * 3600, by_role["backup"])
        check("hung: running_since is the Job's startTime",
              by_role["hung"]["running_since"] == now - 3 * 3600 + 5, by_role["hung"])
        problems = source(status)["problems"]
        check("the malformed CronJob is a problem, the rest is used",
              any(p["reason"] == "malformed_object" and "batch/broken" in p["message"]
                  for p in problems), problems)
        check("unowned: the CronJob whose role is not in the spec",
              source(status)["unowned_objects"] == 1, source(status))

        text = exporter.metrics()
        check("metrics: schedwatch_source_up 1",
              'schedwatch_source_up{source="prod",type="kubernetes"} 1' in text)
        check("metrics: unowned objects 1",
              'schedwatch_source_unowned_objects{source="prod"} 1' in text)
        check("metrics: backup ok",
              'schedwatch_job_condition{role="backup",source="prod",condition="ok"} 1' in text)
        requests = server.requests()
        lists = [r for r in requests if "watch" not in r["query"]]
        check("pages of 2 were requested",
              all(r["query"].get("limit") == "2" for r in lists), lists[:3])
        watches = [r for r in requests if r["query"].get("watch") == "1"]
        check("CronJobs and Jobs are watched with bookmarks from the list's resourceVersion",
              {r["path"] for r in watches} >= {"/apis/batch/v1/cronjobs"}
              and all(r["query"].get("allowWatchBookmarks") == "true"
                      and r["query"].get("resourceVersion") for r in watches), watches[:3])
        # Later refreshes read the caches: nothing is listed again but the missing role's label,
        # which confirms its absence from the API server at every refresh.
        def full_lists():
            return [r for r in server.requests() if "watch" not in r["query"]
                    and " in (" not in r["query"].get("labelSelector", "")]
        listed = len(full_lists())
        exporter.wait_status(lambda s: source(s)["last_sync"] > source(status)["last_sync"] + 2)
        check("refreshes after the first list list no more", len(full_lists()) == listed,
              full_lists()[listed:][:3])
        confirming = [r for r in server.requests() if " in (" in r["query"].get("labelSelector", "")]
        check("the missing role is confirmed by a list for its label",
              confirming and "gone" in confirming[-1]["query"]["labelSelector"], confirming[-1:])
        check("continue tokens were used", any("continue" in r["query"] for r in requests))

        # With every role present a refresh reads once, so that read's recovered failures
        # (an expired continue token, a 500) are what the source reports and counts.
        complete = dict(good, cronjobs=good["cronjobs"] + [cronjob("gone", "gone")], faults=[])
        server.configure(complete)
        exporter.wait_status(lambda s: roles(s)["gone"]["conditions"] != ["missing"])
        # Compacted: the watches end with 410, and the next refresh lists through the faults.
        server.configure(dict(complete, faults=faults, compact=True))
        status, ok = exporter.wait_status(lambda s: {"list_restarted", "server_error"} <= {
            p["reason"] for p in source(s)["problems"]})
        check("an expired continue token and a 500 are recovered from", ok and source(status)[
            "up"] and roles(status)["backup"]["conditions"] == ["ok"], source(status))
        text = exporter.metrics()
        for reason in ("list_restarted", "server_error", "malformed_object"):
            check(f"metrics: errors_total counts {reason}",
                  re.search(r'schedwatch_source_errors_total\{[^}]*reason="%s"[^}]*\} [1-9]'
                            % reason, text), re.findall("schedwatch_source_errors_total.*", text))

        # With a role missing, a refresh reads twice: the failures the first read recovered from
        # are counted too, although the status shows the confirming read's problems.
        def errors(reason):
            found = re.search(r'schedwatch_source_errors_total\{[^}]*reason="%s"[^}]*\} (\d+)'
                              % reason, exporter.metrics())
            return int(found.group(1)) if found else 0
        before = {reason: errors(reason) for reason in ("server_error", "list_restarted")}
        server.configure(dict(good, faults=faults, compact=True))
        wait_for(lambda: all(errors(r) > n for r, n in before.items()), 20,
                 "the confirming refresh's recovered errors to be counted")
        check("a confirming refresh still counts what its first read recovered from",
              all(errors(r) > n for r, n in before.items()),
              (before, {r: errors(r) for r in before}))
        server.configure(good)

        # The CronJobs list, their Jobs do not (a 500 that stays; the watches end, so the next
        # refresh lists): existence is still judged, runs are unknown, and the metrics say which
        # half of the source was read.
        jobs_down = dict(good, compact=True, faults=[
            {"path": "/apis/batch/v1/namespaces/batch/jobs", "status": 500,
             "reason": "InternalError"}])
        server.configure(jobs_down)
        status, ok = exporter.wait_status(
            lambda s: source(s).get("up") and source(s).get("history_up") is False)
        by_role = roles(status)
        check("Jobs failing: the source lists, its history is down", ok and
              "InternalError" in source(status).get("history_error", ""), source(status))
        for role, expected in (("backup", ["unknown"]), ("gone", ["unknown", "missing"]),
                               ("dup", ["unknown", "duplicate"]),
                               ("drifted", ["unknown", "drift"])):
            check(f"Jobs failing: {role} is {','.join(expected)}",
                  by_role.get(role, {}).get("conditions") == expected,
                  by_role.get(role, {}).get("conditions"))
        text = exporter.metrics()
        check("Jobs failing: schedwatch_source_up 1, schedwatch_source_history_up 0",
              'schedwatch_source_up{source="prod",type="kubernetes"} 1' in text and
              'schedwatch_source_history_up{source="prod",type="kubernetes"} 0' in text)
        check("Jobs failing: registered objects still served, no success series",
              'schedwatch_job_registered_objects{role="backup",source="prod"} 1' in text and
              'schedwatch_job_last_success_timestamp_seconds{role="backup"' not in text)
        server.configure(dict(good, compact=True))
        status, ok = exporter.wait_status(
            lambda s: source(s).get("history_up") and roles(s)["backup"]["conditions"] == ["ok"])
        check("Jobs failing: recovers when the Jobs answer again", ok, source(status))
        server.configure(good)

        forbidden = dict(good, faults=[{"status": 403, "reason": "Forbidden", "message":
                                        'cronjobs.batch is forbidden: User "system:'
                                        'serviceaccount:monitoring:schedwatch" cannot list '
                                        'resource "cronjobs" in API group "batch" at the '
                                        'cluster scope'}])
        hostile_phase(exporter, server, "403", forbidden, r"HTTP 403 Forbidden: cronjobs\.batch "
                      r"is forbidden: User \"system:serviceaccount:monitoring:schedwatch\"", good)
        hostile_phase(exporter, server, "401", dict(good, token="someone-else"),
                      r"HTTP 401 Unauthorized", good)
        hostile_phase(exporter, server, "slow answer", dict(good, faults=[{"delay": 8}]),
                      r"no answer within 3s|no complete list within the timeout|timed out", good)
        hostile_phase(exporter, server, "malformed JSON", dict(good, faults=[
            {"path": "/apis/batch/v1/cronjobs", "raw": '{"kind":"CronJobList","items":[{'}]),
            r"malformed JSON in a CronJobList", good)

        original = open(kubeconfig).read()
        write_kubeconfig(kubeconfig, server.url,
                         "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
                         "      command: aws\n")
        status, ok = exporter.wait_status(lambda s: not source(s)["up"] and only_unknown(s))
        check("exec plugin: refused, roles unknown", ok and "exec credential plugins are not "
              "supported" in source(status).get("error", ""), source(status))
        with open(kubeconfig, "w") as out:
            out.write(original)
        status, ok = exporter.wait_status(lambda s: source(s).get("up"))
        check("a fixed kubeconfig is picked up without a restart", ok, source(status))

        write_kubeconfig(kubeconfig, server.url, trust="    insecure-skip-tls-verify: true\n")
        wait_for(lambda: "insecure-skip-tls-verify" in exporter.logs(), 15,
                 "the kubeconfig with insecure-skip-tls-verify to be loaded")
        before = (exporter.status() or {}).get("refreshed")  # the refresh that loaded it may be running
        status, ok = exporter.wait_status(
            lambda s: s.get("refreshed") != before and source(s).get("up"))
        check("insecure-skip-tls-verify is honoured with a warning", ok and re.search(
            r"level=warn .*TLS certificate verification is off", exporter.logs()), source(status))
        no_secret_anywhere(exporter, "kubeconfig exporter")
        check("exporter stops cleanly", exporter.stop() == 0)

        # In-cluster over IPv6 loopback, following a token rotation.
        account = os.path.join(workdir, "serviceaccount")
        os.makedirs(account)
        shutil.copy(os.path.join(pki, "ca.crt"), os.path.join(account, "ca.crt"))
        with open(os.path.join(account, "token"), "w") as out:
            out.write(TOKEN + "\n")
        v6 = ApiServer(workdir, good, tls_dir=pki, host="::1")
        in_cluster_spec = os.path.join(workdir, "in-cluster.yaml")
        write_spec(in_cluster_spec, "    type: kubernetes\n    in_cluster: true")
        exporter = serve(args.exporter, in_cluster_spec, workdir, "in-cluster", env={
            "KUBERNETES_SERVICE_HOST": "::1", "KUBERNETES_SERVICE_PORT": str(v6.port),
            "SCHEDWATCH_SERVICE_ACCOUNT_DIR": account})
        exporters.append(exporter)
        status, ok = exporter.wait_status(
            lambda s: source(s).get("up") and roles(s)["backup"]["conditions"] == ["ok"])
        check("in-cluster over [::1]: backup ok", ok, source(status))
        v6.configure(dict(good, token=ROTATED_TOKEN))
        with open(os.path.join(account, "token.tmp"), "w") as out:
            out.write(ROTATED_TOKEN + "\n")
        os.rename(os.path.join(account, "token.tmp"), os.path.join(account, "token"))
        wait_for(lambda: v6.requests()[-1]["authorization"] == f"Bearer {ROTATED_TOKEN}", 20,
                 "a request with the rotated token", ignore=(ValueError, IndexError))
        status, ok = exporter.wait_status(
            lambda s: source(s).get("up") and roles(s)["backup"]["conditions"] == ["ok"])
        v6_requests = v6.requests()
        check("in-cluster: the rotated token is read and sent", ok and
              v6_requests[-1]["authorization"] == f"Bearer {ROTATED_TOKEN}",
              (source(status), v6_requests[-1]["authorization"] == f"Bearer {TOKEN}"))
        no_secret_anywhere(exporter, "in-cluster exporter")
        check("in-cluster exporter stops cleanly", exporter.stop() == 0)
        v6.stop()
    finally:
        for exporter in exporters:
            if exporter.alive():
                exporter.kill()
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
