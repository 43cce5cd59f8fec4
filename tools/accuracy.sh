#!/usr/bin/env bash
# The diagnosis benchmark (bench/accuracy/README.md): builds what its jobs need, then
#   tools/accuracy.sh record [--cells REGEX] [--jobs N] [--limit N]   run and archive missing cells
#   tools/accuracy.sh score  [--cells REGEX]                          re-analyze, write the scoreboard
#   tools/accuracy.sh list   [--cells REGEX]                          cells and what is recorded
#   tools/accuracy.sh ci                                              the CI subset against its floor
#   tools/accuracy.sh live                                            watch beside mid-run faults
# Archives live outside git, in $PERFTRACKER_BENCH_DIR (default ~/.cache/perftracker/accuracy).
# BUILD (default build-bench) is a Release build of the library, the CLI and simgpu.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-bench}
command=${1:?usage: tools/accuracy.sh record|score|list|live|ci [options]}
shift
if [[ $command != list ]]; then
  tools/setup.sh
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j"$(nproc)" --target perftracker perftracker_bin simtorch_C simgpu_nvml \
    >/dev/null
fi
exec /usr/bin/python3 bench/accuracy/bench.py "$command" --build "$build" "$@"
