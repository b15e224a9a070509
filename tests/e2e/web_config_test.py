#!/usr/bin/python3
"""--web.config.file end to end: the real exporter binary, certificates made with openssl,
requests made with curl, and a real Prometheus scraping over TLS with basic auth.

Every web config written here is also checked with `promtool check web-config` (Prometheus'
exporter-toolkit), so the files the exporter accepts are files the toolkit accepts unchanged.
Prints 'N passed, N failed'; exits 1 if anything failed.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from schedwatch_test import (Exporter, StartFailed, check, get_json, make_ca,  # noqa: E402
                             make_leaf, require_tools, start_prometheus, summary,
                             temporary_directory, wait_for)

# htpasswd -nbBC 10 "" "correct horse" | tr -d ':\n'   (also in tests/config/web/valid.yml)
PASSWORD = "correct horse"
PASSWORD_HASH = "$2y$10$IPRmZJAtKtMLf2aQY/1bIeV7yhqGgnQL.BO1vG8Q5psG4IYS8vjUW"


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


def serve(args, workdir, web_config):
    """The example spec over the web config; no HTTP probe: it may speak only TLS."""
    return Exporter(args.exporter, os.path.join(args.source_dir, "examples", "desired-state.yaml"),
                    workdir, "--web.config.file", web_config,
                    name=f"exporter-{os.path.basename(web_config)}", wait=None, timeout=15)


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
    require_tools("openssl", "curl", "prometheus")
    with temporary_directory("schedwatch-webconfig-") as workdir:
        run_all(args, workdir)
    return summary()


def run_all(args, workdir):
    promtool = shutil.which("promtool")
    tls_dir = os.path.join(workdir, "tls")
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
        exporter = serve(args, workdir, path)
        exporters.append(exporter)
        https = f"https://127.0.0.1:{exporter.port}"
        ready = wait_for(lambda: curl(https + "/-/ready", *ca)[1] == 200, 15, "TLS /-/ready")
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
        exporter = serve(args, workdir, path)
        exporters.append(exporter)
        https = f"https://127.0.0.1:{exporter.port}"
        ready = wait_for(lambda: curl(https + "/-/ready", *ca, *client)[1] == 200, 15,
                         "mTLS /-/ready")
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

        # VerifyClientCertIfGiven: no certificate is served (as exporter-toolkit does); one that
        # does not verify is not.
        path = write_web_config(workdir, "verify-if-given.yml", server_tls + (
            "  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: tls/ca.crt\n"),
            promtool)
        exporter = serve(args, workdir, path)
        exporters.append(exporter)
        https = f"https://127.0.0.1:{exporter.port}"
        ready = wait_for(lambda: curl(https + "/-/ready", *ca)[1] == 200, 15,
                         "VerifyClientCertIfGiven /-/ready without a certificate")
        check("VerifyClientCertIfGiven: a client without a certificate is served", ready,
              curl(https + "/metrics", *ca)[:2])
        check("VerifyClientCertIfGiven: a certificate from the CA is accepted",
              curl(https + "/metrics", *ca, *client)[1] == 200)
        code, status, _, body = curl(https + "/metrics", *ca, *stranger)
        check("VerifyClientCertIfGiven: a certificate from another CA is refused",
              refused(code, status, body), (code, status))

        # Cipher suites: Go's defaults (ECDHE with AEAD ciphers, the server's order), or the
        # configured ones. The test certificates have ECDSA keys.
        def tls12_cipher(port, ciphers):
            result = run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-tls1_2",
                          "-cipher", ciphers], input="", timeout=20)
            found = re.search(r"^\s*Cipher\s*:\s*(\S+)", result.stdout, re.M)
            return found.group(1) if found and found.group(1) != "0000" else None

        port = exporter.port
        for cipher in ("ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA384",
                       "ECDHE-ECDSA-AES128-CCM", "ECDHE-ECDSA-AES128-SHA256"):
            check(f"default cipher suites: {cipher} (not AEAD) is not offered",
                  tls12_cipher(port, cipher) is None)
        for cipher in ("ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
                       "ECDHE-ECDSA-CHACHA20-POLY1305"):
            check(f"default cipher suites: {cipher} is offered", tls12_cipher(port, cipher) == cipher)
        check("default cipher suites: the server's order wins over the client's",
              tls12_cipher(port, "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256")
              == "ECDHE-ECDSA-AES128-GCM-SHA256")
        path = write_web_config(workdir, "ciphers.yml", server_tls + (
            "  cipher_suites: [TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, "
            "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA]\n  prefer_server_cipher_suites: false\n"),
            promtool)
        exporter = serve(args, workdir, path)
        exporters.append(exporter)
        wait_for(lambda: curl(f"https://127.0.0.1:{exporter.port}/-/ready", *ca)[1] == 200, 15,
                 "cipher_suites /-/ready")
        port = exporter.port
        check("cipher_suites: a listed suite is offered",
              tls12_cipher(port, "ECDHE-ECDSA-CHACHA20-POLY1305") == "ECDHE-ECDSA-CHACHA20-POLY1305")
        check("cipher_suites: a listed CBC suite is offered",
              tls12_cipher(port, "ECDHE-ECDSA-AES256-SHA") == "ECDHE-ECDSA-AES256-SHA")
        check("cipher_suites: a suite not listed is not",
              tls12_cipher(port, "ECDHE-ECDSA-AES128-GCM-SHA256") is None)
        check("prefer_server_cipher_suites: false: the client's order wins",
              tls12_cipher(port, "ECDHE-ECDSA-AES256-SHA:ECDHE-ECDSA-CHACHA20-POLY1305")
              == "ECDHE-ECDSA-AES256-SHA")

        # TLS 1.3 only.
        path = write_web_config(workdir, "tls13.yml", server_tls + "  min_version: TLS13\n",
                                promtool)
        exporter = serve(args, workdir, path)
        exporters.append(exporter)
        https = f"https://127.0.0.1:{exporter.port}"
        ready = wait_for(lambda: curl(https + "/-/ready", *ca, "--tlsv1.3")[1] == 200, 15,
                         "TLS 1.3 /-/ready")
        check("min_version TLS13: TLS 1.3 works", ready, exporter.logs()[-2000:])
        code, status, _, _ = curl(https + "/metrics", *ca, "--tls-max", "1.2")
        check("min_version TLS13: curl --tls-max 1.2 is refused", status == 0 and code != 0,
              (code, status))

        # Basic auth over TLS; Prometheus scrapes with the password and the CA.
        path = write_web_config(workdir, "auth.yml", server_tls + (
            f"basic_auth_users:\n  prometheus: {PASSWORD_HASH}\n"), promtool)
        exporter = serve(args, workdir, path)
        exporters.append(exporter)
        https = f"https://127.0.0.1:{exporter.port}"
        right = ["--user", f"prometheus:{PASSWORD}"]
        ready = wait_for(lambda: curl(https + "/-/ready", *ca, *right)[1] == 200, 15,
                         "/-/ready with the password")
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

        scrape = {"scheme": "https", "static_configs": [{"targets": [f"127.0.0.1:{exporter.port}"]}],
                  "tls_config": {"ca_file": os.path.join(tls_dir, "ca.crt")}}
        config = {"global": {"scrape_interval": "1s"}, "scrape_configs": [
            dict(scrape, job_name="schedwatch-tls",
                 basic_auth={"username": "prometheus", "password": PASSWORD}),
            dict(scrape, job_name="schedwatch-wrong-password",
                 basic_auth={"username": "prometheus", "password": "wrong horse"})]}
        with start_prometheus(workdir, "prometheus", config) as prometheus:
            def up(job):
                query = urllib.parse.quote(f'up{{job="{job}"}}')
                result = get_json(f"{prometheus.url}/api/v1/query?query={query}",
                                  timeout=5)["data"]["result"]
                return result[0]["value"][1] if result else None

            check("Prometheus scrapes the exporter over TLS with basic auth: up == 1",
                  wait_for(lambda: up("schedwatch-tls") == "1", 60, "up == 1 in Prometheus",
                           interval=0.2, ignore=(OSError, KeyError)),
                  prometheus.logs()[-2000:])
            check("Prometheus with a wrong password: up == 0",
                  wait_for(lambda: up("schedwatch-wrong-password") == "0", 30,
                           "up == 0 in Prometheus", interval=0.2, ignore=(OSError, KeyError)))
    except StartFailed as error:
        check("every exporter starts", False, error)
    finally:
        for exporter in exporters:
            check(f"exporter ({os.path.basename(exporter.log_path)}) exits 0 on SIGTERM",
                  exporter.stop() == 0)

    # A bad web config stops the start with exit 2 and the file's position.
    spec = os.path.join(args.source_dir, "examples", "desired-state.yaml")
    bad = os.path.join(workdir, "bad.yml")
    with open(bad, "w") as out:
        out.write(server_tls + "  curve_preferences: [X25519]\n")
    result = run([args.exporter, "--config.file", spec, "--web.listen-address", "127.0.0.1:0",
                  "--web.config.file", bad], timeout=30)
    check("bad web config: exit 2", result.returncode == 2, (result.returncode, result.stderr))
    check("bad web config: file:line:column and field",
          f"{bad}:4:3: tls_server_config.curve_preferences: not supported by schedwatch"
          in result.stderr,
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


if __name__ == "__main__":
    sys.exit(main())
