#!/usr/bin/python3
"""The Debian package on a fresh machine: builds the .deb from this build tree with cpack, lints
it, bootstraps a clean Debian 12 root with mmdebstrap (minbase, from the Debian archive apt uses
here), installs the package with packaging/install-in-root.sh (the Dockerfile's install step) so
apt resolves its Depends, runs --version and check, serves the installed spec as the systemd unit
would (user schedwatch, ARGS from /etc/default) in a private network namespace, scrapes it, then
purges it and shows that nothing of it is left. Needs root and the Debian archive.

Every mount is made inside a private mount namespace (unshare), so it disappears with the
namespace even when a step times out; the scratch directory is removed only when no mount is
left under it."""
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
from debian_root import Container, debian_root  # noqa: E402
from schedwatch_test import check, summary  # noqa: E402

FIGURES = []
SNAPSHOT_SKIP = ("proc", "dev", "sys", "tmp", "run", "var/cache", "var/log", "var/lib/apt",
                 "var/lib/dpkg")
# adduser keeps backups of the user databases; the schedwatch user and group stay (see below).
USER_DATABASES = {"etc/passwd-", "etc/group-", "etc/shadow-", "etc/gshadow-"}


def figure(text):
    FIGURES.append(text)
    print("figure: " + text, flush=True)


def run(cmd, timeout, **kwargs):
    """Runs cmd with a deadline; a timeout is a failed result, not an exception."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        return subprocess.CompletedProcess(cmd, 124, out, err + f"\ntimed out after {timeout} s")


def tail(result, lines=25):
    text = (result.stdout or "") + (result.stderr or "")
    return "\n".join(text.splitlines()[-lines:])


def in_namespace(root, script, timeout, host_network=False, *args):
    """Runs a sh script in its own mount and PID namespace with root/proc mounted (and, with
    host_network=False, an own network namespace holding only loopback). When the script ends or
    is killed, its mounts and processes go with the namespaces."""
    cmd = ["unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child",
           f"--mount-proc={root}/proc"]
    if not host_network:
        cmd.append("--net")
    return run(cmd + ["sh", "-euc", script, "sh", root, *args], timeout)


def mounts_under(path):
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = line.split()[4].encode().decode("unicode_escape")
            if point == path or point.startswith(path + "/"):
                found.append(point)
    return found


def snapshot(root):
    paths = set()
    for directory, dirs, files in os.walk(root):
        rel = os.path.relpath(directory, root)
        rel = "" if rel == "." else rel + "/"
        dirs[:] = [d for d in dirs if (rel + d) not in SNAPSHOT_SKIP]
        paths.update(rel + name for name in dirs + files)
    return paths


def debian_sources():
    """The Debian archive this machine's apt uses, as a sources file mmdebstrap reads."""
    for path in ("/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"):
        if os.path.exists(path) and "debian" in open(path).read():
            return path
    return "http://deb.debian.org/debian"


SERVE = r"""
root=$1
ip link set lo up
# As schedwatch-exporter.service runs it: the user schedwatch with its groups, ARGS from
# /etc/default/schedwatch-exporter.
chroot "$root" sh -c '. /etc/default/schedwatch-exporter &&
  exec setpriv --reuid=schedwatch --regid=schedwatch --init-groups schedwatch_exporter $ARGS' \
  >"$root/tmp/exporter.log" 2>&1 &
exporter=$!
chroot "$root" setpriv --reuid=schedwatch --regid=schedwatch --init-groups id -nG \
  >"$root/tmp/groups.txt"
deadline=$(($(date +%s) + 60))
# The image's HEALTHCHECK, from inside the root.
until chroot "$root" curl -fsS http://127.0.0.1:9762/-/healthy >"$root/tmp/healthy.txt" 2>&1; do
  kill -0 "$exporter" 2>/dev/null || { echo "the exporter exited"; exit 1; }
  [ "$(date +%s)" -lt "$deadline" ] || { echo "not healthy within 60 s"; exit 1; }
  sleep 0.2
done
# `missing` is claimed only after the confirming re-read: wait for it.
until chroot "$root" curl -fsS http://127.0.0.1:9762/metrics >"$root/tmp/metrics.txt" &&
      grep -q 'role="retry",source="demo",condition="missing"} 1' "$root/tmp/metrics.txt"; do
  kill -0 "$exporter" 2>/dev/null || { echo "the exporter exited"; exit 1; }
  [ "$(date +%s)" -lt "$deadline" ] || { echo "retry not missing within 60 s"; exit 1; }
  sleep 0.2
done
kill "$exporter"
wait "$exporter" || true
"""


class Buildah:
    """buildah with its storage in the scratch directory (vfs driver, chroot isolation)."""

    def __init__(self, scratch):
        self.base = ["buildah", "--root", os.path.join(scratch, "storage"), "--runroot",
                     os.path.join(scratch, "runroot"), "--storage-driver", "vfs"]
        # Its temporary files (build contexts, layer tarballs) stay in the scratch directory too.
        self.env = {**os.environ, "TMPDIR": os.path.join(scratch, "buildah-tmp")}
        os.makedirs(self.env["TMPDIR"])

    def __call__(self, *args, timeout=300):
        return run(self.base + list(args), timeout, env=self.env)

    def import_root(self, root):
        container = self("from", "scratch").stdout.strip()
        mount = self("mount", container).stdout.strip() if container else ""
        if not mount:
            return False
        copied = run(["sh", "-c", SLIMIFY, "sh", root, mount], 300)
        self("umount", container)
        committed = self("commit", "--format", "docker", container,
                         "docker.io/library/debian:12-slim")
        self("rm", container)
        return copied.returncode == 0 and committed.returncode == 0


# The root copied into the base image, then slimmed as debian:12-slim is (debuerreotype's
# slimify): no documentation but copyright files, no manual pages, no translations, and dpkg told
# to leave them out of later installs too.
SLIMIFY = r"""
set -eu
tar -C "$1" -c . | tar -C "$2" -x
cd "$2"
find usr/share/doc -mindepth 1 -not -name copyright -not -type d -delete
find usr/share/doc -mindepth 1 -type d -empty -delete
rm -rf usr/share/info/* usr/share/man/* usr/share/locale/* usr/share/lintian/overrides/*
cat >etc/dpkg/dpkg.cfg.d/docker <<'END'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
path-exclude /usr/share/lintian/overrides/*
END
"""

IMAGE_RUN = r"""
root=$1 container=$2
shift 2
ip link set lo up
"$@" run --isolation chroot --user 65534:65534 "$container" -- $ENTRYPOINT_AND_CMD \
  >"$root/image-exporter.log" 2>&1 &
exporter=$!
deadline=$(($(date +%s) + 60))
until "$@" run --isolation chroot "$container" -- $HEALTHCHECK >/dev/null 2>&1; do
  kill -0 "$exporter" 2>/dev/null || { echo "the exporter exited"; exit 1; }
  [ "$(date +%s)" -lt "$deadline" ] || { echo "not healthy within 60 s"; exit 1; }
  sleep 0.2
done
"$@" run --isolation chroot "$container" -- curl -fsS http://127.0.0.1:9762/metrics \
  >"$root/image-metrics.txt"
kill "$exporter"
wait "$exporter" || true
"""


def test_image(args, scratch, deb, buildah):
    # The build context as the repository lays it out, with the Dockerfile and .dockerignore.
    context = os.path.join(scratch, "context")
    os.makedirs(os.path.join(context, "build", "packages"))
    os.makedirs(os.path.join(context, "packaging"))
    shutil.copy(deb, os.path.join(context, "build", "packages"))
    for name in ("Dockerfile", ".dockerignore", "packaging/install-in-root.sh"):
        shutil.copy(os.path.join(args.source_dir, name), os.path.join(context, name))
    tag = f"schedwatch:{args.version}"
    start = time.monotonic()
    result = buildah("bud", "--isolation", "chroot", "--pull=never", "--format", "docker",
                     "-t", tag, context, timeout=600)
    if not check("buildah builds the Dockerfile", result.returncode == 0, tail(result)):
        return
    figure(f"image build (buildah, vfs): {time.monotonic() - start:.1f} s")
    sizes = {}
    for image in (tag, "docker.io/library/debian:12-slim"):
        size = buildah("images", "--format", "{{.Size}}", "--noheading", image).stdout.strip()
        sizes[image] = size
    try:  # the last layer is the one the Dockerfile's RUN added
        layers = json.loads(json.loads(buildah("inspect", tag).stdout)["Manifest"])["layers"]
        layer = f"{layers[-1]['size'] / 2**20:.1f} MiB"
    except (ValueError, KeyError, TypeError, IndexError) as e:
        layer = f"unknown ({e})"
    figure(f"image {tag}: {sizes[tag]}, of which the package's layer {layer}, on a slimmed "
           f"minbase base of {sizes['docker.io/library/debian:12-slim']}")
    try:  # the image's Docker configuration, as a container engine would read it
        config = json.loads(json.loads(buildah("inspect", tag).stdout)["Config"])["config"]
    except (ValueError, KeyError, TypeError) as e:
        config = {"error": str(e)}
    check("image runs as 65534, exposes 9762, checks /-/healthy",
          config.get("User") == "65534:65534" and "9762/tcp" in (config.get("ExposedPorts") or {})
          and "/-/healthy" in " ".join((config.get("Healthcheck") or {}).get("Test") or []),
          config)
    command = (config.get("Entrypoint") or []) + (config.get("Cmd") or [])
    healthcheck = [w for w in (config.get("Healthcheck") or {}).get("Test") or []
                   if w not in ("CMD", "CMD-SHELL")]
    container = buildah("from", "--pull=never", tag).stdout.strip()
    if not check("a container from the image", container, container):
        return
    env = {**buildah.env, "ENTRYPOINT_AND_CMD": " ".join(command),
           "HEALTHCHECK": " ".join(healthcheck)}
    result = run(["unshare", "--net", "--pid", "--fork", "--kill-child", "--mount-proc", "sh",
                  "-euc", IMAGE_RUN, "sh",
                  scratch, container] + buildah.base, 180, env=env)
    log = open(os.path.join(scratch, "image-exporter.log")).read() if os.path.exists(
        os.path.join(scratch, "image-exporter.log")) else ""
    check("the image serves as user 65534 and its health check passes", result.returncode == 0,
          tail(result) + "\n" + log[-2000:])
    metrics = open(os.path.join(scratch, "image-metrics.txt")).read() if os.path.exists(
        os.path.join(scratch, "image-metrics.txt")) else ""
    check("the image's /metrics has build_info with the version",
          f'version="{args.version}"' in metrics, metrics[:1000])
    buildah("rm", container)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--cpack-config", required=True, help="CPackConfig.cmake of the build")
    parser.add_argument("--exporter", required=True, help="the build's schedwatch_exporter")
    parser.add_argument("--version", required=True, help="project() version")
    parser.add_argument("--suite", default="bookworm")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("needs root (mmdebstrap, chroot, namespaces)")
        return 1

    scratch = tempfile.mkdtemp(prefix="schedwatch-package-")
    try:
        test(args, scratch)
    finally:
        left = mounts_under(scratch)
        for point in sorted(left, reverse=True):
            subprocess.run(["umount", "--lazy", point], check=False)
        if not check("no mount left under the scratch directory", not mounts_under(scratch), left):
            print(f"{scratch} kept: something is still mounted under it")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    print("\n".join(["figures:"] + ["  " + f for f in FIGURES]))
    return summary()


def test(args, scratch):
    # 1. The package, from the build tree as it is (no compile).
    start = time.monotonic()
    result = run(["cpack", "--config", args.cpack_config, "-B", os.path.join(scratch, "out")], 300)
    debs = [os.path.join(scratch, "out", f) for f in os.listdir(os.path.join(scratch, "out"))
            if f.endswith(".deb")] if result.returncode == 0 else []
    if not check("cpack builds one .deb", len(debs) == 1, tail(result)):
        return
    deb = debs[0]
    figure(f"cpack: {time.monotonic() - start:.1f} s")
    installed_kib = run(["dpkg-deb", "-f", deb, "Installed-Size"], 30).stdout.strip()
    figure(f"package {os.path.basename(deb)}: {os.path.getsize(deb) / 1024:.0f} KiB "
           f"(installed {installed_kib} KiB)")
    fields = run(["dpkg-deb", "-f", deb, "Version", "Depends"], 30).stdout
    check("Version is project()'s with Debian revision 1", f"Version: {args.version}-1" in fields,
          fields)
    check("Depends computed from the binaries (libc6, libstdc++6) plus adduser",
          all(p in fields for p in ("libc6", "libstdc++6", "adduser")), fields)
    contents = run(["dpkg-deb", "-c", deb], 30).stdout
    for path in ("./usr/bin/schedwatch_exporter", "./usr/bin/schedwatch_rulegen",
                 "./lib/systemd/system/schedwatch-exporter.service",
                 "./lib/systemd/system/schedwatch-exporter.socket", "./etc/schedwatch/spec.yaml",
                 "./etc/default/schedwatch-exporter", "./usr/share/doc/schedwatch/copyright",
                 "./usr/share/doc/schedwatch/changelog.Debian.gz",
                 "./usr/share/doc/schedwatch/docs/runbook.md"):
        check(f"the package holds {path}", re.search(re.escape(path) + r"$", contents, re.M),
              contents)
    control = os.path.join(scratch, "control")
    os.mkdir(control)
    run(["dpkg-deb", "-e", deb, control], 30)
    with open(os.path.join(control, "conffiles")) as f:
        listed = f.read().split()
    check("spec, demo snapshot and ARGS file are conffiles", listed == [
        "/etc/schedwatch/spec.yaml", "/etc/schedwatch/demo-live-state.yaml",
        "/etc/default/schedwatch-exporter"], listed)
    result = run(["lintian", "--fail-on", "error,warning", deb], 300)
    check("lintian: no error or warning (the rest is overridden with reasons)",
          result.returncode == 0, tail(result))

    # 2. A fresh Debian 12 root.
    root = os.path.join(scratch, "root")
    start = time.monotonic()
    result = run(["unshare", "--mount", "--propagation", "private", "mmdebstrap", "--quiet",
                  "--variant=minbase", "--mode=root", "--dpkgopt=force-unsafe-io", args.suite,
                  root, debian_sources()], 600)
    if not check("mmdebstrap makes a minbase root", result.returncode == 0, tail(result)):
        return
    figure(f"mmdebstrap minbase {args.suite}: {time.monotonic() - start:.1f} s")
    # A host that runs cron has its group crontab (made by cron's postinst); the package's
    # postinst puts the schedwatch user in it.
    result = run(["chroot", root, "groupadd", "--system", "crontab"], 30)
    check("the root has cron's group crontab", result.returncode == 0, tail(result))
    # A host with systemd has its group systemd-journal (made by systemd's postinst).
    result = run(["chroot", root, "groupadd", "--system", "systemd-journal"], 30)
    check("the root has systemd's group systemd-journal", result.returncode == 0, tail(result))
    before = snapshot(root)
    buildah = Buildah(scratch) if shutil.which("buildah") else None
    if buildah:
        # The Dockerfile's base, made locally: no image registry is reachable.
        check("the fresh root becomes the local image debian:12-slim", buildah.import_root(root))

    # 3. Install as the Dockerfile does, with apt resolving Depends from Debian.
    for path in (deb, os.path.join(args.source_dir, "packaging", "install-in-root.sh")):
        shutil.copy(path, os.path.join(root, "tmp"))
    shutil.copy("/etc/resolv.conf", os.path.join(root, "etc", "resolv.conf"))
    start = time.monotonic()
    result = in_namespace(root, 'chroot "$1" sh /tmp/install-in-root.sh "/tmp/$2" curl', 600, True,
                          os.path.basename(deb))
    elapsed = time.monotonic() - start
    os.remove(os.path.join(root, "etc", "resolv.conf"))
    if not check("install-in-root.sh installs the package and its Depends", result.returncode == 0,
                 tail(result)):
        return
    figure(f"install into the fresh root (apt update, download, unpack, configure): "
           f"{elapsed:.1f} s")

    # 4. The installed binaries.
    result = run(["chroot", root, "schedwatch_exporter", "--version"], 30)
    built = run([args.exporter, "--version"], 30).stdout
    revision = re.search(r"revision: ([^)]+)\)", built)
    check("--version names project()'s version and the build's revision",
          result.returncode == 0 and f"version {args.version} " in result.stdout and revision
          and f"revision: {revision.group(1)})" in result.stdout, (result.stdout, built))
    result = run(["chroot", root, "schedwatch_exporter", "check", "--config.file",
                  "/etc/schedwatch/spec.yaml"], 30)
    check("check accepts the installed spec", result.returncode == 0 and "valid" in result.stdout,
          tail(result))
    result = run(["chroot", root, "schedwatch_rulegen", "--config.file",
                  "/etc/schedwatch/spec.yaml", "--out", "/tmp/rules"], 30)
    check("schedwatch_rulegen writes rules for the installed spec", result.returncode == 0 and
          os.path.exists(os.path.join(root, "tmp", "rules", "schedwatch.rules.yml")), tail(result))
    passwd = run(["chroot", root, "getent", "passwd", "schedwatch"], 30).stdout
    check("system user schedwatch, home /var/lib/schedwatch, no login",
          re.match(r"schedwatch:x:\d{1,3}:\d+:[^:]*:/var/lib/schedwatch:/usr/sbin/nologin", passwd),
          passwd)
    check("the unit is enabled (deb-systemd-helper)", os.path.islink(os.path.join(
        root, "etc/systemd/system/multi-user.target.wants/schedwatch-exporter.service")))
    check("its socket unit is enabled", os.path.islink(os.path.join(
        root, "etc/systemd/system/sockets.target.wants/schedwatch-exporter.socket")))

    # 5. Serve the installed spec on loopback in its own network namespace, scrape it.
    result = in_namespace(root, SERVE, 120)
    log = open(os.path.join(root, "tmp", "exporter.log")).read() if os.path.exists(
        os.path.join(root, "tmp", "exporter.log")) else ""
    check("the installed exporter serves the installed spec on :9762", result.returncode == 0,
          tail(result) + "\n" + log[-2000:])
    groups = open(os.path.join(root, "tmp", "groups.txt")).read().split() if os.path.exists(
        os.path.join(root, "tmp", "groups.txt")) else []
    check("it runs with groups adm (syslog), crontab (the spool) and systemd-journal",
          "adm" in groups and "crontab" in groups and "systemd-journal" in groups, groups)
    metrics = open(os.path.join(root, "tmp", "metrics.txt")).read() if os.path.exists(
        os.path.join(root, "tmp", "metrics.txt")) else ""
    check("/metrics: gate ok, retry missing",
          'schedwatch_job_condition{role="gate",source="demo",condition="ok"} 1' in metrics and
          'schedwatch_job_condition{role="retry",source="demo",condition="missing"} 1' in metrics,
          metrics[:1500])
    check("/metrics: build_info with the version",
          re.search(r'schedwatch_exporter_build_info\{[^}]*version="' + re.escape(args.version) +
                    r'"[^}]*\} 1', metrics), metrics[:1500])

    # 6. Purge, then nothing of it is left.
    result = in_namespace(root, 'chroot "$1" apt-get purge -y -q schedwatch curl && '
                          'chroot "$1" apt-get autoremove --purge -y -q', 300, True)
    check("apt-get purge and autoremove", result.returncode == 0, tail(result))
    for path in ("etc/schedwatch", "etc/default/schedwatch-exporter", "usr/bin/schedwatch_exporter",
                 "usr/bin/schedwatch_rulegen", "lib/systemd/system/schedwatch-exporter.service",
                 "lib/systemd/system/schedwatch-exporter.socket",
                 "usr/share/doc/schedwatch", "var/lib/schedwatch"):
        check(f"purged: no /{path}", not os.path.lexists(os.path.join(root, path)))
    status = run(["chroot", root, "dpkg-query", "-W", "-f=${db:Status-Abbrev}", "schedwatch"], 30)
    check("dpkg no longer knows the package", status.returncode != 0 or not status.stdout.strip(),
          status.stdout)
    left = sorted(snapshot(root) - before)
    check("nothing is left that the bootstrap did not have (other than user-database backups)",
          set(left) <= USER_DATABASES, left)
    # Debian leaves system users in place on purge (files they own may remain; a re-used uid
    # would inherit them), as prometheus-node-exporter's prometheus user stays.
    passwd = run(["chroot", root, "getent", "passwd", "schedwatch"], 30).stdout
    check("the schedwatch user stays, as Debian's packages keep system users", passwd, passwd)

    # 7. The container image from the Dockerfile, built and run with buildah.
    if buildah:
        test_image(args, scratch, deb, buildah)
    else:
        check("buildah is installed for the image test", False, "apt-get install buildah")

    # 8. Under a real systemd: the socket unit holds the port and starts the exporter.
    test_systemd(scratch, deb)


def test_systemd(scratch, deb):
    """The package installed in a Debian 12 root booted with systemd-nspawn (its Depends, systemd
    and curl from the Debian archive, tests/harness/debian_root.py): postinst starts the socket
    and the service, which serves on the socket's descriptor; stopped, the service is started
    again by the first connection; with the socket unit masked it listens on its own."""
    depends = run(["dpkg-deb", "-f", deb, "Depends"], 30).stdout
    packages = {"systemd", "dbus", "curl"} | {
        re.split(r"[\s(]", alternative.split("|")[0].strip())[0]
        for alternative in depends.split(",") if alternative.strip()}
    root = debian_root("package", packages)
    container = Container(root, scratch, until=time.monotonic() + 300)
    try:
        container.write("/tmp/schedwatch.deb", "")
        shutil.copy(deb, container.path("/tmp/schedwatch.deb"))
        result = run(container.enter("dpkg", "-i", "/tmp/schedwatch.deb"), 120)
        check("systemd: dpkg -i installs the package (its Depends are in the root)",
              result.returncode == 0, tail(result))

        def curl(path):
            return run(container.enter("curl", "-fsS", "--max-time", "20",
                                       "http://127.0.0.1:9762" + path), 30)

        def active(unit):
            return container.systemctl("is-active", unit).stdout.strip()

        def exporter_log():
            return run(container.enter("journalctl", "--no-pager", "-o", "cat", "-u",
                                       "schedwatch-exporter.service"), 30).stdout

        check("systemd: postinst started the socket and the service",
              container.wait("both active", lambda: active("schedwatch-exporter.socket") ==
                             "active" and active("schedwatch-exporter.service") == "active", 30),
              (active("schedwatch-exporter.socket"), active("schedwatch-exporter.service"),
               container.systemctl("status", "schedwatch-exporter.service").stdout[-2000:]))
        result = curl("/metrics")
        check("systemd: the exporter serves :9762 on the socket's descriptor",
              result.returncode == 0 and "schedwatch_exporter_build_info" in result.stdout and
              container.wait("its log", lambda: "systemd socket fd 3" in exporter_log(), 10),
              tail(result) + exporter_log()[-1500:])

        container.systemctl("stop", "schedwatch-exporter.service")
        stopped = active("schedwatch-exporter.service")
        result = curl("/-/healthy")
        check("systemd: stopped, the exporter is started by the first connection, which it "
              "answers", stopped in ("inactive", "failed") and result.returncode == 0 and
              active("schedwatch-exporter.service") == "active", (stopped, tail(result)))

        # Without its socket: --web.systemd-socket is left out and ARGS' address is served.
        for command in (("stop", "schedwatch-exporter.service", "schedwatch-exporter.socket"),
                        ("mask", "schedwatch-exporter.socket"),
                        ("start", "schedwatch-exporter.service")):
            container.systemctl(*command)
        ok = container.wait("the exporter on its own", lambda: curl("/-/healthy").returncode == 0,
                            30)
        check("systemd: with the socket unit masked the service listens on :9762 itself",
              ok and active("schedwatch-exporter.socket") != "active" and
              'address=:9762' in exporter_log(), exporter_log()[-1500:])
    finally:
        container.stop()


if __name__ == "__main__":
    sys.exit(main())
