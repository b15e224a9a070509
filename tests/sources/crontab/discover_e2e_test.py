#!/usr/bin/python3
"""`schedwatch_exporter discover` end to end on the crontabs Debian 12's packages install
(tests/sources/crontab/fixtures/debian), read as cron reads them under a root of their own:

- the draft from `discover --type crontab` is a spec `check` accepts, with one job per entry
  cron would run and role names a person can read;
- `discover --config.file draft` adds nothing to it (run twice: the same bytes);
- `--write-markers` adds exactly one marker line above each entry, with a backup beside each
  file; discover then finds every object marked;
- the exporter serving the draft reports every role `ok`;
- where cron logs, as the flags do not say: the syslog file when it exists, else the journal when
  cron's lines are there (written by systemd-journal-remote), else neither, and the draft says
  what that means.

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
        check("the draft reads the syslog file, which exists",
              "    # /var/log/syslog exists\n    history: syslog\n" in draft, draft[:600])
        history_checks(exporter, work, root)

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


def write_journal(root, entries):
    """A journal under `root` as journald keeps one, written by systemd-journal-remote from
    (identifier, message) entries."""
    directory = os.path.join(root, "var", "log", "journal", "0123456789abcdef0123456789abcdef")
    os.makedirs(directory, exist_ok=True)
    export = os.path.join(root, "journal.export")
    with open(export, "w") as out:
        for i, (identifier, message) in enumerate(entries):
            out.write(f"__REALTIME_TIMESTAMP={1767268800000000 + i * 1000000}\n"
                      f"__MONOTONIC_TIMESTAMP={1000000 + i * 1000000}\n"
                      "_BOOT_ID=0123456789abcdef0123456789abcdef\n"
                      f"SYSLOG_IDENTIFIER={identifier}\nSYSLOG_PID=40\nMESSAGE={message}\n\n")
    code, _, err = run_tool("/lib/systemd/systemd-journal-remote",
                            "--output=" + os.path.join(directory, "system.journal"), export)
    os.remove(export)
    return check("a journal written by systemd-journal-remote", code == 0, err)


def history_checks(exporter, work, root):
    """Where cron logs, when the flags do not say: the journal when /var/log/syslog does not
    exist and cron's lines are there; neither: the draft says so and what it means."""
    syslog = os.path.join(root, "var", "log", "syslog")
    os.rename(syslog, syslog + ".away")
    try:
        draft_path = os.path.join(work, "history.yaml")
        code, _, err = run_tool(exporter, "discover", "--type", "crontab", "--source", "host",
                                "--root", root, "--output", draft_path)
        draft = read_text(draft_path)
        check("no syslog file, no journal: the draft says there is no history, and what then",
              code == 0 and not re.search(r"^    history:", draft, re.M) and
              "    # No run history found: /var/log/syslog does not exist,\n    # and the journal"
              in draft and "only whether each entry\n    # exists, not whether it ran." in draft
              and "Install rsyslog" in draft and "let cron log to the journal" in draft,
              draft[:1200] + err)
        check("and the report too", "No run history found" in err, err)
        code, _, err = run_tool(exporter, "check", "--config.file", draft_path)
        check("check accepts that draft", code == 0, err)

        if not write_journal(root, [("cron", "(CRON) INFO (pidfile fd = 3)"),
                                    ("CRON", "(root) CMD (cd / && run-parts --report "
                                             "/etc/cron.hourly)")]):
            return
        code, _, err = run_tool(exporter, "discover", "--type", "crontab", "--source", "host",
                                "--root", root, "--output", draft_path)
        draft = read_text(draft_path)
        check("no syslog file, cron's lines in the journal: history: journal, and why",
              code == 0 and "    # /var/log/syslog does not exist; cron logs to the journal\n"
              "    history: journal\n" in draft, draft[:800] + err)
        check("the report says so", 'source "host": history: journal (/var/log/syslog does not '
              "exist; cron logs to the journal)" in err, err)
        code, _, err = run_tool(exporter, "check", "--config.file", draft_path)
        check("check accepts that draft", code == 0, err)
        spec_path = os.path.join(work, "lacking.yaml")
        with open(spec_path, "w") as f:
            f.write(f'version: 1\nsources:\n  host: {{type: crontab, root: "{root}"}}\njobs: []\n')
        code, out, err = run_tool(exporter, "discover", "--config.file", spec_path)
        check("adding to a spec: its source block is left alone, the report says what to set",
              code == 0 and 'source "host": set in its block history: journal (/var/log/syslog '
              "does not exist; cron logs to the journal)" in err and
              out.split("jobs:")[0] == read_text(spec_path).split("jobs:")[0], err + out[:400])
        code, _, err = run_tool(exporter, "discover", "--type", "crontab", "--source", "host",
                                "--root", root, "--history", "syslog", "--output", draft_path)
        draft = read_text(draft_path)
        check("--history given: taken as it is, nothing looked for",
              draft.count("history:") == 1 and
              re.search(r'^    history: "?syslog"?$', draft, re.M) and
              "# /var/log/syslog" not in draft, draft[:800])
    finally:
        shutil.rmtree(os.path.join(root, "var", "log", "journal"), ignore_errors=True)
        os.rename(syslog + ".away", syslog)


if __name__ == "__main__":
    main()
