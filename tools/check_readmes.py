#!/usr/bin/env python3
"""Checks that every README.md tells the truth about the files it describes.

- It names every source file of its own folder (not of subfolders): *.cpp *.h *.fbs *.py *.sh
  *.in. A name counts when written whole (`ring.cpp`, `core/ring.cpp`) or as the stem with a
  star (`ring.*`); a header and the .cpp of the same stem stand for each other.
- Every file name it writes in backticks exists: a file of its folder or one beneath it, or, for
  a name that points elsewhere (`fake_host.py`, `core/writer.h`), a file of the repo whose path
  ends so. Headers from outside the repo are written as included: `<Python.h>`.

- Every folder of analyzer/ and preload/ has one.

Prints one line per unnamed or missing file and exits 1; prints a summary and exits 0 when clean.
Usage: tools/check_readmes.py [REPO_ROOT]
"""
import pathlib
import re
import sys

SOURCE = (".cpp", ".h", ".fbs", ".py", ".sh", ".in")
# A backticked token that is a file name: word characters, optional folders, a known extension.
FILE_NAME = re.compile(r"^[\w.+-]+(/[\w.+-]+)*\.(cpp|h|fbs|py|sh|in|cmake|map|md|txt|json)$")
BACKTICKED = re.compile(r"`([^`\n]+)`")
# Folders each of whose subfolders needs a README (what lives there, where to start, what it may
# include).
EVERY_FOLDER = ("analyzer", "preload")
# Build trees and what is fetched or generated there are not described by READMEs.
SKIP = re.compile(r"^(build.*|Testing|\.git|_deps|shared)$")


def repo_files(root):
    out = []
    stack = [root]
    while stack:
        d = stack.pop()
        for p in d.iterdir():
            if p.is_dir():
                if not SKIP.match(p.name):
                    stack.append(p)
            elif p.is_file():
                out.append(p.relative_to(root).as_posix())
    return sorted(out)


def named(text, name):
    stem = name.rsplit(".", 1)[0]
    names = [re.escape(name), re.escape(stem) + r"\.\*"]
    if name.endswith(".cpp"):
        names.append(re.escape(stem) + r"\.h")
    elif name.endswith(".h"):
        names.append(re.escape(stem) + r"\.cpp")
    return re.search(r"(?<![\w-])(" + "|".join(names) + r")(?![\w])", text) is not None


def exists(token, folder, files):
    """Whether `token` names a file under `folder` ('' for the root), else anywhere."""
    prefix = folder + "/" if folder else ""
    ends = "/" + token
    under = [f for f in files if f.startswith(prefix) and (f == prefix + token or f.endswith(ends))]
    return bool(under) or any(f == token or f.endswith(ends) for f in files)


def check(root):
    files = repo_files(root)
    readmes = [f for f in files if f.rsplit("/", 1)[-1] == "README.md"]
    errors = []
    for rel in readmes:
        folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
        text = (root / rel).read_text()
        prefix = folder + "/" if folder else ""
        own = [f[len(prefix):] for f in files if f.startswith(prefix) and "/" not in f[len(prefix):]]
        for name in own:
            if name.endswith(SOURCE) and not named(text, name):
                errors.append(f"{rel}: does not name {name}")
        for m in BACKTICKED.finditer(text):
            token = m.group(1).strip()
            if FILE_NAME.match(token) and ".." not in token.split("/") and not exists(token, folder, files):
                lineno = text.count("\n", 0, m.start()) + 1
                errors.append(f"{rel}:{lineno}: names {token}, which does not exist")
    for top in EVERY_FOLDER:
        for d in sorted(p for p in (root / top).iterdir() if p.is_dir()):
            if not (d / "README.md").is_file():
                errors.append(f"{d.relative_to(root).as_posix()}/: no README.md")
    return readmes, errors


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
    readmes, errors = check(root.resolve())
    for e in errors:
        print(e)
    if not readmes:
        print("check_readmes: no README.md found")
        return 1
    if errors:
        return 1
    print(f"check_readmes: {len(readmes)} READMEs name their folders' files, and only files that exist")
    return 0


if __name__ == "__main__":
    sys.exit(main())
