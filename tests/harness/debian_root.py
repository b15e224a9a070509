"""A Debian 12 root booted with systemd-nspawn, for tests against a real systemd, cron and journal.

debian_root() builds a minimal root with mmdebstrap (minbase and the packages asked for), once a
day per package list, and reuses it: /var/tmp/schedwatch-NAME-root-YYYYMMDD, or under
$SCHEDWATCH_ROOTS. Container boots it with --volatile=overlay, so every test starts from the same
clean root and writes only to a tmpfs, and stop() removes what nspawn leaves behind (init.scope
cgroups, /run/systemd/nspawn). Needs root, mmdebstrap, systemd-nspawn and nsenter.
"""
import datetime
import glob
import os
import shutil
import signal
import subprocess
import time

from schedwatch_test import fail_setup, wait_for

ROOTS = os.environ.get("SCHEDWATCH_ROOTS", os.environ.get("SCHEDWATCH_SYSTEMD_ROOTS", "/var/tmp"))
TOOLS = ("mmdebstrap", "systemd-nspawn", "nsenter")


def run(command, timeout=60, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)


def require_root_tools():
    if os.geteuid() != 0:
        fail_setup("needs root (mmdebstrap, systemd-nspawn)")
    for tool in TOOLS:
        if not shutil.which(tool):
            fail_setup(f"{tool} is not installed (scripts/install-deps.sh with-test-tools)")


def debian_sources():
    """The Debian archive this machine's apt uses (only Debian's registry is reachable)."""
    for path in ("/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"):
        if os.path.exists(path) and "debian" in open(path).read():
            return path
    return "http://deb.debian.org/debian"


def debian_root(name, packages):
    """Today's root for `name` with `packages`, built when there is none or it holds other
    packages (listed beside it, NAME.packages); older ones are removed. Prints how long a build
    took."""
    packages = sorted(set(packages))
    wanted = "".join(p + "\n" for p in packages)
    prefix = os.path.join(ROOTS, f"schedwatch-{name}-root-")
    today = prefix + datetime.date.today().strftime("%Y%m%d")
    listing = today + ".packages"
    for old in glob.glob(prefix + "*"):
        if old in (today, listing) or old.endswith(".building"):
            continue
        if os.path.isdir(old):
            shutil.rmtree(old, ignore_errors=True)
        elif os.path.exists(old):
            os.remove(old)
    if os.path.isdir(today):
        # A root without a list was made before lists were kept, with the same packages.
        if not os.path.exists(listing) or open(listing).read() == wanted:
            print(f"figure: reused the root {today}")
            return today
        shutil.rmtree(today, ignore_errors=True)
    building = today + f".{os.getpid()}.building"
    started = time.monotonic()
    result = run(["unshare", "--mount", "--propagation", "private", "mmdebstrap", "--quiet",
                  "--variant=minbase", "--mode=root", "--dpkgopt=force-unsafe-io",
                  "--include=" + ",".join(packages), "bookworm", building, debian_sources()],
                 600)
    if result.returncode != 0:
        shutil.rmtree(building, ignore_errors=True)
        fail_setup("mmdebstrap failed: " + result.stderr[-2000:])
    with open(os.path.join(building, "etc", "machine-id"), "w") as f:
        f.write(os.urandom(16).hex() + "\n")
    try:
        os.rename(building, today)  # another run may have made it meanwhile: use theirs
    except OSError:
        shutil.rmtree(building, ignore_errors=True)
    with open(listing, "w") as f:
        f.write(wanted)
    print(f"figure: mmdebstrap minbase with {len(packages)} packages: "
          f"{time.monotonic() - started:.1f} s")
    return today


class Container:
    """systemd booted in `root` with nspawn; its files are reached at /proc/LEADER/root.
    `until`: the monotonic time the whole test must end by."""

    def __init__(self, root, workdir, until=None):
        self.until = until
        self.log_path = os.path.join(workdir, "nspawn.log")
        self.cgroups = own_cgroups()
        self.cgroups_before = cgroup_directories(self.cgroups)
        self.process = subprocess.Popen(
            ["systemd-nspawn", "-D", root, "-b", "--console=passive", "--register=no",
             "--keep-unit", "--private-network", "--volatile=overlay"],
            stdout=open(self.log_path, "w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.leader = self.wait("the container's init", self._child, 20)
        if not self.leader:
            fail_setup("systemd-nspawn started no init: " + self.log())
        self.root = f"/proc/{self.leader}/root"
        self.bus = f"unix:path={self.root}/run/dbus/system_bus_socket"
        self.journal = f"{self.root}/var/log/journal"
        state = self.wait("the container to boot", lambda: self.systemctl(
            "is-system-running").stdout.strip() in ("running", "degraded"), 60)
        if not state:
            fail_setup("the container did not boot: " + self.log())

    def wait(self, what, predicate, seconds, interval=0.25):
        return wait_for(predicate, seconds, what, interval=interval, until=self.until)

    def _child(self):
        if self.process.poll() is not None:
            fail_setup("systemd-nspawn exited: " + self.log())
        try:
            children = open(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read()
        except OSError:
            return None
        return int(children.split()[0]) if children.split() else None

    def log(self):
        return open(self.log_path, errors="replace").read()[-3000:]

    def enter(self, *command):
        """`command` inside every namespace of the container, as its root user."""
        return ["nsenter", "-t", str(self.leader), "-a"] + list(command)

    def systemctl(self, *arguments):
        return run(self.enter("systemctl", "--no-pager", *arguments), 30)

    def path(self, inside):
        return self.root + inside

    def write(self, inside, text):
        os.makedirs(os.path.dirname(self.path(inside)), exist_ok=True)
        with open(self.path(inside), "w") as f:
            f.write(text)

    def stop(self):
        if self.process.poll() is None:
            self.systemctl("poweroff")
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        remove_leftovers(self.cgroups, self.cgroups_before)


def own_cgroups():
    """This process's cgroup directories (v2, and v1's name=systemd hierarchy)."""
    found = []
    for line in open("/proc/self/cgroup"):
        _, controllers, path = line.rstrip("\n").split(":", 2)
        if controllers == "":
            unified = "/sys/fs/cgroup/unified"
            base = unified if os.path.isdir(unified) else "/sys/fs/cgroup"
        elif controllers == "name=systemd":
            base = "/sys/fs/cgroup/systemd"
        else:
            continue
        found.append(base + path.rstrip("/"))
    return [d for d in found if os.path.isdir(d)]


def cgroup_directories(cgroups):
    """Every directory under this process's cgroups, a few levels deep."""
    found = set()
    for base in cgroups:
        for directory, subdirectories, _ in os.walk(base):
            if directory.count("/") - base.count("/") >= 3:
                subdirectories[:] = []
            found.add(directory)
    return found


def remove_leftovers(cgroups, before):
    """nspawn leaves payload/init.scope and supervisor under the caller's cgroup and
    /run/systemd/nspawn: what was not there before is removed bottom-up (rmdir: only when
    empty)."""
    for directory in sorted(cgroup_directories(cgroups) - before, key=lambda d: -d.count("/")):
        try:
            os.rmdir(directory)
        except OSError:
            pass
    shutil.rmtree("/run/systemd/nspawn", ignore_errors=True)
    try:
        os.rmdir("/run/systemd")
    except OSError:
        pass
