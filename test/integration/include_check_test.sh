#!/usr/bin/env bash
# tools/check_includes.py passes on the tree and fails on each kind of wrong include: core/
# including a family, a family including another's internals, a header that does not exist.
set -euo pipefail
src=$1
check="$src/tools/check_includes.py"
python3 "$check" "$src"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
expect_refused() {  # FILE LINE WHAT: the check must name FILE after LINE is added to it
  rm -rf "$tmp/preload" && cp -r "$src/preload" "$tmp/preload"
  printf '%s\n' "$2" >>"$tmp/$1"
  local out
  if out=$(python3 "$check" "$tmp"); then
    echo "FAIL: $3 was not refused"; exit 1
  fi
  # Exactly the added line is named.
  [[ $(wc -l <<<"$out") -eq 1 && "$out" == "$1:"* ]] || { echo "FAIL: $3: $out"; exit 1; }
  echo "refused: $out"
}
expect_refused preload/core/writer.cpp '#include "preload/nccl/net_links.h"' "core including a family"
expect_refused preload/nccl/nccl.cpp '#include "preload/python/cpython_internal.h"' "a family's internals"
expect_refused preload/cuda/cupti.cpp '#include "preload/core/no_such.h"' "a missing header"
echo "include check: ok"
