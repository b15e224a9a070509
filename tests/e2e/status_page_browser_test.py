#!/usr/bin/python3
"""Loads the exporter's status page in a real headless Chromium and checks what it rendered.

Starts schedwatch_exporter on the example on an ephemeral port, dumps the DOM Chromium built, and
saves a screenshot next to it (path printed). Prints 'N passed, N failed'.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

RESULTS = {"passed": 0, "failed": 0}
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]


def check(name, condition, detail=""):
    RESULTS["passed" if condition else "failed"] += 1
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f" {detail}"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if not chromium:
        print("FAIL chromium is not installed (scripts/install-deps.sh with-test-tools installs it)")
        print("0 passed, 1 failed")
        return 1
    workdir = tempfile.mkdtemp(prefix="schedwatch-browser-")
    examples = os.path.join(args.source_dir, "examples")
    log_path = os.path.join(workdir, "exporter.log")
    with open(log_path, "w") as log:
        exporter = subprocess.Popen(
            [args.exporter, "--config.file", os.path.join(examples, "desired-state.yaml"),
             "--ledger.file", os.path.join(examples, "ledger.json"),
             "--web.listen-address", "127.0.0.1:0", "--refresh.confirm-delay", "100ms"],
            stderr=log)
    try:
        port = None
        deadline = time.time() + 20
        while time.time() < deadline:
            match = re.search(r"msg=listening .*port=(\d+)", open(log_path).read())
            if match:
                port = int(match.group(1))
                try:
                    if urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready").status == 200:
                        break
                except Exception:  # noqa: BLE001 -- not ready yet
                    pass
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/"
        profile = os.path.join(workdir, "profile")
        dom = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                              "--dump-dom", url], capture_output=True, text=True, timeout=120)
        page = dom.stdout
        check("chromium rendered the page", "<h1>schedwatch</h1>" in page, dom.stderr[-500:])
        rows = re.findall(r'<tr data-role="([^"]+)">(.*?)</tr>', page, re.S)
        roles = {role: body for role, body in rows}
        check("one row per role", len(roles) == 11, sorted(roles))
        check("retry shows missing",
              'class="c bad">missing<' in roles.get("retry", ""), roles.get("retry"))
        check("gate shows ok", 'class="c ok">ok<' in roles.get("gate", ""), roles.get("gate"))
        check("partner source shown down",
              re.search(r'data-source="partner".*?>down<', page, re.S) is not None)
        check("summary line counts ok roles", "1 of 11 roles ok" in page)
        screenshot = os.path.join(tempfile.gettempdir(), "schedwatch-status-page.png")
        shot = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                               f"--screenshot={screenshot}", "--window-size=1400,900", url],
                              capture_output=True, text=True, timeout=120)
        check("screenshot taken", os.path.getsize(screenshot) > 10000 if os.path.exists(screenshot)
              else False, shot.stderr[-300:])
        print(f"screenshot: {screenshot}")
    finally:
        exporter.send_signal(signal.SIGTERM)
        exporter.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
