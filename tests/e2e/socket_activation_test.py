#!/usr/bin/python3
"""--web.systemd-socket on the real exporter: systemd-socket-activate (systemd's own tool) holds
the listening socket and starts the exporter on the first connection, which the exporter then
answers, with the web config's basic auth applied; started without a socket, or with a passed
descriptor that is not a listening TCP socket (handed over by a small launcher setting
LISTEN_FDS and LISTEN_PID as systemd does), it exits 2 saying why.

Prints 'N passed, N failed'; exits 1 if anything failed.
"""
import argparse
import base64
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from schedwatch_test import (Process, check, free_port, get, require_tools,  # noqa: E402
                             summary, temporary_directory, wait_for)

# htpasswd -nbBC 10 "" "correct horse" | tr -d ':\n'   (also in tests/config/web/valid.yml)
PASSWORD = "correct horse"
PASSWORD_HASH = "$2y$10$IPRmZJAtKtMLf2aQY/1bIeV7yhqGgnQL.BO1vG8Q5psG4IYS8vjUW"
# Puts the descriptor $FD on 3 and execs the rest with LISTEN_FDS=1 and its own pid as
# LISTEN_PID (exec keeps the shell's pid), as systemd passes a socket.
LAUNCHER = ('exec 3<&"$FD"; [ "$FD" = 3 ] || eval "exec $FD<&-"; '
            'LISTEN_PID=$$ LISTEN_FDS=1 exec "$@"')


def exe_of(pid):
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    require_tools("systemd-socket-activate")
    spec = os.path.join(args.source_dir, "examples", "desired-state.yaml")
    with temporary_directory("schedwatch-socket-") as workdir:
        activated(args, workdir, spec)
        refused(args, workdir, spec)
    return summary()


def activated(args, workdir, spec):
    web_config = os.path.join(workdir, "web.yml")
    with open(web_config, "w") as out:
        out.write(f"basic_auth_users:\n  prometheus: {PASSWORD_HASH}\n")
    port = free_port()
    command = ["systemd-socket-activate", "--listen", f"127.0.0.1:{port}", args.exporter,
               "--config.file", spec, "--refresh.interval", "1s", "--web.systemd-socket",
               "--web.listen-address", "127.0.0.1:1", "--web.config.file", web_config]
    with Process(command, os.path.join(workdir, "activated.log")) as launcher:
        listening = wait_for(lambda: "Listening on" in launcher.logs(), 10,
                             "systemd-socket-activate to listen")
        check("systemd-socket-activate holds the socket; the exporter has not started",
              listening and exe_of(launcher.process.pid) == "systemd-socket-activate" and
              "msg=listening" not in launcher.logs(), launcher.logs())
        right = {"Authorization": "Basic " +
                 base64.b64encode(f"prometheus:{PASSWORD}".encode()).decode()}
        # The first connection starts it (exec: the same pid) and waits in the backlog for it.
        reply = get(f"http://127.0.0.1:{port}/metrics", headers=right, timeout=20)
        check("the first connection starts the exporter, which answers it",
              reply.status == 200 and "schedwatch_exporter_build_info" in reply.text and
              exe_of(launcher.process.pid) == "schedwatch_exporter",
              (reply.status, exe_of(launcher.process.pid), reply.text[:300]))
        check("it logs the systemd socket it serves, not --web.listen-address",
              f"systemd socket fd 3 (127.0.0.1:{port})" in launcher.logs() and
              ":1\"" not in launcher.logs(), launcher.logs()[-1500:])
        reply = get(f"http://127.0.0.1:{port}/metrics")
        check("the web config's basic auth applies: no password gets 401", reply.status == 401,
              reply.status)
        check("SIGTERM: exit 0", launcher.stop() == 0, launcher.logs()[-1000:])


def run(command, env=None, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, timeout=30,
                          env={**os.environ, **(env or {})}, **kwargs)


def refused(args, workdir, spec):
    base = [args.exporter, "--config.file", spec, "--web.systemd-socket"]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("LISTEN_")}
    result = subprocess.run(base, capture_output=True, text=True, timeout=30, env=environ)
    check("no socket passed: exit 2 naming the socket unit",
          result.returncode == 2 and "systemd passed no socket" in result.stderr and
          "schedwatch-exporter.socket" in result.stderr, (result.returncode, result.stderr))
    # LISTEN_PID of another process: the sockets are not for it (as sd_listen_fds judges).
    result = run(base, env={"LISTEN_FDS": "1", "LISTEN_PID": "1"})
    check("LISTEN_PID of another process: exit 2", result.returncode == 2 and
          "systemd passed no socket" in result.stderr, (result.returncode, result.stderr))

    def launch(sock):
        return subprocess.run(["sh", "-c", LAUNCHER, "sh"] + base, capture_output=True, text=True,
                              timeout=30, pass_fds=(sock.fileno(),),
                              env={**environ, "FD": str(sock.fileno())})

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind(("127.0.0.1", 0))
        result = launch(udp)
    check("a UDP socket passed: exit 2, not a listening TCP socket", result.returncode == 2 and
          "fd 3 from systemd is not a listening TCP socket" in result.stderr,
          (result.returncode, result.stderr))
    with socket.socket() as unbound:  # a stream socket that does not listen
        result = launch(unbound)
    check("a TCP socket that does not listen: exit 2", result.returncode == 2 and
          "not a listening TCP socket" in result.stderr, (result.returncode, result.stderr))
    path = os.path.join(workdir, "unix.sock")
    with socket.socket(socket.AF_UNIX) as unix:
        unix.bind(path)
        unix.listen()
        result = launch(unix)
    check("a listening Unix socket: exit 2 (TCP only)", result.returncode == 2 and
          "not a listening TCP socket" in result.stderr, (result.returncode, result.stderr))
    with socket.socket() as listening:  # the launcher itself, with a good socket: it serves
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        with Process(["sh", "-c", LAUNCHER, "sh"] + base + ["--refresh.interval", "1s"],
                     os.path.join(workdir, "launcher.log"), pass_fds=(listening.fileno(),),
                     env={**environ, "FD": str(listening.fileno())}) as exporter:
            ok = wait_for(lambda: get(f"http://127.0.0.1:{port}/-/healthy").status == 200, 20,
                          "the launched exporter", ignore=(OSError,))
            check("a listening TCP socket passed by the launcher is served", ok,
                  exporter.logs()[-1500:])
            check("SIGTERM: exit 0", exporter.stop() == 0)
        # systemd keeps the socket for the next start: the exporter's exit must leave it
        # listening (closed, never shut down), so a connection waits in its backlog.
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            still = True
        except OSError as error:
            still = error
        check("after the exporter's exit the passed socket still listens", still is True, still)


if __name__ == "__main__":
    sys.exit(main())
