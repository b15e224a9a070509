#!/usr/bin/python3
"""`schedwatch_exporter discover` end to end on the crontabs Debian 12's packages install
(tests/sources/crontab/fixtures/debian), read as cron reads them under a root of their own:

- the draft from `discover --type crontab` is a spec `check` accepts, with one job per entry
  cron would run and role names a person can read;
- `discover --config.file draft` adds nothing to it (run twice: the same bytes);
- `--write-markers` adds exactly one marker line above each entry, with a backup beside each
  file; discover then finds every object marked;
- the exporter serving the draft reports every role `ok`.

cron accepts system crontabs owned by root only: run as another user, the files are not cron's,
and the draft must say so for each file instead of listing jobs.
Prints 'N passed, N failed'.
"""
import argparse
import os
import re
import shutil
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "harness"))
from schedwatch_test import (Exporter, check, finish, read_text, run_tool,  # noqa: E402
                             temporary_directory)

FIXTURES = os.path.join(HERE, "fixtures", "debian")
ROLES = ["cron-hourly", "cron-daily", "cron-weekly", "cron-monthly", "anacron",
         "e2scrub_all_cron", "e2scrub_all", "php-sessionclean", "popularity-contest",
         "sysstat-debian-sa1", "sysstat-debian-sa1-2"]
FILES = ["/etc/crontab", "/etc/cron.d/anacron", "/etc/cron.d/e2scrub_all", "/etc/cron.d/php",
         "/etc/cron.d/popularity-contest", "/etc/cron.d/sysstat"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    exporter = parser.parse_args().exporter
    with temporary_directory("schedwatch-discover-") as work:
        root = os.path.join(work, "root")
        shutil.copytree(os.path.join(FIXTURES, "etc"), os.path.join(root, "etc"))
        for directory, _, names in os.walk(os.path.join(root, "etc")):
            for name in names:
                os.chmod(os.path.join(directory, name), 0o644)
        os.makedirs(os.path.join(root, "var", "log"))
        open(os.path.join(root, "var", "log", "syslog"), "w").close()
        draft_path = os.path.join(work, "draft.yaml")

        code, _, err = run_tool(exporter, "discover", "--type", "crontab", "--source", "host",
                                "--root", root, "--output", draft_path)
        check("discover --type crontab exits 0", code == 0, err)
        draft = read_text(draft_path)
        code, _, err = run_tool(exporter, "check", "--config.file", draft_path)
        check("check accepts the draft", code == 0, err + draft)
        code, out, err = run_tool(exporter, "discover", "--config.file", draft_path)
        check("discover on its own draft adds nothing", code == 0 and out == draft, err)
        check("and says so", "nothing to add" in err, err)
        jobs = (yaml.safe_load(draft) or {}).get("jobs") or []

        if os.geteuid() != 0:
            check("not root: no jobs, since cron would run none of these files", jobs == [], draft)
            for path in FILES:
                check(f"not root: {path} is listed as not run",
                      re.search(rf"# not a job \(host\): {re.escape(path)}: cron does not run "
                                r"this file: WRONG FILE OWNER", draft) is not None, draft)
            finish()

        check("one job per entry, with readable roles", [j["role"] for j in jobs] == ROLES,
              [j["role"] for j in jobs])
        check("each job has its entry's schedule",
              {j["role"]: j["schedule"] for j in jobs}.get("sysstat-debian-sa1") ==
              "5-55/10 * * * *", draft)
        before = {path: read_text(root + path) for path in FILES}
        code, out, err = run_tool(exporter, "discover", "--config.file", draft_path,
                                  "--write-markers")
        check("--write-markers exits 0", code == 0 and out == draft, err)
        for path in FILES:
            after = read_text(root + path)
            added = [line for line in after.splitlines() if line not in before[path].splitlines()]
            kept = [line for line in after.splitlines() if not line.startswith("# schedwatch:")]
            check(f"{path}: only marker lines were added",
                  kept == before[path].splitlines() and added and
                  all(re.fullmatch(r"# schedwatch: role=[a-z0-9_-]+ spec_version=1", line)
                      for line in added), after)
            backup = os.path.join(os.path.dirname(root + path),
                                  "." + os.path.basename(path) + ".schedwatch-bak")
            check(f"{path}: backed up beside it", read_text(backup) == before[path])
        code, out, err = run_tool(exporter, "discover", "--config.file", draft_path)
        check("then every object has its marker", "markers: every object has one" in err, err)

        serving = Exporter(exporter, draft_path, work, wait="ready")
        try:
            status, ok = serving.wait_status(lambda s: True, what="a complete refresh")
            text = serving.metrics()
            conditions = dict(re.findall(
                r'schedwatch_job_condition\{role="([^"]+)",source="host",condition="([a-z_]+)"\} 1',
                text))
            check("the exporter reports every role ok",
                  conditions == {role: "ok" for role in ROLES}, conditions)
        finally:
            serving.stop()
    finish()


if __name__ == "__main__":
    main()
