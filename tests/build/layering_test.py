#!/usr/bin/python3
"""Each component includes only the components below it.

    core      <- pure: spec, schedule maths, classification (reads the spec through platform)
    platform  <- files, HTTP client, log (uses core's Result only)
    sources   <- one folder per scheduler: core, platform
    reconcile <- core, platform, sources
    exporter  <- core, platform, sources, reconcile
    rulegen   <- core
    run       <- core, platform, sources

An include is attributed by its spelling: "schedwatch/platform/..." is platform,
"schedwatch/..." is core, "sources/..." is sources, and so on. Prints every include that breaks
the layering and exits 1 if there is one.
"""
import argparse
import pathlib
import re
import sys

ALLOWED = {
    "core": {"core", "platform:file.h"},
    "platform": {"platform", "core:result.h"},
    "sources": {"sources", "core", "platform"},
    "reconcile": {"reconcile", "core", "platform", "sources"},
    "exporter": {"exporter", "core", "platform", "sources", "reconcile"},
    "rulegen": {"rulegen", "core"},
    "run": {"run", "core", "platform", "sources"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def component_of_include(path):
    """(component, file name) of a quoted include, or None for one inside the same folder."""
    parts = path.split("/")
    if parts[0] == "schedwatch":
        if len(parts) > 2 and parts[1] == "platform":
            return "platform", parts[-1]
        return "core", parts[-1]
    if parts[0] in ALLOWED:
        return parts[0], parts[-1]
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    root = pathlib.Path(parser.parse_args().source_dir)
    broken = []
    files = 0
    for component, allowed in ALLOWED.items():
        for path in sorted((root / component).rglob("*")):
            if path.suffix not in (".cc", ".h"):
                continue
            files += 1
            for include in INCLUDE.findall(path.read_text(errors="replace")):
                target = component_of_include(include)
                if target is None:
                    continue
                name, file_name = target
                if name in allowed or f"{name}:{file_name}" in allowed:
                    continue
                broken.append(f"{path.relative_to(root)}: {component} includes {include} ({name})")
    for line in broken:
        print(f"FAIL {line}")
    print(f"{files} files read, {len(broken)} includes against the layering")
    if files < 50:
        print("FAIL too few files read: is --source-dir the repository?")
        return 1
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
