"""The wheel of perftracker, by hand: a zip of the package (packaging/python/perftracker), the
installed native files (bin/, lib/) inside it, and its metadata. Two ways in:

- PEP 517 build backend of pyproject.toml (`pip install .`, `pip wheel .`): configures and builds
  the checkout with CMake (Release, in $PERFTRACKER_BUILD_DIR, default build-wheel/), installs
  into a scratch prefix, zips. It needs nothing from a package index (requires = []).
- `python3 perftracker_build.py wheel PREFIX OUT_DIR`: zips what `cmake --install` put in PREFIX
  (tools/package.sh, which has built it already).

The tag says what the files need: any Python 3 (the package only execs the binary), glibc 2.28
(manylinux_2_28: tools/check_portability.py holds the binaries to it), the ELF's architecture.
"""
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GLIBC_FLOOR = "2_28"
MACHINES = {62: "x86_64", 183: "aarch64"}  # ELF e_machine
PROGRAMS = ("perftracker", "perftracker-gen", "perftracker-selftest-workload")
SUMMARY = "Find why a distributed PyTorch job is slow: which rank, which function"


def project_version(root=ROOT):
    with open(os.path.join(root, "CMakeLists.txt")) as f:
        m = re.search(r"project\(\s*perftracker\s+VERSION\s+([0-9][0-9.]*)", f.read())
    if not m:
        raise RuntimeError("CMakeLists.txt: no project(perftracker VERSION ...)")
    return m.group(1)


def elf_arch(path):
    with open(path, "rb") as f:
        head = f.read(20)
    if head[:4] != b"\x7fELF":
        raise RuntimeError(f"{path}: not an ELF file")
    machine = int.from_bytes(head[18:20], "little")
    if machine not in MACHINES:
        raise RuntimeError(f"{path}: ELF machine {machine} is neither x86_64 nor aarch64")
    return MACHINES[machine]


def _metadata(version):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return (f"Metadata-Version: 2.1\nName: perftracker\nVersion: {version}\n"
            f"Summary: {SUMMARY}\nLicense: Apache-2.0\nRequires-Python: >=3.6\n"
            f"Description-Content-Type: text/markdown\n\n{readme}")


def _hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def write_wheel(prefix, out_dir, version=None):
    """Zips PREFIX's bin/ and lib/ with the package into OUT_DIR; returns the wheel's name."""
    version = version or project_version()
    library = os.path.join(prefix, "lib", "libperftracker.so")
    arch = elf_arch(library)
    tag = f"py3-none-manylinux_{GLIBC_FLOOR}_{arch}"
    name = f"perftracker-{version}-{tag}.whl"
    info = f"perftracker-{version}.dist-info"
    files = []  # (path in the wheel, bytes, executable)
    package = os.path.join(HERE, "perftracker")
    for py in sorted(os.listdir(package)):
        if py.endswith(".py"):
            with open(os.path.join(package, py), "rb") as f:
                files.append((f"perftracker/{py}", f.read(), False))
    for program in PROGRAMS:
        path = os.path.join(prefix, "bin", program)
        if os.path.exists(path):
            with open(path, "rb") as f:
                files.append((f"perftracker/bin/{program}", f.read(), True))
    with open(library, "rb") as f:
        files.append(("perftracker/lib/libperftracker.so", f.read(), True))
    with open(os.path.join(ROOT, "LICENSE"), "rb") as f:
        files.append((f"{info}/LICENSE", f.read(), False))
    files.append((f"{info}/METADATA", _metadata(version).encode(), False))
    files.append((f"{info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: perftracker_build\n"
                                    f"Root-Is-Purelib: false\nTag: {tag}\n").encode(), False))
    files.append((f"{info}/entry_points.txt",
                  b"[console_scripts]\nperftracker = perftracker.__main__:main\n"
                  b"perftracker-gen = perftracker.__main__:gen\n", False))
    record = "".join(f"{path},{_hash(data)},{len(data)}\n" for path, data, _ in files)
    record += f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode(), False))
    os.makedirs(out_dir, exist_ok=True)
    with zipfile.ZipFile(os.path.join(out_dir, name), "w", zipfile.ZIP_DEFLATED) as whl:
        for path, data, executable in files:
            entry = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            entry.external_attr = (0o100755 if executable else 0o100644) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(entry, data)
    return name


def _cmake_install(prefix):
    """Builds what is installed, in Release, and installs it into PREFIX."""
    build = os.environ.get("PERFTRACKER_BUILD_DIR") or os.path.join(ROOT, "build-wheel")
    run = lambda *cmd: subprocess.run(cmd, check=True, stdout=sys.stderr)
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        run("cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_TESTING=OFF")
    targets = ["perftracker", "perftracker_bin", "perftracker-gen"]
    listed = subprocess.run(["cmake", "--build", build, "--target", "help"], check=True,
                            capture_output=True, text=True).stdout
    if "perftracker_selftest_workload" in listed:
        targets.append("perftracker_selftest_workload")
    run("cmake", "--build", build, "-j", str(os.cpu_count() or 2),
        *[a for t in targets for a in ("--target", t)])
    run("cmake", "--install", build, "--prefix", prefix, "--strip")


# PEP 517 hooks.
def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with tempfile.TemporaryDirectory() as prefix:
        _cmake_install(prefix)
        return write_wheel(prefix, wheel_directory)


def main(argv):
    if len(argv) != 4 or argv[1] != "wheel":
        print("usage: perftracker_build.py wheel PREFIX OUT_DIR", file=sys.stderr)
        return 2
    try:
        print(write_wheel(argv[2], argv[3]))
    except (OSError, RuntimeError) as e:
        print(f"perftracker_build: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
