#!/usr/bin/env bash
# perftracker dump: every record as a JSON line; damaged or missing input is exit 2 with one line.
source "$(dirname "$0")/lib.sh"
pt=$1 gen=$2

"$gen" --dir "$scratch" --job j --ranks 2 --windows 5 --functions 50 --ring-mb 1 >/dev/null
file="$scratch/j/node0/rank-1.ptr"
"$pt" dump "$file" >"$scratch/out.jsonl"
expect_eq "$(sed -n 1p "$scratch/out.jsonl" | grep -o '"type":"header"')" '"type":"header"' "first line"
expect_eq "$(sed -n 2p "$scratch/out.jsonl" | grep -o '"type":"live","valid":true')" \
  '"type":"live","valid":true' "second line"
expect_eq "$(grep -c '"type":"window"' "$scratch/out.jsonl")" 5 "window lines"
expect_eq "$(tail -1 "$scratch/out.jsonl" | grep -o '"records_read":5,"records_skipped":0')" \
  '"records_read":5,"records_skipped":0' "summary"
# Every line is one JSON document; the records' bytes on disk are whole 8-byte-aligned frames
# (5 frames of 32 bytes at least) inside the record region.
/usr/bin/python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
n, cap = lines[-1]["record_bytes"], lines[0]["data_capacity"]
sys.exit(0 if n % 8 == 0 and 5 * 32 < n <= cap else f"record_bytes {n} of {cap}")' \
  "$scratch/out.jsonl" || fail "dump output is not JSON lines with a sound record_bytes"

# Garbage, a missing file, a directory, no argument: exit 2 and exactly one line on stderr.
head -c 100000 /dev/urandom >"$scratch/garbage.ptr"
for arg in "$scratch/garbage.ptr" "$scratch/missing.ptr" "$scratch"; do
  set +e
  "$pt" dump "$arg" >"$scratch/stdout" 2>"$scratch/stderr"
  rc=$?
  set -e
  expect_eq "$rc" 2 "exit code for $arg"
  expect_eq "$(wc -l <"$scratch/stderr")" 1 "stderr lines for $arg"
  expect_eq "$(wc -c <"$scratch/stdout")" 0 "stdout bytes for $arg"
done
set +e; "$pt" dump 2>/dev/null; rc=$?; set -e
expect_eq "$rc" 2 "exit code without FILE"

# A writer killed with SIGKILL mid-run: every completed record is shown, none skipped.
"$gen" --dir "$scratch" --job killed --ranks 1 --windows 1000000 --functions 200 --ring-mb 2 \
  >/dev/null 2>&1 &
writer=$!
sleep 1.5
kill -9 "$writer"
wait "$writer" 2>/dev/null || true
"$pt" dump "$scratch/killed/node0/rank-0.ptr" >"$scratch/killed.jsonl"
summary=$(tail -1 "$scratch/killed.jsonl")
read_count=$(sed -n 's/.*"records_read":\([0-9]*\).*/\1/p' <<<"$summary")
[[ "$read_count" -gt 0 ]] || fail "no records survived the kill: $summary"
expect_eq "$(grep -o '"records_skipped":0,"seq_gaps":0' <<<"$summary")" \
  '"records_skipped":0,"seq_gaps":0' "killed writer summary"
expect_eq "$(grep -c '"type":"window"' "$scratch/killed.jsonl")" "$read_count" "killed window lines"
echo "cli_dump_test: ok ($read_count records after SIGKILL)"
