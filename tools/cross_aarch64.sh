#!/usr/bin/env bash
# The aarch64 part of the test command (Grace/GH200 nodes): cross-builds libperftracker.so and
# its unit tests with Debian's g++-aarch64-linux-gnu against arm64 multiarch packages, checks the
# exported symbol versions, holds what is installed (the library, the CLI, perftracker-gen, the
# selftest workload) to glibc 2.28 and nothing else (tools/check_portability.py, and the check
# fails on planted violations), and runs under qemu-user what emulation runs faithfully: the
# format and recorder unit tests, and the symbol-binding programs with and without the library.
# Not covered here (README "aarch64"): simgpu, the CUDA/NCCL/Python hook tests, real torch.
#
#   tools/cross_aarch64.sh [BUILD_DIR]      (default build-aarch64)
# Ends with "aarch64: N passed, N failed, N skipped" (each skip one "aarch64: skip WHAT (why)"
# line before it), or "aarch64: skipped (reason)" and exit 0 where the cross toolchain cannot be
# installed (not a Debian amd64 machine, no network). A check says `ok` only when it ran.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dir=$(realpath -m "${1:-build-aarch64}")
native=${NATIVE_BUILD:-build}  # its analyzer reads the aarch64 ring files (same format)

skip() { echo "aarch64: skipped ($*)"; exit 0; }

[[ $(uname -m) == x86_64 ]] || skip "the cross toolchain is set up for x86-64 hosts only"
command -v dpkg >/dev/null && command -v apt-get >/dev/null || skip "not a Debian machine"
sudo=""
[[ $(id -u) -eq 0 ]] || sudo=sudo
arm64_dev=(libzstd-dev:arm64 libxxhash-dev:arm64 libflatbuffers-dev:arm64)
packages=(g++-aarch64-linux-gnu qemu-user "${arm64_dev[@]}")
missing=()
for p in "${packages[@]}"; do
  [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "aarch64: installing ${missing[*]}"
  [[ " $(dpkg --print-foreign-architectures | tr '\n' ' ') " == *" arm64 "* ]] ||
    $sudo dpkg --add-architecture arm64 ||
    skip "cannot add the arm64 architecture"
  { $sudo apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"; } >/dev/null 2>&1 ||
    skip "cannot install ${missing[*]}"
fi

log="$dir/build.log"
mkdir -p "$dir"
targets=(perftracker perftracker_bin perftracker-gen perftracker_selftest_workload unit_tests
         recorder_tests pt_two_runtimes pt_framework_main)
if ! { cmake -S "$root" -B "$dir" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" \
         -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPERFTRACKER_SIMGPU=OFF -DPERFTRACKER_BENCHMARKS=OFF \
         -DBUILD_TESTING=ON -DPERFTRACKER_WERROR=ON &&
       cmake --build "$dir" -j"$(nproc)" "${targets[@]/#/--target=}"; } >"$log" 2>&1; then
  tail -n 40 "$log"
  echo "aarch64: FAIL cross build"
  echo "aarch64: 0 passed, 1 failed, 0 skipped"
  exit 1
fi

passed=0
failed=0
skipped=0
skip_check() {  # skip_check NAME WHY
  echo "aarch64: skip $1 ($2)"
  skipped=$((skipped + 1))
}
check() {  # check NAME COMMAND...: one line per check
  local out
  if out=$("${@:2}" 2>&1); then
    echo "aarch64: ok   $1"
    passed=$((passed + 1))
  else
    echo "aarch64: FAIL $1"
    echo "$out" | tail -n 20 | sed 's/^/    /'
    failed=$((failed + 1))
  fi
}

qemu=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
lib="$dir/preload/libperftracker.so"
bind="$dir/test/preload/binding"

# qemu-user 7.2 (bookworm) can hang in its emulation of clone: where a program cannot start a
# thread, only the single-threaded checks run (the library's writer is a thread).
probe="$dir/thread_probe"
printf '%s\n' '#include <pthread.h>' 'static void* f(void* p) { return p; }' \
  'int main(void) { pthread_t t; return pthread_create(&t, 0, f, 0) || pthread_join(t, 0); }' |
  aarch64-linux-gnu-gcc -x c - -o "$probe" -pthread
threads=1
if ! (timeout -s KILL 20 qemu-aarch64 -L /usr/aarch64-linux-gnu "$probe") 2>/dev/null; then
  threads=0
  echo "aarch64: qemu-user cannot start threads on this machine: checks that record are skipped"
fi

# dlopen/dlsym at aarch64's glibc base version (2.17) and 2.34, _exit at 2.17, the hooks in every
# version node.
# (Output into a variable first: `grep -q` quitting early fails the pipe under pipefail.)
exports() {
  local symbols
  bash test/integration/exports_test.sh "$lib" "$dir/preload/exports.map" &&
    symbols=$(nm -D "$lib") &&
    grep -q ' dlopen@GLIBC_2.17$' <<<"$symbols" && grep -q ' dlsym@GLIBC_2.17$' <<<"$symbols" &&
    grep -q ' _exit@@GLIBC_2.17$' <<<"$symbols"
}
check "exported symbol versions" exports
# What users install runs on glibc >= 2.28 with nothing else; a newer version or a library that
# is not glibc's fails the check.
portable() {
  cmake --install "$dir" --prefix "$dir/prefix" >/dev/null &&
    python3 tools/check_portability.py --arch aarch64 "$dir/prefix"
}
check "installed binaries need glibc 2.28 and nothing else" portable
planted() {
  local p=$dir/planted rc=0 out
  mkdir -p "$p"
  printf '#include <stdlib.h>\nunsigned planted(void) { return arc4random(); }\n' |
    aarch64-linux-gnu-gcc -x c - -shared -fPIC -o "$p/libnew_version.so" &&
    echo 'int planted(void) { return 0; }' |
    aarch64-linux-gnu-gcc -x c - -shared -fPIC -o "$p/libneeds_zstd.so" \
      -Wl,--no-as-needed -l:libzstd.so.1 || return 1
  out=$(python3 tools/check_portability.py --arch aarch64 "$p") || rc=$?
  echo "$out"
  ((rc == 1)) && grep -q "libnew_version.so (aarch64): needs GLIBC_2.36 .*arc4random" <<<"$out" &&
    grep -q "libneeds_zstd.so (aarch64): needs libzstd.so.1" <<<"$out"
}
check "the portability check fails on planted violations" planted
# The installed CLI starts (its constructors run through glibc_compat_exe.cpp's start-up) and a
# thrown exception unwinds (libgcc's unwinder, through glibc_compat.cpp's _dl_find_object).
cli_starts() {
  local cli=$dir/prefix/bin/perftracker err rc=0
  [[ $("${qemu[@]}" "$cli" --version) == "perftracker "*" (ring format "* ]] || return 1
  err=$("${qemu[@]}" "$cli" analyze --no-such-option 2>&1) || rc=$?
  ((rc == 2)) && grep -q "unknown option --no-such-option" <<<"$err"
}
check "the installed CLI starts and unwinds an exception" cli_starts
# The kill test forks 120 writers: minutes under emulation, and nothing architecture-specific.
check "unit tests (format, codec, ring)" "${qemu[@]}" "$dir/test/unit/unit_tests" "~[kill]"
if ((threads)); then
  check "recorder tests" "${qemu[@]}" "$dir/test/preload/core/recorder_tests"
else
  check "recorder tests (single-threaded ones)" "${qemu[@]}" "$dir/test/preload/core/recorder_tests" \
    "[aggregator],[period],[critical]"
  skip_check "recorder tests (those that start threads)" "qemu-user cannot start threads here"
fi

# Runs a binding program without the library and then with it, passive (MODE passive: same
# output) or recording (MODE recording: same output, and COUNT calls of NAME in the rank's ring
# file; the library's writer is a thread, so this needs threads).
binding() {
  local mode=$1 program=$2 name=$3 count=$4 expected out ring
  local base=("${qemu[@]}" -E "LD_LIBRARY_PATH=$bind/libs")
  expected=$("${base[@]}" "$bind/$program" ${5:-}) || return 1
  if [[ $mode == passive ]]; then
    out=$("${base[@]}" -E "LD_PRELOAD=$lib" "$bind/$program" ${5:-}) || return 1
    [[ "$out" == "$expected" ]] || { echo "passive: '$out', without the library: '$expected'"; return 1; }
    return 0
  fi
  ring=$(mktemp -d)
  out=$("${base[@]}" -E "LD_PRELOAD=$lib" -E "PERFTRACKER_DIR=$ring" -E PERFTRACKER_JOB_ID=arm \
        -E PERFTRACKER_SAMPLE_EVERY=1 -E RANK=0 -E WORLD_SIZE=1 "$bind/$program" ${5:-}) || return 1
  [[ "$out" == "$expected" ]] || { echo "recording: '$out', without the library: '$expected'"; return 1; }
  "$native/analyzer/perftracker" dump "$ring/arm/$(hostname)/rank-0.ptr" | python3 -c '
import json, sys
name, want = sys.argv[1], int(sys.argv[2])
got = 0
for line in sys.stdin:
    r = json.loads(line)
    if r["type"] == "window":
        got += sum(f["count"] for f in r["functions"] if f["name"] == name)
        got += sum(c["count"] for c in r["collectives"] if c["name"] == name)
if got != want:
    sys.exit(f"{name}: {got} recorded, {want} called")
' "$name" "$count"
  local rc=$?
  rm -rf "$ring"
  return $rc
}
bindings=("two CUDA runtimes, each its own calls (local)|pt_two_runtimes cudaLaunchKernel 1700 local"
          "two CUDA runtimes, each its own calls (global)|pt_two_runtimes cudaLaunchKernel 1700 global"
          "frameworks' own NCCL loaded RTLD_LOCAL|pt_framework_main ncclAllReduce 158 -")
for b in "${bindings[@]}"; do
  read -r program name count arg <<<"${b#*|}"
  [[ $arg == - ]] && arg=""
  check "${b%%|*}, passive" binding passive "$program" "$name" "$count" $arg
  if ((!threads)); then
    skip_check "${b%%|*}, recording" "qemu-user cannot start threads here"
  elif [[ ! -x "$native/analyzer/perftracker" ]]; then
    echo "aarch64: FAIL ${b%%|*}, recording: needs the native analyzer at $native (build it first)"
    failed=$((failed + 1))
  else
    check "${b%%|*}, recording" binding recording "$program" "$name" "$count" $arg
  fi
done

echo "aarch64: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
