#!/usr/bin/python3
"""A loopback stand-in for the parts of the GitHub REST API the github_actions source reads.

Serves repositories, paginated workflow lists (Link headers with /repositories/{id}/... URLs, as
GitHub writes them), the contents API (directory listings with blob shas, raw or base64 files),
and scheduled workflow runs (per workflow and the repository's, newest first, at most 1,000 for a
filtered query, as GitHub), with ETag / If-None-Match (304 costs no quota), x-ratelimit-*
headers, and per-repository failure modes (primary rate limit, 401, 404). Every request is
logged so tests can count them.

Imported by github_e2e_test.py; run directly it serves a generated repository for the bench:
  fake_github.py --workflows 1000 --runs 50 --port-file F [--lifetime 600]
"""
import argparse
import base64
import datetime
import hashlib
import json
import os
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "harness"))
import fake_http  # noqa: E402


def rfc3339(seconds):
    return datetime.datetime.fromtimestamp(int(seconds), datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def make_run(repo, workflow, number, created, status="completed", conclusion="success",
             duration=120, started=None):
    """A run object with the fields GitHub sends (trimmed of URLs nobody reads)."""
    started = created if started is None else started
    updated = started + duration if status == "completed" else started + 5
    owner = repo.full_name.split("/")[0]
    return {
        "id": workflow["id"] * 100000 + number, "name": workflow["name"],
        "node_id": f"WFR_kwLO{workflow['id']}{number}", "head_branch": repo.default_branch,
        "head_sha": hashlib.sha1(f"{workflow['id']}-{number}".encode()).hexdigest(),
        "path": workflow["path"], "display_title": workflow["name"], "run_number": number,
        "event": "schedule", "status": status,
        "conclusion": conclusion if status == "completed" else None,
        "workflow_id": workflow["id"], "check_suite_id": 20000000000 + number,
        "url": f"https://api.github.com/repos/{repo.full_name}/actions/runs/{number}",
        "html_url": f"https://github.com/{repo.full_name}/actions/runs/{number}",
        "pull_requests": [], "created_at": rfc3339(created), "updated_at": rfc3339(updated),
        "run_attempt": 1, "run_started_at": rfc3339(started),
        "actor": {"login": "ops-admin", "id": 1234, "type": "User", "site_admin": False},
        "triggering_actor": {"login": "ops-admin", "id": 1234, "type": "User",
                             "site_admin": False},
        "repository": {"id": repo.repo_id, "name": repo.full_name.split("/")[1],
                       "full_name": repo.full_name, "private": False,
                       "owner": {"login": owner, "id": 4321, "type": "Organization"},
                       "html_url": f"https://github.com/{repo.full_name}", "fork": False},
    }


def workflow_file(crons, spec_version=None, name="job"):
    lines = []
    if spec_version is not None:
        lines.append(f"# schedwatch: spec_version={spec_version}")
    lines += [f"name: {name}", "on:"]
    if crons:
        lines.append("  schedule:")
        for cron in crons:
            if isinstance(cron, tuple):
                lines += [f'    - cron: "{cron[0]}"', f"      timezone: {cron[1]}"]
            else:
                lines.append(f'    - cron: "{cron}"')
    lines += ["  workflow_dispatch: {}", "jobs:", "  run:", "    runs-on: ubuntu-latest",
              "    steps:", "      - run: \"echo '# schedwatch: spec_version=999 is not a marker'\""]
    return "\n".join(lines) + "\n"


class Repo:
    def __init__(self, full_name, repo_id, default_branch="main", token=None, mode="ok",
                 workflows_per_page=None, rate_limit=None):
        self.full_name = full_name
        self.workflows_per_page = workflows_per_page  # None: the server's
        self.rate_limit = rate_limit  # x-ratelimit-limit of its answers; None: the server's quota
        self.repo_id = repo_id
        self.default_branch = default_branch
        self.token = token      # required bearer token; None: any or none
        # ok | rate_limited | not_found | echo_token (401 quoting it) | runs_error (the runs 500)
        self.mode = mode
        self.workflows = []     # GitHub workflow objects
        self.files = {}         # path -> text
        self.runs = {}          # workflow id -> runs, newest first

    def add_workflow(self, workflow_id, path, state="active", crons=None, spec_version=None,
                     file=True):
        workflow = {
            "id": workflow_id, "node_id": f"W_kwDO{workflow_id}",
            "name": os.path.basename(path).split(".")[0], "path": path, "state": state,
            "created_at": "2023-06-01T10:00:00.000Z", "updated_at": "2024-04-02T08:12:44.000Z",
            "url": f"https://api.github.com/repos/{self.full_name}/actions/workflows/{workflow_id}",
            "html_url": f"https://github.com/{self.full_name}/blob/main/{path}",
            "badge_url": f"https://github.com/{self.full_name}/workflows/x/badge.svg"}
        self.workflows.append(workflow)
        if file:
            self.files[path] = workflow_file(crons or [], spec_version, workflow["name"])
        self.runs[workflow_id] = []
        return workflow


class FakeGitHub:
    def __init__(self, workflows_per_page=100, quota=5000):
        self.workflows_per_page = workflows_per_page  # GitHub's cap is 100; tests force pages
        self.quota = quota
        self.repos = {}
        self.lock = threading.Lock()
        self.log = fake_http.RequestLog()  # dicts: repo, path, query, status, conditional, headers
        self.remaining = quota

    def add_repo(self, repo):
        self.repos[repo.full_name] = repo
        return repo

    def requests(self, repo, path_suffix=None):
        return self.log.select(repo=repo, path=lambda p: p.endswith(path_suffix or ""))

    # ---- request handling ---------------------------------------------------------------------

    def handle(self, path, query, headers, base_url):
        parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
        repo = None
        if len(parts) >= 3 and parts[0] == "repos":
            repo = self.repos.get(f"{parts[1]}/{parts[2]}")
            rest = parts[3:]
        elif len(parts) >= 2 and parts[0] == "repositories":
            repo = next((r for r in self.repos.values() if str(r.repo_id) == parts[1]), None)
            rest = parts[2:]
        name = repo.full_name if repo else "/".join(parts[1:3])
        status, extra, body = self.route(repo, rest if repo else [], query, headers, base_url)
        limit = repo.rate_limit if repo and repo.rate_limit else self.quota
        reply_headers = {"x-ratelimit-limit": str(limit), "x-ratelimit-resource": "core",
                         "x-ratelimit-reset": str(int(time.time()) + 3600)}
        if status == 200:
            etag = 'W/"' + hashlib.sha1(body).hexdigest() + '"'
            reply_headers["etag"] = etag
            if headers.get("if-none-match") == etag:
                status, body = 304, b""
        with self.lock:
            if status != 304 and "x-ratelimit-remaining" not in extra:
                self.remaining -= 1
            reply_headers["x-ratelimit-remaining"] = str(max(self.remaining, 0))
            reply_headers["x-ratelimit-used"] = str(self.quota - max(self.remaining, 0))
            reply_headers.update(extra)
            reply_headers.setdefault("content-type", "application/json; charset=utf-8")
        self.log.add({"repo": name, "path": path, "query": query, "status": status,
                      "conditional": "if-none-match" in headers, "headers": headers})
        return status, reply_headers, body

    def route(self, repo, rest, query, headers, base_url):
        def error(status, message, extra=None):
            return status, extra or {}, json.dumps(
                {"message": message,
                 "documentation_url": "https://docs.github.com/rest"}).encode()

        if repo is None or repo.mode == "not_found":
            return error(404, "Not Found")
        if repo.mode == "echo_token":  # a long message ending in the Authorization header
            return error(401, "x" * 183 + " Bearer " + headers.get("authorization", "")[7:])
        if repo.token is not None and headers.get("authorization") != f"Bearer {repo.token}":
            return error(401, "Bad credentials")
        if repo.mode == "rate_limited":
            return error(403, "API rate limit exceeded for user ID 1234.",
                         {"x-ratelimit-remaining": "0",
                          "x-ratelimit-reset": str(int(time.time()) + 3600)})
        if headers.get("x-github-api-version") != "2022-11-28" or not headers.get("user-agent"):
            return error(400, "missing X-GitHub-Api-Version or User-Agent")
        if repo.mode == "runs_error" and rest[-1:] == ["runs"]:
            return error(500, "Server Error")
        if not rest:
            return 200, {}, json.dumps({"id": repo.repo_id, "full_name": repo.full_name,
                                        "default_branch": repo.default_branch,
                                        "private": False}).encode()
        if rest[:2] == ["actions", "workflows"] and len(rest) == 2:
            return self.page(repo, "workflows", repo.workflows, query, base_url,
                             f"/repositories/{repo.repo_id}/actions/workflows")
        if rest[:2] == ["actions", "workflows"] and len(rest) == 4 and rest[3] == "runs":
            workflow = next((w for w in repo.workflows if str(w["id"]) == rest[2]), None)
            if workflow is None:
                return error(404, "Not Found")
            runs = [r for r in repo.runs[workflow["id"]]
                    if query.get("event", r.get("event")) == r.get("event")]
            if "status" in query:
                runs = [r for r in runs if query["status"] in (r.get("status"),
                                                               r.get("conclusion"))]
            return self.page(repo, "workflow_runs", runs, query, base_url,
                             f"/repositories/{repo.repo_id}/actions/workflows/"
                             f"{workflow['id']}/runs")
        if rest == ["actions", "runs"]:
            # The repository's runs, newest first; with a filter GitHub lists 1,000 at most.
            runs = [r for workflow_runs in repo.runs.values() for r in workflow_runs
                    if query.get("event", r.get("event")) == r.get("event")]
            if "status" in query:
                runs = [r for r in runs if query["status"] in (r.get("status"),
                                                               r.get("conclusion"))]
            runs.sort(key=lambda r: (str(r.get("created_at", "")), r.get("id", 0)), reverse=True)
            if "event" in query or "status" in query:
                runs = runs[:1000]
            return self.page(repo, "workflow_runs", runs, query, base_url,
                             f"/repositories/{repo.repo_id}/actions/runs")
        if rest and rest[0] == "contents":
            return self.contents(repo, "/".join(rest[1:]), query, headers)
        return error(404, "Not Found")

    def page(self, repo, key, items, query, base_url, link_path):
        per_page = min(int(query.get("per_page", 30)),
                       (repo.workflows_per_page or self.workflows_per_page)
                       if key == "workflows" else 100)
        page = int(query.get("page", 1))
        chunk, last = fake_http.page(items, page, per_page)
        links = []

        def link(number, rel):
            return fake_http.link(base_url, link_path, query, number, per_page, rel)
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(1, "first"), link(page - 1, "prev")]
        extra = {"link": ", ".join(links)} if links else {}
        return 200, extra, json.dumps({"total_count": len(items), key: chunk}).encode()

    def contents(self, repo, path, query, headers):
        if query.get("ref", repo.default_branch) != repo.default_branch:
            return 404, {}, json.dumps({"message": f"No commit found for the ref {query['ref']}"}
                                       ).encode()
        if path in repo.files:
            text = repo.files[path].encode()
            if "raw" in headers.get("accept", ""):
                return 200, {"content-type": "application/vnd.github.raw+json"}, text
            return 200, {}, json.dumps({
                "type": "file", "encoding": "base64", "path": path, "size": len(text),
                "name": os.path.basename(path), "sha": blob_sha(text),
                "content": base64.encodebytes(text).decode()}).encode()
        prefix = path.rstrip("/") + "/"
        entries = [{"name": p[len(prefix):], "path": p, "sha": blob_sha(t.encode()),
                    "size": len(t), "type": "file"}
                   for p, t in sorted(repo.files.items())
                   if p.startswith(prefix) and "/" not in p[len(prefix):]]
        if not entries:
            return 404, {}, json.dumps({"message": "Not Found"}).encode()
        return 200, {}, json.dumps(entries[:1000]).encode()


def blob_sha(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def make_server(state, tls_cert=None, tls_key=None):
    """A threading server on 127.0.0.1 and a free port, serving `state`."""
    return fake_http.serve(lambda request: state.handle(request.path, request.query,
                                                        request.headers, request.base),
                           tls_cert, tls_key)


def bench_repo(workflows, runs, now):
    """`workflows` daily workflows with `runs` scheduled runs each (the newest in progress)."""
    repo = Repo("bench/big", 900000)
    for i in range(workflows):
        minute, hour = i % 60, (i // 60) % 24
        workflow = repo.add_workflow(70000000 + i, f".github/workflows/job-{i:04d}.yml",
                                     crons=[f"{minute} {hour} * * *"], spec_version="1")
        fire = now - (now % 86400) + hour * 3600 + minute * 60
        if fire > now:
            fire -= 86400
        repo.runs[workflow["id"]] = [
            make_run(repo, workflow, runs - n, fire - n * 86400,
                     conclusion="failure" if n % 7 == 3 else "success")
            for n in range(runs)]
    return repo


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workflows", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--lifetime", type=float, default=600, help="stop after this many s")
    args = parser.parse_args()
    state = FakeGitHub(quota=10**9)
    state.add_repo(bench_repo(args.workflows, args.runs, int(time.time())))
    server = make_server(state)
    with open(args.port_file + ".tmp", "w") as out:
        out.write(str(server.server_address[1]))
    os.rename(args.port_file + ".tmp", args.port_file)
    deadline = time.time() + args.lifetime
    while time.time() < deadline and os.getppid() != 1:
        time.sleep(0.2)
    server.shutdown()


if __name__ == "__main__":
    sys.exit(main())
