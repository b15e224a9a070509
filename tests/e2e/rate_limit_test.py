#!/usr/bin/python3
"""The web configuration's rate_limit on the real exporter: a flood of requests without a
password or with a wrong one empties the bucket and is answered 429 with Retry-After, counted in
schedwatch_exporter_http_requests_limited_total, while Prometheus' authenticated scrape of
/metrics is answered 200 throughout; without basic auth, pages are limited and /metrics never.

Debian's promtool 2.42 predates rate_limit in exporter-toolkit, so these files are not checked
with it. Prints 'N passed, N failed'; exits 1 if anything failed.
"""
import argparse
import base64
import os
import re
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from schedwatch_test import (Exporter, StartFailed, check, get, summary,  # noqa: E402
                             temporary_directory, wait_for)

# htpasswd -nbBC 10 "" "correct horse" | tr -d ':\n'   (also in tests/config/web/valid.yml)
PASSWORD = "correct horse"
PASSWORD_HASH = "$2y$10$IPRmZJAtKtMLf2aQY/1bIeV7yhqGgnQL.BO1vG8Q5psG4IYS8vjUW"
# One token a minute after the first three: the bucket stays empty for the whole test.
RATE_LIMIT = "rate_limit:\n  interval: 60s\n  burst: 3\n"


def basic(user, password):
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def serve(args, workdir, name, text, headers):
    """Waits for an answer to a scrape that passes auth, which takes no token."""
    path = os.path.join(workdir, name)
    with open(path, "w") as out:
        out.write(text)
    exporter = Exporter(args.exporter,
                        os.path.join(args.source_dir, "examples", "desired-state.yaml"), workdir,
                        "--web.config.file", path, name=f"exporter-{name}", wait=None)
    if not wait_for(lambda: get(exporter.base + "/metrics", headers=headers).status == 200, 20,
                    "an authenticated scrape", ignore=(OSError,)):
        exporter.stop()
        raise StartFailed(f"{name}: no scrape answered 200: {exporter.logs()[-2000:]}")
    return exporter


def limited_total(exporter, headers):
    text = get(exporter.base + "/metrics", headers=headers).text
    found = re.search(r"^schedwatch_exporter_http_requests_limited_total (\d+)$", text, re.M)
    return int(found.group(1)) if found else None


def flood(url, headers_list, count, statuses):
    """`count` requests from each of len(headers_list) threads; their statuses are collected."""
    lock = threading.Lock()

    def one(headers):
        for _ in range(count):
            try:
                reply = get(url, headers=headers, timeout=10)
                with lock:
                    statuses.append((reply.status, reply.headers.get("Retry-After")))
            except OSError as error:
                with lock:
                    statuses.append((0, str(error)))

    threads = [threading.Thread(target=one, args=(h,)) for h in headers_list]
    for thread in threads:
        thread.start()
    return threads


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    with temporary_directory("schedwatch-ratelimit-") as workdir:
        try:
            with_auth(args, workdir)
            without_auth(args, workdir)
        except StartFailed as error:
            check("every exporter starts", False, error)
    return summary()


def with_auth(args, workdir):
    right = basic("prometheus", PASSWORD)
    with serve(args, workdir, "auth.yml",
               f"basic_auth_users:\n  prometheus: {PASSWORD_HASH}\n" + RATE_LIMIT,
               right) as exporter:
        statuses = []
        threads = flood(exporter.base + "/metrics",
                        [{}, basic("prometheus", "wrong horse"), basic("nobody", PASSWORD), {}],
                        50, statuses)
        scrapes = []
        while any(t.is_alive() for t in threads) or len(scrapes) < 20:
            reply = get(exporter.base + "/metrics", headers=right)
            scrapes.append(reply.status)
            if reply.status != 200:
                break
        for thread in threads:
            thread.join()
        limited = [s for s in statuses if s[0] == 429]
        check("flood: 200 requests without a password or with a wrong one, 3 get 401 and the "
              "rest 429", len(statuses) == 200 and len(limited) == 197 and
              all(s[0] in (401, 429) for s in statuses), sorted(set(statuses))[:10])
        check("429 carries Retry-After of at most the interval, in whole seconds",
              limited and all(s[1] and s[1].isdigit() and 1 <= int(s[1]) <= 60 for s in limited),
              limited[:3])
        check(f"the authenticated scrape got 200 every time during the flood ({len(scrapes)})",
              len(scrapes) >= 20 and all(s == 200 for s in scrapes), scrapes[-5:])
        # The bucket is empty: an authenticated request for a page (not a scrape) is limited.
        reply = get(exporter.base + "/api/v1/status", headers=right)
        check("an authenticated page is charged like any other request: 429 now",
              reply.status == 429, reply.status)
        check("schedwatch_exporter_http_requests_limited_total counts every 429",
              limited_total(exporter, right) == len(limited) + 1,
              (limited_total(exporter, right), len(limited)))
        check("the password never reaches the log",
              PASSWORD not in exporter.logs() and "wrong horse" not in exporter.logs())


def without_auth(args, workdir):
    with serve(args, workdir, "pages.yml", RATE_LIMIT, {}) as exporter:
        statuses = []
        for thread in flood(exporter.base + "/-/healthy", [{}, {}], 20, statuses):
            thread.join()
        check("no auth: pages past the burst get 429",
              sorted(s[0] for s in statuses) == [200] * 3 + [429] * 37, statuses[:5])
        scrapes = [get(exporter.base + "/metrics").status for _ in range(20)]
        check("no auth: /metrics is never limited", scrapes == [200] * 20, scrapes)
        check("no auth: the counter shows the 37 refusals", limited_total(exporter, {}) == 37)


if __name__ == "__main__":
    sys.exit(main())
