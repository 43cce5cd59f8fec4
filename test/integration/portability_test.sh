#!/usr/bin/env bash
# What `cmake --install` gives runs on glibc >= 2.28 with nothing else from the host
# (tools/check_portability.py), and the check fails on the two ways a build breaks that: a
# symbol version newer than the floor, a library that is not glibc's.
#   portability_test.sh BUILD_DIR CHECK_SCRIPT [CC]
source "$(dirname "$0")/lib.sh"
build=$1 check=$2 cc=${3:-cc}
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
out=$(python3 "$check" "$scratch/prefix") || fail "installed binaries: $out"
echo "$out"
for f in bin/perftracker bin/perftracker-gen lib/libperftracker.so; do
  grep -q "^ok   $scratch/prefix/$f " <<<"$out" || fail "$f not checked: $out"
done

# Planted: arc4random binds glibc 2.36's version; a library that needs libzstd.so.1.
cat >"$scratch/new_version.c" <<'C'
#include <stdlib.h>
unsigned planted(void) { return arc4random(); }
C
echo 'int planted(void) { return 0; }' >"$scratch/needs_zstd.c"
"$cc" -shared -fPIC -o "$scratch/libnew_version.so" "$scratch/new_version.c"
"$cc" -shared -fPIC -o "$scratch/libneeds_zstd.so" "$scratch/needs_zstd.c" \
  -Wl,--no-as-needed -l:libzstd.so.1
expect_fail() {  # expect_fail FILE TEXT: the check exits 1 and names TEXT
  local out rc=0
  out=$(python3 "$check" "$1") || rc=$?
  expect_eq "$rc" 1 "exit status of the check on $(basename "$1")"
  grep -q "^FAIL .*$2" <<<"$out" || fail "the check on $(basename "$1") does not name $2: $out"
  echo "$out"
}
expect_fail "$scratch/libnew_version.so" "needs GLIBC_2.36 from libc.so.6 (newer than the floor: arc4random)"
expect_fail "$scratch/libneeds_zstd.so" "needs libzstd.so.1"
# One bad file among good ones fails the tree.
cp "$scratch/libnew_version.so" "$scratch/prefix/lib/"
rc=0
python3 "$check" "$scratch/prefix" >/dev/null || rc=$?
expect_eq "$rc" 1 "exit status of the check on a tree with one bad file"
# The floor is the limit: at 2.36 the planted version passes.
python3 "$check" --floor 2.36 "$scratch/libnew_version.so" >/dev/null ||
  fail "a version at the floor failed the check"
echo "portability_test: ok"
