#!/usr/bin/python3
"""The real schedwatch_exporter against hostile input: whatever a file, a watched job, a template
or an API answer holds must never crash, hang or blind the watcher, nor leak a token.

- a FIFO or /dev/zero as --config.file: exit 2 at once (it used to hang, deaf to SIGTERM); a
  reload onto a FIFO is refused at once
- a FIFO, /dev/zero, a 600 MiB sparse file or `objects: 5` as a snapshot: that source is down,
  its roles unknown, the exporter stays up and small
- a checkpoint of 9999999999999999999: a counted bad_checkpoint, progress unknown (it used to
  abort with std::out_of_range at every start)
- durations at the top of their range: a clear error and exit 2
- a self-referencing alias in a Kubernetes CronJob template: refused (it used to be SIGSEGV)
- API servers that echo the Authorization header in a long 401: no prefix of either token of 8
  characters or more in stderr, /, /api/v1/status or /metrics
Prints 'N passed, N failed'.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
sys.path.insert(0, os.path.join(HERE, "..", "sources", "github_actions"))
sys.path.insert(0, os.path.join(HERE, "..", "sources", "kubernetes"))
from fake_apiserver import ApiServer  # noqa: E402
from fake_github import FakeGitHub, Repo, make_server  # noqa: E402
from schedwatch_test import (Exporter, check, summary, temporary_directory,  # noqa: E402
                             wait_for)

KUBE_TOKEN = "k8s-echo-token-0123456789abcdefghij"
GITHUB_TOKEN = "ghp_echoTOKEN0123456789abcdefghij"


def run(args, seconds=10):
    """Runs the exporter to its end; (exit code, stderr, seconds taken). Kills it after `seconds`."""
    started = time.time()
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)
        try:
            out, err = process.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        return None, err, time.time() - started
    return process.returncode, out + err, time.time() - started


def serve(binary, spec, workdir, *extra):
    return Exporter(binary, spec, workdir, "--refresh.source-timeout", "3s",
                    "--web.enable-lifecycle", *extra, wait="ready")


def hostile_specs(binary, workdir):
    fifo = os.path.join(workdir, "fifo-spec.yaml")
    os.mkfifo(fifo)
    zero = os.path.join(workdir, "zero-spec.yaml")
    os.symlink("/dev/zero", zero)
    for name, path, what in (("FIFO", fifo, "a FIFO"), ("/dev/zero", zero, "a character device")):
        for mode in ([], ["check"]):
            code, output, took = run([binary, *mode, "--config.file", path,
                                      "--web.listen-address", "127.0.0.1:0"])
            label = f"{name} as --config.file{' (check)' if mode else ''}"
            check(f"{label}: exit 2", code == 2, f"code {code} output {output!r}")
            check(f"{label}: at once ({took:.2f}s)", took < 10)  # the old exporter never returned
            check(f"{label}: says why", f"it is {what}, not a regular file" in output, output)

    base = ["--web.listen-address", "127.0.0.1:0"]
    spec = os.path.join(workdir, "ok-spec.yaml")
    with open(spec, "w") as out:
        out.write("version: 1\nsources: {s: {type: file, path: live.yaml}}\njobs: []\n")
    for flag in ("--refresh.interval", "--refresh.source-timeout", "--refresh.confirm-delay"):
        code, output, _ = run([binary, "--config.file", spec, *base, flag, "1000y"])
        check(f"{flag} 1000y: exit 2", code == 2, f"code {code}")
        check(f"{flag} 1000y: says the maximum",
              'duration "1000y" is longer than the maximum of 1d' in output, output)
    with open(spec, "w") as out:
        out.write("version: 1\nsources: {s: {type: file, path: live.yaml}}\njobs:\n"
                  "  - {role: r, source: s, schedule: '@daily', spec_version: '1',\n"
                  "     start_grace: 292471208y35w2d7h12m55s807ms}\n")
    code, output, _ = run([binary, "check", "--config.file", spec])
    check("start_grace at the top of int64: check exits 2", code == 2, f"code {code} {output}")
    check("start_grace at the top of int64: file:line:column and field",
          f"{spec}:5:19: jobs[0].start_grace: duration" in output, output)


def hostile_snapshots(binary, workdir):
    directory = os.path.join(workdir, "snapshots")
    os.mkdir(directory)
    os.mkfifo(os.path.join(directory, "fifo.yaml"))
    os.symlink("/dev/zero", os.path.join(directory, "zero.yaml"))
    with open(os.path.join(directory, "sparse.yaml"), "w") as out:
        out.truncate(600 << 20)
    with open(os.path.join(directory, "bad.yaml"), "w") as out:
        out.write("objects: 5\n")
    with open(os.path.join(directory, "good.yaml"), "w") as out:
        out.write("objects: [{id: g, role: good, schedule: '*/5 * * * *', spec_version: '1'}]\n"
                  "runs: [{role: good, started: -3m, finished: -2m, result: success}]\n")
    with open(os.path.join(directory, "ingest.checkpoint"), "w") as out:
        out.write("9999999999999999999\n")
    names = ["fifo", "zero", "sparse", "bad"]
    spec = os.path.join(directory, "spec.yaml")
    with open(spec, "w") as out:
        out.write("version: 1\nsources:\n")
        for name in names + ["good"]:
            out.write(f"  {name}: {{type: file, path: {name}.yaml}}\n")
        out.write("jobs:\n")
        for name in names + ["good"]:
            out.write(f"  - {{role: {name}, source: {name}, schedule: '*/5 * * * *', "
                      "spec_version: '1'}\n")
        out.write("  - {role: ingest, source: good, schedule: '*/5 * * * *', spec_version: '1',\n"
                  "     progress: {file: ingest.checkpoint, stale_after: 1h}}\n")
    exporter = serve(binary, spec, directory)
    try:
        metrics = exporter.metrics()
        for name in names:
            check(f"{name} snapshot: source down",
                  f'schedwatch_source_up{{source="{name}",type="file"}} 0' in metrics)
            check(f"{name} snapshot: role unknown",
                  f'schedwatch_job_condition{{role="{name}",source="{name}",condition="unknown"}} 1'
                  in metrics)
        check("good snapshot: source up",
              'schedwatch_source_up{source="good",type="file"} 1' in metrics)
        check("good snapshot: role ok",
              'schedwatch_job_condition{role="good",source="good",condition="ok"} 1' in metrics)
        # A few refreshes later, still up and answering.
        heartbeat = re.compile(r"^schedwatch_exporter_last_cycle_timestamp_seconds (\S+)$", re.M)
        before = heartbeat.search(metrics).group(1)
        check("a later refresh completes", wait_for(
            lambda: heartbeat.search(exporter.metrics()).group(1) != before, 10,
            "a later refresh"))
        check("the exporter is still running", exporter.process.poll() is None)
        check("healthy", exporter.get("/-/healthy").status == 200)
        metrics = exporter.metrics()
        check("bad checkpoint: counted",
              re.search(r'schedwatch_source_errors_total\{reason="bad_checkpoint",source="good"\} '
                        r"[1-9]", metrics) is not None)
        check("bad checkpoint: progress unknown",
              'schedwatch_job_last_progress_timestamp_seconds{role="ingest"' not in metrics)
        status = exporter.status()
        good = next(s for s in status["sources"] if s["source"] == "good")
        check("bad checkpoint: on /api/v1/status",
              any(p["reason"] == "bad_checkpoint" for p in good["problems"]), good)
        check("bad checkpoint: on the status page", "bad_checkpoint" in exporter.get("/").text)
        fifo = next(s for s in status["sources"] if s["source"] == "fifo")
        check("FIFO snapshot: the error says why", "it is a FIFO" in fifo["error"], fifo["error"])
        # A reload that finds a FIFO in the spec's place answers at once and keeps the last spec.
        os.rename(spec, spec + ".good")
        os.mkfifo(spec)
        started = time.time()
        code, _, body = exporter.post("/-/reload")
        body = body.decode()
        check(f"reload onto a FIFO spec: refused at once ({time.time() - started:.2f}s)",
              code == 500 and "it is a FIFO" in body and time.time() - started < 10,
              f"{code} {body}")
        check("reload onto a FIFO spec: still serving", exporter.get("/-/healthy").status == 200)
        peak = exporter.rss_kib("VmHWM") / 1024
        print(f"peak RSS with a 600 MiB sparse snapshot and /dev/zero: {peak:.0f} MiB")
        # Well below the 600 MiB a read of the sparse file would take (~14 MiB in a release build;
        # ASan's shadow memory and quarantine add a few hundred).
        check("memory stays far below the snapshot's size (< 450 MiB)", 0 < peak < 450,
              f"{peak} MiB")
        check("SIGTERM stops it", exporter.stop() == 0)
    finally:
        if exporter.alive():
            exporter.kill()


def write_kubeconfig(path, port):
    with open(path, "w") as out:
        out.write("apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                  "contexts: [{name: t, context: {cluster: c, user: u}}]\n"
                  f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
                  f"users: [{{name: u, user: {{token: {KUBE_TOKEN}}}}}]\n")


def leaked_prefix(token, text):
    for length in range(len(token), 7, -1):
        if token[:length] in text:
            return token[:length]
    return None


def echoed_tokens(binary, workdir):
    directory = os.path.join(workdir, "echo")
    os.mkdir(directory)
    # The message is cut at 300 characters; the token straddles the cut.
    apiserver = ApiServer(directory, {
        "token": KUBE_TOKEN,
        "faults": [{"status": 401, "reason": "Unauthorized",
                    "message": "x" * 283 + " {authorization}"}]})
    state = FakeGitHub()
    state.add_repo(Repo("acme/echo", 1, token=GITHUB_TOKEN, mode="echo_token"))
    github = make_server(state)
    with open(os.path.join(directory, "github-token"), "w") as out:
        out.write(GITHUB_TOKEN + "\n")
    write_kubeconfig(os.path.join(directory, "kubeconfig"), apiserver.port)
    spec = os.path.join(directory, "spec.yaml")
    with open(spec, "w") as out:
        out.write(f"""version: 1
sources:
  prod: {{type: kubernetes, kubeconfig: kubeconfig}}
  gh:
    type: github_actions
    repository: acme/echo
    token_file: github-token
    api_url: http://127.0.0.1:{github.server_address[1]}
jobs:
  - {{role: k, source: prod, schedule: '*/5 * * * *', spec_version: '1'}}
  - {{role: g, source: gh, schedule: '*/5 * * * *', spec_version: '1',
     workflow: .github/workflows/g.yml}}
""")
    exporter = serve(binary, spec, directory, "--log.level", "debug")
    try:
        wait_for(lambda: "401" in exporter.get("/api/v1/status").text, 20,
                 "the Kubernetes 401 on /api/v1/status")
        status = exporter.get("/api/v1/status").text
        check("the Kubernetes 401 is reported", "401" in status and "prod" in status)
        check("the GitHub 401 is reported", "unauthorized" in status)
        pages = {"stderr": exporter.logs(), "/": exporter.get("/").text,
                 "/api/v1/status": status, "/metrics": exporter.metrics()}
        for token, who in ((KUBE_TOKEN, "Kubernetes"), (GITHUB_TOKEN, "GitHub")):
            for where, text in pages.items():
                leaked = leaked_prefix(token, text)
                check(f"no part of the {who} token in {where}", leaked is None,
                      f"leaked {leaked!r}")
        exporter.stop()
    finally:
        if exporter.alive():
            exporter.kill()
        github.shutdown()
        apiserver.stop()


def self_referencing_template(binary, workdir):
    directory = os.path.join(workdir, "template")
    os.mkdir(directory)
    apiserver = ApiServer(directory, {"token": KUBE_TOKEN, "cronjobs": []})
    write_kubeconfig(os.path.join(directory, "kubeconfig"), apiserver.port)
    with open(os.path.join(directory, "loop.yaml"), "w") as out:
        out.write("apiVersion: batch/v1\nkind: CronJob\nmetadata: &m {name: x, loop: *m}\n")
    spec = os.path.join(directory, "spec.yaml")
    with open(spec, "w") as out:
        out.write("version: 1\nsources: {prod: {type: kubernetes, kubeconfig: kubeconfig,"
                  " namespaces: [batch]}}\njobs:\n"
                  "  - {role: x, source: prod, schedule: '*/5 * * * *', spec_version: '1',"
                  " template: loop.yaml}\n")
    try:
        code, output, _ = run([binary, "reconcile", "--config.file", spec, "--apply",
                               "--lock-file", os.path.join(directory, "lock"),
                               "--refresh.confirm-delay", "10ms"], 60)
        check("self-referencing template: reconcile does not crash", code == 1,
              f"code {code} {output}")
        check("self-referencing template: refused with line:column",
              'template refused: 3:30: alias "m" refers to a node that contains it' in output,
              output)
    finally:
        apiserver.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    with temporary_directory("schedwatch-hostile-") as workdir:
        hostile_specs(args.exporter, workdir)
        hostile_snapshots(args.exporter, workdir)
        echoed_tokens(args.exporter, workdir)
        self_referencing_template(args.exporter, workdir)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
