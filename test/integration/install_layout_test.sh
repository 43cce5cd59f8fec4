#!/usr/bin/env bash
# cmake --install gives the contract's layout, and `perftracker run` finds the library from it.
source "$(dirname "$0")/lib.sh"
build=$1
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
[[ -x "$scratch/prefix/bin/perftracker" ]] || fail "bin/perftracker missing"
[[ -f "$scratch/prefix/lib/libperftracker.so" ]] || fail "lib/libperftracker.so missing"
out=$("$scratch/prefix/bin/perftracker" run --dir "$scratch/out" -- /usr/bin/env)
grep -qx "LD_PRELOAD=$scratch/prefix/lib/libperftracker.so" <<<"$out" || fail "LD_PRELOAD not set: $out"
grep -qx "PERFTRACKER_DIR=$scratch/out" <<<"$out" || fail "PERFTRACKER_DIR not set"
set +e
"$scratch/prefix/bin/perftracker" run -- /nonexistent/program 2>"$scratch/err"
rc=$?
set -e
expect_eq "$rc" 2 "exit code for a missing program"
expect_eq "$(wc -l <"$scratch/err")" 1 "stderr lines for a missing program"
echo "install_layout_test: ok"
