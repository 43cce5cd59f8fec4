#!/usr/bin/env bash
# Preloaded into programs that are not training ranks, or with PERFTRACKER_ENABLE=0, the library
# changes nothing: same output, same exit code, no file, no stderr.
source "$(dirname "$0")/lib.sh"
lib=$1
run() { env -u RANK -u LOCAL_RANK PERFTRACKER_DIR="$scratch/out" LD_PRELOAD="$lib" "$@"; }

expect_eq "$(run /bin/echo hello 2>"$scratch/err")" hello "echo output"
expect_eq "$(wc -c <"$scratch/err")" 0 "stderr bytes"
set +e; run /bin/sh -c 'exit 7'; rc=$?; set -e
expect_eq "$rc" 7 "exit code passes through"
expect_eq "$(run /usr/bin/python3 -c 'print(6*7)')" 42 "python under preload"
out=$(RANK=0 LOCAL_RANK=0 PERFTRACKER_ENABLE=0 PERFTRACKER_DIR="$scratch/out" LD_PRELOAD="$lib" \
      /bin/echo disabled 2>"$scratch/err")
expect_eq "$out" disabled "disabled rank output"
expect_eq "$(wc -c <"$scratch/err")" 0 "disabled rank stderr"
[[ ! -e "$scratch/out" ]] || fail "a passive process created $scratch/out"
# PERFTRACKER_VERBOSE prints the resolved configuration, one line per variable.
lines=$(PERFTRACKER_VERBOSE=1 LD_PRELOAD="$lib" /bin/true 2>&1 | grep -c '^perftracker: PERFTRACKER_')
expected=$(grep -c '^| `PERFTRACKER_' "$(dirname "$0")/../../README.md")
expect_eq "$lines" "$expected" "verbose configuration lines"
echo "preload_passive_test: ok"
