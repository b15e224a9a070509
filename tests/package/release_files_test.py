#!/usr/bin/python3
"""The release files agree with each other and with the one version in CMakeLists.txt's
project(): the Kubernetes Deployment's image tag, the Dockerfile and its .dockerignore, the
changelog, LICENSE, and the spec the package installs."""
import argparse
import fnmatch
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from schedwatch_test import check, summary  # noqa: E402


def read(source_dir, path):
    with open(os.path.join(source_dir, path)) as f:
        return f.read()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--version", required=True, help="project() version")
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--build-dir", required=True)
    args = parser.parse_args()
    src, version = args.source_dir, args.version

    cmake = read(src, "CMakeLists.txt")
    check("the version is written once, in project()",
          re.search(r"^project\(schedwatch VERSION " + re.escape(version) + r"\b", cmake, re.M))

    deployment = read(src, "examples/kubernetes/deployment.yaml")
    images = re.findall(r"^\s*image:\s*(\S+)", deployment, re.M)
    check("deployment.yaml runs the image scripts/build-image tags: schedwatch:<version>",
          images == [f"schedwatch:{version}"], images)

    dockerfile = read(src, "Dockerfile")
    check("Dockerfile: Debian 12 slim, user 65534, port 9762, a /-/healthy health check",
          re.search(r"^FROM debian:12-slim$", dockerfile, re.M)
          and re.search(r"^USER 65534(:65534)?$", dockerfile, re.M)
          and re.search(r"^EXPOSE 9762$", dockerfile, re.M)
          and re.search(r"^HEALTHCHECK .*/-/healthy", dockerfile, re.M | re.S), dockerfile)
    check("Dockerfile installs with packaging/install-in-root.sh (the package test's script)",
          "sh /tmp/schedwatch/install-in-root.sh" in dockerfile)
    # .dockerignore: everything is left out but what COPY takes.
    patterns = [line.strip() for line in read(src, ".dockerignore").splitlines()
                if line.strip() and not line.startswith("#")]
    copied = re.search(r"^COPY (.*) \S+$", dockerfile, re.M).group(1).split()

    def sent(path):
        keep = True
        for pattern in patterns:
            negate = pattern.startswith("!")
            if fnmatch.fnmatch(path, pattern.lstrip("!")):
                keep = negate
        return keep
    check(".dockerignore sends what COPY takes and nothing else",
          all(sent(path.replace("*", "0.1.0-1_amd64")) for path in copied)
          and not sent("build/exporter/schedwatch_exporter") and not sent("README.md"),
          (patterns, copied))

    changelog = read(src, "CHANGELOG.md")
    check("CHANGELOG.md has Unreleased and the version's section",
          "\n## Unreleased\n" in changelog and f"\n## {version} " in changelog)
    license_text = read(src, "LICENSE")
    debian_copy = "/usr/share/common-licenses/Apache-2.0"
    check("LICENSE is the Apache License 2.0",
          "Apache License\n                           Version 2.0, January 2004" in license_text
          and (not os.path.exists(debian_copy) or open(debian_copy).read() == license_text))

    defaults = read(src, "packaging/default")
    check("/etc/default/schedwatch-exporter points ARGS at the installed spec",
          'ARGS="--config.file=/etc/schedwatch/spec.yaml"' in defaults)
    result = subprocess.run([args.exporter, "check", "--config.file",
                             os.path.join(src, "packaging", "spec.yaml"), "--count", "1"],
                            capture_output=True, text=True, timeout=30)
    check("the spec the package installs is valid", result.returncode == 0, result.stderr)

    # `cmake --install` from source: the unit names the binary of the prefix it installs to.
    with tempfile.TemporaryDirectory() as destdir:
        prefix = "/opt/schedwatch-test"
        result = subprocess.run(["cmake", "--install", args.build_dir, "--prefix", prefix],
                                capture_output=True, text=True, timeout=120,
                                env={**os.environ, "DESTDIR": destdir})
        unit_path = os.path.join(destdir, "lib/systemd/system/schedwatch-exporter.service")
        unit = open(unit_path).read() if os.path.exists(unit_path) else ""
        check("cmake --install: the unit starts PREFIX/bin/schedwatch_exporter",
              result.returncode == 0 and f"ExecStart=/bin/sh -fc 'exec {prefix}/bin/schedwatch_exporter "
              "$${LISTEN_FDS:+--web.systemd-socket} $$ARGS'\n" in unit, result.stderr[-2000:] + unit)
        wanted = [f"{prefix}/bin/schedwatch_exporter", f"{prefix}/bin/schedwatch_rulegen",
                  "/etc/schedwatch/spec.yaml", "/etc/schedwatch/demo-live-state.yaml",
                  "/etc/default/schedwatch-exporter", f"{prefix}/share/doc/schedwatch/changelog.gz",
                  "/lib/systemd/system/schedwatch-exporter.socket",
                  f"{prefix}/share/doc/schedwatch/copyright",
                  f"{prefix}/share/doc/schedwatch/README.md",
                  f"{prefix}/share/doc/schedwatch/docs/runbook.md",
                  f"{prefix}/share/doc/schedwatch/docs/sources/crontab.md"]
        missing = [p for p in wanted if not os.path.exists(destdir + p)]
        check("cmake --install: binaries, spec, ARGS file and documentation", not missing, missing)

    return summary()


if __name__ == "__main__":
    sys.exit(main())
