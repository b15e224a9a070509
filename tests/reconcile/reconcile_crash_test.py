#!/usr/bin/python3
"""The real `schedwatch_exporter reconcile --apply` killed at every step of a crontab repair
(strace -e inject=SYSCALL:signal=KILL:when=N, for each N until a run ends by itself), then run
again. After each kill every cron.d file has one link (cron ignores one with two) and the ledger
is whole; the next run converges: the role's job present once, nothing else in cron.d, exit 0.

- kills at every openat, write, fchmod, fsync, flock, linkat, renameat and unlinkat: the
  unnamed file (O_TMPFILE) linked into place
- the same without O_TMPFILE (the open fails with EOPNOTSUPP): a named temporary renamed with
  RENAME_NOREPLACE; and without either (renameat2 fails with EINVAL): link, then unlink, whose
  interrupted middle (two links) the next run finishes
- what an older version left (two links, a half-written temporary) is finished and removed;
  a symbolic link named like a temporary, to /etc/passwd, and a hard link named like one are
  neither followed nor removed
- a full file system (a 64 KiB tmpfs, filled), a read-only one and RLIMIT_FSIZE (EFBIG, or
  killed by SIGXFSZ): `create failed`, exit 1, nothing left; the next run creates it
Prints 'N passed, N failed'.
"""
import argparse
import json
import os
import platform
import re
import resource
import shutil
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from schedwatch_test import check, finish, require_tools, temporary_directory  # noqa: E402

# Long enough that RLIMIT_FSIZE can stop its write and no other (the lock's note, the ledger).
TEMPLATE = ("# schedwatch: role=rec spec_version=1\n*/5 * * * * root /usr/local/bin/rec\n" +
            "# padding\n" * 300)
NAME = "schedwatch-rec"
KILLED = -signal.SIGKILL


class Host:
    """A host rooted in a directory: cron.d, passwd, syslog, the template, spec, ledger, lock."""

    def __init__(self, exporter, workdir):
        self.exporter = exporter
        self.workdir = workdir
        self.root = os.path.join(workdir, "root")
        self.cron_d = os.path.join(self.root, "etc", "cron.d")
        self.ledger = os.path.join(workdir, "state", "ledger.json")
        self.lock = os.path.join(workdir, "state", "reconcile.lock")
        self.spec = os.path.join(workdir, "spec.yaml")
        os.makedirs(self.cron_d)
        os.makedirs(os.path.dirname(self.ledger), mode=0o700)
        os.makedirs(os.path.join(self.root, "var", "log"))
        with open(os.path.join(self.root, "etc", "passwd"), "w") as out:
            out.write("root:x:0:0:root:/root:/bin/sh\n")
        open(os.path.join(self.root, "var", "log", "syslog"), "w").close()
        template = os.path.join(workdir, "rec.cron")
        with open(template, "w") as out:
            out.write(TEMPLATE)
        with open(self.spec, "w") as out:
            out.write(f"""version: 1
sources:
  host: {{type: crontab, root: {self.root}, paths: [/etc/cron.d], syslog: /var/log/syslog}}
jobs:
  - {{role: rec, source: host, schedule: "*/5 * * * *", spec_version: "1", template: {template}}}
""")

    def command(self, apply=True):
        return [self.exporter, "reconcile", "--config.file", self.spec, "--ledger", self.ledger,
                "--lock-file", self.lock, "--refresh.confirm-delay", "10ms",
                *(["--apply"] if apply else [])]

    def reset(self):
        for name in os.listdir(self.cron_d):
            os.unlink(os.path.join(self.cron_d, name))
        for name in os.listdir(os.path.dirname(self.ledger)):
            os.unlink(os.path.join(os.path.dirname(self.ledger), name))

    def reconcile(self, prefix=(), apply=True, **popen):
        if prefix and "env" not in popen:
            # LeakSanitizer cannot run under ptrace (strace): an ASan build would exit 1 at its end.
            options = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "detect_leaks=0"]))
            popen["env"] = {**os.environ, "ASAN_OPTIONS": options}
        run = subprocess.run([*prefix, *self.command(apply)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=120, **popen)
        return run.returncode, run.stdout, run.stderr

    def action(self, output):
        match = re.search(r"^rec\s+host\s+\S+\s+(.*)$", output, re.M)
        return match.group(1) if match else None

    def problems(self, strict=False, two_links=False):
        """What is wrong in cron.d and the ledger right now (after a kill): a file with two
        links (unless `two_links`: the job's and its temporary's), the job's file incomplete,
        and with `strict` any other name."""
        found = []
        names = sorted(os.listdir(self.cron_d))
        for name in names:
            path = os.path.join(self.cron_d, name)
            info = os.lstat(path)
            paired = two_links and info.st_nlink == 2 and len(names) == 2 and \
                names[0].startswith(f".{NAME}.") and names[1] == NAME
            if info.st_nlink != 1 and not paired:
                found.append(f"{name} has {info.st_nlink} links")
            if name == NAME:
                with open(path) as source:
                    if source.read() != TEMPLATE:
                        found.append(f"{name} is incomplete")
            elif strict:
                found.append(f"{name} is there")
        if os.path.exists(self.ledger):
            try:
                with open(self.ledger) as source:
                    json.load(source)
            except ValueError as error:
                found.append(f"ledger not JSON: {error}")
        return found

    def converged(self, label, expect=(NAME,)):
        """The next run: exit 0, the job present once with one link, nothing else left."""
        code, out, err = self.reconcile()
        action = self.action(out)
        ok = check(f"{label}: the next run exits 0 ({action})",
                   code == 0 and action in ("created", "verified"), f"code {code}\n{out}{err}")
        names = sorted(os.listdir(self.cron_d))
        ok &= check(f"{label}: then cron.d holds {', '.join(expect)} and nothing else",
                    names == sorted(expect), names)
        target = os.path.join(self.cron_d, NAME)
        if os.path.exists(target):
            with open(target) as source:
                ok &= check(f"{label}: the file is the template's, one link",
                            source.read() == TEMPLATE and os.stat(target).st_nlink == 1)
        state = [n for n in os.listdir(os.path.dirname(self.ledger)) if n.endswith(".tmp")]
        ok &= check(f"{label}: no ledger temporary left", not state, state)
        code, out, _ = self.reconcile(apply=False)
        ok &= check(f"{label}: a dry run after it finds the job once",
                    code == 0 and self.action(out) == "verified", out)
        return ok


def strace(syscall, when, failing):
    """strace killing the run at the `when`-th call of `syscall`; `failing` maps other syscalls
    to the failure injected into them (a syscall is injected into only when it is traced)."""
    injected = [f"inject={syscall}:signal=KILL:when={when}",
                *(f"inject={name}:{how}" for name, how in failing.items())]
    command = ["strace", "-f", "-qq", "-o", "/dev/null",
               "-e", "trace=" + ",".join([syscall, *failing])]
    for option in injected:
        command += ["-e", option]
    return command


def tmpfile_open_index(host):
    """Which openat of the reconcile opens O_TMPFILE (1-based), from a traced run."""
    host.reset()
    trace = os.path.join(host.workdir, "openat.trace")
    host.reconcile(["strace", "-qq", "-o", trace, "-e", "trace=openat"])
    with open(trace) as source:
        lines = [line for line in source if "openat(" in line]
    host.reset()
    for index, line in enumerate(lines, 1):
        if "O_TMPFILE" in line:
            return index
    return None


def takes_fallback(host, failing, syscall):
    """Whether a run with `failing` injected calls `syscall` (the fallback was taken)."""
    host.reset()
    trace = os.path.join(host.workdir, "fallback.trace")
    command = ["strace", "-f", "-qq", "-o", trace, "-e", "trace=" + ",".join([*failing, syscall])]
    for name, how in failing.items():
        command += ["-e", f"inject={name}:{how}"]
    code, out, _ = host.reconcile(command)
    with open(trace) as source:
        called = f"{syscall}(" in source.read()
    host.reset()
    return code == 0 and host.action(out) == "created" and called


def kill_everywhere(host, label, syscalls, failing=None, strict=False, two_links=False):
    """Kills a run at each call of each syscall in turn; checks what each kill leaves (with
    `strict`, no other name than the job's, ever; with `two_links`, the job's file may have a
    second name, its temporary's: link, then unlink, cannot help it)."""
    kills = 0
    bad = []
    for syscall in syscalls:
        for when in range(1, 400):
            host.reset()
            code, out, err = host.reconcile(strace(syscall, when, failing or {}))
            if code != KILLED:
                break
            kills += 1
            point = f"{syscall} #{when}"
            problems = host.problems(strict, two_links)
            if problems:
                bad.append(f"{point}: {problems}")
                continue
            if not host.converged(f"{label}, killed at {point}"):
                bad.append(f"{point}: did not converge")
    left = "one link, or the job's file and its temporary's" if two_links else "one link"
    check(f"{label}: {kills} kills, each left {left} and a whole ledger, then converged",
          not bad and kills > 0, "\n".join(bad))


def leftovers_of_an_older_version(host):
    host.reset()
    target = os.path.join(host.cron_d, NAME)
    with open(target, "w") as out:
        out.write(TEMPLATE)
    os.chmod(target, 0o644)
    os.link(target, os.path.join(host.cron_d, f".{NAME}.4242.7.tmp"))
    with open(os.path.join(host.cron_d, f".{NAME}.4242.8.tmp"), "w") as out:
        out.write(TEMPLATE[:40])
    # Named like temporaries: a link to /etc/passwd, a hard link to a file of someone's.
    os.symlink("/etc/passwd", os.path.join(host.cron_d, ".schedwatch-evil.1.1.tmp"))
    keep = os.path.join(host.workdir, "kept")
    with open(keep, "w") as out:
        out.write("needed\n")
    os.link(keep, os.path.join(host.cron_d, ".schedwatch-hard.1.1.tmp"))
    with open("/etc/passwd", "rb") as source:
        passwd = source.read()
    passwd_stat = os.stat("/etc/passwd")
    code, out, _ = host.reconcile(apply=False)
    check("older version's two links: the role is missing to cron",
          host.action(out) == "would create", out)
    host.converged("older version's leftovers",
                   expect=(NAME, ".schedwatch-evil.1.1.tmp", ".schedwatch-hard.1.1.tmp"))
    with open("/etc/passwd", "rb") as source:
        check("/etc/passwd untouched through the link",
              source.read() == passwd and os.stat("/etc/passwd").st_nlink == passwd_stat.st_nlink)
    check("the link named like a temporary is kept",
          os.readlink(os.path.join(host.cron_d, ".schedwatch-evil.1.1.tmp")) == "/etc/passwd")
    with open(keep) as source:
        check("the hard link named like a temporary is kept",
              source.read() == "needed\n" and os.stat(keep).st_nlink == 2)
    host.reset()


def in_namespace(host, script):
    """Runs a shell script in a mount namespace of its own (a tmpfs on cron.d); its output."""
    command = " ".join(f"'{part}'" for part in host.command())
    run = subprocess.run(["unshare", "-rm", "sh", "-c", script.replace("RECONCILE", command)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
                         cwd=host.cron_d)
    return run.stdout


def full_and_read_only(host):
    host.reset()
    d = host.cron_d
    output = in_namespace(host, f"""
mount -t tmpfs -o size=64k,mode=0755 none {d} || exit 99
dd if=/dev/zero of={d}/.filler bs=4k 2>/dev/null
RECONCILE; echo "full: exit $?"; ls -A {d} | tr '\\n' ' '; echo
rm {d}/.filler
RECONCILE; echo "freed: exit $?"; ls -A {d} | tr '\\n' ' '; echo
rm {d}/{NAME}
mount -o remount,ro {d}
RECONCILE; echo "read-only: exit $?"; ls -A {d} | tr '\\n' ' '; echo
mount -o remount,rw {d}
RECONCILE; echo "writable: exit $?"; ls -A {d} | tr '\\n' ' '; echo
""")
    check("full disk: create failed, No space left on device, exit 1",
          re.search(r"create failed: .*No space left on device", output) and
          "full: exit 1\n.filler \n" in output, output)
    check("full disk, then freed: created, exit 0",
          f"freed: exit 0\n{NAME} \n" in output and "created" in output, output)
    check("read-only: create failed, Read-only file system, exit 1, nothing written",
          "Read-only file system" in output and "read-only: exit 1\n\n" in output, output)
    check("read-only, then writable: exit 0", f"writable: exit 0\n{NAME} \n" in output, output)


def file_size_limit(host):
    def limited(ignore):
        def apply():
            resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))
            if ignore:
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        return apply

    host.reset()
    code, out, err = host.reconcile(preexec_fn=limited(True))
    check("RLIMIT_FSIZE: create failed, File too large, exit 1",
          code == 1 and "create failed: " in out and "File too large" in out,
          f"code {code}\n{out}{err}")
    check("RLIMIT_FSIZE: nothing left in cron.d", os.listdir(host.cron_d) == [],
          os.listdir(host.cron_d))
    host.converged("RLIMIT_FSIZE")
    host.reset()
    code, _, _ = host.reconcile(preexec_fn=limited(False))
    check("RLIMIT_FSIZE with SIGXFSZ: killed mid-write", code == -signal.SIGXFSZ, code)
    check("killed by SIGXFSZ: nothing left in cron.d", host.problems() == [] and
          os.listdir(host.cron_d) == [], os.listdir(host.cron_d))
    host.converged("killed by SIGXFSZ")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exporter", required=True)
    args = parser.parse_args()
    require_tools("strace", "unshare")
    with temporary_directory("schedwatch-reconcile-crash-", keep_on_failure=True) as workdir:
        host = Host(os.path.abspath(args.exporter), workdir)
        code, out, err = host.reconcile()
        if not check("an undisturbed run creates the job", code == 0 and
                     host.action(out) == "created", f"code {code}\n{out}{err}"):
            finish()
        leftovers_of_an_older_version(host)
        # link, unlink and rename: what older versions called (x86_64 has these syscalls).
        older = ["link", "unlink", "rename"] if platform.machine() == "x86_64" else []
        kill_everywhere(host, "O_TMPFILE", ["openat", "write", "fchmod", "fsync", "flock",
                                            "linkat", "renameat", "unlinkat", *older], strict=True)
        index = tmpfile_open_index(host)
        if check("a run opens an O_TMPFILE", index is not None):
            no_tmpfile = {"openat": f"error=EOPNOTSUPP:when={index}"}
            neither = {**no_tmpfile, "renameat2": "error=EINVAL"}
            check("without O_TMPFILE: created through renameat2",
                  takes_fallback(host, no_tmpfile, "renameat2"))
            check("without O_TMPFILE and RENAME_NOREPLACE: created through linkat",
                  takes_fallback(host, neither, "linkat"))
            kill_everywhere(host, "named temporary", ["write", "fchmod", "fsync", "flock",
                                                      "renameat2", "unlinkat"], no_tmpfile)
            kill_everywhere(host, "link and unlink", ["fsync", "linkat", "unlinkat"],
                            neither, two_links=True)
        full_and_read_only(host)
        file_size_limit(host)
    finish()


if __name__ == "__main__":
    main()
