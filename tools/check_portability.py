#!/usr/bin/env python3
"""Checks that ELF binaries run on any Linux with glibc >= the floor (manylinux_2_28), in the
spirit of auditwheel: each file may need only glibc's own libraries (DT_NEEDED) and only symbol
versions up to the floor (the version needs the dynamic loader checks before it runs a line of
ours; one newer version and it refuses the whole file: "cannot be preloaded: ignored").

  check_portability.py [--floor 2.28] [--arch x86_64|aarch64] PATH...

PATH is an ELF file or a directory (every ELF file under it). One line per file, `ok` or `FAIL`
with what is beyond the floor and the symbols that need it; exit 0 when all pass, 1 when one
fails, 2 on bad input. Reads `readelf` (binutils) output only; runs no binary.
"""
import argparse
import os
import re
import subprocess
import sys

# glibc's libraries, under the names they have had since glibc 2.17 on both architectures.
ALLOWED = {
    "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
    "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
}
MACHINES = {"Advanced Micro Devices X86-64": "x86_64", "AArch64": "aarch64"}
GLIBC_VERSION = re.compile(r"^GLIBC_(\d+)\.(\d+)(?:\.(\d+))?$")


def fail_usage(message):
    print(f"check_portability: {message}", file=sys.stderr)
    sys.exit(2)


def readelf(*args):
    done = subprocess.run(["readelf", "-W", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise ValueError(done.stderr.strip().splitlines()[-1] if done.stderr.strip()
                         else f"readelf exited {done.returncode}")
    return done.stdout


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def machine(path):
    m = re.search(r"^\s*Machine:\s*(.+?)\s*$", readelf("-h", path), re.M)
    return MACHINES.get(m.group(1), m.group(1)) if m else "unknown"


def needed(path):
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", readelf("-d", path))


def version_needs(path):
    """{(file, version name)} from .gnu.version_r: what the loader checks before anything runs."""
    needs = set()
    current = None
    for line in readelf("-V", path).splitlines():
        m = re.search(r"File: (\S+)\s+Cnt:", line)
        if m:
            current = m.group(1)
            continue
        m = re.search(r"Name: (\S+)\s+Flags:", line)
        if m and current is not None:
            needs.add((current, m.group(1)))
    return needs


def undefined_by_version(path):
    """{version: [symbol, ...]} of the file's undefined dynamic symbols: who needs a version."""
    by_version = {}
    for line in readelf("--dyn-syms", path).splitlines():
        fields = line.split()
        if len(fields) < 8 or fields[6] != "UND":
            continue
        name, _, version = fields[7].partition("@")
        version = version.lstrip("@").split(" ")[0]
        if version:
            by_version.setdefault(version, []).append(name)
    return by_version


def parse_floor(text):
    m = re.fullmatch(r"(\d+)\.(\d+)", text)
    if not m:
        fail_usage(f"--floor must be MAJOR.MINOR (e.g. 2.28), got '{text}'")
    return int(m.group(1)), int(m.group(2))


def problems(path, floor, arch):
    found = []
    got = machine(path)
    if arch and got != arch:
        found.append(f"built for {got}, not {arch}")
    for lib in needed(path):
        if lib not in ALLOWED:
            found.append(f"needs {lib} (only glibc's libraries are allowed)")
    symbols = undefined_by_version(path)
    for lib, version in sorted(version_needs(path)):
        m = GLIBC_VERSION.match(version)
        if m and (int(m.group(1)), int(m.group(2))) <= floor:
            continue
        why = "newer than the floor" if m else "not a public glibc version"
        users = sorted(set(symbols.get(version, [])))
        shown = ", ".join(users[:6]) + (f" and {len(users) - 6} more" if len(users) > 6 else "")
        found.append(f"needs {version} from {lib} ({why}{': ' + shown if shown else ''})")
    return got, found


def files_under(paths):
    for path in paths:
        if os.path.isdir(path):
            for parent, _, names in sorted(os.walk(path)):
                for name in sorted(names):
                    full = os.path.join(parent, name)
                    if not os.path.islink(full) and is_elf(full):
                        yield full
        elif os.path.isfile(path) and is_elf(path):
            yield path
        else:
            fail_usage(f"{path}: not an ELF file or a directory")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--floor", default="2.28", help="oldest glibc to run on (default 2.28)")
    parser.add_argument("--arch", choices=sorted(set(MACHINES.values())),
                        help="every file must be built for this architecture")
    parser.add_argument("paths", nargs="+", metavar="PATH")
    args = parser.parse_args()
    floor = parse_floor(args.floor)
    files = list(files_under(args.paths))
    if not files:
        fail_usage(f"no ELF file under {' '.join(args.paths)}")
    bad = 0
    for path in files:
        try:
            got, found = problems(path, floor, args.arch)
        except (OSError, ValueError) as e:
            fail_usage(f"{path}: {e}")
        if found:
            bad += 1
            print(f"FAIL {path} ({got}): " + "; ".join(found))
        else:
            newest = max((v for v in version_needs(path) if GLIBC_VERSION.match(v[1])),
                         key=lambda v: tuple(int(x or 0) for x in GLIBC_VERSION.match(v[1]).groups()),
                         default=(None, "none"))[1]
            print(f"ok   {path} ({got}): needs {' '.join(needed(path)) or 'nothing'}; "
                  f"newest version {newest}")
    print(f"check_portability: {len(files) - bad} of {len(files)} files run on glibc "
          f">= {args.floor}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
