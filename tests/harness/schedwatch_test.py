"""The shared harness of schedwatch's Python test scripts and benchmarks.

A script imports it by path, so it still runs by hand with /usr/bin/python3:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
    from schedwatch_test import check, finish, ...  # noqa: E402

It holds what every script needs once: counting checks and the final 'N passed, N failed'
line, bounded polling that says what it waited for, free ports, HTTP requests that return
error answers instead of raising, temporary directories, child processes with their output in a
log file, the real schedwatch_exporter binary, the real peers (Prometheus, Alertmanager,
Pushgateway, a webhook receiver, cron with its own rsyslogd) and a test PKI made with openssl.
"""
import argparse
import contextlib
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import namedtuple
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RESULTS = {"passed": 0, "failed": 0}
INSTALL_HINT = "scripts/install-deps.sh with-test-tools"


# --- checks ---------------------------------------------------------------------------------

def check(name, condition, detail=""):
    """Counts one check and prints `ok   name` or `FAIL name  detail`; returns `condition`."""
    RESULTS["passed" if condition else "failed"] += 1
    if condition:
        print(f"ok   {name}", flush=True)
    else:
        text = str(detail).strip()
        if "\n" in text:
            print(f"FAIL {name}\n    " + text.replace("\n", "\n    "), flush=True)
        else:
            print(f"FAIL {name}" + (f"  {text}" if text else ""), flush=True)
    return condition


def failed():
    return RESULTS["failed"] > 0


def summary():
    """`N passed, N failed`, and the exit code: 1 if a check failed or none ran."""
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed", flush=True)
    return 1 if RESULTS["failed"] or not RESULTS["passed"] else 0


def finish():
    """Prints the summary and exits with its code."""
    sys.exit(summary())


def fail_setup(message):
    """A precondition that does not hold: one failed check named after it, then the summary."""
    check("setup: " + message, False)
    finish()


def require_tools(*tools):
    """Fails (one check, then exit) at the first tool that is not on PATH."""
    for tool in tools:
        if not shutil.which(tool):
            check(f"{tool} is installed ({INSTALL_HINT})", False)
            finish()


# --- waiting --------------------------------------------------------------------------------

def wait_for(predicate, timeout, what, interval=0.1, ignore=(), until=None, required=False):
    """Polls predicate() until it returns something true (returned) or `timeout` seconds pass
    (or the monotonic time `until`, if sooner). On timeout prints what it waited for and the
    last value, and returns that last value (None if it raised one of `ignore`, exceptions that
    mean "not yet", such as a peer still starting), or with `required` raises TimeoutError."""
    end = time.monotonic() + max(timeout, 0)
    if until is not None:
        end = min(end, until)
    while True:
        try:
            value = predicate()
        except ignore as error:
            value = None
            last = error
        else:
            last = value
            if value:
                return value
        if time.monotonic() >= end:
            text = repr(last)
            print(f"note: gave up waiting for {what} after {timeout:.0f}s "
                  f"(last: {text[:300]}{'...' if len(text) > 300 else ''})", flush=True)
            if required:
                raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
            return value
        time.sleep(interval)


def wait_for_peer(predicate, timeout, what):
    """wait_for a real peer (Prometheus, Alertmanager): polled every 0.5 s, and any exception
    (not listening yet, an answer without the data yet) means "not yet"."""
    return wait_for(predicate, timeout, what, interval=0.5, ignore=(Exception,))


def held(predicate, seconds):
    """predicate() stays true for `seconds` (polled): "nothing changes" needs a window."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if not predicate():
            return False
        time.sleep(0.25)
    return predicate()


def unchanged(read, seconds):
    """read() returns the same value for `seconds` (polled)."""
    first = read()
    return held(lambda: read() == first, seconds)


def free_port():
    """A TCP port on 127.0.0.1 free right now (for peers that cannot listen on port 0)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- HTTP -----------------------------------------------------------------------------------

class Reply(namedtuple("Reply", "status headers body")):
    """An HTTP answer: status, headers (a dict), body (bytes); error statuses included."""

    @property
    def text(self):
        return self.body.decode(errors="replace")

    def json(self):
        return json.loads(self.body)


def request(url, method="GET", headers=None, data=None, timeout=10, context=None):
    """One HTTP request. An error status is an answer (a Reply), not an exception; no answer at
    all (refused, reset, timed out) raises OSError."""
    req = urllib.request.Request(url, method=method, headers=headers or {}, data=data)
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as response:
            return Reply(response.status, dict(response.headers), response.read())
    except urllib.error.HTTPError as error:
        return Reply(error.code, dict(error.headers), error.read())


def get(url, headers=None, timeout=10, context=None):
    return request(url, headers=headers, timeout=timeout, context=context)


def post(url, data=None, headers=None, timeout=10):
    return request(url, method="POST", headers=headers, data=data, timeout=timeout)


def curl_timed(url, *options, max_time=5):
    """(HTTP status, seconds) of one request by curl, which gives up after max_time (status 0)."""
    result = subprocess.run(["curl", "-g", "-s", "-o", "/dev/null", "--max-time", str(max_time),
                             "-w", "%{http_code} %{time_total}", *options, url],
                            capture_output=True, text=True)
    code, seconds = result.stdout.split()
    return int(code), float(seconds)


def scrape_times(url, count, gzip=False):
    """`count` scrapes of `url` with curl: their times in ms, sorted, and the last one's size."""
    command = ["curl", "-s", "-o", "/dev/null", "-w", "%{time_total} %{size_download}\n"]
    if gzip:
        command += ["-H", "Accept-Encoding: gzip"]
    times, size = [], 0
    for _ in range(count):
        out = subprocess.run(command + [url], capture_output=True, text=True).stdout.split()
        times.append(float(out[0]) * 1000)
        size = int(out[1])
    return sorted(times), size


def proc_status_kib(pid, field="VmRSS"):
    """A /proc/PID/status figure in KiB: VmRSS, or VmHWM (the peak)."""
    with open(f"/proc/{pid}/status") as status:
        return int(re.search(field + r":\s+(\d+) kB", status.read()).group(1))


def get_json(url, timeout=10):
    """The JSON body of a 200 answer; any other status raises OSError."""
    reply = get(url, timeout=timeout)
    if reply.status != 200:
        raise OSError(f"GET {url}: HTTP {reply.status}: {reply.text[:300]}")
    return reply.json()


# --- files and processes --------------------------------------------------------------------

@contextlib.contextmanager
def temporary_directory(prefix, keep_on_failure=False):
    """A scratch directory, removed at the end (kept and named when asked and a check failed)."""
    path = tempfile.mkdtemp(prefix=prefix)
    try:
        yield path
    finally:
        if keep_on_failure and failed():
            print(f"kept {path} for inspection")
        else:
            shutil.rmtree(path, ignore_errors=True)


def run_in_temporary_directory(prefix, run, *options, keep_on_failure=False):
    """A test script's main: parses its required options (e.g. "--exporter"), calls
    run(args, workdir) in a temporary directory and returns summary()'s exit code."""
    parser = argparse.ArgumentParser()
    for option in options:
        parser.add_argument(option, required=True)
    args = parser.parse_args()
    with temporary_directory(prefix, keep_on_failure) as workdir:
        run(args, workdir)
    return summary()


def run_tool(*args, timeout=60):
    """Runs one of our binaries to its end: (exit code, stdout, stderr)."""
    result = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    return result.returncode, result.stdout, result.stderr


def check_draft_settles(exporter, draft_path, draft):
    """The checks of a draft `discover` wrote: `check` accepts it, and discover on it adds
    nothing."""
    code, _, err = run_tool(exporter, "check", "--config.file", draft_path)
    check("check accepts the draft", code == 0, err)
    code, out, err = run_tool(exporter, "discover", "--config.file", draft_path)
    check("discover on the draft adds nothing", code == 0 and out == draft, err)


def read_text(path):
    with open(path, errors="replace") as f:
        return f.read()


def write_text(path, text):
    with open(path, "w") as out:
        out.write(text)
    return path


def replace_file(path, text):
    """Writes through a temporary file and a rename: readers never see half a file."""
    write_text(path + ".tmp", text)
    os.replace(path + ".tmp", path)
    return path


def run_records(directory, role):
    """The JSON run records schedwatch_run wrote for `role` under `directory`, oldest first
    (one being replaced is left out)."""
    found = []
    for path in sorted(glob.glob(os.path.join(directory, role, "*.json"))):
        try:
            with open(path) as f:
                found.append(json.load(f))
        except (OSError, ValueError):
            pass
    return found


class Process:
    """A child process with stdout and stderr in a log file; stops with SIGTERM, then SIGKILL
    after `stop_timeout` seconds. A context manager that stops it."""

    def __init__(self, command, log_path, env=None, stop_timeout=10, **popen):
        self.command = command
        self.log_path = log_path
        self.stop_timeout = stop_timeout
        self.log = open(log_path, "w+")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL,
                                        env=None if env is None else {**os.environ, **env},
                                        **popen)
        self.pid = self.process.pid

    def logs(self):
        return read_text(self.log_path)

    def alive(self):
        return self.process.poll() is None

    def send_signal(self, sig):
        self.process.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout=None):
        """Sends `sig` (if still running) and waits; SIGKILL after the bound. The exit code."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=self.stop_timeout if timeout is None else timeout)
            except subprocess.TimeoutExpired:
                print(f"note: {os.path.basename(self.command[0])} ignored {sig!s}; killing it")
                self.process.kill()
                self.process.wait()
        self.log.close()
        return self.process.returncode

    def kill(self):
        return self.stop(signal.SIGKILL)

    def rss_kib(self, field="VmRSS"):
        """VmRSS (or VmHWM, the peak) in KiB."""
        return proc_status_kib(self.pid, field)

    def open_fds(self):
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class StartFailed(RuntimeError):
    pass


class Exporter(Process):
    """The real schedwatch_exporter, serving `spec` on loopback port 0.

    Waits until it logs its listening ports, then (wait="metrics") until /metrics answers over
    plain HTTP (any status: basic auth answers 401), or (wait="ready") until /-/ready is 200,
    or (wait=None) not at all (TLS). If it exits meanwhile or `timeout` passes, prints its log
    and raises StartFailed. `interval` or `confirm_delay` None leaves that flag out.
    """

    def __init__(self, binary, spec, workdir, *extra, name="exporter", interval="1s",
                 confirm_delay="100ms", listen=("127.0.0.1:0",), env=None, wait="metrics",
                 timeout=20, stop_timeout=10):
        command = [binary, "--config.file", spec]
        if interval:
            command += ["--refresh.interval", interval]
        if confirm_delay:
            command += ["--refresh.confirm-delay", confirm_delay]
        for address in listen:
            command += ["--web.listen-address", address]
        super().__init__(command + list(extra), os.path.join(workdir, name + ".log"), env=env,
                         stop_timeout=stop_timeout)
        self.name = name
        self.ports = self._wait_started(len(listen), wait, timeout)
        self.port = self.ports[0]
        self.base = f"http://127.0.0.1:{self.port}"

    def _wait_started(self, count, wait, timeout):
        def ports():
            if not self.alive():
                raise StartFailed(f"{self.name} exited with {self.process.returncode}")
            found = [int(p) for p in re.findall(r"msg=listening .*port=(\d+)", self.logs())]
            return found if len(found) == count else None

        def answers():
            if not self.alive():
                raise StartFailed(f"{self.name} exited with {self.process.returncode}")
            try:
                reply = get(f"http://127.0.0.1:{found[0]}/" +
                            ("-/ready" if wait == "ready" else "metrics"), timeout=30)
            except OSError:
                return False
            return reply.status == 200 if wait == "ready" else True

        started = time.monotonic()
        try:
            found = wait_for(ports, timeout, f"{self.name} to listen", interval=0.05)
            if found and wait:
                left = timeout - (time.monotonic() - started)
                if not wait_for(answers, left, f"{self.name} to answer /{wait}", interval=0.05):
                    raise StartFailed(f"{self.name} never answered /{wait}")
            elif not found:
                raise StartFailed(f"{self.name} did not start")
        except StartFailed as error:
            self.stop()
            print(f"--- {self.log_path}\n{self.logs()[-4000:]}", flush=True)
            raise StartFailed(f"{error}: {self.logs()[-2000:]}") from None
        return found

    def get(self, path, headers=None, timeout=10):
        return get(self.base + path, headers=headers, timeout=timeout)

    def post(self, path, data=None, headers=None, timeout=10):
        return post(self.base + path, data=data, headers=headers, timeout=timeout)

    def metrics(self, path="/metrics"):
        return self.get(path).text

    def status(self):
        """/api/v1/status as JSON, or None while it does not answer 200."""
        try:
            reply = self.get("/api/v1/status")
        except OSError:
            return None
        return reply.json() if reply.status == 200 else None

    def wait_status(self, predicate, timeout=20, what="the status to change"):
        """The first status after a complete refresh that satisfies predicate: (status, True);
        else (the last status, False)."""
        last = [{}]

        def done():
            status = self.status() or {"complete": False}
            last[0] = status
            return status.get("complete") and predicate(status)

        ok = wait_for(done, timeout, what, interval=0.2)
        return last[0], bool(ok)



# --- real peers -----------------------------------------------------------------------------

def status_by_name(exporter):
    """(roles by name, sources by name) from /api/v1/status; empty while it does not answer."""
    document = exporter.status() or {"roles": [], "sources": []}
    return ({r["role"]: r for r in document["roles"]},
            {s["source"]: s for s in document["sources"]})


def conditions(exporter, role):
    """A role's conditions on /api/v1/status; [] while it does not show."""
    return status_by_name(exporter)[0].get(role, {}).get("conditions", [])


class Peer(Process):
    """A server on a port of its own, with its log at workdir/name.log."""

    def __init__(self, command, workdir, name, port):
        super().__init__(command, os.path.join(workdir, f"{name}.log"), stop_timeout=15)
        self.name = name
        self.port = port
        self.address = f"127.0.0.1:{port}"
        self.url = f"http://{self.address}"

    def wait_ready(self, timeout, path="/-/ready"):
        def ready():
            if not self.alive():
                raise StartFailed(f"{self.name} exited:\n" + self.logs()[-3000:])
            return get(self.url + path).status == 200
        wait_for(ready, timeout, f"{self.name} to be ready", interval=0.5, ignore=(OSError,),
                 required=True)


def write_json_config(path, config):
    """Prometheus and Alertmanager read YAML, and JSON is YAML."""
    with open(path, "w") as out:
        json.dump(config, out, indent=1)
    return path


def start_prometheus(workdir, name, config, *flags):
    """/usr/bin/prometheus with `config` (a dict, or the path of a file) on a free port, its
    TSDB in workdir/name-tsdb."""
    if isinstance(config, dict):
        config = write_json_config(os.path.join(workdir, f"{name}.yml"), config)
    port = free_port()
    return Peer(["prometheus", f"--config.file={config}",
                 f"--storage.tsdb.path={os.path.join(workdir, name + '-tsdb')}",
                 f"--web.listen-address=127.0.0.1:{port}", *flags], workdir, name, port)


def start_alertmanager(workdir, config_file, name="alertmanager"):
    port = free_port()
    return Peer(["prometheus-alertmanager", f"--config.file={config_file}",
                 f"--storage.path={os.path.join(workdir, name + '-data')}",
                 f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="],
                workdir, name, port)


def start_pushgateway(workdir, name="pushgateway"):
    port = free_port()
    return Peer(["prometheus-pushgateway", f"--web.listen-address=127.0.0.1:{port}"],
                workdir, name, port)


def prometheus_query(url, expr):
    return get_json(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))[
        "data"]["result"]


def firing(url):
    """Labels of the alerts a Prometheus at `url` has firing."""
    alerts = get_json(f"{url}/api/v1/alerts")["data"]["alerts"]
    return [alert["labels"] for alert in alerts if alert["state"] == "firing"]


def alertmanager_config(snippet, receiver_url, watchdog_repeat):
    """The rulegen's alertmanager.yml snippet (a dict) made a test config: every receiver but
    the Watchdog's posts to `receiver_url`, and the timers are seconds, not minutes."""
    for receiver in snippet["receivers"]:
        if receiver["name"] != "schedwatch-watchdog":
            receiver["webhook_configs"] = [{"url": receiver_url, "send_resolved": False}]
    snippet["route"].update(group_wait="1s", group_interval="2s", repeat_interval="1h")
    for route in snippet["route"]["routes"]:
        watchdog = "Watchdog" in str(route)
        route.update(group_wait="0s" if watchdog else "1s", group_interval="2s",
                     repeat_interval=watchdog_repeat if watchdog else "1h")
    return snippet


class Receiver:
    """A webhook receiver on loopback recording every POST: (time, path, body)."""

    def __init__(self):
        self.posts = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 -- http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver.lock:
                    receiver.posts.append((time.time(), self.path, json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def alerts(self, path, since=0.0):
        with self.lock:
            return [(t, alert) for t, p, body in self.posts if p == path and t >= since
                    for alert in body.get("alerts", [])]

    def heartbeats(self):
        with self.lock:
            return [t for t, p, _ in self.posts if p == "/heartbeat"]

    def last_heartbeat(self):
        times = self.heartbeats()
        return max(times) if times else None

    def close(self):
        self.server.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Peers(dict):
    """Named processes (exporters, real peers) that end together: a context manager that stops
    them all and, when a check failed, prints the tails of the logs named in `show`."""

    def __init__(self, show=()):
        super().__init__()
        self.show = show

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for process in self.values():
            process.stop()
        if failed():
            for name in self.show:
                if name in self:
                    print(f"--- {name}.log (tail)\n" + self[name].logs()[-1500:])


# --- cron -----------------------------------------------------------------------------------

CRON_D = "/etc/cron.d"


def running(name):
    """PIDs of processes whose command name is `name`."""
    pids = []
    for comm in glob.glob("/proc/[0-9]*/comm"):
        try:
            with open(comm) as f:
                if f.read().strip() == name:
                    pids.append(int(comm.split("/")[2]))
        except OSError:
            pass
    return pids


def dev_log_owner():
    """'' when /dev/log is free (absent, or a stale socket nobody listens on), else a description."""
    if not os.path.exists("/dev/log"):
        return ""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        probe.connect("/dev/log")
        return "a live syslog socket (journald or another syslog daemon listens on it)"
    except OSError:
        return ""
    finally:
        probe.close()


class RealCron:
    """Debian's cron (`cron -f -L level`) with an rsyslogd of its own writing facility cron to
    workdir/cron.log, as root. Refuses (a failed setup check) unless this machine can host it
    alone. stop() ends both, waits for cron's job children and leaves /run/crond.reboot as it
    found it."""

    def __init__(self, workdir, level, prefix):
        if os.geteuid() != 0:
            fail_setup("must run as root: it starts cron and writes /etc/cron.d (CI runs as root)")
        self.cron = shutil.which("cron") or "/usr/sbin/cron"
        self.rsyslogd = shutil.which("rsyslogd") or "/usr/sbin/rsyslogd"
        if not os.path.exists(self.cron) or not os.path.exists(self.rsyslogd):
            fail_setup("Debian's cron and rsyslog must be installed (apt-get install cron rsyslog)")
        if running("cron"):
            fail_setup(f"cron is already running (pid {running('cron')}); stop it first: this "
                       f"test starts its own with -L {level}")
        owner = dev_log_owner()
        if owner:
            fail_setup(f"/dev/log is {owner}; this test needs it for its own rsyslogd")
        if glob.glob(os.path.join(CRON_D, prefix + "*")):
            fail_setup(f"{CRON_D}/{prefix}* exist: another test? remove them first")
        self.workdir, self.level = workdir, level
        self.log_path = os.path.join(workdir, "cron.log")
        self.had_reboot_flag = os.path.exists("/run/crond.reboot")
        self.rsyslog = self.process = None

    def start_syslog(self, until=None):
        conf = write_text(os.path.join(self.workdir, "rsyslog.conf"),
                          f'global(workDirectory="{self.workdir}")\nmodule(load="imuxsock")\n'
                          f'cron.* action(type="omfile" file="{self.log_path}")\n')
        if os.path.exists("/dev/log"):
            os.remove("/dev/log")  # a stale socket: nobody listens on it (checked above)
        self.rsyslog = subprocess.Popen([self.rsyslogd, "-n", "-f", conf, "-i",
                                         os.path.join(self.workdir, "rsyslogd.pid")])

        def probe_logged():
            subprocess.run(["logger", "-p", "cron.info", "-t", "schedwatch-probe", "probe"],
                           stderr=subprocess.DEVNULL)
            return os.path.exists(self.log_path) and "schedwatch-probe" in self.log()

        if not wait_for(probe_logged, 15, "rsyslogd", interval=0.5, until=until):
            fail_setup("rsyslogd did not write facility cron to " + self.log_path)

    def start_cron(self):
        self.process = subprocess.Popen([self.cron, "-f", "-L", str(self.level)])

    def log(self):
        return read_text(self.log_path) if os.path.exists(self.log_path) else ""

    def stop(self):
        for process, name in ((self.process, "cron"), (self.rsyslog, "rsyslogd")):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    print(f"note: {name} ignored SIGTERM; killing it")
                    process.kill()
                    process.wait(timeout=10)
        # cron runs each job in a child of its own (also named cron) that waits for the job:
        # the next real-cron test refuses to start while one is left, so wait for them to end.
        # Any cron here is this test's: it refused to start beside another one.
        until = time.monotonic() + 20
        while self.process is not None and running("cron") and time.monotonic() < until:
            if time.monotonic() > until - 10:  # still there after 10 s: end them
                for pid in running("cron"):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            time.sleep(0.1)
        if not self.had_reboot_flag and os.path.exists("/run/crond.reboot"):
            os.remove("/run/crond.reboot")


# --- TLS ------------------------------------------------------------------------------------

def _openssl(directory, *args):
    result = subprocess.run(["openssl", *args], cwd=directory, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)}: {result.stderr}")


_EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def make_ca(directory, name, days=2):
    """directory/name.key and name.crt: a P-256 CA. Returns the certificate's path."""
    os.makedirs(directory, exist_ok=True)
    _openssl(directory, "req", "-x509", *_EC, "-keyout", f"{name}.key", "-out", f"{name}.crt",
             "-subj", f"/CN=schedwatch test {name}", "-days", str(days),
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    return os.path.join(directory, f"{name}.crt")


def make_leaf(directory, name, ca, extensions, subject=None, days=2):
    """directory/name.key and name.crt signed by the CA directory/ca.{crt,key}, with
    `extensions` (openssl x509v3 lines, e.g. subjectAltName and extendedKeyUsage)."""
    write_text(os.path.join(directory, f"{name}.ext"),
               "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n" + extensions)
    _openssl(directory, "req", "-new", *_EC, "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", subject or f"/CN={name}")
    _openssl(directory, "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey",
             f"{ca}.key", "-CAcreateserial", "-days", str(days), "-extfile", f"{name}.ext",
             "-out", f"{name}.crt")
    return os.path.join(directory, f"{name}.crt"), os.path.join(directory, f"{name}.key")
