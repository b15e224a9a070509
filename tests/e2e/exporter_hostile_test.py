#!/usr/bin/python3
"""The exporter's HTTP surface against hostile or careless clients, on the real binary.

1,000 idle TCP connections and a storm of 20 concurrent reloads (against a spec whose GitHub
source points at a loopback server that never answers) must not keep /metrics from answering,
and memory must stay bounded; one address gets at most --web.max-connections-per-ip
connections, and slowloris and slow-body connections are closed by --web.read-header-timeout
while another address is answered; HEAD sends no body; other methods get 405 with Allow;
Accept-Encoding q-values; the reload metric right after a failed reload; reload only with
--web.enable-lifecycle and never from a cross-site form or a foreign Host; repeated listen
addresses, IPv6 loopback and dual stack; a clear error when an address cannot be bound; basic
auth whose bcrypt checks never hold up a scrape.
Prints the latency figures and 'N passed, N failed'.
"""
import argparse
import os
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from schedwatch_test import (Exporter, check, curl_timed, request, summary,  # noqa: E402
                             temporary_directory, wait_for)

IDLE_CONNECTIONS = 1000
STORM = 20


def raw(port, text, host="127.0.0.1"):
    """Sends raw bytes, reads until the server closes: (head, body)."""
    with socket.create_connection((host, port), timeout=10) as connection:
        connection.sendall(text.encode())
        data = b""
        while True:
            chunk = connection.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head.decode(), body


def serve(args, spec, workdir, *flags, name, listen=("127.0.0.1:0",), interval="1s"):
    # A refresh may be waiting for the hung source when it is stopped.
    return Exporter(args.exporter, spec, workdir, *flags, name=name, listen=listen,
                    interval=interval, stop_timeout=40)


def write_spec(path, hung_port):
    with open(path, "w") as out:
        out.write(f"""version: 1
sources:
  local: {{type: file, path: live.yaml}}
  hung:
    type: github_actions
    repository: acme/hung
    api_url: http://127.0.0.1:{hung_port}
    timeout: 20s
jobs:
  - {{role: gate, source: local, schedule: "*/5 * * * *", spec_version: "1"}}
  - role: nightly
    source: hung
    workflow: .github/workflows/nightly.yml
    schedule: "0 3 * * *"
    spec_version: "1"
""")


def hostile_phase(args, workdir, spec):
    """Idle connections and a reload storm against a source that hangs."""
    # Idle connections are what this phase is about: neither the per-address limit nor the
    # read-header timeout may close them here (connection_attacks_phase tests those).
    exporter = serve(args, spec, workdir, "--web.enable-lifecycle", "--web.max-connections-per-ip",
                     "4096", "--web.read-header-timeout", "5m", name="hostile")
    idle = []
    try:
        metrics_url = exporter.base + "/metrics"
        quiet = [curl_timed(metrics_url) for _ in range(5)]
        check("metrics answers with no other clients", all(code == 200 for code, _ in quiet), quiet)
        rss_before = exporter.rss_kib()
        for i in range(IDLE_CONNECTIONS):
            connection = socket.create_connection(("127.0.0.1", exporter.port), timeout=10)
            if i % 2:  # half of them start a request and never finish it
                connection.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            idle.append(connection)
        client_ports = {connection.getsockname()[1] for connection in idle}
        accepted = wait_for(
            lambda: connections_held(exporter.pid, exporter.port, client_ports) == len(idle), 30,
            "the exporter to accept the idle connections")
        check(f"the exporter holds all {IDLE_CONNECTIONS} idle connections", accepted,
              connections_held(exporter.pid, exporter.port, client_ports))
        held = [curl_timed(metrics_url) for _ in range(5)]
        check(f"metrics answers with {IDLE_CONNECTIONS} idle connections open",
              all(code == 200 for code, _ in held), held)
        check("... in under 1 s", max(s for _, s in held) < 1.0, held)
        rss_after = exporter.rss_kib()
        print(f"figure: VmRSS {rss_before} KiB before, {rss_after} KiB with "
              f"{IDLE_CONNECTIONS} idle connections (+{rss_after - rss_before} KiB)")
        check("memory stays bounded (< 64 MiB more)", rss_after - rss_before < 64 * 1024,
              rss_after - rss_before)

        # The first refresh still waits (20 s) for the hung source; 20 reloads arrive at once.
        check("a refresh is waiting for the hung source",
              request(exporter.base + "/-/ready")[0] == 503)
        replies = []

        def reload():
            replies.append(request(exporter.base + "/-/reload", method="POST", timeout=30)[0])

        storm = [threading.Thread(target=reload) for _ in range(STORM)]
        started = time.time()
        for thread in storm:
            thread.start()
        during = []
        while any(thread.is_alive() for thread in storm) or len(during) < 5:
            during.append(curl_timed(metrics_url))
        for thread in storm:
            thread.join()
        storm_seconds = time.time() - started
        check("metrics answers during the reload storm", all(code == 200 for code, _ in during),
              during)
        check("... in under 1 s", max(s for _, s in during) < 1.0, during)
        check(f"all {STORM} reloads answered 200", replies == [200] * STORM, replies)
        check("... while the refresh was still waiting for the hung source",
              request(exporter.base + "/-/ready")[0] == 503)
        check("the reloads did not wait for the hung source (< 5 s)", storm_seconds < 5,
              storm_seconds)
        rss_storm = exporter.rss_kib()
        print("figure: /metrics latency (s): "
              f"quiet median {statistics.median(s for _, s in quiet):.4f} "
              f"max {max(s for _, s in quiet):.4f}; "
              f"{IDLE_CONNECTIONS} idle median {statistics.median(s for _, s in held):.4f} "
              f"max {max(s for _, s in held):.4f}; "
              f"reload storm + idle median {statistics.median(s for _, s in during):.4f} "
              f"max {max(s for _, s in during):.4f}; storm took {storm_seconds:.2f} s; "
              f"VmRSS after storm {rss_storm} KiB")
        check("memory stays bounded after the storm", rss_storm - rss_before < 64 * 1024,
              rss_storm - rss_before)
        check("healthy afterwards", request(exporter.base + "/-/healthy")[0] == 200)
    finally:
        for connection in idle:
            connection.close()
        check("hostile exporter exits 0", exporter.stop() == 0)


def closed_by_server(connection):
    """Whether the server closed `connection` (EOF or reset), without waiting."""
    try:
        connection.setblocking(False)
        return connection.recv(65536) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def scrape_from(address, port, timeout=10):
    """Status of one GET /metrics from the local `address` (127.0.0.2 is another client than
    127.0.0.1: loopback is a /8), or None if none arrived within `timeout`."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                      source_address=(address, 0)) as connection:
            connection.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                chunk = connection.recv(65536)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return None
    match = re.match(rb"HTTP/1.1 (\d+)", data)
    return int(match.group(1)) if match else None


def connection_attacks_phase(args, workdir, spec):
    """One address may not take every connection, and a request that never completes is closed:
    idle connections beyond the per-address limit, a header line trickled every second, a body
    trickled a byte a second (slowloris and slow body). Another address is answered meanwhile."""
    limit = 50
    exporter = serve(args, spec, workdir, "--web.max-connections", "400",
                     "--web.max-connections-per-ip", str(limit), "--web.read-header-timeout", "3s",
                     name="attacks")
    held = []
    try:
        # Kept-alive connections, each with one answered request: idle now, and inside every
        # deadline (the next request is due 30 s after the answer).
        answered = 0
        for _ in range(2 * limit):
            try:
                connection = socket.create_connection(("127.0.0.1", exporter.port), timeout=10)
                held.append(connection)
                connection.sendall(b"GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n")
                if connection.recv(65536).startswith(b"HTTP/1.1 200"):
                    answered += 1
            except OSError:
                pass
        check(f"one address gets at most {limit} connections", 0 < answered <= limit,
              f"{answered} of {len(held)} answered")
        check("... a scrape from another address is answered meanwhile",
              scrape_from("127.0.0.2", exporter.port) == 200)
        for connection in held:
            connection.close()
        held = [socket.create_connection(("127.0.0.1", exporter.port), timeout=10)
                for _ in range(10)]
        check("connections that never send a request are closed by the read-header timeout",
              wait_for(lambda: all(closed_by_server(c) for c in held), 20,
                       "the silent connections to be closed"))
        for connection in held:
            connection.close()
        held = []

        # Slowloris: a header line every second, never the end of the headers; slow body: a
        # byte a second of a body that is announced whole.
        for i in range(limit):
            connection = socket.create_connection(("127.0.0.1", exporter.port), timeout=10)
            if i % 2:
                connection.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            else:
                connection.sendall(b"POST /-/reload HTTP/1.1\r\nHost: x\r\n"
                                   b"Content-Length: 10000\r\n\r\n")
            held.append(connection)
        started = time.monotonic()
        during = []

        def trickle():
            for connection in held:
                try:
                    connection.sendall(b"X-a: b\r\n")
                except OSError:
                    pass
            during.append(scrape_from("127.0.0.2", exporter.port))
            return all(closed_by_server(c) for c in held)

        closed = wait_for(trickle, 30, "the trickling connections to be closed", interval=1)
        check("slowloris and slow-body connections are closed although never idle", closed,
              sum(closed_by_server(c) for c in held))
        print(f"figure: trickling connections closed after {time.monotonic() - started:.1f} s "
              "(read-header timeout 3 s)")
        check("... scrapes from another address are answered meanwhile",
              during and all(status == 200 for status in during), during)
        check("... and from the attacking address once they are gone",
              scrape_from("127.0.0.1", exporter.port) == 200)
    finally:
        for connection in held:
            connection.close()
        check("attacks exporter exits 0", exporter.stop() == 0)


def http_details_phase(args, workdir, spec):
    exporter = serve(args, spec, workdir, "--web.enable-lifecycle", name="details")
    try:
        port = exporter.port
        head, body = raw(port, "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        check("HEAD /metrics: 200 with no body", head.startswith("HTTP/1.1 200") and body == b"",
              (head, body[:80]))
        check("HEAD /metrics: Content-Length of the GET", re.search(r"(?i)content-length: [1-9]",
                                                                     head), head)
        for path in ("/metrics", "/", "/api/v1/status", "/-/healthy", "/-/ready"):
            for method in ("PUT", "DELETE", "PATCH", "POST", "OPTIONS"):
                status, headers, _ = request(exporter.base + path, method=method)
                if status != 405 or headers.get("Allow") != "GET, HEAD":
                    check(f"{method} {path}: 405 with Allow: GET, HEAD", False, (status, headers))
                    break
            else:
                check(f"{path}: other methods get 405 with Allow: GET, HEAD", True)
        status, headers, _ = request(exporter.base + "/-/reload")
        check("GET /-/reload: 405 with Allow: POST, PUT",
              status == 405 and headers.get("Allow") == "POST, PUT", (status, headers))

        # Framing that a proxy in front could read otherwise (request smuggling), and what
        # libmicrohttpd would let through: 400, the connection closed, nothing after it served.
        smuggled = "GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n"
        for name, text in (
                ("Content-Length and Transfer-Encoding",
                 "POST /-/reload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled),
                ("two different Content-Lengths",
                 "POST /-/reload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                 "Content-Length: 41\r\n\r\n" + smuggled),
                ("%00 in the path", "GET /metrics%00.html HTTP/1.1\r\nHost: x\r\n\r\n" + smuggled),
                ("%00 in the query", "GET /?q=a%00b HTTP/1.1\r\nHost: x\r\n\r\n" + smuggled),
                ("HTTP/1.1 without Host", "GET /-/healthy HTTP/1.1\r\n\r\n" + smuggled),
                ("two Hosts", "GET /-/healthy HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")):
            head, body = raw(port, text)
            check(f"{name}: 400, the connection closed, nothing more answered",
                  head.startswith("HTTP/1.1 400") and re.search(r"(?i)connection: close", head)
                  and b"HTTP/1.1 2" not in body, (head, body[:200]))
        head, _ = raw(port, "GET /-/healthy HTTP/1.0\r\n\r\n")
        check("HTTP/1.0 without Host is served", head.startswith("HTTP/1.1 200"), head)
        for path in ("/metrics", "/-/healthy", "/-/ready", "/api/v1/status", "/nowhere"):
            headers = request(exporter.base + path)[1]
            check(f"{path}: X-Content-Type-Options: nosniff",
                  headers.get("X-Content-Type-Options") == "nosniff", headers)

        for accept, gzip in (("gzip", True), ("gzip;q=0", False), ("gzip; q=0.0", False),
                             ("GZIP;Q=0.5", True), ("*", True), ("*;q=0", False),
                             ("gzip;q=0, *", False), ("identity", False), ("br, *;q=0.1", True),
                             ("deflate, gzip;q=0, *;q=1", False)):
            headers = request(exporter.base + "/metrics", headers={"Accept-Encoding": accept})[1]
            check(f"Accept-Encoding {accept!r}: gzip {gzip}",
                  (headers.get("Content-Encoding") == "gzip") == gzip, headers)

        # A failed reload shows in the very next scrape.
        good = open(spec).read()
        with open(spec, "w") as out:
            out.write(good.replace('schedule: "*/5 * * * *"', 'schedule: "*/5 * *"'))
        status = request(exporter.base + "/-/reload", method="POST")[0]
        text = request(exporter.base + "/metrics")[2].decode()
        check("failed reload answers 500", status == 500, status)
        check("the next scrape has reload_successful 0",
              "schedwatch_exporter_config_last_reload_successful 0\n" in text,
              re.findall(r"schedwatch_exporter_config_last_reload.*", text))
        with open(spec, "w") as out:
            out.write(good)

        # Cross-site request forgery and DNS rebinding.
        reload_url = exporter.base + "/-/reload"
        host = f"127.0.0.1:{port}"
        refused = {
            "form POST": {"Content-Type": "application/x-www-form-urlencoded"},
            "multipart form POST": {"Content-Type": "multipart/form-data; boundary=x"},
            "text/plain POST": {"Content-Type": "text/plain;charset=UTF-8"},
            "cross-site Origin": {"Origin": "http://evil.example"},
            "cross-site form from a browser": {"Origin": "http://evil.example",
                                               "Content-Type": "application/x-www-form-urlencoded"},
            "foreign Host with a matching Origin (DNS rebinding)": {
                "Host": f"rebind.example:{port}", "Origin": f"http://rebind.example:{port}"},
            "Sec-Fetch-Site cross-site": {"Sec-Fetch-Site": "cross-site"},
            "Sec-Fetch-Site without Origin": {"Sec-Fetch-Site": "same-origin"},
            "Origin null": {"Origin": "null"},
        }
        for name, headers in refused.items():
            status, _, body = request(reload_url, method="POST", headers=headers, data=b"x=1")
            check(f"reload refused: {name}", status == 403, (status, body))
        accepted = {
            "curl-like (no Origin)": {},
            "a script posting JSON": {"Content-Type": "application/json"},
            "same-origin page by IP": {"Origin": f"http://{host}", "Sec-Fetch-Site": "same-origin"},
            "same-origin page on localhost": {"Host": f"localhost:{port}",
                                              "Origin": f"http://localhost:{port}"},
        }
        for name, headers in accepted.items():
            status, _, body = request(reload_url, method="POST", headers=headers)
            check(f"reload accepted: {name}", status == 200, (status, body))
        result = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X",
                                 "POST", reload_url], capture_output=True, text=True)
        check("reload by curl -X POST", result.stdout == "200", result.stdout)
    finally:
        check("details exporter exits 0", exporter.stop() == 0)


def lifecycle_and_paths_phase(args, workdir, spec):
    """Without --web.enable-lifecycle: 403, SIGHUP still reloads; a custom telemetry path."""
    spec = os.path.join(workdir, "plain.yaml")  # no hung source: refreshes end at once
    with open(spec, "w") as out:
        out.write("version: 1\nsources: {local: {type: file, path: live.yaml}}\njobs:\n"
                  "  - {role: gate, source: local, schedule: '*/5 * * * *', spec_version: '1'}\n")
    exporter = serve(args, spec, workdir, "--web.telemetry-path", "/x/metrics",
                        name="lifecycle")
    try:
        status, _, body = request(exporter.base + "/-/reload", method="POST")
        check("lifecycle off: reload answers 403 and says why",
              status == 403 and body == b"Lifecycle API is not enabled.\n", (status, body))
        good = open(spec).read()
        with open(spec, "w") as out:
            out.write(good.replace("role: gate", "role: gate-renamed"))
        exporter.send_signal(signal.SIGHUP)
        check("lifecycle off: SIGHUP still reloads", wait_for(
            lambda: 'role="gate-renamed"' in exporter.metrics("/x/metrics"), 15,
            "the renamed role after SIGHUP"))
        with open(spec, "w") as out:
            out.write(good)
        check("custom telemetry path serves metrics",
              request(exporter.base + "/x/metrics")[0] == 200)
        check("/metrics is then 404", request(exporter.base + "/metrics")[0] == 404)
        status, headers, _ = request(exporter.base + "/x/metrics", method="DELETE")
        check("custom telemetry path: 405 with Allow", status == 405 and headers.get("Allow"))
        page = wait_for(lambda: (lambda b: b if "Refreshed" in b else None)(
            exporter.get("/").text), 15, "a refreshed status page")
        check("the status page links the telemetry path", page and 'href="./x/metrics"' in page,
              page and re.findall(r'<a href="[^"]*">metrics', page))
    finally:
        check("lifecycle exporter exits 0", exporter.stop() == 0)


def basic_auth_phase(args, workdir, spec):
    """Wrong passwords cost bcrypt, but off the server threads: a scrape with a password already
    verified answers at once while they are checked, and pays no bcrypt itself."""
    import warnings
    with warnings.catch_warnings():  # deprecated in 3.11, still in Debian's; libxcrypt's bcrypt
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt
    hashed = crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=2 ** 12))
    bob = crypt.crypt("b0b", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=2 ** 12))
    # First by name, at the lowest cost: an unknown name used to be checked against it.
    cheap = crypt.crypt("cheap", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=2 ** 4))
    web = os.path.join(workdir, "web.yml")
    with open(web, "w") as out:
        out.write(f"basic_auth_users:\n  alice: '{hashed}'\n  bob: '{bob}'\n"
                  f"  aaron: '{cheap}'\n"
                  "http_server_config:\n  headers:\n    X-Frame-Options: deny\n")
    exporter = serve(args, spec, workdir, "--web.config.file", web, name="auth")
    try:
        def curl(user, max_time=30):
            return curl_timed(exporter.base + "/metrics", "-u", user, max_time=max_time)

        first = curl("alice:s3cret")
        check("basic auth: the right password gets 200", first[0] == 200, first)
        again = [curl("alice:s3cret") for _ in range(3)]
        print(f"figure: basic auth scrape {first[1]:.3f} s with bcrypt, then "
              f"{max(s for _, s in again):.4f} s max once verified")
        check("basic auth: a verified password is not checked by bcrypt again",
              all(code == 200 for code, _ in again) and max(s for _, s in again) < first[1] / 2,
              (first, again))
        wrong = []
        flood = [threading.Thread(target=lambda: wrong.append(curl("mallory:guess")[0]))
                 for _ in range(6)]
        for thread in flood:
            thread.start()
        during = [curl("alice:s3cret", max_time=5)]
        for thread in flood:
            thread.join()
        check("basic auth: wrong passwords get 401", wrong == [401] * 6, wrong)
        check("basic auth: a verified scrape answers in under 1 s while wrong ones are checked",
              during[0][0] == 200 and during[0][1] < 1.0, during)

        # A flood of wrong passwords, each different (so bcrypt must check each), from one
        # address; then bob's first scrape, never verified, from another.
        import base64
        flood = []
        for i in range(100):
            try:
                connection = socket.create_connection(("127.0.0.1", exporter.port), timeout=60)
                token = base64.b64encode(f"alice:wrong{i}".encode()).decode()
                connection.sendall(f"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                   f"Authorization: Basic {token}\r\n\r\n".encode())
                flood.append(connection)
            except OSError:
                pass
        first_bob = curl_timed(exporter.base + "/metrics", "-u", "bob:b0b", "--interface",
                               "127.0.0.2", max_time=10)
        flood_statuses, retry_after = [], 0
        for connection in flood:
            with connection:
                data = b""
                while True:
                    try:
                        chunk = connection.recv(65536)
                    except OSError:
                        break
                    if not chunk:
                        break
                    data += chunk
            match = re.match(rb"HTTP/1.1 (\d+)", data)
            flood_statuses.append(int(match.group(1)) if match else 0)
            retry_after += b"\r\nRetry-After: " in data
        print(f"figure: bob's first scrape during a flood of {len(flood)} wrong passwords: "
              f"{first_bob[1]:.3f} s; flood answers {sorted(set(flood_statuses))}")
        check("basic auth: a right password never checked before is answered during a flood "
              "of wrong ones from another address", first_bob[0] == 200, first_bob)
        check("basic auth: the flood gets 401, or 429/503 at once when its checks have no room",
              flood_statuses and set(flood_statuses) <= {401, 429, 503}
              and any(code in (429, 503) for code in flood_statuses), flood_statuses)
        check("... and every 429/503 says Retry-After",
              retry_after == sum(code in (429, 503) for code in flood_statuses),
              (retry_after, flood_statuses))

        def seconds(user, index):
            return curl_timed(exporter.base + "/metrics", "-u", f"{user}:try{index}",
                              "--interface", "127.0.0.3", max_time=30)[1]
        unknown = statistics.median(seconds("nobody", i) for i in range(3))
        known = statistics.median(seconds("alice", i) for i in range(3))
        print(f"figure: a wrong password takes {known:.3f} s for a known user (cost 12), "
              f"{unknown:.3f} s for an unknown name")
        check("basic auth: an unknown user name costs as much as a known one at the highest "
              "cost (not the first user's cost 4)", unknown > known / 2, (unknown, known))

        status, headers, _ = request(exporter.base + "/-/healthy")
        check("basic auth: 401 with a Basic challenge on every endpoint",
              status == 401 and headers.get("WWW-Authenticate", "").startswith("Basic"),
              (status, headers))
        check("configured headers on every answer, 401 too",
              headers.get("X-Frame-Options") == "deny", headers)
    finally:
        check("auth exporter exits 0", exporter.stop() == 0)
    check("passwords never reach the log", "s3cret" not in exporter.logs()
          and "guess" not in exporter.logs())


def has_ipv6_loopback():
    try:
        with open("/proc/net/if_inet6") as interfaces:
            return any(line.split()[0] == "0" * 31 + "1" for line in interfaces)
    except OSError:
        return False


def listen_phase(args, workdir, spec):
    if not has_ipv6_loopback():
        check("this machine has the IPv6 loopback ::1 (needed for the IPv6 checks)", False,
              "no ::1 in /proc/net/if_inet6: enable IPv6 on lo")
        return
    exporter = serve(args, spec, workdir, name="listen",
                        listen=("127.0.0.1:0", "[::1]:0", ":0", "localhost:0", "[::]:0"))
    try:
        v4, v6, every, localhost, any6 = exporter.ports
        check("one log line per listen address", len(set(exporter.ports)) == 5, exporter.ports)

        def curl(url):
            return subprocess.run(["curl", "-g", "-s", "-o", "/dev/null", "--max-time", "5",
                                   "-w", "%{http_code}", url], capture_output=True,
                                  text=True).stdout

        check("IPv4 listener", curl(f"http://127.0.0.1:{v4}/metrics") == "200")
        check("[::1] listener over IPv6", curl(f"http://[::1]:{v6}/metrics") == "200")
        check("[::1] listener is IPv6 only", curl(f"http://127.0.0.1:{v6}/metrics") == "000")
        check(":0 is dual stack: IPv4", curl(f"http://127.0.0.1:{every}/metrics") == "200")
        check(":0 is dual stack: IPv6", curl(f"http://[::1]:{every}/metrics") == "200")
        check("[::]:0 takes IPv6 and IPv4", curl(f"http://[::1]:{any6}/metrics") == "200"
              and curl(f"http://127.0.0.1:{any6}/metrics") == "200")
        check("localhost:0 is loopback", curl(f"http://127.0.0.1:{localhost}/metrics") == "200")
    finally:
        check("listen exporter exits 0", exporter.stop() == 0)

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        for listen, why in (((address,), "Address already in use"),
                            (("127.0.0.1:0", "nonsense"), "missing port"),
                            (("::1:9762",), "brackets"), (("127.0.0.1:99999",), "0 to 65535")):
            command = [args.exporter, "--config.file", spec]
            for item in listen:
                command += ["--web.listen-address", item]
            result = subprocess.run(command, capture_output=True, text=True, timeout=15)
            bad = listen[-1]
            check(f"cannot listen on {bad}: exit 1 naming the address",
                  result.returncode == 1 and f"cannot listen on {bad}" in result.stderr
                  and why in result.stderr, (result.returncode, result.stderr[-300:]))


def server_side_connections(server_port):
    """The server's ends of loopback TCP connections to `server_port` (/proc/net/tcp): remote
    port, bytes not yet read by the server (rx_queue), socket inode."""
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            if int(fields[1].split(":")[1], 16) == server_port:
                yield (int(fields[2].split(":")[1], 16), int(fields[4].split(":")[1], 16),
                       fields[9])


def requests_read_by_server(server_port, client_ports):
    """Whether the server has read everything each of `client_ports` sent it."""
    read = {port for port, rx_queue, _ in server_side_connections(server_port)
            if port in client_ports and rx_queue == 0}
    return read == client_ports


def connections_held(pid, server_port, client_ports):
    """How many of the connections from `client_ports` process `pid` has accepted: sockets of
    its own descriptors, not connections waiting in the listen queue. (Counting all descriptors
    against a count taken before is off by any descriptor open at that moment.)"""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return sum(1 for port, _, inode in server_side_connections(server_port)
               if port in client_ports and inode in inodes)


def slow_pages_phase(args, workdir):
    """Status pages of 10,000 roles take about a second each to render: on the event threads,
    a few concurrent page requests would hold up /metrics. They render on their own thread."""
    roles = 10000
    with open(os.path.join(workdir, "big-live.yaml"), "w") as out:
        out.write("objects:\n")
        for i in range(roles):
            out.write(f"  - {{id: o{i}, role: r{i}, schedule: '*/5 * * * *', spec_version: '1'}}\n")
    spec = os.path.join(workdir, "big-spec.yaml")
    with open(spec, "w") as out:
        out.write("version: 1\nsources:\n  big: {type: file, path: big-live.yaml}\njobs:\n")
        for i in range(roles):
            out.write(f"  - {{role: r{i}, source: big, schedule: '*/5 * * * *', "
                      f"spec_version: '1'}}\n")
    exporter = serve(args, spec, workdir, name="slow-pages", interval="1h")
    try:
        check("10,000 roles: ready", wait_for(
            lambda: exporter.get("/-/ready", timeout=30).status == 200, 120,
            "10,000 roles to be ready"))
        finished = {}

        def fetch(name, path):
            request(exporter.base + path, timeout=120)
            finished[name] = time.monotonic()

        def read_page(name, connection):
            with connection:
                while connection.recv(65536):
                    pass
            finished[name] = time.monotonic()

        # The page requests are sent whole before /metrics, and the scrape starts only once the
        # server has read every one of them (their bytes left the kernel's receive queue).
        connections = []
        for path in ["/api/v1/status", "/?limit=all", "/api/v1/status?x", "/?limit=all&q=r1"]:
            connection = socket.create_connection(("127.0.0.1", exporter.port), timeout=120)
            connection.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                               "Connection: close\r\n\r\n".encode())
            connections.append(connection)
        client_ports = {connection.getsockname()[1] for connection in connections}
        pages = [threading.Thread(target=read_page, args=(f"page{i}", connection))
                 for i, connection in enumerate(connections)]
        for thread in pages:
            thread.start()
        check("the server has read the four page requests", wait_for(
            lambda: requests_read_by_server(exporter.port, client_ports), 15,
            "the server to read the page requests"))
        started = time.monotonic()
        fetch("metrics", "/metrics")
        metrics_seconds = finished["metrics"] - started
        for thread in pages:
            thread.join()
        last_page = max(finished[f"page{i}"] for i in range(len(pages)))
        print(f"figure: /metrics at 10,000 roles behind 4 page renders: {metrics_seconds:.3f} s "
              f"(last page done {last_page - started:+.3f} s after the scrape started)")
        # Rendered on the event threads, the pages would all be done before /metrics could be
        # answered; the first of them may well finish before a 17 MB scrape on a busy machine.
        check("/metrics is answered before the slow pages requested before it are all done",
              finished["metrics"] < last_page, (finished["metrics"] - started, last_page - started))

        # Readers that take their time: every answer holds the same rendered bytes, never a
        # copy of its own (30 copies of the JSON would be hundreds of MiB).
        size = len(request(exporter.base + "/api/v1/status", timeout=120)[2])
        rss_before = exporter.rss_kib()
        readers = []
        for i in range(30):
            connection = socket.create_connection(("127.0.0.1", exporter.port), timeout=120,
                                                  source_address=(f"127.0.0.{2 + i % 4}", 0))
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            connection.sendall(b"GET /api/v1/status HTTP/1.1\r\nHost: x\r\n"
                               b"Connection: close\r\n\r\n")
            readers.append(connection)

        def answering():
            return all(len(c.recv(16, socket.MSG_PEEK)) > 0 for c in readers)
        check("30 slow readers of /api/v1/status are all being answered",
              wait_for(answering, 60, "every slow reader's first bytes"))
        rss_held = exporter.rss_kib()
        print(f"figure: /api/v1/status {size / 2**20:.1f} MiB; VmRSS {rss_before} KiB before, "
              f"{rss_held} KiB with 30 slow readers (+{rss_held - rss_before} KiB)")
        check("... holding one copy of the page between them, not one each",
              rss_held - rss_before < 3 * size / 1024, (rss_held - rss_before, size))
        bodies = set()

        def read_all(connection):
            with connection:
                data = b""
                while True:
                    chunk = connection.recv(1 << 20)
                    if not chunk:
                        break
                    data += chunk
            bodies.add(data.partition(b"\r\n\r\n")[2])
        reading = [threading.Thread(target=read_all, args=(c,)) for c in readers]
        for thread in reading:
            thread.start()
        for thread in reading:
            thread.join()
        check("... and every one gets the whole page, the same bytes",
              len(bodies) == 1 and len(next(iter(bodies))) == size,
              [len(body) for body in bodies])
    finally:
        exporter.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < IDLE_CONNECTIONS + 256:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with temporary_directory("schedwatch-hostile-") as workdir:
        run(args, workdir)
    return summary()


def run(args, workdir):
    with open(os.path.join(workdir, "live.yaml"), "w") as out:
        out.write("objects: [{id: g, role: gate, schedule: '*/5 * * * *', spec_version: '1'}]\n")
    # A GitHub API that accepts connections and never answers: reads hang until their timeout.
    blackhole = socket.socket()
    blackhole.bind(("127.0.0.1", 0))
    blackhole.listen(1024)
    spec = os.path.join(workdir, "spec.yaml")
    write_spec(spec, blackhole.getsockname()[1])
    try:
        hostile_phase(args, workdir, spec)
        connection_attacks_phase(args, workdir, spec)
        http_details_phase(args, workdir, spec)
        lifecycle_and_paths_phase(args, workdir, spec)
        basic_auth_phase(args, workdir, spec)
        listen_phase(args, workdir, spec)
        slow_pages_phase(args, workdir)
    finally:
        blackhole.close()


if __name__ == "__main__":
    sys.exit(main())
