#!/usr/bin/env bash
# The test command's artifacts stage: packages BUILD_DIR (tools/package.sh), installs each
# artifact into a clean place (the tarball and the .deb unpacked into a scratch directory, the
# wheel into a new venv, and `pip install .` of the checkout into another) and runs, from the
# installed copy only (CLI and library), the demo job: 8 sim_train ranks on simgpu under
# `perftracker run`, rank 3's GPU throttled; `analyze` must name rank 3. Then `selftest` on
# simgpu. The job's own files (sim_train, simgpu) come from BUILD_DIR, which must hold the
# targets simtorch_C and simgpu_nvml.
#
#   tools/artifacts_test.sh BUILD_DIR
# Ends with "artifacts: N passed, N failed, N skipped", one line per check before it.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=$(realpath "${1:?usage: artifacts_test.sh BUILD_DIR}")
scratch=$(mktemp -d /tmp/perftracker-artifacts.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
passed=0 failed=0
check() {  # check NAME COMMAND...
  local out start=$SECONDS
  if out=$("${@:2}" 2>&1); then
    echo "artifacts: ok   $1 ($((SECONDS - start)) s)"
    passed=$((passed + 1))
  else
    echo "artifacts: FAIL $1"
    echo "$out" | tail -n 20 | sed 's/^/    /'
    failed=$((failed + 1))
  fi
}
finish() { echo "artifacts: $passed passed, $failed failed, 0 skipped"; ((failed == 0)); exit; }

if ! tools/package.sh "$build" "$scratch/dist" >"$scratch/package.log" 2>&1; then
  cat "$scratch/package.log"
  echo "artifacts: FAIL tools/package.sh"
  failed=1
  finish
fi
cat "$scratch/package.log"
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")

# The demo job (tools/demo.sh's, shorter) under `perftracker run` of BIN: the verdict's first
# candidate must be rank 3 alone.
demo() {
  local bin=$1 out=$scratch/demo-$2
  PERFTRACKER_JOB_ID=demo PERFTRACKER_WINDOW_ITERS=5 PERFTRACKER_WINDOW_S=0 \
    PERFTRACKER_SAMPLE_EVERY=1 PERFTRACKER_RING_MB=4 SIMGPU_TIME_SCALE=0.5 SIMGPU_JITTER=0.03 \
    SIMGPU_COMPUTE_SLOWDOWN=3=1.3 SIMGPU_NVML_THROTTLE=3=hw_thermal \
    "$bin/perftracker" run --dir "$out" -- \
    examples/sim_train/run.sh "$build" 8 --iters 30 --layers 4 --seq 2048 --log-every 10 \
    >"$scratch/demo-$2.log" 2>&1 || { tail -n 20 "$scratch/demo-$2.log"; return 1; }
  "$bin/perftracker" analyze "$out/demo" --json - | python3 -c '
import json, sys
report = json.load(sys.stdin)
top = report["candidates"][0] if report["candidates"] else {}
if top.get("rank_set") != [3]:
    sys.exit("first candidate: %s %s, not rank 3" % (top.get("rank_set"), top.get("function")))
print("rank 3:", top["category"], top["function"])'
}
# `selftest` of BIN on simgpu: its library and workload are the installed ones.
selftest() {
  LD_LIBRARY_PATH="$build/simgpu/lib" SIMGPU_TIME_SCALE=0.05 TMPDIR=$scratch \
    "$1/perftracker" selftest --launches 2000 >"$scratch/selftest.log" 2>&1 ||
    { tail -n 30 "$scratch/selftest.log"; return 1; }
  grep -q "selftest passed" "$scratch/selftest.log"
}
# The installed copy answers with this version, and is not the build tree's.
installed() {
  local v
  v=$("$1/perftracker" --version) && [[ $v == "perftracker $version "* ]] ||
    { echo "--version: '$v'"; return 1; }
}

tarball=$(ls "$scratch"/dist/perftracker-*.tar.gz)
mkdir "$scratch/tar"
tar -C "$scratch/tar" -xzf "$tarball"
tar_bin=$scratch/tar/perftracker-$version/bin
check "tarball: layout (bin/, lib/, share/doc/perftracker)" test -x "$tar_bin/perftracker" -a \
  -f "$scratch/tar/perftracker-$version/lib/libperftracker.so" -a \
  -f "$scratch/tar/perftracker-$version/share/doc/perftracker/README.md"
check "tarball: --version" installed "$tar_bin"
check "tarball: the demo names rank 3" demo "$tar_bin" tar
check "tarball: selftest on simgpu" selftest "$tar_bin"

deb=$(ls "$scratch"/dist/perftracker_*.deb)
dpkg-deb -x "$deb" "$scratch/deb"
check "deb: depends on glibc 2.28 alone" \
  test "$(dpkg-deb -f "$deb" Depends)" = "libc6 (>= 2.28)"
check "deb: --version" installed "$scratch/deb/usr/bin"
check "deb: the demo names rank 3" demo "$scratch/deb/usr/bin" deb
check "deb: selftest on simgpu" selftest "$scratch/deb/usr/bin"

wheel=$(ls "$scratch"/dist/perftracker-*.whl)
wheel_install() {
  /usr/bin/python3 -m venv "$scratch/venv" &&
    "$scratch/venv/bin/pip" install -q --no-index "$wheel" &&
    [[ $(basename "$wheel") == *-py3-none-manylinux_2_28_$(uname -m).whl ]] &&
    "$scratch/venv/bin/python" -m perftracker --version | grep -q "^perftracker $version "
}
check "wheel: pip install into a new venv, python -m perftracker" wheel_install
check "wheel: --version" installed "$scratch/venv/bin"
check "wheel: the demo names rank 3" demo "$scratch/venv/bin" wheel
check "wheel: selftest on simgpu" selftest "$scratch/venv/bin"

# `pip install .` of the checkout: the backend drives CMake (here reusing BUILD_DIR).
checkout_install() {
  /usr/bin/python3 -m venv "$scratch/venv-src" &&
    PERFTRACKER_BUILD_DIR=$build "$scratch/venv-src/bin/pip" install -q --no-index "$root" &&
    installed "$scratch/venv-src/bin"
}
check "pip install . from the checkout" checkout_install
finish
