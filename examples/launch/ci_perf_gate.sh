#!/bin/sh
# CI recipe: run a short job for a baseline and for the candidate, both under libperftracker.so,
# and fail the pipeline when `perftracker diff` finds a regression (exit 1).
#   ci_perf_gate.sh WORKDIR -- JOB COMMAND...
# BASELINE_ENV / CANDIDATE_ENV: "VAR=value ..." set for each run. In a real pipeline the two runs
# are the merge base and the change (or the baseline directory is a stored artifact); here they
# differ only by environment. PERFTRACKER_LIB, PERFTRACKER_BIN, DIFF_ARGS (e.g. --threshold 5).
# Exit: 0 no regression, 1 regression, 2 a job failed or bad usage.
set -eu
if [ $# -lt 3 ] || [ "$2" != "--" ]; then
  echo "usage: $0 WORKDIR -- JOB COMMAND..." >&2
  exit 2
fi
work=$1
shift 2
lib=${PERFTRACKER_LIB:-/opt/perftracker/lib/libperftracker.so}
mkdir -p "$work"

for name in baseline candidate; do
  if [ $name = baseline ]; then extra=${BASELINE_ENV:-}; else extra=${CANDIDATE_ENV:-}; fi
  # shellcheck disable=SC2086
  if ! env $extra LD_PRELOAD="$lib" PERFTRACKER_DIR="$work/$name" PERFTRACKER_JOB_ID=$name \
       "$@" >"$work/$name.log" 2>&1; then
    echo "ci_perf_gate: the $name job failed (log $work/$name.log)" >&2
    exit 2
  fi
done
# shellcheck disable=SC2086
exec "${PERFTRACKER_BIN:-perftracker}" diff "$work/baseline/baseline" "$work/candidate/candidate" \
  ${DIFF_ARGS:-}
