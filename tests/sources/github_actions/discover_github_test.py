#!/usr/bin/python3
"""`schedwatch_exporter discover --type github_actions` against a loopback GitHub API over TLS
(fake_github.py), with marked, unmarked, disabled, deleted and unscheduled workflows:

- one job per `on.schedule` entry of each workflow, named after its file, with its `workflow:`
  key; a file's `# schedwatch: spec_version=N` gives the version and asks for no marker;
- a disabled workflow is a comment, a deleted one and one without a schedule are left out;
- max_runtime from the longest successful run;
- the marker line for each unmarked workflow file; the token never shows;
- `check` accepts the draft, and discover on it adds nothing (the spec's workflow paths name the
  roles).
Prints 'N passed, N failed'.
"""
import os
import sys
import time

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "harness"))
from fake_github import FakeGitHub, Repo, make_run, make_server  # noqa: E402
from fake_http import make_pki  # noqa: E402
from schedwatch_test import (check, check_draft_settles, read_text,  # noqa: E402
                             run_in_temporary_directory, run_tool)

TOKEN = "ghp_discoverTOKEN0123456789"


def main():
    return run_in_temporary_directory("schedwatch-discover-github-", in_workdir, "--exporter")


def in_workdir(args, work):
    exporter = args.exporter
    now = int(time.time())
    state = FakeGitHub(workflows_per_page=2)
    widgets = state.add_repo(Repo("acme/widgets", 5001, token=TOKEN))
    nightly = widgets.add_workflow(61234567, ".github/workflows/nightly.yml",
                                   crons=["0 3 * * *"], spec_version="2")
    widgets.runs[nightly["id"]] = [
        make_run(widgets, nightly, 3, now - 3 * 86400, duration=300),
        make_run(widgets, nightly, 2, now - 2 * 86400, duration=1500, conclusion="failure"),
        make_run(widgets, nightly, 1, now - 86400, duration=610)]
    widgets.add_workflow(61234999, ".github/workflows/report.yaml",
                         crons=["0 6 * * 1-5", "30 18 * * 5"])
    widgets.add_workflow(61235000, ".github/workflows/stale.yml",
                         state="disabled_inactivity", crons=["0 4 * * 0"])
    widgets.add_workflow(61235001, ".github/workflows/old.yml", state="deleted", file=False)
    widgets.add_workflow(61235002, ".github/workflows/ci.yml", crons=[])
    ca, cert, key = make_pki(work)
    server = make_server(state, cert, key)
    try:
        token_file = os.path.join(work, "token")
        with open(token_file, "w") as out:
            out.write(TOKEN + "\n")
        draft_path = os.path.join(work, "draft.yaml")
        api = f"https://127.0.0.1:{server.server_address[1]}"
        code, _, err = run_tool(exporter, "discover", "--type", "github_actions",
                                "--source", "ci", "--repository", "acme/widgets",
                                "--api-url", api, "--ca-file", ca, "--token-file",
                                token_file, "--output", draft_path)
        check("discover --type github_actions exits 0", code == 0, err)
        draft = read_text(draft_path)
        jobs = (yaml.safe_load(draft) or {}).get("jobs") or []
        by_role = {j["role"]: j for j in jobs}
        check("one job per schedule entry, named after the file",
              [j["role"] for j in jobs] == ["nightly", "report", "report-2"], draft)
        check("each with its workflow: key",
              by_role.get("report-2", {}).get("workflow") == ".github/workflows/report.yaml"
              and by_role.get("report-2", {}).get("schedule") == "30 18 * * 5", draft)
        check("the file's marker gives the version",
              by_role.get("nightly", {}).get("spec_version") == "2", draft)
        check("max_runtime from the longest successful run (610s: 21m)",
              by_role.get("nightly", {}).get("max_runtime") == "21m", draft)
        check("a disabled workflow is a comment",
              "# not a job (ci): .github/workflows/stale.yml:4: workflow disabled_inactivity"
              in draft, draft)
        check("deleted and unscheduled workflows are left out",
              "old.yml" not in draft and "ci.yml" not in draft, draft)
        check("the marker line for the unmarked file, once per entry",
              err.count(".github/workflows/report.yaml: add a comment line (and commit it)\n"
                        "  # schedwatch: spec_version=1\n") == 2, err)
        check("no marker asked for the marked file", "nightly.yml: add" not in err, err)
        check("the token never shows", TOKEN not in draft and TOKEN not in err)
        check_draft_settles(exporter, draft_path, draft)
    finally:
        server.shutdown()


if __name__ == "__main__":
    sys.exit(main())
