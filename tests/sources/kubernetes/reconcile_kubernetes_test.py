#!/usr/bin/python3
"""`schedwatch_exporter reconcile` against the Kubernetes API: the real binary POSTs CronJob
templates to fake_apiserver.py over TLS on loopback.

A world puts roles in every case reconcile must tell apart: healthy, missing with a good
template, a duplicate, a suspended and a drifted CronJob, a template that lacks the role label,
none at all, a CronJob someone else creates just before the POST (the right one, and one of
another role under the same name), a create whose answer is lost, a 500 and a 403. Created
CronJobs show in lists only 1.5 s later, so verification must re-list. The request log proves
that nothing but those POSTs changed the cluster. Then the exporter reports the created role ok
against the ledger, and --reconcile.on-start creates missing roles at start-up and after a
reload, and two reconcilers without a shared lock create one CronJob. Prints 'N passed,
N failed'.
"""
import collections
import json
import os
import re
import ssl
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "harness"))
import fake_apiserver  # noqa: E402
from exporter_kubernetes_test import TOKEN, cronjob, roles, serve, write_kubeconfig  # noqa: E402
from fake_apiserver import ApiServer  # noqa: E402
from schedwatch_test import (check, get, read_text, run_in_temporary_directory,  # noqa: E402
                             wait_for)

import yaml  # noqa: E402  (python3-yaml: an independent reading of the templates)


def template(role, name=None, labelled=True, version="3"):
    labels = f"    schedwatch.io/role: {role}\n" if labelled else "    team: ops\n"
    return f"""apiVersion: batch/v1
kind: CronJob
metadata:
  name: {name or role}
  labels:
{labels}  annotations:
    schedwatch.io/spec-version: "{version}"
spec:
  schedule: "0 * * * *"
  timeZone: UTC
  concurrencyPolicy: Forbid
  successfulJobsHistoryLimit: 3
  jobTemplate:
    spec:
      backoffLimit: 2
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: main
              image: registry.example.org/{role}:1
              args: ["--role", "{role}", "--retries", "3"]
"""


def write_spec(workdir, jobs):
    lines = ["version: 1", "defaults: {timezone: UTC, start_grace: 5m, max_runtime: 30m}",
             "sources:",
             "  prod: {type: kubernetes, kubeconfig: kubeconfig, namespaces: [batch], "
             "timeout: 5s}", "jobs:"]
    for role, template_file in jobs:
        line = f'  - {{role: {role}, source: prod, schedule: "0 * * * *", spec_version: "3"'
        lines.append(line + (f", template: {template_file}}}" if template_file else "}"))
    path = os.path.join(workdir, "spec.yaml")
    with open(path, "w") as out:
        out.write("\n".join(lines) + "\n")
    return path


def write_templates(workdir, roles_to_write, **kwargs):
    os.makedirs(os.path.join(workdir, "templates"), exist_ok=True)
    for role in roles_to_write:
        with open(os.path.join(workdir, "templates", f"{role}.yaml"), "w") as out:
            out.write(template(role, **kwargs.get(role, {})))
    return {role: f"templates/{role}.yaml" for role in roles_to_write}


def requests(workdir):
    path = os.path.join(workdir, "requests-127.0.0.1.jsonl")
    return [json.loads(line) for line in open(path)] if os.path.exists(path) else []


def posts(workdir):
    return [r for r in requests(workdir) if r["method"] == "POST"]


def posted_names(workdir):
    return collections.Counter(json.loads(r["body"])["metadata"]["name"] for r in posts(workdir))


def reconcile(binary, spec, *extra):
    lock = os.path.join(os.path.dirname(spec), "reconcile.lock")  # apart from other tests
    result = subprocess.run([binary, "reconcile", "--config.file", spec, "--lock-file", lock,
                             "--refresh.confirm-delay", "200ms", *extra],
                            capture_output=True, text=True, timeout=120)
    rows = {}
    for line in result.stdout.splitlines()[1:]:
        parts = re.split(r"\s{2,}", line.strip(), maxsplit=3)
        if len(parts) == 4:
            rows[parts[0]] = {"condition": parts[2], "action": parts[3]}
    return result, rows


def world():
    now = int(time.time())
    fire = now - now % 3600
    healthy = dict(last_schedule=fire, last_success=fire + 60)
    return {
        "token": TOKEN,
        "visible_after": 1.5,
        "cronjobs": [
            cronjob("backup", "backup", **healthy),
            cronjob("dup-a", "dup", **healthy),
            cronjob("dup-b", "dup", **healthy),
            cronjob("paused", "paused", suspend=True, **healthy),
            cronjob("drifted", "drifted", schedule="15 * * * *", **healthy),
        ],
        # Made by someone else just before reconcile's POST of the same name arrives.
        "appear_on_post": [
            dict(cronjob("raced", "raced"), status={}),
            dict(cronjob("taken", "somebody-else"), status={}),
        ],
        "faults": [
            {"method": "POST", "name": "lost", "commit": True, "drop": True, "times": 1},
            {"method": "POST", "name": "flaky", "status": 500, "reason": "InternalError",
             "times": 1},
            {"method": "POST", "name": "throttled", "status": 429, "reason": "TooManyRequests",
             "headers": {"Retry-After": "2"}, "times": 1},
            {"method": "POST", "name": "forbidden", "status": 403, "reason": "Forbidden",
             "message": 'cronjobs.batch is forbidden: User "system:serviceaccount:monitoring:'
                        'schedwatch" cannot create resource "cronjobs" in API group "batch" in '
                        'the namespace "batch"'},
        ],
    }


EXPECTED_DRY_RUN = {
    "backup": ("ok", "verified"),
    "gone": ("missing", "would create"),
    "dup": ("duplicate", "skipped: duplicate"),
    "paused": ("inactive", "skipped: inactive, enable explicitly"),
    "drifted": ("drift", "skipped: drift"),
    "unlabelled": ("missing", "skipped: template refused: metadata.labels: must carry "
                              "schedwatch.io/role: unlabelled"),
    "untemplated": ("missing", "skipped: no template"),
}

EXPECTED_APPLY = {
    "gone": "created",
    "raced": "skipped: appeared before it was created",
    "taken": "skipped: cronjob batch/taken exists but is not this role's job",
    "flaky": "created",
    "throttled": "created",
    "forbidden": 'create failed: POST /apis/batch/v1/namespaces/batch/cronjobs: HTTP 403 '
                 'Forbidden: cronjobs.batch is forbidden: User "system:serviceaccount:monitoring:'
                 'schedwatch" cannot create resource "cronjobs" in API group "batch" in the '
                 'namespace "batch" (grant create on cronjobs in API group batch; see '
                 'examples/kubernetes/)',
}


def check_rows(label, rows, expected):
    for role, want in expected.items():
        got = rows.get(role, {})
        got = (got.get("condition"), got.get("action")) if isinstance(want, tuple) \
            else got.get("action")
        check(f"{label}: {role} -> {want}", got == want, got)


def reconcile_phases(args, workdir, server):
    repairable = ["gone", "raced", "taken", "lost", "flaky", "throttled", "forbidden"]
    templates = write_templates(workdir, repairable + ["unlabelled"],
                                unlabelled={"labelled": False})
    jobs = [(role, templates.get(role)) for role in
            ["backup", "gone", "dup", "paused", "drifted", "unlabelled", "untemplated"]
            + repairable[1:]]
    spec = write_spec(workdir, jobs)
    ledger = os.path.join(workdir, "ledger.json")

    result, rows = reconcile(args.exporter, spec, "--ledger", ledger)
    check("dry run exits 1 (something would be created)", result.returncode == 1,
          result.returncode)
    check_rows("dry run", rows, EXPECTED_DRY_RUN)
    check("dry run says so", "dry run: nothing was changed" in result.stdout, result.stdout)
    check("dry run sends no POST", not posts(workdir), posts(workdir))
    check("dry run writes no ledger", not os.path.exists(ledger))

    result, rows = reconcile(args.exporter, spec, "--apply", "--ledger", ledger)
    output = result.stdout + result.stderr
    check("apply exits 1 (duplicates, drift and refusals need a person)",
          result.returncode == 1, output)
    check_rows("apply", rows, {**{r: a for r, (_, a) in EXPECTED_DRY_RUN.items()
                                  if r != "gone"}, **EXPECTED_APPLY})
    # Whether libcurl itself re-sent the POST whose answer was lost (it does on a reused
    # connection) decides which of the two rows is printed; either way, no duplicate.
    check("apply: lost -> created, or found after its answer was lost",
          rows.get("lost", {}).get("action") in
          ("created", "skipped: appeared before it was created"), rows.get("lost"))
    names = posted_names(workdir)
    check("one POST for each repairable role, two where the first got no answer or a 500",
          names == {"gone": 1, "raced": 1, "taken": 1, "lost": 2, "flaky": 2, "throttled": 2,
                    "forbidden": 1}, dict(names))
    throttled = [r["time"] for r in posts(workdir)
                 if json.loads(r["body"])["metadata"]["name"] == "throttled"]
    check("a 429's Retry-After is waited for", throttled[1] - throttled[0] >= 1.9, throttled)
    changes = [r for r in requests(workdir) if r["method"] not in ("GET", "POST")]
    check("no PUT, PATCH or DELETE: existing CronJobs untouched", not changes, changes)
    first = next(r for r in posts(workdir) if json.loads(r["body"])["metadata"]["name"] == "gone")
    wanted = yaml.safe_load(open(os.path.join(workdir, templates["gone"])))
    wanted["metadata"]["namespace"] = "batch"
    check("the POST body is the template as JSON, namespace filled in",
          json.loads(first["body"]) == wanted, first["body"])
    check("POSTed as JSON with a field manager, to the template's namespace",
          first["content_type"] == "application/json"
          and first["query"] == {"fieldManager": "schedwatch"}
          and first["path"] == "/apis/batch/v1/namespaces/batch/cronjobs", first)
    check("POSTs carry the bearer token", first["authorization"] == f"Bearer {TOKEN}")
    check("the token is not in the output", TOKEN not in output)
    recorded = json.load(open(ledger))
    recorded = recorded["roles"]
    check("the ledger records what was verified, not the duplicate",
          {role: recorded.get(role, {}).get("id") for role in
           ["backup", "gone", "lost", "flaky", "raced", "dup", "forbidden"]}
          == {"backup": "batch/backup", "gone": "batch/gone", "lost": "batch/lost",
              "flaky": "batch/flaky", "raced": "batch/raced", "dup": None, "forbidden": None},
          recorded)

    result, rows = reconcile(args.exporter, spec, "--apply", "--ledger", ledger)
    check_rows("second apply", rows, {r: "verified" for r in ["gone", "lost", "flaky", "raced"]})
    again = posted_names(workdir)
    check("second apply creates nothing again",
          all(again[r] == names[r] for r in ["gone", "lost", "flaky", "raced"]), dict(again))

    exporter = serve(args.exporter, spec, workdir, "after-reconcile",
                     extra=["--ledger.file", ledger])
    try:
        status, ok = exporter.wait_status(
            lambda s: roles(s).get("gone", {}).get("conditions") == ["ok"])
        check("the exporter reports the created role ok", ok, roles(status).get("gone"))
        metrics = exporter.metrics()
        check("and its ledger entry matches the live CronJob",
              re.search(r'schedwatch_job_ledger_mismatch\{role="gone",[^}]*\} 0', metrics),
              [line for line in metrics.splitlines() if "ledger_mismatch" in line])
    finally:
        exporter.stop()


def subdirectory(workdir, name):
    """A directory for a phase's spec and templates, reaching the same cluster."""
    directory = os.path.join(workdir, name)
    os.makedirs(directory)
    for shared in ("kubeconfig", "pki"):
        os.symlink(os.path.join(workdir, shared), os.path.join(directory, shared))
    return directory


def listed(server, role, pki):
    """The role's CronJobs as the API server lists them."""
    context = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
    reply = get(f"{server.url}/apis/batch/v1/namespaces/batch/cronjobs?labelSelector="
                f"schedwatch.io/role%3D{role}", headers={"Authorization": f"Bearer {TOKEN}"},
                context=context)
    return [item["metadata"]["name"] for item in reply.json()["items"]]


def two_hosts_phase(args, workdir, server):
    """Two reconcilers on different machines (no shared lock) repair the same role at once:
    the fixed name and 409 AlreadyExists leave one CronJob, and both say so."""
    directory = subdirectory(workdir, "two-hosts")
    templates = write_templates(directory, ["twin"])
    spec = write_spec(directory, [("twin", templates["twin"])])
    processes = [subprocess.Popen(
        [args.exporter, "reconcile", "--config.file", spec, "--apply",
         "--refresh.confirm-delay", "200ms", "--lock-file", os.path.join(directory, f"{i}.lock")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    actions = sorted(re.split(r"\s{2,}", p.communicate(timeout=120)[0].splitlines()[1])[3]
                     for p in processes)
    check("two hosts: one created it, the other found it",
          actions == ["created", "skipped: appeared before it was created"], actions)
    check("two hosts: one CronJob", listed(server, "twin", os.path.join(workdir, "pki"))
          == ["twin"])
    check("two hosts: both exit 0", [p.returncode for p in processes] == [0, 0])


def ledger_roles(path):
    """The roles the ledger records; none while it is absent or being replaced."""
    try:
        with open(path) as f:
            return set(json.load(f).get("roles", {}))
    except (OSError, ValueError):
        return set()


def on_start_phase(args, workdir, server):
    """--reconcile.on-start: a missing role is created at start-up, a new one after a reload."""
    directory = subdirectory(workdir, "on-start")
    templates = write_templates(directory, ["late", "later"])
    spec = write_spec(directory, [("backup", None), ("late", templates["late"])])
    ledger = os.path.join(directory, "ledger.json")
    lock = os.path.join(directory, "on-start.lock")
    exporter = serve(args.exporter, spec, directory, "on-start",
                     extra=["--reconcile.on-start", "--ledger.file", ledger,
                               "--reconcile.lock-file", lock, "--web.enable-lifecycle"])
    try:
        status, ok = exporter.wait_status(
            lambda s: roles(s).get("late", {}).get("conditions") == ["ok"], timeout=30)
        check("on-start: the missing role is created and reported ok", ok,
              roles(status).get("late"))
        wait_for(lambda: "msg=reconcile role=late" in exporter.logs(), 20,
                 "the reconcile row in the log (logged once verification ends)")
        check("on-start: the log has the row",
              re.search(r"msg=reconcile role=late .*action=created", exporter.logs()),
              exporter.logs())
        write_spec(directory, [("backup", None), ("late", templates["late"]),
                               ("later", templates["later"])])
        check("on-start: reload accepted", exporter.post("/-/reload").status == 200)
        status, ok = exporter.wait_status(
            lambda s: roles(s).get("later", {}).get("conditions") == ["ok"], timeout=30)
        check("on-start: a role added by a reload is created too", ok, roles(status).get("later"))
        names = posted_names(workdir)
        check("on-start: each created once", names["late"] == 1 and names["later"] == 1,
              dict(names))
        # The role can show ok before the reconciler has verified it and written the ledger.
        wait_for(lambda: {"late", "later"} <= ledger_roles(ledger), 30,
                 "the ledger to record late and later")
        check("on-start: the ledger records both", {"late", "later"} <= ledger_roles(ledger),
              read_text(ledger) if os.path.exists(ledger) else "no ledger")
        check("on-start: the token is in no log line", TOKEN not in exporter.logs())
        check("on-start: --reconcile.lock-file is the lock used", os.path.exists(lock))
    finally:
        exporter.stop()


def main():
    return run_in_temporary_directory(
        "schedwatch-k8s-reconcile-",
        with_cluster(reconcile_phases, two_hosts_phase, on_start_phase), "--exporter")


def with_cluster(*phases):
    """A test's run(args, workdir): start_cluster(), then each phase(args, workdir, server)."""
    def run(args, workdir):
        server = start_cluster(workdir)
        try:
            for phase in phases:
                phase(args, workdir, server)
        finally:
            server.stop()
    return run


def start_cluster(workdir):
    """The API server with world() over TLS, and workdir/kubeconfig reaching it."""
    pki = os.path.join(workdir, "pki")
    fake_apiserver.make_pki(pki)
    server = ApiServer(workdir, world(), tls_dir=pki)
    write_kubeconfig(os.path.join(workdir, "kubeconfig"), server.url)
    return server


if __name__ == "__main__":
    sys.exit(main())
