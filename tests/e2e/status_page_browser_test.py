#!/usr/bin/python3
"""Loads the exporter's status page in a real headless Chromium and checks what it rendered.

Starts schedwatch_exporter on the example on an ephemeral port, dumps the DOM Chromium built, and
saves a screenshot next to it (path printed). Then drives Chromium over the DevTools protocol (on
--remote-debugging-pipe: no extra packages) at desktop and phone widths: the overview and a role
page hold the reasons and runs, the SVG timelines have a size and the expected run bars, the page
refreshes itself without a reload, and no console error or CSP violation is reported.
Prints 'N passed, N failed'.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from schedwatch_test import (Exporter, check, get, require_tools, summary,  # noqa: E402
                             temporary_directory)

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]


class Chromium:
    """A headless Chromium driven over the DevTools protocol on a pipe (fds 3 and 4)."""

    def __init__(self, chromium, profile):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        # The child reads commands on fd 3 and writes answers on fd 4. The pipes are not
        # inheritable; dup2 makes the two copies at 3 and 4 inheritable (close_fds would close
        # them after this hook ran).
        def wire():
            read_end, write_end = os.dup(to_chrome_r), os.dup(from_chrome_w)  # off 3 and 4
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)
        self.process = subprocess.Popen(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe",
             "about:blank"], close_fds=False, preexec_fn=wire,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def _read_message(self, deadline):
        import select
        while b"\0" not in self.buffer:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("no answer from chromium")
            ready, _, _ = select.select([self.from_chrome], [], [], left)
            if ready:
                chunk = os.read(self.from_chrome, 1 << 16)
                if not chunk:
                    raise EOFError("chromium closed the pipe")
                self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def wait_event(self, method, timeout=30):
        deadline = time.time() + timeout
        while True:
            for index, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(index)
            self.events.append(self._read_message(deadline))

    def open(self, url, width, height, mobile):
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target,
                                                      "flatten": True})["sessionId"]
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.send(domain, session=session)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
                  session=session)
        self.events.clear()
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_event("Page.loadEventFired")
        return session

    def evaluate(self, session, expression):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, session=session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def errors(self):
        """Console errors, uncaught exceptions and CSP violations seen so far."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(params["exceptionDetails"].get("text", "exception"))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(str(params.get("args")))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                found.append(params["entry"].get("text", ""))
        return found

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except Exception:  # noqa: BLE001 -- it may be gone already
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self.to_chrome)
        os.close(self.from_chrome)


OVERVIEW_PROBE = """(() => {
  const rows = [...document.querySelectorAll('#roles tbody tr[data-role]')];
  const sparks = rows.map(r => r.querySelector('svg.spark')).filter(Boolean);
  const box = sparks.length ? sparks[0].getBoundingClientRect() : {width: 0, height: 0};
  return {
    order: rows.map(r => r.dataset.role),
    why: Object.fromEntries(rows.map(r => [r.dataset.role, r.querySelector('.why').textContent])),
    sparks: sparks.length,
    spark_w: box.width, spark_h: box.height,
    counts: [...document.querySelectorAll('#counts a')].map(a => a.textContent),
    scroll_w: document.documentElement.scrollWidth,
    view_w: window.innerWidth,
    form: !!document.querySelector('#filters input[name=q]'),
  };
})()"""

ROLE_PROBE = """(() => {
  const svg = document.querySelector('#timeline svg.timeline');
  const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  return {
    reasons: [...document.querySelectorAll('#why li')].map(li => [li.dataset.condition,
      li.querySelector('.reason').textContent, li.querySelector('.action a') ?
      li.querySelector('.action a').getAttribute('href') : '']),
    runs: [...document.querySelectorAll('#runs tbody tr')].map(tr => tr.dataset.outcome),
    bars: svg ? svg.querySelectorAll('g.run rect.bar').length : -1,
    bar_titles: svg ? [...svg.querySelectorAll('g.run > title')].map(t => t.textContent) : [],
    width: box.width, height: box.height,
    ticks: svg ? svg.querySelectorAll('line.fire').length : -1,
    thresholds: Object.fromEntries([...document.querySelectorAll('#thresholds tbody tr')].map(
      tr => [tr.dataset.threshold, tr.children[2].textContent])),
    scroll_w: document.documentElement.scrollWidth,
    view_w: window.innerWidth,
  };
})()"""


def browser_checks(chromium, workdir, base):
    """Desktop and phone widths over the DevTools protocol."""
    browser = Chromium(chromium, os.path.join(workdir, "cdp-profile"))
    try:
        # The error check itself sees errors: a console error and a CSP refusal of inline script.
        session = browser.open(base + "/", 800, 600, False)
        browser.evaluate(session, """(() => { console.error('probe');
          const s = document.createElement('script'); s.textContent = 'window.x = 1';
          document.body.appendChild(s); })()""")
        time.sleep(0.5)
        browser.send("Runtime.evaluate", {"expression": "1"}, session=session)
        seen = browser.errors()
        check("the error check sees console errors and CSP violations",
              any("probe" in e for e in seen) and any("Content Security Policy" in e for e in seen),
              seen)
        browser.events.clear()
        for label, width, height, mobile in (("desktop", 1400, 900, False),
                                             ("phone", 390, 844, True)):
            session = browser.open(base + "/", width, height, mobile)
            page = browser.evaluate(session, OVERVIEW_PROBE)
            check(f"{label}: problems first (unknown, missing first; ok last)",
                  page["order"][:2] == ["partner-feed", "retry"] and page["order"][-1] == "gate",
                  page["order"])
            check(f"{label}: overview holds each role's reason",
                  "last success 19m ago, more than stale_after 15m" in page["why"].get("billing", "")
                  and "no live object" in page["why"].get("retry", ""), page["why"])
            check(f"{label}: a sparkline per row, drawn with a size",
                  page["sparks"] == 11 and page["spark_w"] > 50 and page["spark_h"] > 5, page)
            check(f"{label}: counts per condition", any(c.startswith("missing") for c in
                                                        page["counts"]), page["counts"])
            check(f"{label}: nothing wider than the screen",
                  page["scroll_w"] <= page["view_w"] + 1, (page["scroll_w"], page["view_w"]))
            # Typing filters the rows at once (the script), without a request.
            hidden = browser.evaluate(session, """(() => {
              const q = document.getElementById('q'); q.value = 'bill';
              q.dispatchEvent(new Event('input'));
              return [...document.querySelectorAll('#roles tbody tr[data-role]')]
                .filter(r => !r.hidden).map(r => r.dataset.role);
            })()""")
            check(f"{label}: search finds a role by name", hidden == ["billing"], hidden)
            # The page refreshes itself (fetch + swap), never reloading: a marker survives.
            refreshed = browser.evaluate(session, """new Promise(resolve => {
              window.__kept = true;
              const start = Date.now();
              (function poll() {
                if (document.documentElement.dataset.refreshes) {
                  resolve({kept: window.__kept === true,
                           rows: document.querySelectorAll('#roles tbody tr[data-role]').length,
                           visible: [...document.querySelectorAll('#roles tbody tr[data-role]')]
                             .filter(r => !r.hidden).length});
                } else if (Date.now() - start > 40000) { resolve(null); }
                else { setTimeout(poll, 200); }
              })();
            })""")
            check(f"{label}: refreshes in place without a reload, search kept",
                  refreshed is not None and refreshed["kept"] and refreshed["visible"] == 1,
                  refreshed)

            session = browser.open(base + "/roles/export", width, height, mobile)
            role = browser.evaluate(session, ROLE_PROBE)
            check(f"{label}: role page says why export is hung, with the runbook link",
                  any(c == "hung" and "more than max_runtime 30m" in text and
                      href.endswith("#schedwatchjobhung") for c, text, href in role["reasons"]),
                  role["reasons"])
            check(f"{label}: role page lists the runs newest first",
                  role["runs"] == ["hung", "succeeded"], role["runs"])
            check(f"{label}: the timeline SVG renders with a size",
                  role["width"] > 200 and role["height"] > 20, (role["width"], role["height"]))
            check(f"{label}: one bar per run, each labelled in words",
                  role["bars"] == 2 and all(t.split(":")[0] in ("hung", "succeeded")
                                            for t in role["bar_titles"]), role)
            check(f"{label}: fire times drawn as ticks", role["ticks"] >= 24, role["ticks"])
            check(f"{label}: thresholds say where they came from",
                  role["thresholds"].get("stale_after", "").startswith("derived: 2 × period"),
                  role["thresholds"])
            check(f"{label}: role page fits the screen", role["scroll_w"] <= role["view_w"] + 1,
                  (role["scroll_w"], role["view_w"]))
            errors = browser.errors()
            check(f"{label}: no console errors or CSP violations", not errors, errors)
    finally:
        browser.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    require_tools("chromium")
    chromium = shutil.which("chromium")
    with temporary_directory("schedwatch-browser-") as workdir:
        examples = os.path.join(args.source_dir, "examples")
        with Exporter(args.exporter, os.path.join(examples, "desired-state.yaml"), workdir,
                      "--ledger.file", os.path.join(examples, "ledger.json"), interval=None,
                      wait="ready") as exporter:
            pages(chromium, workdir, exporter.port)
    return summary()


def pages(chromium, workdir, port):
    url = f"http://127.0.0.1:{port}/"
    profile = os.path.join(workdir, "profile")
    dom = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                          "--dump-dom", url], capture_output=True, text=True, timeout=120)
    page = dom.stdout
    check("chromium rendered the page", "<h1>schedwatch</h1>" in page, dom.stderr[-500:])
    rows = re.findall(r'<tr data-role="([^"]+)"[^>]*>(.*?)</tr>', page, re.S)
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

    policy = get(url).headers.get("Content-Security-Policy", "")
    check("HTML answered with a CSP that allows no inline script",
          "script-src 'self'" in policy and "unsafe-inline" not in policy, policy)
    check("role page has the CSP too", "script-src 'self'" in get(
        f"http://127.0.0.1:{port}/roles/retry").headers.get("Content-Security-Policy", ""))
    phone_shot = os.path.join(tempfile.gettempdir(), "schedwatch-role-page-phone.png")
    subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                    f"--screenshot={phone_shot}", "--window-size=390,1400",
                    f"http://127.0.0.1:{port}/roles/export"], capture_output=True, timeout=120)
    print(f"screenshot: {phone_shot}")
    browser_checks(chromium, workdir, f"http://127.0.0.1:{port}")


if __name__ == "__main__":
    sys.exit(main())
