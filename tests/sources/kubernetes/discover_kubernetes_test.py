#!/usr/bin/python3
"""`schedwatch_exporter discover --type kubernetes` against a loopback API server over TLS
(fake_apiserver.py), with labelled, unlabelled, suspended and unreadable CronJobs and their Jobs:

- every CronJob is listed, not only labelled ones (no label selector), one job each, named after
  the CronJob; a labelled one keeps its role and version, a suspended one and one whose schedule
  does not parse are comments;
- max_runtime comes from the longest finished Job, with its comment;
- `kubectl label` / `annotate` commands for the CronJobs without a role, and none for the others;
- `check` accepts the draft, and discover on it adds nothing;
- a second page and a 500 on the way change nothing; the token never shows.
Prints 'N passed, N failed'.
"""
import os
import sys
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "harness"))
sys.path.insert(0, HERE)
import fake_apiserver  # noqa: E402
from exporter_kubernetes_test import TOKEN, cronjob, job, write_kubeconfig  # noqa: E402
from fake_apiserver import ApiServer  # noqa: E402
from schedwatch_test import (check, check_draft_settles, read_text,  # noqa: E402
                             run_in_temporary_directory, run_tool)


def unlabelled(name, schedule, namespace="batch", suspend=False):
    item = cronjob(name, "x", schedule=schedule, namespace=namespace, suspend=suspend)
    del item["metadata"]["labels"]
    del item["metadata"]["annotations"]
    return item


def main():
    return run_in_temporary_directory("schedwatch-discover-k8s-", in_workdir, "--exporter")


def in_workdir(args, work):
    exporter = args.exporter
    now = int(time.time())
    pki = os.path.join(work, "pki")
    fake_apiserver.make_pki(pki)
    world = {"token": TOKEN, "cronjobs": [
        cronjob("db-backup", "backup", schedule="30 2 * * *", namespace="ops", version="7"),
        unlabelled("report-hourly", "0 * * * *", namespace="analytics"),
        unlabelled("cleanup", "0 4 * * *", namespace="ops", suspend=True),
        unlabelled("weird", "every day"),
        unlabelled("nightly", "0 3 * * *"),
    ], "jobs": [
        job("report-hourly-1", "report-hourly", now - 7200, now - 7200 + 95, "succeeded",
            namespace="analytics"),
        job("report-hourly-2", "report-hourly", now - 3600, now - 3600 + 130, "succeeded",
            namespace="analytics"),
        job("report-hourly-3", "report-hourly", now - 60, namespace="analytics"),
    ], "faults": [{"path": "/apis/batch/v1/cronjobs", "status": 500, "reason": "InternalError",
                   "times": 1}]}
    server = ApiServer(work, world, tls_dir=pki)
    try:
        kubeconfig = os.path.join(work, "kubeconfig")
        write_kubeconfig(kubeconfig, server.url)
        draft_path = os.path.join(work, "draft.yaml")
        code, _, err = run_tool(exporter, "discover", "--type", "kubernetes", "--source",
                                "prod", "--kubeconfig", kubeconfig, "--page-size", "2",
                                "--output", draft_path)
        check("discover --type kubernetes exits 0", code == 0, err)
        draft = read_text(draft_path)
        jobs = {j["role"]: j for j in (yaml.safe_load(draft) or {}).get("jobs") or []}
        check("one job per runnable CronJob, named after it",
              sorted(jobs) == ["backup", "nightly", "report-hourly"], draft)
        check("a labelled CronJob keeps its role and version",
              jobs.get("backup", {}).get("spec_version") == "7", draft)
        check("schedule and zone as the CronJob holds them",
              jobs.get("nightly", {}).get("schedule") == "0 3 * * *", draft)
        check("max_runtime from the longest finished Job (130s: 5m)",
              jobs.get("report-hourly", {}).get("max_runtime") == "5m" and
              "twice the longest of 2 runs seen (2m10s)" in draft, draft)
        check("the suspended CronJob is a comment",
              "# not a job (prod): ops/cleanup: suspended" in draft, draft)
        check("a schedule that does not parse is a comment",
              "# not a job (prod): batch/weird: its schedule \"every day\" does not parse"
              in draft, draft)
        label = (f"kubectl --kubeconfig {kubeconfig} -n analytics label cronjob report-hourly "
                 "schedwatch.io/role=report-hourly")
        annotate = (f"kubectl --kubeconfig {kubeconfig} -n analytics annotate cronjob "
                    "report-hourly schedwatch.io/spec-version=1")
        check("kubectl label and annotate for a CronJob without a role",
              label in err and annotate in err, err)
        check("no command for the labelled one", "db-backup" not in err, err)
        cronjob_lists = [r for r in server.requests()
                         if r["path"] == "/apis/batch/v1/cronjobs"]
        check("every CronJob was asked for: no label selector",
              cronjob_lists and all("labelSelector" not in r["query"] for r in cronjob_lists),
              cronjob_lists)
        check("the token never shows", TOKEN not in draft and TOKEN not in err)
        check_draft_settles(exporter, draft_path, draft)
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
