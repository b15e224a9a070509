#!/usr/bin/python3
"""Checks examples/kubernetes/*.yaml as YAML: the kinds are there, the ClusterRole grants get and
list on batch cronjobs and jobs (and nothing more), the names that tie the objects together
agree, and the ConfigMap's spec passes `schedwatch_exporter check`; reconcile/rbac.yaml grants
only create on cronjobs, in the namespace of the example CronJob, to the same ServiceAccount.
Prints 'N passed, N failed'.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "harness"))
from schedwatch_test import check, summary  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    directory = os.path.join(args.source_dir, "examples", "kubernetes")
    objects = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.yaml"))):
        with open(path) as source:
            documents = [d for d in yaml.safe_load_all(source) if d is not None]
        check(f"{os.path.basename(path)} parses", documents)
        for document in documents:
            check(f"{os.path.basename(path)}: {document.get('kind')} has apiVersion and name",
                  document.get("apiVersion") and document.get("metadata", {}).get("name"))
            objects.setdefault(document["kind"], []).append(document)
    for kind in ("Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Service",
                 "ConfigMap"):
        check(f"there is exactly one {kind}", len(objects.get(kind, [])) == 1,
              len(objects.get(kind, [])))
    deployment, account, role, binding, service, config_map = (
        objects[k][0] for k in ("Deployment", "ServiceAccount", "ClusterRole",
                                "ClusterRoleBinding", "Service", "ConfigMap"))

    rules = role["rules"]
    granted = {(group, resource, verb) for rule in rules for group in rule["apiGroups"]
               for resource in rule["resources"] for verb in rule["verbs"]}
    for resource in ("cronjobs", "jobs"):
        for verb in ("get", "list", "watch"):
            check(f"ClusterRole grants {verb} on batch {resource}",
                  ("batch", resource, verb) in granted, rules)
    check("ClusterRole grants nothing that writes",
          not {verb for _, _, verb in granted} - {"get", "list", "watch"}, rules)
    check("ClusterRole grants nothing outside batch cronjobs and jobs",
          {(g, r) for g, r, _ in granted} <= {("batch", "cronjobs"), ("batch", "jobs")}, rules)

    check("the binding names the ClusterRole",
          binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                 "name": role["metadata"]["name"]}, binding["roleRef"])
    check("the binding's subject is the ServiceAccount",
          {"kind": "ServiceAccount", "name": account["metadata"]["name"],
           "namespace": account["metadata"]["namespace"]} in binding["subjects"],
          binding["subjects"])

    pod = deployment["spec"]["template"]
    check("the Deployment's selector matches its pods",
          deployment["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items())
    check("the pods run as the ServiceAccount",
          pod["spec"]["serviceAccountName"] == account["metadata"]["name"])
    check("one namespace for everything namespaced",
          {o["metadata"]["namespace"] for o in (deployment, account, service, config_map)}
          == {account["metadata"]["namespace"]})
    container = pod["spec"]["containers"][0]
    arguments = dict(a.lstrip("-").split("=", 1) for a in container["args"])
    volume = next(v for v in pod["spec"]["volumes"] if "configMap" in v)
    mount = next(m for m in container["volumeMounts"] if m["name"] == volume["name"])
    check("the mounted volume is the ConfigMap",
          volume["configMap"]["name"] == config_map["metadata"]["name"])
    spec_file = os.path.relpath(arguments["config.file"], mount["mountPath"])
    check("--config.file is a key of the mounted ConfigMap", spec_file in config_map["data"],
          (arguments["config.file"], list(config_map["data"])))
    port = container["ports"][0]
    check("the exporter listens on the container port",
          arguments["web.listen-address"] == f":{port['containerPort']}", arguments)
    check("probes use the exporter's health endpoints",
          container["readinessProbe"]["httpGet"]["path"] == "/-/ready"
          and container["livenessProbe"]["httpGet"]["path"] == "/-/healthy")

    annotations = service["metadata"]["annotations"]
    check("the Service is annotated for scraping",
          annotations.get("prometheus.io/scrape") == "true"
          and annotations.get("prometheus.io/path") == "/metrics"
          and annotations.get("prometheus.io/port") == str(port["containerPort"]), annotations)
    check("the Service selects the pods",
          service["spec"]["selector"].items() <= pod["metadata"]["labels"].items())
    check("the Service targets the metrics port",
          service["spec"]["ports"][0]["targetPort"] in (port["name"], port["containerPort"]))

    spec_text = config_map["data"][spec_file]
    spec = yaml.safe_load(spec_text)
    check("the spec's source is an in-cluster kubernetes source",
          any(s.get("type") == "kubernetes" and s.get("in_cluster") is True
              for s in spec["sources"].values()), spec["sources"])
    with tempfile.TemporaryDirectory() as workdir:
        path = os.path.join(workdir, spec_file)
        with open(path, "w") as out:
            out.write(spec_text)
        result = subprocess.run([args.exporter, "check", "--config.file", path],
                                capture_output=True, text=True)
        check("the ConfigMap's spec passes schedwatch_exporter check", result.returncode == 0,
              result.stdout + result.stderr)

    with open(os.path.join(directory, "watched", "db-backup-cronjob.yaml")) as source:
        cronjob = yaml.safe_load(source)
    role_name = cronjob["metadata"]["labels"]["schedwatch.io/role"]
    job = next((j for j in spec["jobs"] if j["role"] == role_name), None)
    check("the example CronJob's role is in the spec", job is not None, role_name)
    if job:
        check("the example CronJob matches its job (no drift)",
              cronjob["spec"]["schedule"] == job["schedule"]
              and cronjob["spec"].get("timeZone", "UTC") == job.get("timezone", "UTC")
              and cronjob["metadata"]["annotations"]["schedwatch.io/spec-version"]
              == job["spec_version"], (cronjob["spec"], job))

    with open(os.path.join(directory, "reconcile", "rbac.yaml")) as source:
        reconciler = {d["kind"]: d for d in yaml.safe_load_all(source) if d}
    check("reconcile/rbac.yaml holds a Role and its RoleBinding",
          set(reconciler) == {"Role", "RoleBinding"}, list(reconciler))
    if set(reconciler) == {"Role", "RoleBinding"}:
        granted = {(group, resource, verb) for rule in reconciler["Role"]["rules"]
                   for group in rule["apiGroups"] for resource in rule["resources"]
                   for verb in rule["verbs"]}
        check("the reconciler may create batch cronjobs and do nothing else",
              granted == {("batch", "cronjobs", "create")}, granted)
        check("in the example CronJob's namespace",
              {reconciler[k]["metadata"]["namespace"] for k in reconciler}
              == {cronjob["metadata"]["namespace"]})
        check("bound to the exporter's ServiceAccount",
              reconciler["RoleBinding"]["subjects"] == [
                  {"kind": "ServiceAccount", "name": account["metadata"]["name"],
                   "namespace": account["metadata"]["namespace"]}]
              and reconciler["RoleBinding"]["roleRef"]["name"]
              == reconciler["Role"]["metadata"]["name"])

    sharded(args, directory, account, config_map, spec_file)
    return summary()


def sharded(args, directory, account, config_map, spec_file):
    """sharded/: a StatefulSet of shards of the parent's spec, with --shard=auto."""
    sharded_dir = os.path.join(directory, "sharded")
    objects = {}
    for path in sorted(glob.glob(os.path.join(sharded_dir, "*.yaml"))):
        with open(path) as source:
            for document in yaml.safe_load_all(source):
                if document:
                    objects.setdefault(document["kind"], []).append(document)
    kustomization = objects.get("Kustomization", [{}])[0]
    check("sharded/kustomization.yaml lists the StatefulSet and its Service",
          sorted(kustomization.get("resources", [])) ==
          ["headless-service.yaml", "statefulset.yaml"], kustomization)
    statefulset = objects.get("StatefulSet", [None])[0]
    headless = objects.get("Service", [None])[0]
    if not check("sharded/ holds one StatefulSet and its headless Service",
                 statefulset is not None and headless is not None, list(objects)):
        return
    check("the headless Service governs the StatefulSet",
          statefulset["spec"]["serviceName"] == headless["metadata"]["name"]
          and headless["spec"].get("clusterIP") == "None")
    pod = statefulset["spec"]["template"]
    container = pod["spec"]["containers"][0]
    arguments = dict(a.lstrip("-").split("=", 1) for a in container["args"])
    check("each pod takes its shard from its name", arguments.get("shard") == "auto", arguments)
    check("--total-shards is the replica count",
          arguments.get("total-shards") == str(statefulset["spec"]["replicas"]), arguments)
    env = {e["name"]: e for e in container.get("env", [])}
    check("POD_NAME comes from the downward API",
          env.get("POD_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
          == "metadata.name", env)
    check("the shards run as the parent's ServiceAccount",
          pod["spec"]["serviceAccountName"] == account["metadata"]["name"])
    volume = next(v for v in pod["spec"]["volumes"] if "configMap" in v)
    check("the shards mount the parent's ConfigMap, the whole spec",
          volume["configMap"]["name"] == config_map["metadata"]["name"]
          and os.path.relpath(arguments["config.file"], container["volumeMounts"][0]["mountPath"])
          == spec_file)
    check("the pods are ready only after a refresh",
          container["readinessProbe"]["httpGet"]["path"] == "/-/ready")
    with tempfile.TemporaryDirectory() as workdir:
        path = os.path.join(workdir, spec_file)
        with open(path, "w") as out:
            out.write(config_map["data"][spec_file])
        result = subprocess.run([args.exporter, "check", "--config.file", path, "--total-shards",
                                 arguments.get("total-shards", "1"), "--count", "0"],
                                capture_output=True, text=True)
        check("check --total-shards lists the ConfigMap's roles by shard",
              result.returncode == 0 and "shard 0 of" in result.stdout,
              result.stdout + result.stderr)


if __name__ == "__main__":
    sys.exit(main())
