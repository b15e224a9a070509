#!/usr/bin/python3
"""Two exporter replicas of one watcher (an HA pair: the same spec, different machines, so
neither a shared lock file nor a shared ledger), both running --reconcile.on-start against one
Kubernetes API server on loopback, start together while a role's CronJob is missing: the
CronJob is created once. The fixed object name and the API server's 409 AlreadyExists make the
second replica's create a no-op; both replicas then report the role ok. Prints 'N passed,
N failed'.
"""
import argparse
import os
import re
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_apiserver  # noqa: E402
from exporter_kubernetes_test import (RESULTS, ApiServer, Exporter, check, roles,  # noqa: E402
                                      write_kubeconfig)
from reconcile_kubernetes_test import (listed, posted_names, subdirectory, world,  # noqa: E402
                                       write_spec, write_templates)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="schedwatch-k8s-replicas-")
    pki = os.path.join(workdir, "pki")
    fake_apiserver.make_pki(pki)
    server = ApiServer(workdir, pki, world())
    write_kubeconfig(os.path.join(workdir, "kubeconfig"), server.url)
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
                replicas.append(Exporter(
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
            return 1
        for i, replica in enumerate(replicas):
            status, ok = replica.wait_for(
                lambda s: roles(s).get("pair", {}).get("conditions") == ["ok"], timeout=40)
            check(f"replica {i}: the role is reported ok", ok, roles(status).get("pair"))
        check("one CronJob for the role", listed(server, "pair", pki) == ["pair"],
              listed(server, "pair", pki))
        # Both logs say what they did once verification ends.
        deadline = time.time() + 20
        while time.time() < deadline and not all(
                "msg=reconcile role=pair" in r.logs() for r in replicas):
            time.sleep(0.2)
        created = sum(len(re.findall(r"msg=reconcile role=pair .*action=created", r.logs()))
                      for r in replicas)
        check("exactly one replica created it", created == 1,
              "\n".join(r.logs()[-1500:] for r in replicas))
        posts = posted_names(workdir)["pair"]
        check("at most one create per replica reached the API server", 1 <= posts <= 2, posts)
    finally:
        for replica in replicas:
            replica.stop()
        server.stop()
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
