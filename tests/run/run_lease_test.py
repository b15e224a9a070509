#!/usr/bin/python3
"""schedwatch_run's Lease guard against the loopback Kubernetes API server (fake_apiserver.py,
TLS, in-cluster service-account credentials as a pod has them).

Two wrappers race for an absent Lease (both read 404, both create: one 201, one 409), and for
an expired one (both read the same resourceVersion, both update: one 200, one 409): each time
exactly one runs the command and the other records a skipped duplicate and exits 200. A held
Lease is renewed while the command runs and released (holderIdentity cleared) at the end, and the RBAC example grants exactly the verbs used; a
wrapper killed with -9 takes its command with it and leaves the Lease to expire, after which
the next copy runs. An API error is a guard error: the command runs by default
(--on-guard-error=run, recorded), or not with skip (exit 201). The token never shows.
Prints 'N passed, N failed'.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
sys.path.insert(0, os.path.join(HERE, "..", "sources", "kubernetes"))
import fake_apiserver  # noqa: E402
from fake_apiserver import ApiServer  # noqa: E402
from schedwatch_test import check, run_in_temporary_directory, run_records, wait_for  # noqa: E402

TOKEN = "lease-secret-token-2b7e151628"
NAMESPACE = "ops"
LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases"


def stamp(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(seconds))


def main():
    return run_in_temporary_directory("schedwatch-lease-", run, "--run")


def run(args, workdir):
    pki = os.path.join(workdir, "pki")
    fake_apiserver.make_pki(pki)
    account = os.path.join(workdir, "serviceaccount")
    os.makedirs(account)
    shutil.copy(os.path.join(pki, "ca.crt"), account)
    with open(os.path.join(account, "token"), "w") as out:
        out.write(TOKEN + "\n")
    with open(os.path.join(account, "namespace"), "w") as out:
        out.write(NAMESPACE)
    server = ApiServer(workdir, {"token": TOKEN}, tls_dir=pki)

    def configure(**extra):
        server.configure({"token": TOKEN, **extra})

    env = {**os.environ, "KUBERNETES_SERVICE_HOST": "127.0.0.1",
           "KUBERNETES_SERVICE_PORT": str(server.port), "SCHEDWATCH_SERVICE_ACCOUNT_DIR": account}
    records = os.path.join(workdir, "runs")
    ran_file = os.path.join(workdir, "ran")

    def wrapper(role, command, *extra, duration="3s"):
        return subprocess.Popen(
            [args.run, "--role", role, "--guard", "lease", "--in-cluster", "--lease-duration",
             duration, "--record-dir", records, *extra, "--", *command],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def requests():
        return server.requests()

    def role_records(role):
        return run_records(records, role)

    def lease(role):
        # Read through the API like anyone else: the last PUT/POST body logged is the state.
        name = "schedwatch-" + role
        for entry in reversed(requests()):
            if entry["method"] in ("PUT", "POST") and entry["path"].startswith(LEASES) and \
                    json.loads(entry["body"])["metadata"]["name"] == name:
                return json.loads(entry["body"])
        return None

    append = ["/bin/sh", "-c", f'echo "$SCHEDWATCH_ROLE $$" >> {ran_file}; sleep 1']
    try:
        # 1. Absent Lease: both read 404 (the GET waits, so both read before either writes).
        configure(lease_get_delay=0.6)
        a, b = wrapper("race", append), wrapper("race", append)
        outs = [p.communicate(timeout=30) for p in (a, b)]
        codes = sorted([a.returncode, b.returncode])
        ran = open(ran_file).read().split("\n") if os.path.exists(ran_file) else []
        check("absent lease, two racing copies: exactly one ran (exit 0 and 200)",
              codes == [0, 200] and len([r for r in ran if r]) == 1, (codes, ran, outs))
        posts = [r for r in requests() if r["method"] == "POST" and r["path"] == LEASES]
        check("both tried to create it (one won 201, the other got 409)", len(posts) == 2, posts)
        states = sorted(r["state"] for r in role_records("race"))
        check("records: one finished, one skipped", states == ["finished", "skipped"], states)
        skipped = [r for r in role_records("race") if r["state"] == "skipped"]
        check("the skipped copy says so on stderr and in its record",
              any("skipped: another copy holds the lease guard" in err for _, err in outs) and
              skipped and skipped[0]["guard"] == "lease", (outs, skipped))
        released = lease("race")
        check("released at the end: holderIdentity cleared, Lease kept",
              released and released["spec"]["holderIdentity"] is None, released)

        # 2. Expired Lease: both read one resourceVersion, both update; one gets 409.
        os.remove(ran_file)
        dead = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": "schedwatch-expired", "namespace": NAMESPACE,
                             "resourceVersion": "42",
                             "labels": {"schedwatch.io/role": "expired"}},
                "spec": {"holderIdentity": "gone-pod_1", "leaseDurationSeconds": 10,
                         "renewTime": stamp(time.time() - 60), "leaseTransitions": 4}}
        configure(lease_get_delay=0.6, leases=[dead])
        a, b = wrapper("expired", append), wrapper("expired", append)
        outs = [p.communicate(timeout=30) for p in (a, b)]
        codes = sorted([a.returncode, b.returncode])
        ran = [r for r in open(ran_file).read().split("\n") if r]
        check("expired lease, two racing copies: exactly one ran", codes == [0, 200] and
              len(ran) == 1, (codes, ran, outs))
        puts = [json.loads(r["body"]) for r in requests()
                if r["method"] == "PUT" and r["path"] == LEASES + "/schedwatch-expired"]
        takeovers = [p for p in puts if p["metadata"]["resourceVersion"] == "42"]
        check("both updated with the resourceVersion they read (one 200, one 409)",
              len(takeovers) == 2 and all(p["spec"]["leaseTransitions"] == 5 for p in takeovers),
              takeovers)

        # 3. Held: renewed while the command runs; a second copy meanwhile is skipped.
        configure()
        holder = wrapper("held", ["/bin/sleep", "3"])
        wait_for(lambda: lease("held") and lease("held")["spec"]["holderIdentity"], 10,
                 "the held lease to have a holder")
        first = lease("held")["spec"]
        second = wrapper("held", ["/bin/echo", "never"])
        out, err = second.communicate(timeout=30)
        check("held lease: the second copy does not run (exit 200)",
              second.returncode == 200 and "never" not in out, (second.returncode, out, err))
        renewed = wait_for(lambda: lease("held")["spec"].get("renewTime", "") >
                           first["renewTime"] and lease("held"), 5, "a renewal of the held lease")
        check("renewed while the command runs (renewTime moves, same holder)",
              renewed and renewed["spec"]["holderIdentity"] == first["holderIdentity"], renewed)
        holder.communicate(timeout=30)
        check("the holder exits 0 and releases it", holder.returncode == 0 and
              lease("held")["spec"]["holderIdentity"] is None, lease("held"))

        # 4. kill -9 of the wrapper: its command dies with it; the Lease expires, then runs.
        victim = wrapper("killed", ["/bin/sleep", "30"], duration="3s")
        wait_for(lambda: lease("killed") and lease("killed")["spec"]["holderIdentity"], 10,
                 "the victim's lease to have a holder")
        sleeper = wait_for(lambda: [p for p in os.listdir("/proc") if p.isdigit() and
                                    open(f"/proc/{p}/cmdline", "rb").read() == b"/bin/sleep\x0030\x00"
                                    if os.path.exists(f"/proc/{p}/cmdline")], 5,
                           "the victim's sleep command")
        os.kill(victim.pid, signal.SIGKILL)
        victim.communicate(timeout=10)
        gone = wait_for(lambda: not any(os.path.exists(f"/proc/{p}") and
                                        open(f"/proc/{p}/cmdline", "rb").read().startswith(
                                            b"/bin/sleep") for p in sleeper or []), 5,
                        "the victim's command to die")
        check("wrapper killed -9: its command is killed too", sleeper and gone, sleeper)
        check("wrapper killed -9: its record shows started, never finished",
              [r["state"] for r in role_records("killed")] == ["running"],
              role_records("killed"))
        early = wrapper("killed", ["/bin/true"])
        early.communicate(timeout=30)
        check("before the Lease expires the next copy is skipped", early.returncode == 200,
              early.returncode)

        def next_runs():
            later = wrapper("killed", ["/bin/true"])
            later.communicate(timeout=30)
            return later.returncode == 0

        check("after leaseDurationSeconds the next copy runs (no stuck guard)",
              wait_for(next_runs, 10, "a copy that runs after the lease expired"))

        # 5. The API refuses: a guard error; run by default (recorded), skipped on request.
        configure(faults=[{"path": LEASES + "/schedwatch-denied", "status": 403,
                           "reason": "Forbidden",
                           "message": 'leases.coordination.k8s.io "schedwatch-denied" is '
                                      'forbidden: User "system:serviceaccount:ops:job" cannot '
                                      'get resource "leases"'}])
        run = wrapper("denied", ["/bin/echo", "ran anyway"])
        out, err = run.communicate(timeout=30)
        recorded = role_records("denied")
        check("API error, default --on-guard-error=run: the command runs, the error is recorded",
              run.returncode == 0 and "ran anyway" in out and "guard error" in err and
              recorded and "HTTP 403" in recorded[-1].get("guard_error", ""), (out, err, recorded))
        skip = wrapper("denied", ["/bin/echo", "must not run"], "--on-guard-error=skip")
        out, err = skip.communicate(timeout=30)
        check("API error, --on-guard-error=skip: not run, exit 201, recorded not_run",
              skip.returncode == 201 and "must not run" not in out and
              role_records("denied")[-1]["state"] == "not_run", (skip.returncode, out, err))
        everything = err + json.dumps(recorded)
        check("the token never shows in messages or records", TOKEN not in everything)
        check("every request carried the service account's token",
              all(r["authorization"] == f"Bearer {TOKEN}" for r in requests()))
        # examples/kubernetes/run/rbac.yaml grants exactly the verbs the wrapper used.
        import yaml
        with open(os.path.join(HERE, "..", "..", "examples", "kubernetes", "run",
                               "rbac.yaml")) as source:
            role = [d for d in yaml.safe_load_all(source) if d and d["kind"] == "Role"][0]
        granted = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"]
                   for r in rule["resources"] for v in rule["verbs"]}
        verbs = {"GET": "get", "POST": "create", "PUT": "update", "DELETE": "delete"}
        used = {("coordination.k8s.io", "leases", verbs[r["method"]]) for r in requests()
                if r["path"].startswith("/apis/coordination.k8s.io/")}
        check("examples/kubernetes/run/rbac.yaml grants exactly the verbs used", used == granted,
              (sorted(used), sorted(granted)))
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
