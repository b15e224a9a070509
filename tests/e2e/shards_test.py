#!/usr/bin/python3
"""Three real schedwatch_exporter processes share one spec (--shard 0, 1 and 2 of
--total-shards 3; the third takes its shard from $POD_NAME with --shard=auto) over one real
crontab tree:

- every role is served by exactly one shard, the one `check --total-shards 3` names;
- what a role is (ok, drift) is said by its shard only, and an unowned object is counted once;
- a deleted entry is `missing` on exactly one shard, after its confirming read;
- a pod whose --shard=auto ordinal is not below --total-shards (a StatefulSet shrinking) keeps
  the roles it had;
- each shard serves schedwatch_exporter_shard_ordinal, _total_shards, _spec_roles and
  _shard_roles right, and its status JSON says which shard it is;
- bad shard flags are refused with exit code 2 and a message.
Prints 'N passed, N failed'.
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from schedwatch_test import (Exporter, check, finish, run_tool,  # noqa: E402
                             temporary_directory, wait_for, write_text)

ROLES = [f"job-{i:02d}" for i in range(30)]
UNOWNED = ["legacy-a", "legacy-b", "legacy-c"]
DRIFTED = "job-07"  # its entry's spec_version is not the spec's
DELETED = "job-13"


def crontab(roles):
    text = "SHELL=/bin/sh\n"
    for role in roles:
        version = "2" if role == DRIFTED else "1"
        text += f"# schedwatch: role={role} spec_version={version}\n"
        text += f"*/5 * * * * root /usr/local/bin/{role}\n"
    return text


def gauge(metrics, name):
    found = re.search(rf"^{name} (\S+)$", metrics, re.M)
    return float(found.group(1)) if found else None


def roles_of(status):
    return {role["role"]: role["conditions"] for role in status["roles"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    binary = parser.parse_args().exporter
    with temporary_directory("schedwatch-shards-") as work:
        root = os.path.join(work, "root")
        os.makedirs(os.path.join(root, "etc", "cron.d"))
        os.makedirs(os.path.join(root, "var", "log"))
        write_text(os.path.join(root, "var", "log", "syslog"), "")
        cron_file = os.path.join(root, "etc", "cron.d", "app")
        write_text(cron_file, crontab(ROLES + UNOWNED))
        os.chmod(cron_file, 0o644)
        spec = os.path.join(work, "spec.yaml")
        jobs = "".join(f"  - {{role: {role}, source: host, schedule: \"*/5 * * * *\", "
                       f"spec_version: \"1\"}}\n" for role in ROLES)
        write_text(spec, "version: 1\nsources:\n  host: {type: crontab, root: " + root +
                   ", paths: [/etc/cron.d], history: syslog}\njobs:\n" + jobs)

        bad_flags(binary, spec)
        code, out, err = run_tool(binary, "check", "--config.file", spec, "--total-shards", "3",
                                  "--count", "0", "--output", "json")
        check("check --total-shards 3 --output json exits 0", code == 0, err)
        listed = json.loads(out) if code == 0 else {"jobs": []}
        owner = {job["role"]: job.get("shard") for job in listed["jobs"]}
        check("check names a shard of 0..2 for every role",
              sorted(owner) == ROLES and set(owner.values()) <= {0, 1, 2}, owner)
        check("every shard has roles", set(owner.values()) == {0, 1, 2}, owner)
        code, out, _ = run_tool(binary, "check", "--config.file", spec, "--total-shards", "3",
                                "--count", "0")
        check("check's text says each role's shard",
              f"{DELETED} (source host, crontab)" in out and
              f"  shard        {owner.get(DELETED)} of 3\n" in out, out[:800])

        exporters = []
        for k in range(3):
            flags = ["--shard", str(k), "--total-shards", "3"]
            env = None
            if k == 2:
                flags = ["--shard=auto", "--total-shards", "3"]
                env = dict(os.environ, POD_NAME="schedwatch-shard-2")
            exporters.append(Exporter(binary, spec, work, *flags, name=f"shard-{k}",
                                      wait="ready", env=env))
        try:
            statuses = []
            for k, exporter in enumerate(exporters):
                status, ok = exporter.wait_status(lambda s: True, what=f"shard {k}'s refresh")
                check(f"shard {k} refreshed", ok, status)
                statuses.append(status)
            served = {}
            for k, status in enumerate(statuses):
                for role in roles_of(status):
                    served.setdefault(role, []).append(k)
            check("every role is served by exactly one shard",
                  sorted(served) == ROLES and all(len(s) == 1 for s in served.values()), served)
            check("each by the shard check names",
                  all(served.get(role) == [owner[role]] for role in ROLES), served)
            conditions = {}
            for status in statuses:
                conditions.update(roles_of(status))
            check(f"{DRIFTED} is drift, on its shard",
                  conditions.get(DRIFTED) == ["drift"], conditions.get(DRIFTED))
            check("the others are ok",
                  all(conditions.get(r) == ["ok"] for r in ROLES if r != DRIFTED), conditions)
            unowned = 0
            for k, (exporter, status) in enumerate(zip(exporters, statuses)):
                metrics = exporter.metrics()
                mine = sum(1 for r in ROLES if owner[r] == k)
                check(f"shard {k}: shard_ordinal {k}",
                      gauge(metrics, "schedwatch_exporter_shard_ordinal") == k)
                check(f"shard {k}: total_shards 3",
                      gauge(metrics, "schedwatch_exporter_total_shards") == 3)
                check(f"shard {k}: spec_roles 30",
                      gauge(metrics, "schedwatch_exporter_spec_roles") == 30)
                check(f"shard {k}: shard_roles {mine}",
                      gauge(metrics, "schedwatch_exporter_shard_roles") == mine,
                      gauge(metrics, "schedwatch_exporter_shard_roles"))
                check(f"shard {k}: no other shard's role in /metrics",
                      not any(f'role="{r}"' in metrics for r in ROLES if owner[r] != k))
                check(f"shard {k}: drift counted by {DRIFTED}'s shard only",
                      (f'schedwatch_job_drifted_objects{{role="{DRIFTED}",source="host"}} 1'
                       in metrics) == (owner[DRIFTED] == k))
                check(f"shard {k}: status JSON says which shard",
                      status.get("shard") == {"ordinal": k, "total": 3, "roles": mine,
                                              "spec_roles": 30}, status.get("shard"))
                unowned += gauge(metrics, 'schedwatch_source_unowned_objects{source="host"}') or 0
                page = exporter.get("/").text
                check(f"shard {k}: the status page says shard {k} of 3",
                      f"Shard {k} of 3: {mine} of the spec's 30 roles" in page, page[:1500])
                other = next(r for r in ROLES if owner[r] != k)
                reply = exporter.get(f"/api/v1/roles/{other}")
                check(f"shard {k}: another shard's role is 404, naming its shard",
                      reply.status == 404 and reply.json().get("shard") == owner[other],
                      reply.text)
            check("the unowned objects are counted once over the shards",
                  unowned == len(UNOWNED), unowned)
            spare_keeps_its_roles(binary, spec, work)

            write_text(cron_file, crontab([r for r in ROLES + UNOWNED if r != DELETED]))

            def missing_where():
                where = []
                for k, exporter in enumerate(exporters):
                    status = exporter.status() or {"roles": []}
                    if "missing" in roles_of(status).get(DELETED, []):
                        where.append(k)
                return where or None

            where = wait_for(missing_where, 20, f"{DELETED} to be missing")
            check(f"the deleted {DELETED} is missing on exactly one shard, its own",
                  where == [owner[DELETED]], where)
            for k, exporter in enumerate(exporters):
                metrics = exporter.metrics()
                line = (f'schedwatch_job_condition{{role="{DELETED}",source="host",'
                        f'condition="missing"}} 1')
                check(f"shard {k}: {DELETED} missing in /metrics only on its shard",
                      (line in metrics) == (owner[DELETED] == k))
        finally:
            for exporter in exporters:
                exporter.stop()
    finish()


def spare_keeps_its_roles(binary, spec, work):
    """A StatefulSet shrinking from 4 pods to 3 is told --total-shards 3 first: its pod 3 keeps
    watching the roles of shard 3 of 4 until it is removed."""
    code, out, err = run_tool(binary, "check", "--config.file", spec, "--total-shards", "4",
                              "--count", "0", "--output", "json")
    had = sorted(j["role"] for j in json.loads(out)["jobs"] if j["shard"] == 3) if code == 0 else []
    env = dict(os.environ, POD_NAME="schedwatch-shard-3")
    spare = Exporter(binary, spec, work, "--shard=auto", "--total-shards", "3", name="spare",
                     wait="ready", env=env)
    try:
        status, ok = spare.wait_status(lambda s: True, what="the spare's refresh")
        check("a pod beyond --total-shards keeps the roles it had as shard 3 of 4",
              ok and had and sorted(roles_of(status)) == had, (had, sorted(roles_of(status))))
        metrics = spare.metrics()
        check("the spare says shard 3, total 3",
              gauge(metrics, "schedwatch_exporter_shard_ordinal") == 3 and
              gauge(metrics, "schedwatch_exporter_total_shards") == 3)
        check("the spare says so in its log", "a spare until it is removed" in spare.logs())
    finally:
        spare.stop()


def bad_flags(binary, spec):
    cases = [
        (["--shard", "3", "--total-shards", "3"], "--shard 3 is not below --total-shards 3"),
        (["--shard", "1"], "--shard 1 needs --total-shards N"),
        (["--total-shards", "0"], "--total-shards: 0 is not a number of shards"),
        (["--total-shards", "3"], "--total-shards 3 needs --shard K"),
        (["--shard=auto", "--total-shards", "3"], "--shard=auto: no pod name"),
        (["--shard=auto", "--total-shards", "3", "--pod-name", "schedwatch"],
         "the pod name \"schedwatch\" does not end in -<ordinal>"),
    ]
    env_without_pod = {k: v for k, v in os.environ.items() if k != "POD_NAME"}
    for flags, message in cases:
        result = subprocess.run([binary, "--config.file", spec, "--web.listen-address",
                                 "127.0.0.1:0", *flags], capture_output=True, text=True,
                                env=env_without_pod, timeout=30)
        code, err = result.returncode, result.stderr
        check(f"{' '.join(flags)}: exit 2, saying why", code == 2 and message in err,
              f"exit {code}: {err}")


if __name__ == "__main__":
    main()
