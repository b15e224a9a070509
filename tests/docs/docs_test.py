#!/usr/bin/python3
"""The documentation stands alone and agrees with the binaries.

  docs_test.py links   --source-dir DIR
  docs_test.py runbook --source-dir DIR --rulegen BIN

links    every relative link in README.md and docs/**/*.md points at a file or directory that
         exists, and a link with an anchor (`page.md#heading`, `#heading`) at a heading of that
         page (GitHub's anchors: lower case, punctuation dropped, spaces as '-')
runbook  every alert schedwatch_rulegen emits (both rule files, every mode, for
         tests/config/valid.yml and the specs in examples/) has a `## <AlertName>` section in
         docs/runbook.md, and its default runbook_url is that page with the alert's anchor

Prints one line per check and a final `N passed, N failed`; exits non-zero on any failure.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

import yaml

MODES = ("per-role", "joined")
RULE_FILES = ("schedwatch.rules.yml", "schedwatch-global.rules.yml")
RUNBOOK = "docs/runbook.md"
RESULTS = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    RESULTS["passed" if ok else "failed"] += 1
    print(("ok   " if ok else "FAIL ") + name + ("" if ok or not detail else f": {detail}"),
          flush=True)
    return ok


FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target) and ![alt](target), not inside inline code; the target up to a space or ')'.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"`+[^`]*`+")


def prose_lines(text):
    """The lines outside fenced code blocks, with their line numbers."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(heading):
    """GitHub's anchor of a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(text):
    seen = {}
    out = set()
    for _, line in prose_lines(text):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def markdown_files(source_dir):
    files = [os.path.join(source_dir, "README.md")]
    files += sorted(glob.glob(os.path.join(source_dir, "docs", "**", "*.md"), recursive=True))
    return files


def broken_links(path, text, read=lambda p: open(p, encoding="utf-8").read()):
    """(line, target, why) for every relative link of `text` (the file at `path`) that is
    broken."""
    broken = []
    own = None
    for number, line in prose_lines(text):
        for target in LINK.findall(INLINE_CODE.sub("", line)):
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            if file_part:
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                if not os.path.exists(resolved):
                    broken.append((number, target, "no such file"))
                    continue
            else:
                resolved = path
            if not anchor:
                continue
            if not resolved.endswith(".md") or os.path.isdir(resolved):
                broken.append((number, target, "an anchor into something that is not a page"))
                continue
            if resolved == path:
                own = own if own is not None else anchors(text)
                headings = own
            else:
                headings = anchors(read(resolved))
            if anchor not in headings:
                broken.append((number, target, f"no heading with the anchor #{anchor}"))
    return broken


def check_links(args):
    files = markdown_files(args.source_dir)
    check("README.md and docs/ hold pages", len(files) > 5, files)
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        name = os.path.relpath(path, args.source_dir)
        broken = broken_links(path, text)
        check(f"{name}: every relative link resolves", not broken,
              "; ".join(f"line {n}: {t} ({why})" for n, t, why in broken))
    # The checker itself: a link to a missing page, and to a missing heading, are caught.
    readme = os.path.join(args.source_dir, "README.md")
    caught = broken_links(readme, "[a](docs/no-such-page.md) [b](docs/runbook.md#no-such-alert)\n")
    check("the link check notices a missing page and a missing heading", len(caught) == 2, caught)


def spec_files(source_dir):
    specs = [os.path.join(source_dir, "tests", "config", "valid.yml")]
    for path in sorted(glob.glob(os.path.join(source_dir, "examples", "*.y*ml"))):
        with open(path) as f:
            doc = yaml.safe_load(f)
        if isinstance(doc, dict) and "version" in doc and "jobs" in doc:
            specs.append(path)
    return specs


def emitted_alerts(args, tmp):
    """alert name -> the runbook_url annotations seen for it."""
    alerts = {}
    # Unsharded, and with --total-shards 2 (the shard alerts).
    for spec, shards in [(spec, ()) for spec in spec_files(args.source_dir)] + [
            (spec_files(args.source_dir)[0], ("--total-shards", "2"))]:
        for mode in MODES:
            out = os.path.join(tmp, os.path.basename(spec) + "".join(shards), mode)
            result = subprocess.run([args.rulegen, "--config.file", spec, "--out", out, "--mode",
                                     mode, *shards], capture_output=True, text=True, timeout=300,
                                    stdin=subprocess.DEVNULL)
            if not check(f"rulegen {os.path.relpath(spec, args.source_dir)} --mode {mode} "
                         f"{' '.join(shards)}".strip(), result.returncode == 0, result.stderr):
                continue
            for name in RULE_FILES:
                with open(os.path.join(out, name)) as f:
                    doc = yaml.safe_load(f)
                for group in doc.get("groups") or []:
                    for rule in group.get("rules") or []:
                        if "alert" in rule:
                            url = (rule.get("annotations") or {}).get("runbook_url", "")
                            alerts.setdefault(rule["alert"], set()).add(url)
    return alerts


def runbook_sections(text):
    return {line[3:].strip() for _, line in prose_lines(text) if line.startswith("## ")}


def check_runbook(args):
    with open(os.path.join(args.source_dir, RUNBOOK), encoding="utf-8") as f:
        runbook = f.read()
    sections = runbook_sections(runbook)
    with tempfile.TemporaryDirectory() as tmp:
        alerts = emitted_alerts(args, tmp)
    # Per-role and exporter alerts, the Watchdog: at least the 15 names of the contract.
    check("rulegen emits every alert of the contract", len(alerts) >= 15, sorted(alerts))
    page_anchors = anchors(runbook)
    for alert, urls in sorted(alerts.items()):
        check(f"{RUNBOOK} has a section ## {alert}", alert in sections)
        expected_suffix = f"/docs/runbook.md#{alert.lower()}"
        check(f"{alert}: the default runbook_url is {RUNBOOK}#{alert.lower()}",
              all(url.endswith(expected_suffix) for url in urls)
              and alert.lower() in page_anchors, sorted(urls))
    # The checker itself: a runbook without one of the sections fails.
    if alerts:
        removed = sorted(alerts)[0]
        mutilated = re.sub(rf"^## {re.escape(removed)}\s*$", "", runbook, flags=re.M)
        check(f"the runbook check notices a removed section (## {removed})",
              removed not in runbook_sections(mutilated))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("check", choices=("links", "runbook"))
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--rulegen")
    args = parser.parse_args()
    if args.check == "links":
        check_links(args)
    else:
        if not args.rulegen:
            parser.error("runbook needs --rulegen")
        check_runbook(args)
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] or not RESULTS["passed"] else 0


if __name__ == "__main__":
    sys.exit(main())
