#!/usr/bin/python3
"""A loopback stand-in for the Kubernetes API server (batch/v1 CronJobs and Jobs), for tests.
HTTP, TLS and streamed answers are fake_http's; this file holds the API's paths, lists, watches,
Leases and faults.

  fake_apiserver.py pki DIR
      Writes a test PKI made by openssl (valid ten years): ca.{crt,key}, server.{crt,key} (localhost, 127.0.0.1,
      ::1), client.{crt,key} (CN schedwatch-client, signed by the same CA) and other-ca.crt (an
      unrelated CA).
  fake_apiserver.py serve --config FILE --port-file FILE [--tls-dir DIR] [--host ::1] ...
      Serves HTTPS (HTTP with --plain) until its parent exits or --max-lifetime passes.

The config file (JSON) is re-read whenever it changes:
  {"token": "t" | ["t1", "t2"],      bearer tokens accepted; absent: no token needed
   "client_cn": "schedwatch-client", a client certificate with this CN is accepted too
   "cronjobs": [...], "jobs": [...],  items as the API returns them
   "synthetic": {"cronjobs": N, "jobs_per_cronjob": M, "namespaces": K, "unrelated_jobs": U,
                 "annotation_bytes": B},  B: a last-applied-configuration annotation that long
                                      generated items (U Jobs owned by CronJobs without the label)
   "faults": [{"path": "/apis/batch/v1/jobs",  exact path; absent: any list path
               "method": "POST",               the method it applies to; absent: GET
               "name": "retry",                POST: only for this metadata.name
               "commit": true,                 POST: create the object first, then misbehave
               "continue": true,               only requests with (true) / without (false) one
               "times": 1,                     how often it applies; absent: always
               "delay": 3.0,                   seconds to wait first (then the rest of the fault)
               "status": 403, "reason": "Forbidden", "message": "...",  a Status answer
                                               ("{authorization}" in message or raw: the
                                               request's Authorization header, echoed)
               "headers": {"Retry-After": "1"},
               "raw": "{not json",             this body with status (default 200)
               "drop": true}],                 close the connection without an answer
   "ignore_limit": true,              every item in one answer, as a server that does not paginate
   "visible_after": 1.5,              seconds before a created CronJob shows in lists
   "appear_on_post": [...],           CronJobs someone else creates just before a POST of the
                                      same namespace/name arrives (the race reconcile must survive)
   "leases": [...],                   coordination.k8s.io/v1 Leases (reset when the file changes)
   "lease_get_delay": 0.5,            seconds a GET of a Lease waits after reading it (racing copies
                                      then act on the same state)
   "compact": true,                   with this config change, events before it are compacted: a
                                      watch from an older resourceVersion gets an ERROR 410 event
   "bookmark_interval": 60,           seconds between BOOKMARK events on a watch
   "watch_close_after": 5,            the server ends every watch after this (before timeoutSeconds)
   "stall_watches": true,             open watches send nothing, not even bookmarks
   "churn": {"interval": 1.0, "jobs": 10}}  every interval, the next `jobs` Jobs of the world
                                      change status (a MODIFIED event each), round robin
Lists honour limit, continue (410 Expired for a token of an older config) and labelSelector
(`key`, `key=value` or `key in (a,b)`, comma-separated). Watches (watch=1, resourceVersion,
timeoutSeconds, allowWatchBookmarks) stream the changes a config change makes (ADDED, MODIFIED,
DELETED, diffed by kind, namespace and name) and the churn's as chunked JSON lines. POST /apis/batch/v1/namespaces/NS/cronjobs creates a
CronJob as the API server does (201; 409 AlreadyExists for a taken name; 400 for a namespace
that differs from the path's); created objects outlive config changes. PUT, PATCH and DELETE are
logged and refused: tests prove from the log that nothing was changed or removed.
Leases (/apis/coordination.k8s.io/v1/namespaces/NS/leases[/NAME]) are kept as the API server
keeps them: GET (404 NotFound), POST (201; 409 AlreadyExists), PUT with metadata.resourceVersion
(200 and a new resourceVersion; 409 Conflict when it is not the stored one, as for two copies
racing); DELETE is refused like the rest. Each request is
appended to --request-log as a JSON line (method, path, query, body for POSTs).
Also, for HTTP client tests: /echo (request headers as JSON), /bytes?n=N, /slow?seconds=S,
/drip?seconds=S (a byte every 50 ms), /status/NNN.
"""
import argparse
import base64
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "harness"))
import fake_http  # noqa: E402
from fake_http import make_pki  # noqa: E402,F401 -- the PKI command's, and tests' by this name
from schedwatch_test import replace_file, wait_for  # noqa: E402

API_PREFIX = "/apis/batch/v1/"
LEASE_PREFIX = "/apis/coordination.k8s.io/v1/namespaces/"


class ApiServer:
    """This server in a child process, for a test: its config in workdir/apiserver-HOST.json
    (configure() replaces it), its requests logged to workdir/requests-HOST.jsonl. HTTPS with
    the PKI in tls_dir, plain HTTP without one."""

    def __init__(self, workdir, config, tls_dir=None, host="127.0.0.1"):
        self.config_path = os.path.join(workdir, f"apiserver-{host}.json")
        self.request_log = os.path.join(workdir, f"requests-{host}.jsonl")
        port_file = os.path.join(workdir, f"apiserver-{host}.port")
        self.configure(config)
        self.process = subprocess.Popen(
            ["/usr/bin/python3", os.path.abspath(__file__), "serve", "--config",
             self.config_path, "--port-file", port_file, "--host", host, "--request-log",
             self.request_log, *(["--tls-dir", tls_dir] if tls_dir else ["--plain"])])
        if not wait_for(lambda: os.path.exists(port_file) or self.process.poll() is not None,
                        20, "the fake API server's port file") or not os.path.exists(port_file):
            self.stop()
            raise RuntimeError("fake API server did not start")
        with open(port_file) as port:
            self.port = int(port.read())
        self.url = (f"{'https' if tls_dir else 'http'}://"
                    f"{'[' + host + ']' if ':' in host else host}:{self.port}")

    def configure(self, config):
        replace_file(self.config_path, json.dumps(config))
        time.sleep(0.01)  # a new mtime for the next change

    def requests(self):
        if not os.path.exists(self.request_log):
            return []
        with open(self.request_log) as log:
            return [json.loads(line) for line in log]

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


def status_body(code, reason, message, extra=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    body.update(extra or {})
    return body


def synthetic_world(spec):
    """CronJobs role-0..N-1 over K namespaces, each with M hourly Jobs from 2026-01-01: successes,
    a failure second to last for every tenth CronJob, and the newest one still running."""
    cronjobs, jobs = [], []
    namespaces = max(1, spec.get("namespaces", 10))
    per_cronjob = spec.get("jobs_per_cronjob", 10)
    base = 1767225600  # 2026-01-01T00:00:00Z
    stamp = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
    # kubectl apply's copy of the manifest, as real CronJobs carry it: "annotation_bytes" long.
    applied = ({"kubectl.kubernetes.io/last-applied-configuration": "x" * spec["annotation_bytes"]}
               if spec.get("annotation_bytes") else {})
    for i in range(spec.get("cronjobs", 0)):
        namespace, name = f"team-{i % namespaces:03d}", f"job-{i:06d}"
        uid = f"00000000-0000-4000-8000-{i:012d}"
        newest = base + (per_cronjob - 1) * 3600  # the running Job's start
        succeeded = newest - (3 if i % 10 == 0 else 2) * 3600 + 600
        cronjobs.append({
            "metadata": {"name": name, "namespace": namespace, "uid": uid,
                         "resourceVersion": str(1000 + i),
                         "creationTimestamp": stamp(base - 86400),
                         "labels": {"schedwatch.io/role": f"role-{i}", "team": "bench"},
                         "annotations": dict({"schedwatch.io/spec-version": "1"}, **applied),
                         "managedFields": [
                             {"manager": "kubectl-client-side-apply", "operation": "Update",
                              "apiVersion": "batch/v1", "time": stamp(base - 86400),
                              "fieldsType": "FieldsV1", "fieldsV1": {
                                  "f:metadata": {"f:labels": {"f:schedwatch.io/role": {}}},
                                  "f:spec": {"f:schedule": {}, "f:jobTemplate": {}}}},
                             {"manager": "kube-controller-manager", "operation": "Update",
                              "apiVersion": "batch/v1", "subresource": "status",
                              "time": stamp(newest), "fieldsType": "FieldsV1", "fieldsV1": {
                                  "f:status": {"f:lastScheduleTime": {},
                                               "f:lastSuccessfulTime": {}}}}]},
            "spec": {"schedule": "0 * * * *", "timeZone": "UTC", "concurrencyPolicy": "Forbid",
                     "suspend": False, "successfulJobsHistoryLimit": 3,
                     "failedJobsHistoryLimit": 1,
                     "jobTemplate": {"metadata": {"labels": {"schedwatch.io/role": f"role-{i}"}},
                                     "spec": {"backoffLimit": 2, "template": {"spec": {
                                         "restartPolicy": "Never",
                                         "containers": [{"name": "main",
                                                         "image": "registry.example.org/job:1",
                                                         "args": ["--run", name]}]}}}}},
            "status": {"lastScheduleTime": stamp(newest), "lastSuccessfulTime": stamp(succeeded)}})
        for j in range(per_cronjob):
            start = base + j * 3600
            job = {
                "metadata": {"name": f"{name}-{start // 60}", "namespace": namespace,
                             "uid": f"10000000-{j:04d}-4000-8000-{i:012d}",
                             "creationTimestamp": stamp(start),
                             "labels": {"batch.kubernetes.io/job-name": f"{name}-{start // 60}",
                                        "schedwatch.io/role": f"role-{i}"},
                             "annotations": {
                                 "batch.kubernetes.io/cronjob-scheduled-timestamp": stamp(start)},
                             "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob",
                                                  "name": name, "uid": uid, "controller": True,
                                                  "blockOwnerDeletion": True}],
                             "managedFields": [{"manager": "kube-controller-manager",
                                                "operation": "Update", "apiVersion": "batch/v1",
                                                "subresource": "status", "time": stamp(start),
                                                "fieldsType": "FieldsV1", "fieldsV1": {
                                                    "f:status": {"f:startTime": {},
                                                                 "f:succeeded": {},
                                                                 "f:conditions": {}}}}]},
                "spec": {"backoffLimit": 2, "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "registry.example.org/job:1"}]}}},
            }
            if j == per_cronjob - 1:
                job["status"] = {"startTime": stamp(start + 2), "active": 1, "ready": 1}
            elif j == per_cronjob - 2 and i % 10 == 0:
                job["status"] = {"startTime": stamp(start + 2), "failed": 3, "conditions": [
                    {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                     "message": "Job has reached the specified backoff limit",
                     "lastTransitionTime": stamp(start + 300)}]}
            else:
                job["status"] = {"startTime": stamp(start + 2),
                                 "completionTime": stamp(start + 600), "succeeded": 1,
                                 "conditions": [{"type": "Complete", "status": "True",
                                                 "lastTransitionTime": stamp(start + 600)}]}
            jobs.append(job)
    for u in range(spec.get("unrelated_jobs", 0)):
        namespace, start = f"team-{u % namespaces:03d}", base + (u % 24) * 3600
        owner = f"other-{u // 5:06d}"
        jobs.append({
            "metadata": {"name": f"{owner}-{start // 60}", "namespace": namespace,
                         "uid": f"20000000-0000-4000-8000-{u:012d}",
                         "creationTimestamp": stamp(start),
                         "labels": {"batch.kubernetes.io/job-name": f"{owner}-{start // 60}",
                                    "app": "other"},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob",
                                              "name": owner,
                                              "uid": f"30000000-0000-4000-8000-{u // 5:012d}",
                                              "controller": True, "blockOwnerDeletion": True}],
                         "managedFields": [{"manager": "kube-controller-manager",
                                            "operation": "Update", "apiVersion": "batch/v1",
                                            "fieldsType": "FieldsV1",
                                            "fieldsV1": {"f:status": {"f:succeeded": {},
                                                                      "f:completionTime": {}}}}]},
            "spec": {"backoffLimit": 6, "template": {"spec": {
                "restartPolicy": "OnFailure",
                "containers": [{"name": "worker", "image": "registry.example.org/other:2",
                                "args": ["--shard", str(u)],
                                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}},
            "status": {"startTime": stamp(start + 1), "completionTime": stamp(start + 90),
                       "succeeded": 1, "conditions": [{"type": "Complete", "status": "True",
                                                       "lastTransitionTime": stamp(start + 90)}]}})
    return cronjobs, jobs


class World:
    """The config file's content, re-read when its modification time changes."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.stamp = None
        self.generation = 0
        self.resource_version = 884213
        self.compacted = 0
        self.events = []  # (resourceVersion, kind, type, object)
        self.changed = threading.Condition(self.lock)
        self.items = None
        self.churned = 0
        self.created = []  # (visible from, CronJob) made by POSTs
        self.visible_created = 0
        self.load()

    def load(self):
        with self.lock:
            stamp = os.stat(self.path).st_mtime_ns
            if stamp != self.stamp:
                with open(self.path) as source:
                    config = json.load(source)
                self.stamp = stamp
                self.config = config
                self.base = synthetic_world(config.get("synthetic", {}))
                self.faults = [dict(fault) for fault in config.get("faults", [])]
                self.appear_on_post = list(config.get("appear_on_post", []))
                self.leases = {(metadata_field(item, "namespace"), metadata_field(item, "name")):
                               item for item in config.get("leases", [])}
                self.lease_version = 500000
                if config.get("compact"):
                    self.compacted = self.resource_version + 1
                    self.events = []
            elif self.visible_created == self.count_visible():
                return
            self.rebuild()

    def count_visible(self):
        now = time.time()
        return sum(1 for visible_from, _ in self.created if visible_from <= now)

    def rebuild(self):
        """The lists as served: the config's items, the synthetic ones, the visible created.
        What changed since the last lists becomes watch events."""
        self.generation += 1
        previous = self.items
        self.visible_created = self.count_visible()
        now = time.time()
        created = [item for visible_from, item in self.created if visible_from <= now]
        self.items = {}
        for kind, listed in (("cronjobs", self.config.get("cronjobs", []) + self.base[0] + created),
                             ("jobs", self.config.get("jobs", []) + self.base[1])):
            # Serialised once: a page is then a join of strings.
            self.items[kind] = [(item, json.dumps(item, separators=(",", ":")))
                                for item in sorted(listed, key=sort_key)]
        self.selections = {}
        if previous is not None:
            for kind in ("cronjobs", "jobs"):
                before = {sort_key(item): text for item, text in previous.get(kind, [])}
                after = {sort_key(item): (item, text) for item, text in self.items[kind]}
                for key, (item, text) in after.items():
                    if before.get(key) != text:
                        self.event(kind, "MODIFIED" if key in before else "ADDED", item)
                old_items = {sort_key(item): item for item, _ in previous.get(kind, [])}
                for key in before:
                    if key not in after:
                        self.event(kind, "DELETED", old_items[key])
        self.resource_version += 1
        self.changed.notify_all()

    def event(self, kind, type_, item):
        """Records a change (with the lock held) at the next resourceVersion."""
        self.resource_version += 1
        item = json.loads(json.dumps(item))
        if isinstance(item.get("metadata"), dict):
            item["metadata"]["resourceVersion"] = str(self.resource_version)
        self.events.append((self.resource_version, kind, type_, item))

    def churn(self):
        """The next Jobs change status: what a cluster's controllers do all day."""
        spec = self.config.get("churn")
        if not spec:
            return
        with self.lock:
            jobs = self.items["jobs"]
            for _ in range(min(len(jobs), int(spec.get("jobs", 1)))):
                index = self.churned % len(jobs)
                self.churned += 1
                item = json.loads(jobs[index][1])
                status = item.setdefault("status", {})
                status["ready"] = (status.get("ready") or 0) + 1
                jobs[index] = (item, json.dumps(item, separators=(",", ":")))
                self.event("jobs", "MODIFIED", item)
            self.selections = {}
            self.changed.notify_all()

    def exists(self, namespace, name):
        everything = (self.config.get("cronjobs", []) + self.base[0]
                      + [item for _, item in self.created])
        return any(metadata_field(item, "namespace") == namespace
                   and metadata_field(item, "name") == name for item in everything)

    def create(self, namespace, item):
        """Stores a POSTed CronJob as the API server would. Returns (status, body)."""
        with self.lock:
            name = metadata_field(item, "name")
            for other in self.appear_on_post:
                if (metadata_field(other, "namespace"), metadata_field(other, "name")) == (
                        namespace, name):
                    self.appear_on_post.remove(other)
                    self.created.append((0, other))
                    break
            if self.exists(namespace, name):
                return 409, status_body(409, "AlreadyExists",
                                        f'cronjobs.batch "{name}" already exists',
                                        {"details": {"name": name, "group": "batch",
                                                     "kind": "cronjobs"}})
            stored = json.loads(json.dumps(item))
            stored["metadata"].update(
                uid=f"created-{len(self.created)}-{namespace}-{name}",
                resourceVersion=str(990000 + len(self.created)),
                creationTimestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            stored["status"] = {}
            self.created.append((time.time() + self.config.get("visible_after", 0), stored))
            self.rebuild()
            return 201, stored

    def take_fault(self, method, path, has_continue, name=None):
        with self.lock:
            for fault in self.faults:
                if fault.get("method", "GET") != method:
                    continue
                if "name" in fault and fault["name"] != name:
                    continue
                if "path" in fault and fault["path"] != path:
                    continue
                if "continue" in fault and fault["continue"] != has_continue:
                    continue
                if fault.get("times", 1) <= 0:
                    continue
                if "times" in fault:
                    fault["times"] -= 1
                return fault
            return None


def metadata_field(item, name):
    metadata = item.get("metadata") if isinstance(item, dict) else None
    value = metadata.get(name) if isinstance(metadata, dict) else None
    return value


def sort_key(item):
    """The API server's order: by namespace, then name (malformed test items first)."""
    return (str(metadata_field(item, "namespace") or ""), str(metadata_field(item, "name") or ""))


def matches_selector(item, selector):
    if not selector:
        return True
    labels = metadata_field(item, "labels")
    labels = labels if isinstance(labels, dict) else {}
    if " in (" in selector:
        key, _, values = selector.partition(" in (")
        return key in labels and labels[key] in values.rstrip(")").split(",")
    for term in selector.split(","):
        key, _, value = term.partition("=")
        if key not in labels or ("=" in term and labels[key] != value):
            return False
    return True


def reply(code, body, headers=None):
    """fake_http's (status, headers, body) for a JSON document, or for text or bytes as given."""
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return code, dict(headers or {}), data.encode() if isinstance(data, str) else data


def not_allowed(message="the server does not allow this method"):
    return reply(405, status_body(405, "MethodNotAllowed", message))


def json_line(event, compact=False):
    return json.dumps(event, separators=(",", ":") if compact else None)


class Api:
    """The Kubernetes API's answers to fake_http's requests, each logged to `request_log` (a
    JSON line) first."""

    def __init__(self, world, request_log):
        self.world = world
        self.request_log = request_log
        self.log_lock = threading.Lock()

    def __call__(self, request):
        self.world.load()
        lease = request.path.startswith(LEASE_PREFIX)
        if request.method in ("PATCH", "DELETE") or (request.method == "PUT" and not lease):
            self.log(request, with_body=False)
            return not_allowed("this test server changes nothing")
        self.log(request, with_body=request.method != "GET")
        if request.method == "GET" and not request.path.startswith((API_PREFIX, LEASE_PREFIX)):
            return self.test_route(request)
        if not self.authenticated(request):
            return reply(401, status_body(401, "Unauthorized", "Unauthorized"))
        if request.method == "POST":
            return self.lease_request(request) if lease else self.create(request)
        fault = self.world.take_fault(request.method, request.path, "continue" in request.query)
        if fault and (out := self.act_out(fault, request)) is not False:
            return out
        if lease:
            return self.lease_request(request)
        parts = request.path[len(API_PREFIX):].split("/")
        if len(parts) == 1 and parts[0] in ("cronjobs", "jobs"):
            namespace, kind = None, parts[0]
        elif len(parts) == 3 and parts[0] == "namespaces" and parts[2] in ("cronjobs", "jobs"):
            namespace, kind = parts[1], parts[2]
        else:
            return reply(404, status_body(404, "NotFound", "the server could not find the "
                                          "requested resource"))
        if request.query.get("watch") in ("1", "true"):
            return 200, {}, self.watch(kind, namespace, request.query)
        return self.list(kind, namespace, request.query)

    def log(self, request, with_body):
        entry = {"time": time.time(), "method": request.method, "path": request.path,
                 "query": request.query, "authorization": request.headers.get("authorization", ""),
                 "client_cn": request.client_cn, "client_port": request.client_port,
                 "accept": request.headers.get("accept", "")}
        if with_body:
            entry.update(body=request.body.decode(errors="replace"),
                         content_type=request.headers.get("content-type", ""))
        with self.log_lock, open(self.request_log, "a") as log:
            log.write(json.dumps(entry) + "\n")

    def authenticated(self, request):
        config = self.world.config
        tokens = config.get("token")
        tokens = [tokens] if isinstance(tokens, str) else tokens
        return bool((tokens is None and "client_cn" not in config)
                    or (tokens and request.headers.get("authorization", "") in
                        [f"Bearer {t}" for t in tokens])
                    or ("client_cn" in config and request.client_cn == config["client_cn"]))

    @staticmethod
    def act_out(fault, request):
        """The answer the fault makes (None: the connection dropped); False when the fault
        leaves the request to go on."""
        time.sleep(fault.get("delay", 0))
        if fault.get("drop"):
            return None
        echoed = request.headers.get("authorization", "")
        if "raw" in fault:
            return reply(fault.get("status", 200), fault["raw"].replace("{authorization}", echoed),
                         fault.get("headers"))
        if "status" in fault:
            code = fault["status"]
            extra = {"metadata": {"continue": "bm90LXVzZWQ="}} if code == 410 else {}
            return reply(code, status_body(
                code, fault.get("reason", "InternalError"),
                fault.get("message", "an error on the server has prevented the request")
                .replace("{authorization}", echoed), extra), fault.get("headers"))
        return False

    def create(self, request):
        """POST of a CronJob, checked as the API server checks it."""
        parts = request.path[len(API_PREFIX):].split("/")
        if not (request.path.startswith(API_PREFIX) and len(parts) == 3
                and parts[0] == "namespaces" and parts[2] == "cronjobs"):
            return not_allowed()
        if not request.headers.get("content-type", "").startswith("application/json"):
            return reply(415, status_body(415, "UnsupportedMediaType", "the body of the "
                                          "request was in an unknown format"))
        namespace = parts[1]
        try:
            item = json.loads(request.body)
            if not isinstance(item, dict) or not isinstance(item.get("metadata"), dict):
                raise ValueError("no metadata")
        except ValueError as error:
            return reply(400, status_body(400, "BadRequest", str(error)))
        if item["metadata"].get("namespace", namespace) != namespace:
            return reply(400, status_body(
                400, "BadRequest", "the namespace of the provided object does not match the "
                "namespace sent on the request"))
        if (item.get("apiVersion"), item.get("kind")) != ("batch/v1", "CronJob") or not \
                item["metadata"].get("name") or not isinstance(item.get("spec"), dict):
            return reply(422, status_body(422, "Invalid", "CronJob is invalid"))
        item["metadata"]["namespace"] = namespace
        fault = self.world.take_fault("POST", request.path, False, item["metadata"]["name"])
        if fault and fault.get("commit"):
            self.world.create(namespace, item)
        if fault and (out := self.act_out(fault, request)) is not False:
            return out
        return reply(*self.world.create(namespace, item))

    def lease_request(self, request):
        """GET, POST and PUT of Leases, with the API server's resourceVersion checks."""
        world, method = self.world, request.method
        parts = request.path[len(LEASE_PREFIX):].split("/")
        if len(parts) not in (2, 3) or parts[1] != "leases":
            return reply(404, status_body(404, "NotFound", "no such resource"))
        namespace, name = parts[0], parts[2] if len(parts) == 3 else None
        if method == "GET" and name:
            with world.lock:
                lease = world.leases.get((namespace, name))
            time.sleep(world.config.get("lease_get_delay", 0))  # read, then answer late
            if lease is None:
                return reply(404, status_body(
                    404, "NotFound", f'leases.coordination.k8s.io "{name}" not found',
                    {"details": {"name": name, "group": "coordination.k8s.io",
                                 "kind": "leases"}}))
            return reply(200, lease)
        try:
            item = json.loads(request.body)
            metadata = item["metadata"]
            if not isinstance(metadata, dict):
                raise ValueError("no metadata")
        except (ValueError, KeyError, TypeError) as error:
            return reply(400, status_body(400, "BadRequest", str(error)))
        with world.lock:
            if method == "POST" and not name:
                key = (namespace, metadata.get("name"))
                if key in world.leases:
                    return reply(409, status_body(
                        409, "AlreadyExists",
                        f'leases.coordination.k8s.io "{key[1]}" already exists'))
            elif method == "PUT" and name and metadata.get("name") == name:
                key = (namespace, name)
                stored = world.leases.get(key)
                if stored is None:
                    return reply(404, status_body(404, "NotFound", "not found"))
                if metadata.get("resourceVersion") != stored["metadata"]["resourceVersion"]:
                    return reply(409, status_body(
                        409, "Conflict",
                        f'Operation cannot be fulfilled on leases.coordination.k8s.io "{name}": '
                        "the object has been modified; please apply your changes to the latest "
                        "version and try again"))
            else:
                return not_allowed()
            world.lease_version += 1
            metadata["namespace"] = namespace
            metadata["resourceVersion"] = str(world.lease_version)
            world.leases[key] = item
        return reply(201 if method == "POST" else 200, item)

    def list(self, kind, namespace, query):
        """A page of a list: limit, continue tokens of this generation of the world."""
        world = self.world
        selector = query.get("labelSelector")
        with world.lock:
            items = world.selections.get((kind, namespace, selector))
            if items is None:
                items = [entry for entry in world.items[kind] if (
                    namespace is None or metadata_field(entry[0], "namespace") == namespace)
                    and matches_selector(entry[0], selector)]
                world.selections[(kind, namespace, selector)] = items
        start = 0
        if "continue" in query:
            try:
                token = json.loads(base64.b64decode(query["continue"]))
                generation, start = token["generation"], token["start"]
            except (ValueError, KeyError, TypeError):
                return reply(400, status_body(400, "BadRequest", "invalid continue"))
            if generation != world.generation:
                return reply(410, status_body(
                    410, "Expired", "The provided continue parameter is too old to display a "
                    "consistent list result. You can start a new list without the continue "
                    "parameter.", {"metadata": {"continue": "bm90LXVzZWQ="}}))
        # "ignore_limit": one answer holds every item, as a server that does not paginate.
        limit = 0 if world.config.get("ignore_limit") else int(query.get("limit", "0") or 0)
        end = len(items) if limit <= 0 else min(len(items), start + limit)
        metadata = {"resourceVersion": str(world.resource_version)}
        if end < len(items):
            metadata["continue"] = base64.b64encode(json.dumps(
                {"generation": world.generation, "start": end}).encode()).decode()
            metadata["remainingItemCount"] = len(items) - end
        head = json.dumps({"kind": "CronJobList" if kind == "cronjobs" else "JobList",
                           "apiVersion": "batch/v1", "metadata": metadata})
        # Items are serialised once (World.rebuild): a page is a join of strings.
        return reply(200, head[:-1] + ',"items":[' + ",".join(
            entry[1] for entry in items[start:end]) + "]}")

    def watch(self, kind, namespace, query):
        """A watch's chunks: events after resourceVersion as JSON lines, bookmarks, an ERROR 410
        for a compacted resourceVersion, the end at timeoutSeconds (or watch_close_after). An
        empty chunk every 50 ms lets fake_http notice a client that left."""
        world = self.world
        selector = query.get("labelSelector")
        sent = int(query.get("resourceVersion") or 0)
        if sent < world.compacted:
            yield (json_line({"type": "ERROR", "object": status_body(
                410, "Expired", f"too old resource version: {sent} ({world.compacted})")})
                + "\n").encode()
            return
        config = world.config
        timeout = min(float(query.get("timeoutSeconds", "1800")),
                      float(config.get("watch_close_after", 1e9)))
        bookmark_every = float(config.get("bookmark_interval", 60))
        started = time.time()
        next_bookmark = started + bookmark_every
        bookmarks = query.get("allowWatchBookmarks") == "true"
        expired = False
        while time.time() < started + timeout and not expired:
            world.load()
            lines = []
            with world.lock:
                world.changed.wait(0.05)
                if sent < world.compacted:  # compacted while open: as etcd's 410
                    lines.append(json_line({"type": "ERROR", "object": status_body(
                        410, "Expired", f"too old resource version: {sent}")}))
                    expired = True
                elif not world.config.get("stall_watches"):
                    for version, event_kind, type_, item in world.events:
                        if (version > sent and event_kind == kind
                                and (namespace is None
                                     or metadata_field(item, "namespace") == namespace)
                                and matches_selector(item, selector)):
                            lines.append(json_line({"type": type_, "object": item}, True))
                    if world.events:
                        sent = max(sent, world.events[-1][0])
                    if bookmarks and time.time() >= next_bookmark:
                        sent = max(sent, world.resource_version)
                        lines.append(json_line({"type": "BOOKMARK", "object": {
                            "kind": "CronJob" if kind == "cronjobs" else "Job",
                            "apiVersion": "batch/v1",
                            "metadata": {"resourceVersion": str(sent)}}}))
                        next_bookmark = time.time() + bookmark_every
            yield ("\n".join(lines) + "\n").encode() if lines else b""

    def test_route(self, request):
        """The HTTP client tests' routes (no authentication)."""
        path, query = request.path, request.query
        if path == "/echo":
            return reply(200, {"headers": dict(request.raw_headers.items()),
                               "client_cn": request.client_cn})
        if path == "/bytes":
            return reply(200, b"x" * int(query.get("n", "0")))
        if path == "/slow":
            time.sleep(float(query.get("seconds", "1")))
            return reply(200, {"slow": True})
        if path == "/drip":
            return 200, {"content-type": "text/plain"}, drip(float(query.get("seconds", "5")))
        if path.startswith("/status/"):
            code = int(path.rsplit("/", 1)[1])
            return reply(code, status_body(code, "Test", f"status {code}"))
        return reply(404, status_body(404, "NotFound", "no such test route"))


def drip(seconds):
    """A byte every 50 ms for `seconds`."""
    until = time.time() + seconds
    while time.time() < until:
        yield b"x"
        time.sleep(0.05)


def serve(args):
    tls = {} if args.plain else dict(zip(("tls_cert", "tls_key", "client_ca"), (
        os.path.join(args.tls_dir, name) for name in ("server.crt", "server.key", "ca.crt"))))
    world = World(args.config)
    server = fake_http.serve(Api(world, args.request_log or os.devnull), host=args.host, **tls)
    temporary = args.port_file + ".tmp"
    with open(temporary, "w") as out:
        out.write(f"{server.server_address[1]}\n")
    os.rename(temporary, args.port_file)

    def churn():
        while True:
            spec = world.config.get("churn") or {}
            time.sleep(float(spec.get("interval", 0.5)))
            world.churn()

    threading.Thread(target=churn, daemon=True).start()
    parent, started = os.getppid(), time.time()
    while os.getppid() == parent and time.time() - started < args.max_lifetime:
        time.sleep(0.2)
    os._exit(0)


def main():
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    pki = commands.add_parser("pki")
    pki.add_argument("directory")
    run = commands.add_parser("serve")
    run.add_argument("--config", required=True)
    run.add_argument("--port-file", required=True)
    run.add_argument("--tls-dir")
    run.add_argument("--plain", action="store_true")
    run.add_argument("--host", default="127.0.0.1")
    run.add_argument("--request-log")
    run.add_argument("--max-lifetime", type=float, default=900)
    args = parser.parse_args()
    if args.command == "pki":
        make_pki(args.directory)
    else:
        if not args.plain and not args.tls_dir:
            parser.error("serve needs --tls-dir or --plain")
        serve(args)


if __name__ == "__main__":
    sys.exit(main())
