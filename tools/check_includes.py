#!/usr/bin/env python3
"""Checks that preload/'s includes point one way (preload/README.md).

- preload/core/ includes only core/ (and schemas/, system headers): it knows no family.
- A family folder (cuda/, driver/, nccl/, python/, hw/) includes core/, itself, and only the headers
  another family offers to the others (PUBLIC below), never another family's internals.
- preload/bootstrap.cpp, the start-up that wires the families together, may include any of them.
- Every include of a preload/ header names a file that exists.

Prints one line per offending include and exits 1; prints a summary line and exits 0 when clean.
Usage: tools/check_includes.py [REPO_ROOT]
"""
import pathlib
import re
import sys

FAMILIES = ("cuda", "driver", "nccl", "python", "hw")

# What a family offers the other families. cuda/cuda_hook.h is the shape of every hook that
# records device work on a stream (the driver tier's launches and NCCL's collectives use it).
PUBLIC = {
    "cuda": {"cuda_hook.h"},
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(rel):
    parts = rel.split("/")
    return parts[1] if len(parts) > 2 else None  # preload/<folder>/<file>, None for preload/x


def check(root):
    errors = []
    files = sorted(p for p in (root / "preload").rglob("*") if p.suffix in (".cpp", ".h"))
    for path in files:
        rel = path.relative_to(root).as_posix()
        here = folder_of(rel)
        text = path.read_text()
        for m in INCLUDE.finditer(text):
            lineno, target = text.count("\n", 0, m.start()) + 1, m.group(1)
            where = f"{rel}:{lineno}: {target}"
            if not target.startswith("preload/"):
                continue
            if not (root / target).is_file():
                errors.append(f"{where}: no such file")
                continue
            there = folder_of(target)
            if here is None or there == here or there == "core":
                continue
            if here == "core":
                errors.append(f"{where}: core/ includes a family (register a callback instead)")
            elif there is None:
                errors.append(f"{where}: a family includes the start-up")
            elif pathlib.PurePosixPath(target).name not in PUBLIC.get(there, set()):
                errors.append(f"{where}: {here}/ includes {there}/'s internals")
    return files, errors


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
    files, errors = check(root.resolve())
    for e in errors:
        print(e)
    if not files:
        print("check_includes: no sources under preload/")
        return 1
    if errors:
        return 1
    print(f"check_includes: {len(files)} files under preload/, includes point one way")
    return 0


if __name__ == "__main__":
    sys.exit(main())
