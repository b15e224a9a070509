#!/usr/bin/python3
"""Each component includes only the components below it.

    core      <- pure: spec, schedule maths, classification; no I/O, no clock
    platform  <- files, HTTP client, log (uses core's Result only)
    sources   <- one folder per scheduler: core, platform
    reconcile <- core, platform, sources
    exporter  <- core, platform, sources, reconcile
    rulegen   <- core, and the source catalog (sources/catalog.h)
    run       <- core, platform, sources

Inside exporter/, rooms by concern, lowest first; a room includes only itself and the rooms
below it, and every file of exporter/ stands in a room:

    state <- exposition <- refresh <- pages <- http <- commands

The source catalog (sources/catalog.*, sources/source_types.def and each
sources/<type>/<type>_descriptor.*) is the pure part of sources, linked by schedwatch_rulegen as
its own target: its files include only core, each other and platform's capped file reader (to
read the spec file). Core names no source type: the types of sources/source_types.def appear in no string
literal of core.

An include is attributed by its spelling: "schedwatch/platform/..." is platform,
"schedwatch/..." is core, "sources/..." is sources, and so on. Prints every include that breaks
the layering and exits 1 if there is one.
"""
import argparse
import pathlib
import re
import sys

ALLOWED = {
    "core": {"core"},
    "platform": {"platform", "core:result.h"},
    "sources": {"sources", "core", "platform"},
    "reconcile": {"reconcile", "core", "platform", "sources"},
    "exporter": {"exporter", "core", "platform", "sources", "reconcile"},
    "rulegen": {"rulegen", "core", "sources:catalog.h"},
    "run": {"run", "core", "platform", "sources"},
}
EXPORTER_ROOMS = ["state", "exposition", "refresh", "pages", "http", "commands"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
SOURCE_TYPE = re.compile(r'^SCHEDWATCH_SOURCE_TYPE\((\w+)\)', re.MULTILINE)


def is_catalog_file(path):
    """The pure part of sources, by its path inside the repository ("sources/catalog.h")."""
    parts = path.split("/")
    if parts[0] != "sources":
        return False
    if len(parts) == 2:
        return parts[1].startswith("catalog.") or parts[1] == "source_types.def"
    return len(parts) == 3 and parts[2].startswith(parts[1] + "_descriptor.")


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


def exporter_room_breaks(root):
    """Every include of an exporter room that names a room above it, or no room at all."""
    broken = []
    for path in sorted((root / "exporter").rglob("*")):
        if path.suffix not in (".cc", ".h"):
            continue
        relative = path.relative_to(root)
        room = relative.parts[1] if len(relative.parts) == 3 else None
        if room not in EXPORTER_ROOMS:
            broken.append(f"{relative}: not in a room of exporter/ ({', '.join(EXPORTER_ROOMS)})")
            continue
        below = EXPORTER_ROOMS[:EXPORTER_ROOMS.index(room) + 1]
        for include in INCLUDE.findall(path.read_text(errors="replace")):
            parts = include.split("/")
            if parts[0] != "exporter":
                continue
            if len(parts) != 3 or parts[1] not in below:
                broken.append(f"{relative}: the {room} room includes {include}, not below it")
    return broken


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
    for path in sorted((root / "sources").rglob("*")):
        relative = str(path.relative_to(root))
        if path.suffix not in (".cc", ".h") or not is_catalog_file(relative):
            continue
        for include in INCLUDE.findall(path.read_text(errors="replace")):
            target = component_of_include(include)
            if target is None or target[0] == "core" or is_catalog_file(include) or \
                    target == ("platform", "file.h"):
                continue
            broken.append(f"{relative}: the pure source catalog includes {include}")
    broken += exporter_room_breaks(root)
    types = SOURCE_TYPE.findall((root / "sources" / "source_types.def").read_text())
    if not types:
        broken.append("sources/source_types.def names no source type")
    for path in sorted((root / "core").rglob("*")):
        if path.suffix not in (".cc", ".h"):
            continue
        text = path.read_text(errors="replace")
        for name in types:
            # "file" is also a key of the spec (progress.file); the other names are only types.
            if name != "file" and f'"{name}"' in text:
                broken.append(f"{path.relative_to(root)}: core names the source type \"{name}\"")
    for line in broken:
        print(f"FAIL {line}")
    print(f"{files} files read, {len(broken)} includes against the layering")
    if files < 50:
        print("FAIL too few files read: is --source-dir the repository?")
        return 1
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
