#!/usr/bin/python3
"""Two exporter replicas of one watcher (an HA pair: the same spec, different machines, so
neither a shared lock file nor a shared ledger), both running --reconcile.on-start against one
Kubernetes API server on loopback, start together while a role's CronJob is missing: the
CronJob is created once. The fixed object name and the API server's 409 AlreadyExists make the
second replica's create a no-op; both replicas then report the role ok. Prints 'N passed,
N failed'.
"""
import os
import re
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "harness"))
from exporter_kubernetes_test import roles, serve  # noqa: E402
from reconcile_kubernetes_test import (listed, posted_names, subdirectory,  # noqa: E402
                                       with_cluster, write_spec, write_templates)
from schedwatch_test import check, run_in_temporary_directory, wait_for  # noqa: E402


def main():
    return run_in_temporary_directory("schedwatch-k8s-replicas-", with_cluster(run), "--exporter")


def run(args, workdir, server):
    pki = os.path.join(workdir, "pki")
    replicas = []
    try:
        directory = subdirectory(workdir, "replicas")
        templates = write_templates(directory, ["pair"])
        spec = write_spec(directory, [("backup", None), ("pair", templates["pair"])])
        check("the role's CronJob is missing before the replicas start",
              listed(server, "pair", pki) == [])

        # Start both at once: each on its own machine, with its own ledger and lock.
        errors = []

        def start(i):
            try:
                replicas.append(serve(
                    args.exporter, spec, directory, f"replica-{i}",
                    extra=["--reconcile.on-start",
                           "--ledger.file", os.path.join(directory, f"ledger-{i}.json"),
                           "--reconcile.lock-file", os.path.join(directory, f"{i}.lock")]))
            except Exception as error:  # noqa: BLE001 -- reported below
                errors.append(error)

        threads = [threading.Thread(target=start, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        if not check("both replicas start", len(replicas) == 2 and not errors, errors):
            return
        for i, replica in enumerate(replicas):
            status, ok = replica.wait_status(
                lambda s: roles(s).get("pair", {}).get("conditions") == ["ok"], timeout=40)
            check(f"replica {i}: the role is reported ok", ok, roles(status).get("pair"))
        check("one CronJob for the role", listed(server, "pair", pki) == ["pair"],
              listed(server, "pair", pki))
        # Both logs say what they did once verification ends.
        wait_for(lambda: all("msg=reconcile role=pair" in r.logs() for r in replicas), 20,
                 "both replicas' reconcile rows in their logs")
        created = sum(len(re.findall(r"msg=reconcile role=pair .*action=created", r.logs()))
                      for r in replicas)
        check("exactly one replica created it", created == 1,
              "\n".join(r.logs()[-1500:] for r in replicas))
        posts = posted_names(workdir)["pair"]
        check("at most one create per replica reached the API server", 1 <= posts <= 2, posts)
    finally:
        for replica in replicas:
            replica.stop()


if __name__ == "__main__":
    sys.exit(main())
