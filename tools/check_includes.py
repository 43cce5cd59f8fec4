#!/usr/bin/env python3
"""Checks that preload/'s and analyzer/'s includes point one way (their READMEs).

preload/:
- preload/core/ includes only core/ (and schemas/, system headers): it knows no family.
- A family folder (cuda/, driver/, nccl/, python/, hw/) includes core/, itself, and only the headers
  another family offers to the others (PUBLIC below), never another family's internals.
- preload/bootstrap.cpp, the start-up that wires the families together, may include any of them.

analyzer/: the stages of the pipeline, each including itself and the stages after it in STAGES
(commands -> report -> verdict -> detect -> ingest -> base), and schemas/; never a stage before it,
never the collector. selftest/ (the workload and its checks) includes itself and base/, and only
commands/ includes it; main.cpp includes commands/.

Every include of a repo header names a file that exists.

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

# analyzer/'s stages, each allowed to include the ones after it.
STAGES = ("commands", "report", "verdict", "detect", "ingest", "base")
ANALYZER_ALLOWED = {stage: set(STAGES[i:]) for i, stage in enumerate(STAGES)}
ANALYZER_ALLOWED["commands"].add("selftest")
ANALYZER_ALLOWED["selftest"] = {"selftest", "base"}
ANALYZER_ALLOWED[None] = {"commands"}  # analyzer/main.cpp

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(rel):
    parts = rel.split("/")
    return parts[1] if len(parts) > 2 else None  # preload/<folder>/<file>, None for preload/x


def sources(root, top):
    return sorted(p for p in (root / top).rglob("*") if p.suffix in (".cpp", ".h"))


def includes(root, path):
    """(where, target) of each repo-rooted include: where is "FILE:LINE: TARGET"."""
    rel = path.relative_to(root).as_posix()
    text = path.read_text()
    for m in INCLUDE.finditer(text):
        lineno, target = text.count("\n", 0, m.start()) + 1, m.group(1)
        yield f"{rel}:{lineno}: {target}", target


def check_analyzer(root):
    errors = []
    files = sources(root, "analyzer")
    for path in files:
        here = folder_of(path.relative_to(root).as_posix())
        for where, target in includes(root, path):
            top = target.split("/", 1)[0]
            if top not in ("analyzer", "schemas", "preload", "tools", "test"):
                continue  # a system or third-party header
            # FlatBuffers headers are generated into the build tree from the schema beside them.
            generated = target.endswith("_generated.h")
            exists = root / (target[: -len("_generated.h")] + ".fbs" if generated else target)
            if not exists.is_file():
                errors.append(f"{where}: no such file")
            elif top == "schemas":
                continue
            elif top != "analyzer":
                errors.append(f"{where}: the analyzer includes only analyzer/ and schemas/")
            elif folder_of(target) not in ANALYZER_ALLOWED.get(here, set()):
                there = folder_of(target) or "main.cpp"
                errors.append(f"{where}: {here or 'main.cpp'} may not include {there}"
                              " (includes point commands -> report -> verdict -> detect -> ingest"
                              " -> base)")
    return files, errors


def check(root):
    errors = []
    files = sources(root, "preload")
    for path in files:
        rel = path.relative_to(root).as_posix()
        here = folder_of(rel)
        for where, target in includes(root, path):
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
    errors, summary = [], []
    for top, checker in (("preload", check), ("analyzer", check_analyzer)):
        files, more = checker(root.resolve())
        errors += more if files else [f"check_includes: no sources under {top}/"]
        summary.append(f"{len(files)} files under {top}/")
    for e in errors:
        print(e)
    if errors:
        return 1
    print(f"check_includes: {', '.join(summary)}; includes point one way")
    return 0


if __name__ == "__main__":
    sys.exit(main())
