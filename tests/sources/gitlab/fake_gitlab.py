#!/usr/bin/python3
"""A loopback stand-in for the parts of GitLab's REST API v4 the gitlab source reads and writes.

Serves projects by numeric ID or URL-encoded path, their pipeline schedules (paginated with
x-next-page / x-page / x-total headers, or with Link headers, per project), each schedule's
pipelines (newest first with sort=desc), GET .../pipeline_schedules/:id with its variables,
POST /projects/:id/pipeline_schedules and .../variables, and PUT .../pipeline_schedules/:id
(form-encoded, as GitLab takes them). Writes named in a project's `failing` answer 500, as an
interrupted reconcile would leave things: "schedule" once it is created, "variables" for a
schedule's second variable (the first is added), "activate" before the PUT. Answers are shaped like GitLab's documented
ones, errors too: 401 {"message":"401 Unauthorized"}, 403 insufficient_scope, 404 {"message":
"404 Project Not Found"}, 429 "Retry later" with Retry-After and RateLimit-* headers, 500.
Per-project failure modes and a delay for slow answers. Every request is logged.
"""
import datetime
import json
import os
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "harness"))
import fake_http  # noqa: E402


def rfc3339(seconds):
    return datetime.datetime.fromtimestamp(int(seconds), datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.000Z")


def owner(username="ops-admin", state="active", user_id=1):
    return {"name": username.title(), "username": username, "id": user_id, "state": state,
            "avatar_url": None, "web_url": f"https://gitlab.example.com/{username}"}


def pipeline(pipeline_id, created, status="success", duration=300, ref="main"):
    final = status in ("success", "failed", "canceled", "skipped")
    return {"id": pipeline_id, "iid": pipeline_id % 1000, "project_id": 278964,
            "sha": "%040x" % pipeline_id, "ref": ref, "status": status, "source": "schedule",
            "created_at": rfc3339(created),
            "updated_at": rfc3339(created + (duration if final else 5)),
            "web_url": f"https://gitlab.example.com/acme/widgets/-/pipelines/{pipeline_id}"}


class Project:
    def __init__(self, project_id, path, token=None, mode="ok", paging="x-next-page",
                 per_page=None, delay=0.0, echo_token=False):
        self.project_id = project_id
        self.path = path
        self.token = token
        # ok | forbidden | not_found | rate_limited_once | error | pipelines_error (the schedules
        # answer, their pipelines 500)
        self.mode = mode
        self.paging = paging      # x-next-page | link
        self.per_page = per_page  # the most a page holds, whatever was asked
        self.delay = delay        # seconds before each answer
        self.echo_token = echo_token  # a 401 quotes the token sent, split and upper-cased
        self.schedules = []
        self.pipelines = {}       # schedule id -> newest first
        self.variables = {}       # schedule id -> list
        self.limited = 0
        self.next_id = 1000
        self.failing = set()      # "schedule", "variables", "activate": see the module's doc

    def add_schedule(self, schedule_id, description, cron, cron_timezone="UTC", ref="main",
                     active=True, schedule_owner=None):
        item = {"id": schedule_id, "description": description, "ref": ref, "cron": cron,
                "cron_timezone": cron_timezone, "next_run_at": rfc3339(time.time() + 3600),
                "active": active, "created_at": rfc3339(time.time() - 86400 * 30),
                "updated_at": rfc3339(time.time() - 86400),
                "owner": owner() if schedule_owner is None else schedule_owner}
        self.schedules.append(item)
        self.pipelines.setdefault(schedule_id, [])
        return item


class FakeGitLab:
    def __init__(self):
        self.projects = {}
        self.log = fake_http.RequestLog()

    def add(self, project):
        self.projects[str(project.project_id)] = project
        self.projects[project.path] = project
        return project

    def requests(self, project_path, suffix=""):
        return self.log.select(project=project_path, path=lambda p: p.endswith(suffix))

    def handle(self, method, path, query, headers, body, base):
        prefix = "/api/v4/projects/"
        entry = {"method": method, "path": path, "query": query, "project": None,
                 "authorization": headers.get("authorization", ""),
                 "private_token": headers.get("private-token", ""), "status": 0}
        status, reply_headers, reply = self.route(method, path, query, headers, body, base,
                                                  prefix, entry)
        entry["status"] = status
        self.log.add(entry)
        return status, reply_headers, reply

    def route(self, method, path, query, headers, body, base, prefix, entry):
        def error(status, payload, extra=None):
            return status, dict(extra or {}), json.dumps(payload).encode()

        if not path.startswith(prefix):
            return error(404, {"error": "404 Not Found"})
        rest = path[len(prefix):]
        ident, _, tail = rest.partition("/")
        project = self.projects.get(urllib.parse.unquote(ident))
        if project is None:
            return error(404, {"message": "404 Project Not Found"})
        entry["project"] = project.path
        if project.delay:
            time.sleep(project.delay)
        token = headers.get("private-token") or headers.get("authorization", "").removeprefix(
            "Bearer ")
        if project.token is not None and token != project.token:
            if project.echo_token:  # as a careless proxy might
                return error(401, {"message": f"401 Unauthorized: {token[:12]}...{token[12:]}"
                                              f"{token[12:]} {token.upper()} {token[3:14]}"})
            return error(401, {"message": "401 Unauthorized"})
        if project.mode == "forbidden":
            return error(403, {"error": "insufficient_scope",
                               "error_description": "The request requires higher privileges "
                               "than provided by the access token.",
                               "scope": "api read_api"})
        if project.mode == "not_found":
            return error(404, {"message": "404 Project Not Found"})
        if project.mode == "error":
            return error(500, {"message": "500 Internal Server Error"})
        if project.mode == "rate_limited_once" and project.limited == 0:
            project.limited += 1
            reset = int(time.time()) + 1
            return 429, {"retry-after": "1", "ratelimit-limit": "600",
                         "ratelimit-remaining": "0", "ratelimit-reset": str(reset),
                         "ratelimit-resettime": rfc3339(reset),
                         "content-type": "text/plain"}, b"Retry later\n"
        quota = {"ratelimit-limit": "2000", "ratelimit-remaining": "1990",
                 "ratelimit-reset": str(int(time.time()) + 60)}
        parts = tail.split("/")
        if parts == ["pipeline_schedules"] and method == "GET":
            return self.page(project, project.schedules, query, base, path, quota)
        if parts == ["pipeline_schedules"] and method == "POST":
            form = dict(urllib.parse.parse_qsl(body.decode()))
            missing = [k for k in ("description", "ref", "cron") if not form.get(k)]
            if missing:
                return error(400, {"error": f"{missing[0]} is missing"})
            project.next_id += 1
            item = project.add_schedule(project.next_id, form["description"], form["cron"],
                                        form.get("cron_timezone", "UTC"), form["ref"],
                                        form.get("active", "true") == "true")
            entry["created"] = item["id"]
            if "schedule" in project.failing:
                return error(500, {"message": "500 Internal Server Error"})
            return 201, quota, json.dumps(item).encode()
        if len(parts) == 2 and parts[0] == "pipeline_schedules" and method == "GET":
            item = next((s for s in project.schedules if str(s["id"]) == parts[1]), None)
            if item is None:
                return error(404, {"message": "404 Pipeline Schedule Not Found"})
            return 200, quota, json.dumps(
                {**item, "variables": project.variables.get(item["id"], [])}).encode()
        if len(parts) == 2 and parts[0] == "pipeline_schedules" and method == "PUT":
            form = dict(urllib.parse.parse_qsl(body.decode()))
            item = next((s for s in project.schedules if str(s["id"]) == parts[1]), None)
            if item is None:
                return error(404, {"message": "404 Pipeline Schedule Not Found"})
            if "activate" in project.failing:
                return error(500, {"message": "500 Internal Server Error"})
            for key in ("description", "ref", "cron", "cron_timezone"):
                if key in form:
                    item[key] = form[key]
            if "active" in form:
                item["active"] = form["active"] == "true"
            entry["edited"] = item["id"]
            return 200, quota, json.dumps(item).encode()
        if len(parts) == 3 and parts[0] == "pipeline_schedules" and parts[2] == "variables" and \
                method == "POST":
            form = dict(urllib.parse.parse_qsl(body.decode()))
            schedule_id = int(parts[1])
            if schedule_id not in project.pipelines:
                return error(404, {"message": "404 Pipeline Schedule Not Found"})
            if "variables" in project.failing and project.variables.get(schedule_id):
                return error(500, {"message": "500 Internal Server Error"})
            variable = {"key": form.get("key"), "value": form.get("value"),
                        "variable_type": form.get("variable_type", "env_var")}
            project.variables.setdefault(schedule_id, []).append(variable)
            return 201, quota, json.dumps(variable).encode()
        if len(parts) == 3 and parts[0] == "pipeline_schedules" and parts[2] == "pipelines":
            if project.mode == "pipelines_error":
                return error(500, {"message": "500 Internal Server Error"})
            schedule_id = int(parts[1])
            if schedule_id not in project.pipelines or not any(
                    s["id"] == schedule_id for s in project.schedules):
                return error(404, {"message": "404 Pipeline Schedule Not Found"})
            items = project.pipelines[schedule_id]
            if query.get("sort") != "desc":
                items = list(reversed(items))
            return self.page(project, items, query, base, path, quota)
        return error(404, {"error": "404 Not Found"})

    def page(self, project, items, query, base, path, quota):
        per_page = min(int(query.get("per_page", 20)), 100)
        if project.per_page:
            per_page = min(per_page, project.per_page)
        number = max(int(query.get("page", 1)), 1)
        chunk, total_pages = fake_http.page(items, number, per_page)
        headers = dict(quota)
        headers.update({"x-page": str(number), "x-per-page": str(per_page),
                        "x-total": str(len(items)), "x-total-pages": str(total_pages),
                        "x-prev-page": str(number - 1) if number > 1 else "",
                        "x-next-page": str(number + 1) if number < total_pages else ""})
        if project.paging == "link":
            del headers["x-next-page"]

            def link(page, rel):
                return fake_http.link(base, path, query, page, per_page, rel)
            links = [link(1, "first"), link(total_pages, "last")]
            if number < total_pages:
                links.insert(0, link(number + 1, "next"))
            headers["link"] = ", ".join(links)
        return 200, headers, json.dumps(chunk).encode()


def make_server(state, tls_cert=None, tls_key=None):
    """A threading server on 127.0.0.1 and a free port, serving `state`."""
    return fake_http.serve(lambda r: state.handle(r.method, r.path, r.query, r.headers, r.body,
                                                  r.base), tls_cert, tls_key)
