#!/usr/bin/env bash
# `perftracker run` asks the loader first: a library it refuses (not an ELF file, a library it
# needs missing, as on a host whose glibc is too old) is exit 2 with the loader's reason in one
# line, and the command never starts; a library that loads runs it.
#   run_load_check_test.sh PERFTRACKER LIBRARY [CC]
source "$(dirname "$0")/lib.sh"
perftracker=$1 library=$2 cc=${3:-cc}

refused() {  # refused LIBRARY REASON: exit 2, one line naming REASON, no command run
  local rc=0
  PERFTRACKER_LIBRARY=$1 "$perftracker" run --dir "$scratch/out" -- touch "$scratch/started" \
    2>"$scratch/err" || rc=$?
  expect_eq "$rc" 2 "exit status with $(basename "$1")"
  expect_eq "$(wc -l <"$scratch/err")" 1 "stderr lines with $(basename "$1")"
  grep -q "refuses $1 (.*$2.*); not starting the command" "$scratch/err" ||
    fail "no loader's reason '$2': $(cat "$scratch/err")"
  [[ ! -e $scratch/started ]] || fail "the command started with $(basename "$1")"
  cat "$scratch/err"
}

# Longer than an ELF header: the loader reads it, then rejects it.
printf 'not a library%.0s\n' {1..10} >"$scratch/libtext.so"
refused "$scratch/libtext.so" "invalid ELF header"
echo 'int gone(void) { return 1; }' >"$scratch/gone.c"
echo 'int gone(void); int needs(void) { return gone(); }' >"$scratch/needs.c"
"$cc" -shared -fPIC -o "$scratch/libgone.so" "$scratch/gone.c"
"$cc" -shared -fPIC -o "$scratch/libneeds.so" "$scratch/needs.c" -L"$scratch" -lgone
rm "$scratch/libgone.so"
refused "$scratch/libneeds.so" "libgone.so: cannot open shared object file"

PERFTRACKER_LIBRARY=$library "$perftracker" run --dir "$scratch/out" -- touch "$scratch/started" \
  2>"$scratch/err" || fail "a library that loads: $(cat "$scratch/err")"
[[ -e $scratch/started ]] || fail "the command did not run with a library that loads"
echo "run_load_check_test: ok"
