#!/usr/bin/python3
"""--web.config.file end to end: the real exporter binary, certificates made with openssl,
requests made with curl, and a real Prometheus scraping over TLS with basic auth.

Every web config written here is also checked with `promtool check web-config` (Prometheus'
exporter-toolkit), so the files the exporter accepts are files the toolkit accepts unchanged.
Prints 'N passed, N failed'; exits 1 if anything failed.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

RESULTS = {"passed": 0, "failed": 0}

# htpasswd -nbBC 10 "" "correct horse" | tr -d ':\n'   (also in tests/config/web/valid.yml)
PASSWORD = "correct horse"
PASSWORD_HASH = "$2y$10$IPRmZJAtKtMLf2aQY/1bIeV7yhqGgnQL.BO1vG8Q5psG4IYS8vjUW"


def check(name, condition, detail=""):
    RESULTS["passed" if condition else "failed"] += 1
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f"  {detail}"),
          flush=True)
    return condition


def wait_until(predicate, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            result = predicate()
            if result:
                return result
        except Exception:  # noqa: BLE001 -- a peer still starting
            pass
        time.sleep(0.2)
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, **kwargs)


def curl(url, *options):
    """Returns (curl's exit code, HTTP status or 0, response headers lower-cased, body)."""
    result = subprocess.run(
        ["curl", "-sS", "--max-time", "10", "-D", "-", "-o", "/dev/stdout", "-w",
         "\n%{http_code}", *options, url], capture_output=True)
    text = result.stdout.decode(errors="replace")
    head, _, status = text.rpartition("\n")
    headers, body = {}, head
    if "\r\n\r\n" in head:
        header_text, body = head.split("\r\n\r\n", 1)
        for line in header_text.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return result.returncode, int(status or 0), headers, body


def openssl(*args, cwd):
    result = run(["openssl", *args], cwd=cwd)
    if result.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)}: {result.stderr}")


def make_ca(directory, name):
    openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{name}.key",
            cwd=directory)
    openssl("req", "-x509", "-new", "-key", f"{name}.key", "-subj", f"/CN=schedwatch test {name}",
            "-days", "2", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out", f"{name}.crt",
            cwd=directory)


def make_leaf(directory, name, ca, extensions):
    openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{name}.key",
            cwd=directory)
    openssl("req", "-new", "-key", f"{name}.key", "-subj", f"/CN={name}", "-out", f"{name}.csr",
            cwd=directory)
    with open(os.path.join(directory, f"{name}.ext"), "w") as out:
        out.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n" + extensions)
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.crt",
            cwd=directory)


class Exporter:
    def __init__(self, binary, source_dir, workdir, web_config):
        self.log_path = os.path.join(workdir, f"exporter-{os.path.basename(web_config)}.log")
        self.log = open(self.log_path, "w+")
        self.process = subprocess.Popen(
            [binary, "--config.file", os.path.join(source_dir, "examples", "desired-state.yaml"),
             "--web.listen-address", "127.0.0.1:0", "--web.config.file", web_config,
             "--refresh.interval", "1s", "--refresh.confirm-delay", "100ms"],
            stdout=self.log, stderr=self.log)
        match = wait_until(lambda: re.search(r"msg=listening .*port=(\d+)", self.logs()), 15)
        if not match:
            self.process.kill()
            raise RuntimeError("exporter did not start: " + self.logs())
        self.port = int(match.group(1))

    def logs(self):
        with open(self.log_path) as log:
            return log.read()

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def write_web_config(workdir, name, text, promtool):
    path = os.path.join(workdir, name)
    with open(path, "w") as out:
        out.write(text)
    if promtool:
        result = run([promtool, "check", "web-config", path])
        check(f"promtool (exporter-toolkit) accepts {name} too", result.returncode == 0,
              result.stdout + result.stderr)
    return path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    for tool in ("openssl", "curl", "prometheus"):
        if not shutil.which(tool):
            check(f"{tool} is installed (scripts/install-deps.sh with-test-tools)", False)
            print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
            return 1
    promtool = shutil.which("promtool")
    workdir = tempfile.mkdtemp(prefix="schedwatch-webconfig-")
    tls_dir = os.path.join(workdir, "tls")
    os.mkdir(tls_dir)
    make_ca(tls_dir, "ca")
    make_ca(tls_dir, "other-ca")
    make_leaf(tls_dir, "server", "ca",
              "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    make_leaf(tls_dir, "client", "ca", "extendedKeyUsage=clientAuth\n")
    make_leaf(tls_dir, "stranger", "other-ca", "extendedKeyUsage=clientAuth\n")
    ca = ["--cacert", os.path.join(tls_dir, "ca.crt")]
    client = ["--cert", os.path.join(tls_dir, "client.crt"),
              "--key", os.path.join(tls_dir, "client.key")]
    stranger = ["--cert", os.path.join(tls_dir, "stranger.crt"),
                "--key", os.path.join(tls_dir, "stranger.key")]
    # Relative paths: relative to the web config file's directory, as in the toolkit.
    server_tls = "tls_server_config:\n  cert_file: tls/server.crt\n  key_file: tls/server.key\n"
    exporters = []
    try:
        # TLS with configured headers.
        path = write_web_config(workdir, "tls.yml", server_tls + (
            "http_server_config:\n  headers:\n    X-Frame-Options: deny\n"
            "    X-Content-Type-Options: nosniff\n"
            "    Strict-Transport-Security: max-age=31536000\n"), promtool)
        exporter = Exporter(args.exporter, args.source_dir, workdir, path)
        exporters.append(exporter)
        https = f"https://127.0.0.1:{exporter.port}"
        ready = wait_until(lambda: curl(https + "/-/ready", *ca)[1] == 200, 15)
        check("TLS: ready over https", ready, exporter.logs()[-2000:])
        code, status, headers, body = curl(https + "/metrics", *ca)
        check("TLS: /metrics over https verified against the CA",
              status == 200 and "schedwatch_job_condition" in body, (code, status))
        check("headers: X-Frame-Options, X-Content-Type-Options, Strict-Transport-Security set",
              headers.get("x-frame-options") == "deny"
              and headers.get("x-content-type-options") == "nosniff"
              and headers.get("strict-transport-security") == "max-age=31536000", headers)
        code, status, _, _ = curl(f"http://127.0.0.1:{exporter.port}/metrics")
        check("TLS: plain HTTP to the TLS port gets no HTTP answer", status == 0 and code != 0,
              (code, status))
        code, status, _, _ = curl(https + "/metrics")
        check("TLS: a client without the CA refuses the server", status == 0 and code != 0,
              (code, status))

        # Client certificates.
        path = write_web_config(workdir, "mtls.yml", server_tls + (
            "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: tls/ca.crt\n"),
            promtool)
        exporter = Exporter(args.exporter, args.source_dir, workdir, path)
        exporters.append(exporter)
        https = f"https://127.0.0.1:{exporter.port}"
        ready = wait_until(lambda: curl(https + "/-/ready", *ca, *client)[1] == 200, 15)
        check("mTLS: a client certificate from the CA is accepted", ready,
              exporter.logs()[-2000:])
        # The toolkit fails the handshake; libmicrohttpd leaves the check to the server, which
        # answers 403. Either way nothing is served.
        def refused(code, status, body):
            return (status == 0 and code != 0) or (status == 403 and "schedwatch_" not in body)

        code, status, _, body = curl(https + "/metrics", *ca)
        check("mTLS: no client certificate is refused", refused(code, status, body),
              (code, status))
        code, status, _, body = curl(https + "/metrics", *ca, *stranger)
        check("mTLS: a certificate from another CA is refused", refused(code, status, body),
              (code, status))

        # TLS 1.3 only.
        path = write_web_config(workdir, "tls13.yml", server_tls + "  min_version: TLS13\n",
                                promtool)
        exporter = Exporter(args.exporter, args.source_dir, workdir, path)
        exporters.append(exporter)
        https = f"https://127.0.0.1:{exporter.port}"
        ready = wait_until(lambda: curl(https + "/-/ready", *ca, "--tlsv1.3")[1] == 200, 15)
        check("min_version TLS13: TLS 1.3 works", ready, exporter.logs()[-2000:])
        code, status, _, _ = curl(https + "/metrics", *ca, "--tls-max", "1.2")
        check("min_version TLS13: curl --tls-max 1.2 is refused", status == 0 and code != 0,
              (code, status))

        # Basic auth over TLS; Prometheus scrapes with the password and the CA.
        path = write_web_config(workdir, "auth.yml", server_tls + (
            f"basic_auth_users:\n  prometheus: {PASSWORD_HASH}\n"), promtool)
        exporter = Exporter(args.exporter, args.source_dir, workdir, path)
        exporters.append(exporter)
        https = f"https://127.0.0.1:{exporter.port}"
        right = ["--user", f"prometheus:{PASSWORD}"]
        ready = wait_until(lambda: curl(https + "/-/ready", *ca, *right)[1] == 200, 15)
        check("basic auth: the right password gets 200", ready, exporter.logs()[-2000:])
        code, status, headers, _ = curl(https + "/metrics", *ca)
        check("basic auth: no password gets 401 with a Basic challenge",
              status == 401 and headers.get("www-authenticate", "").startswith("Basic"),
              (status, headers))
        code, status, _, _ = curl(https + "/metrics", *ca, "--user", "prometheus:wrong horse")
        check("basic auth: a wrong password gets 401", status == 401, status)
        code, status, _, _ = curl(https + "/metrics", *ca, "--user", f"nobody:{PASSWORD}")
        check("basic auth: an unknown user gets 401", status == 401, status)
        check("basic auth: the password never reaches the log", PASSWORD not in exporter.logs()
              and "wrong horse" not in exporter.logs() and "IPRmZJ" not in exporter.logs())

        prometheus_port = free_port()
        prometheus_config = os.path.join(workdir, "prometheus.yml")
        scrape = {"scheme": "https", "static_configs": [{"targets": [f"127.0.0.1:{exporter.port}"]}],
                  "tls_config": {"ca_file": os.path.join(tls_dir, "ca.crt")}}
        config = {"global": {"scrape_interval": "1s"}, "scrape_configs": [
            dict(scrape, job_name="schedwatch-tls",
                 basic_auth={"username": "prometheus", "password": PASSWORD}),
            dict(scrape, job_name="schedwatch-wrong-password",
                 basic_auth={"username": "prometheus", "password": "wrong horse"})]}
        with open(prometheus_config, "w") as out:
            json.dump(config, out)  # JSON is YAML
        prometheus_log = open(os.path.join(workdir, "prometheus.log"), "w+")
        prometheus = subprocess.Popen(
            ["prometheus", f"--config.file={prometheus_config}",
             f"--storage.tsdb.path={workdir}/tsdb",
             f"--web.listen-address=127.0.0.1:{prometheus_port}"],
            stdout=prometheus_log, stderr=subprocess.STDOUT)
        try:
            def up(job):
                query = urllib.parse.quote(f'up{{job="{job}"}}')
                url = f"http://127.0.0.1:{prometheus_port}/api/v1/query?query={query}"
                with urllib.request.urlopen(url, timeout=5) as response:
                    result = json.loads(response.read())["data"]["result"]
                return result[0]["value"][1] if result else None

            check("Prometheus scrapes the exporter over TLS with basic auth: up == 1",
                  wait_until(lambda: up("schedwatch-tls") == "1", 60),
                  open(prometheus_log.name).read()[-2000:])
            check("Prometheus with a wrong password: up == 0",
                  wait_until(lambda: up("schedwatch-wrong-password") == "0", 30))
        finally:
            prometheus.send_signal(signal.SIGTERM)
            try:
                prometheus.wait(timeout=20)
            except subprocess.TimeoutExpired:
                prometheus.kill()
                prometheus.wait()
    except RuntimeError as error:  # an exporter that did not start
        check("every exporter starts", False, error)
    finally:
        for exporter in exporters:
            check(f"exporter ({os.path.basename(exporter.log_path)}) exits 0 on SIGTERM",
                  exporter.stop() == 0)

    # A bad web config stops the start with exit 2 and the file's position.
    spec = os.path.join(args.source_dir, "examples", "desired-state.yaml")
    bad = os.path.join(workdir, "bad.yml")
    with open(bad, "w") as out:
        out.write(server_tls + "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n")
    result = run([args.exporter, "--config.file", spec, "--web.listen-address", "127.0.0.1:0",
                  "--web.config.file", bad], timeout=30)
    check("bad web config: exit 2", result.returncode == 2, (result.returncode, result.stderr))
    check("bad web config: file:line:column and field",
          f"{bad}:4:3: tls_server_config.cipher_suites: not supported by schedwatch" in result.stderr,
          result.stderr)
    missing = os.path.join(workdir, "missing-cert.yml")
    with open(missing, "w") as out:
        out.write("tls_server_config:\n  cert_file: nowhere.crt\n  key_file: tls/server.key\n")
    result = run([args.exporter, "--config.file", spec, "--web.listen-address", "127.0.0.1:0",
                  "--web.config.file", missing], timeout=30)
    check("missing certificate file: exit 2 naming it",
          result.returncode == 2 and os.path.join(workdir, "nowhere.crt") in result.stderr,
          (result.returncode, result.stderr))
    fifo = os.path.join(workdir, "fifo.yml")
    os.mkfifo(fifo)
    result = run([args.exporter, "--config.file", spec, "--web.listen-address", "127.0.0.1:0",
                  "--web.config.file", fifo], timeout=30)
    check("a FIFO as web config: exit 2 without waiting for a writer",
          result.returncode == 2 and "not a regular file" in result.stderr,
          (result.returncode, result.stderr))

    shutil.rmtree(workdir, ignore_errors=True)
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
