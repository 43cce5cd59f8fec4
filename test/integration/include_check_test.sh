#!/usr/bin/env bash
# tools/check_includes.py passes on the tree and fails on each kind of wrong include: in preload/,
# core/ including a family, a family including another's internals, a header that does not
# exist; in analyzer/, a stage including one before it (each step of the pipeline), selftest/
# including a stage. tools/check_readmes.py passes on the tree and fails on a README that names
# a missing file or leaves out one of its folder's.
set -euo pipefail
src=$1
check="$src/tools/check_includes.py"
readmes="$src/tools/check_readmes.py"
python3 "$check" "$src"
python3 "$readmes" "$src"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fresh() {  # a copy of the sources (READMEs name files all over the tree), without build trees
  rm -rf "$tmp/tree" && mkdir "$tmp/tree"
  local e
  for e in "$src"/*; do
    case ${e##*/} in build* | Testing) ;; *) cp -r "$e" "$tmp/tree/" ;; esac
  done
}
refused() {  # CHECK PREFIX WHAT: CHECK must fail on the copy, naming exactly one line at PREFIX
  local out
  if out=$(python3 "$1" "$tmp/tree"); then
    echo "FAIL: $3 was not refused"; exit 1
  fi
  [[ $(wc -l <<<"$out") -eq 1 && "$out" == "$2"* ]] || { echo "FAIL: $3: $out"; exit 1; }
  echo "refused: $out"
}
expect_refused() {  # FILE LINE WHAT: the include check must name FILE after LINE is added to it
  fresh
  printf '%s\n' "$2" >>"$tmp/tree/$1"
  refused "$check" "$1:" "$3"
}
expect_allowed() {  # FILE LINE WHAT: the include check passes with LINE added to FILE
  fresh
  printf '%s\n' "$2" >>"$tmp/tree/$1"
  python3 "$check" "$tmp/tree" >/dev/null || { echo "FAIL: $3 was refused"; exit 1; }
  echo "allowed: $3"
}
expect_refused preload/core/writer.cpp '#include "preload/nccl/net_links.h"' "core including a family"
expect_refused preload/nccl/nccl.cpp '#include "preload/python/cpython_internal.h"' "a family's internals"
expect_refused preload/cuda/cupti.cpp '#include "preload/core/no_such.h"' "a missing header"

# analyzer/: every stage refused the one before it, and the collector.
expect_refused analyzer/base/progress.cpp '#include "analyzer/ingest/model.h"' "base including ingest"
expect_refused analyzer/ingest/select.cpp '#include "analyzer/detect/detect.h"' "ingest including detect"
expect_refused analyzer/detect/hangs.cpp '#include "analyzer/verdict/report.h"' "detect including verdict"
expect_refused analyzer/verdict/helpers.cpp '#include "analyzer/report/report.h"' "verdict including report"
expect_refused analyzer/report/prometheus.cpp '#include "analyzer/commands/cli.h"' "report including commands"
expect_refused analyzer/selftest/checks.cpp '#include "analyzer/ingest/model.h"' "selftest including a stage"
expect_refused analyzer/report/report_json.cpp '#include "analyzer/selftest/checks.h"' "report including selftest"
expect_refused analyzer/detect/peers.cpp '#include "preload/core/config.h"' "the analyzer including the collector"
expect_refused analyzer/ingest/model.cpp '#include "analyzer/ingest/no_such.h"' "a missing analyzer header"
# ... and the other way, allowed.
expect_allowed analyzer/commands/dump.cpp '#include "analyzer/report/report.h"' "commands including report"
expect_allowed analyzer/commands/dump.cpp '#include "analyzer/selftest/checks.h"' "commands including selftest"
expect_allowed analyzer/verdict/helpers.cpp '#include "analyzer/ingest/model.h"' "verdict including ingest"

# READMEs: one naming a file that is not there, one leaving out a file that is.
fresh
printf -- '- `gone.cpp` — removed long ago.\n' >>"$tmp/tree/analyzer/detect/README.md"
refused "$readmes" "analyzer/detect/README.md:" "a README naming a missing file"
fresh
printf '// new\n' >"$tmp/tree/analyzer/verdict/unnamed.cpp"
refused "$readmes" "analyzer/verdict/README.md: does not name unnamed.cpp" "a README leaving out a file"
fresh
rm "$tmp/tree/preload/hw/README.md"
refused "$readmes" "preload/hw/: no README.md" "a folder without a README"
echo "include check: ok"
