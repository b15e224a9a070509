#!/usr/bin/python3
"""Checks the prometheus-operator pieces of examples/kubernetes/ against the fields and types
the CRDs define for what they use, and that they fit together:

  - servicemonitor.yaml and every PrometheusRule in prometheusrule.yaml validate against the
    subset of the CRDs' openAPIV3Schema written below. A field the subset does not know is an
    error too: the API server prunes unknown fields of a structural schema silently.
  - the PrometheusRule's groups are valid Prometheus rules (promtool check rules);
  - the ServiceMonitor selects the Service, scrapes its metrics port, and its job label
    (the Service's name) and relabeled identity label are what the rules select and merge by;
  - kustomization.yaml lists exporter, RBAC, ServiceMonitor and rules, and every file it names.

The schema subset is copied (types, required, patterns, enums) from prometheus-operator's CRDs
monitoring.coreos.com_servicemonitors.yaml and monitoring.coreos.com_prometheusrules.yaml, as
shipped with operator v0.73/v0.74 (example/prometheus-operator-crd/ in its repository; the API
is documented at prometheus-operator.dev, "API reference", ServiceMonitorSpec, Endpoint,
RelabelConfig, PrometheusRuleSpec, RuleGroup, Rule). Only what the examples use is written out.
Prints 'N passed, N failed'.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from schedwatch_test import check, summary  # noqa: E402

PROMTOOL = "/usr/bin/promtool"

DURATION = r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"
STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
OBJECT_META = {"type": "object", "properties": {
    "name": {"type": "string"}, "namespace": {"type": "string"},
    "labels": STRING_MAP, "annotations": STRING_MAP}}

RELABEL_CONFIG = {"type": "object", "properties": {
    "action": {"type": "string", "enum": [
        "replace", "Replace", "keep", "Keep", "drop", "Drop", "hashmod", "HashMod", "labelmap",
        "LabelMap", "labeldrop", "LabelDrop", "labelkeep", "LabelKeep", "lowercase", "Lowercase",
        "uppercase", "Uppercase", "keepequal", "KeepEqual", "dropequal", "DropEqual"]},
    "sourceLabels": {"type": "array", "items": {
        "type": "string", "pattern": r"^[a-zA-Z_][a-zA-Z0-9_]*$"}},
    "separator": {"type": "string"},
    "targetLabel": {"type": "string"},
    "regex": {"type": "string"},
    "replacement": {"type": "string"},
    "modulus": {"type": "integer"}}}

SERVICE_MONITOR = {"type": "object", "required": ["spec"], "properties": {
    "apiVersion": {"type": "string", "enum": ["monitoring.coreos.com/v1"]},
    "kind": {"type": "string", "enum": ["ServiceMonitor"]},
    "metadata": OBJECT_META,
    "spec": {"type": "object", "required": ["selector"], "properties": {
        "jobLabel": {"type": "string"},
        "selector": {"type": "object", "properties": {"matchLabels": STRING_MAP}},
        "namespaceSelector": {"type": "object", "properties": {
            "any": {"type": "boolean"},
            "matchNames": {"type": "array", "items": {"type": "string"}}}},
        "endpoints": {"type": "array", "items": {"type": "object", "properties": {
            "port": {"type": "string"},
            "path": {"type": "string"},
            "scheme": {"type": "string", "enum": ["http", "https"]},
            "interval": {"type": "string", "pattern": DURATION},
            "scrapeTimeout": {"type": "string", "pattern": DURATION},
            "honorLabels": {"type": "boolean"},
            "relabelings": {"type": "array", "items": RELABEL_CONFIG},
            "metricRelabelings": {"type": "array", "items": RELABEL_CONFIG}}}}}}}}

PROMETHEUS_RULE = {"type": "object", "required": ["spec"], "properties": {
    "apiVersion": {"type": "string", "enum": ["monitoring.coreos.com/v1"]},
    "kind": {"type": "string", "enum": ["PrometheusRule"]},
    "metadata": OBJECT_META,
    "spec": {"type": "object", "properties": {
        "groups": {"type": "array", "list_map_key": "name", "items": {
            "type": "object", "required": ["name"], "properties": {
                "name": {"type": "string", "minLength": 1},
                "interval": {"type": "string", "pattern": DURATION},
                "rules": {"type": "array", "items": {
                    "type": "object", "required": ["expr"], "properties": {
                        "alert": {"type": "string"},
                        "record": {"type": "string"},
                        "expr": {"int-or-string": True},
                        "for": {"type": "string", "pattern": DURATION},
                        "labels": STRING_MAP,
                        "annotations": STRING_MAP}}}}}}}}}}

TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def validate(value, schema, path="$"):
    """The problems of `value` against an openAPIV3Schema subset, as 'path: what' strings."""
    problems = []
    if schema.get("int-or-string"):
        if not (isinstance(value, str) or (isinstance(value, int)
                                           and not isinstance(value, bool))):
            problems.append(f"{path}: must be an integer or a string")
        return problems
    kind = schema.get("type")
    if kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            return [f"{path}: must be an integer"]
    elif kind and not isinstance(value, TYPES[kind]) or (kind == "string"
                                                         and isinstance(value, bool)):
        return [f"{path}: must be of type {kind}, is {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if "pattern" in schema and not re.search(schema["pattern"], value):
        problems.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if "minLength" in schema and len(value) < schema["minLength"]:
        problems.append(f"{path}: shorter than {schema['minLength']}")
    if kind == "object":
        for key in schema.get("required", []):
            if key not in value:
                problems.append(f"{path}: {key} is required")
        properties = schema.get("properties")
        for key, item in value.items():
            if properties is not None and key in properties:
                problems += validate(item, properties[key], f"{path}.{key}")
            elif "additionalProperties" in schema:
                problems += validate(item, schema["additionalProperties"], f"{path}.{key}")
            else:
                problems.append(f"{path}.{key}: not a field of the CRD (it would be pruned)")
    if kind == "array":
        for i, item in enumerate(value):
            problems += validate(item, schema["items"], f"{path}[{i}]")
        key = schema.get("list_map_key")
        if key:
            keys = [item.get(key) for item in value if isinstance(item, dict)]
            if len(keys) != len(set(keys)):
                problems.append(f"{path}: {key} must be unique (x-kubernetes-list-type: map)")
    return problems


def load_all(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    directory = os.path.join(args.source_dir, "examples", "kubernetes")

    # The validator itself: it must refuse what the API server would.
    check("the validator refuses a wrong type, a missing field, an unknown field, a bad duration",
          len(validate({"spec": {"groups": [{"rules": [{"expr": "up", "for": "5 minutes",
                                                         "severity": "x"}]}],
                                 "extra": 1}, "kind": "PrometheusRule"}, PROMETHEUS_RULE)) == 4
          and validate({"spec": {"selector": {"matchLabels": {"a": 1}}}}, SERVICE_MONITOR))

    monitors = load_all(os.path.join(directory, "servicemonitor.yaml"))
    check("servicemonitor.yaml holds one ServiceMonitor",
          [m.get("kind") for m in monitors] == ["ServiceMonitor"])
    monitor = monitors[0]
    problems = validate(monitor, SERVICE_MONITOR)
    check("the ServiceMonitor validates against the CRD's schema", not problems, problems)

    rules = load_all(os.path.join(directory, "prometheusrule.yaml"))
    check("prometheusrule.yaml holds the global and the spec's PrometheusRule",
          [r.get("kind") for r in rules] == ["PrometheusRule", "PrometheusRule"]
          and rules[0]["metadata"]["name"] == "schedwatch-global", [r.get("kind") for r in rules])
    for rule in rules:
        name = rule.get("metadata", {}).get("name")
        problems = validate(rule, PROMETHEUS_RULE)
        check(f"PrometheusRule {name} validates against the CRD's schema", not problems,
              problems[:10])
        check(f"PrometheusRule {name}: each rule is an alert or a record, not both",
              all(("alert" in r) != ("record" in r) for g in rule["spec"]["groups"]
                  for r in g["rules"]))
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i, rule in enumerate(rules):
            files.append(os.path.join(tmp, f"{i}.rules.yml"))
            with open(files[-1], "w") as f:
                yaml.safe_dump({"groups": rule["spec"]["groups"]}, f)
        result = subprocess.run([PROMTOOL, "check", "rules", *files], capture_output=True,
                                text=True)
        check("promtool check rules on the PrometheusRules' groups", result.returncode == 0,
              result.stdout + result.stderr)

    objects = {}
    for name in ("service.yaml", "deployment.yaml"):
        for document in load_all(os.path.join(directory, name)):
            objects[document["kind"]] = document
    service = objects["Service"]
    check("the ServiceMonitor selects the Service",
          monitor["spec"]["selector"]["matchLabels"].items()
          <= service["metadata"]["labels"].items())
    check("in the Service's namespace",
          service["metadata"]["namespace"] in monitor["spec"]["namespaceSelector"]["matchNames"])
    ports = {p["name"] for p in service["spec"]["ports"]}
    check("every endpoint scrapes a named port of the Service",
          all(e["port"] in ports for e in monitor["spec"]["endpoints"]), ports)
    exprs = " ".join(r["expr"] for rule in rules for g in rule["spec"]["groups"]
                     for r in g["rules"])
    job = service["metadata"]["name"]  # no jobLabel: the operator names the job after the Service
    check("the rules select the job the ServiceMonitor produces",
          "jobLabel" not in monitor["spec"] and f'job="{job}"' in exprs, job)
    identity = {r["targetLabel"] for e in monitor["spec"]["endpoints"]
                for r in e.get("relabelings", []) if r.get("action", "replace") == "replace"}
    check("the relabeled identity label is what the rules merge replicas by",
          identity and all(f"by (job, {label}" in exprs for label in identity), identity)
    check("the rules never merge by job alone", "by (job)" not in exprs
          and "by (job, source" not in exprs)
    replicas = objects["Deployment"]["spec"].get("replicas", 1)
    check("the Deployment runs an HA pair", replicas == 2, replicas)

    kustomization = load_all(os.path.join(directory, "kustomization.yaml"))[0]
    check("kustomization.yaml is a Kustomization",
          kustomization.get("apiVersion") == "kustomize.config.k8s.io/v1beta1"
          and kustomization.get("kind") == "Kustomization")
    resources = kustomization.get("resources", [])
    check("every resource of the kustomization exists",
          all(os.path.isfile(os.path.join(directory, r)) for r in resources), resources)
    kinds = {d["kind"] for r in resources if os.path.isfile(os.path.join(directory, r))
             for d in load_all(os.path.join(directory, r))}
    check("the kustomization installs exporter, RBAC, ServiceMonitor and rules",
          {"Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap",
           "Service", "ServiceMonitor", "PrometheusRule"} <= kinds, kinds)
    namespaces = {d.get("metadata", {}).get("namespace") for r in resources
                  for d in load_all(os.path.join(directory, r))} - {None}
    check("one namespace, the kustomization's", namespaces == {kustomization.get("namespace")},
          namespaces)

    return summary()


if __name__ == "__main__":
    sys.exit(main())
