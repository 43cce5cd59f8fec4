#!/usr/bin/env bash
# A launch made inside a runtime library (here a stand-in named like cuBLAS, launching through
# its PLT) is named after the first frame outside such libraries: the library walks the stack
# with libgcc's unwinder (linked in statically since issue 45; libunwind before).
#   site_unwind_test.sh LIBPERFTRACKER PERFTRACKER STUB_CUDART CUDA_INCLUDE [CC]
set -euo pipefail
lib=$1 perftracker=$2 stub=$3 include=$4 cc=${5:-cc}
scratch=$(mktemp -d /tmp/perftracker-site.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cat >"$scratch/runtime.c" <<'C'
#include <cuda_runtime_api.h>
static void kernel(void) {}
static int inner(void) {
  return cudaLaunchKernel((const void*)kernel, (dim3){1, 1, 1}, (dim3){1, 1, 1}, 0, 0, 0);
}
int runtime_launch(void) { int r = 0; for (int i = 0; i < 10; ++i) r |= inner(); return r; }
C
echo 'int runtime_launch(void); int main(void) { return runtime_launch(); }' >"$scratch/main.c"
"$cc" -shared -fPIC -O1 -I"$include" "$scratch/runtime.c" -o "$scratch/libcublasstandin.so" \
  "$stub" -Wl,-rpath,"$(dirname "$stub")"
"$cc" -O1 "$scratch/main.c" -o "$scratch/main" -L"$scratch" -lcublasstandin -Wl,-rpath,"$scratch"
RANK=0 WORLD_SIZE=1 PERFTRACKER_DIR="$scratch/out" PERFTRACKER_JOB_ID=site LD_PRELOAD=$lib \
  "$scratch/main" || fail "the program failed under the library"
sites=$("$perftracker" dump "$scratch"/out/site/*/rank-0.ptr |
  grep -o '"name":"cudaLaunchKernel @[^"]*"' | sort -u)
[[ $sites == '"name":"cudaLaunchKernel @ main+0x'* && $(wc -l <<<"$sites") == 1 ]] ||
  fail "the launch site is not named after main: ${sites:-none}"
echo "site_unwind_test: ok ($sites)"
