#!/usr/bin/env bash
# Regenerates docs/demo_report.png, the picture at the top of the README: the HTML report of the
# demo job (tools/demo.sh's: 8 sim_train ranks on simgpu, rank 3's GPU throttled) as headless
# chromium renders it (the way test/analyzer/html_browser_test.py drives it).
#   docs/make_demo_report.sh [BUILD_DIR]     (default build; builds what the job needs)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
browser=$(command -v chromium || command -v chromium-browser) ||
  { echo "make_demo_report: no chromium (tools/setup.sh installs it)" >&2; exit 2; }
[[ -f $build/CMakeCache.txt ]] || cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target perftracker perftracker_bin simtorch_C simgpu_nvml \
  >/dev/null
out=$(mktemp -d /tmp/perftracker-docs.XXXXXX)
trap 'rm -rf "$out"' EXIT

LD_PRELOAD="$PWD/$build/preload/libperftracker.so" PERFTRACKER_DIR="$out" \
  PERFTRACKER_JOB_ID=demo PERFTRACKER_WINDOW_ITERS=5 PERFTRACKER_WINDOW_S=0 \
  PERFTRACKER_SAMPLE_EVERY=1 PERFTRACKER_RING_MB=4 SIMGPU_TIME_SCALE=1 SIMGPU_JITTER=0.03 \
  SIMGPU_COMPUTE_SLOWDOWN=3=1.3 SIMGPU_NVML_THROTTLE=3=hw_thermal \
  examples/sim_train/run.sh "$build" 8 --iters 40 --layers 4 --seq 2048 --log-every 5 \
  >"$out/job.log" 2>&1 || { tail -n 20 "$out/job.log"; exit 1; }
"$build/analyzer/perftracker" analyze "$out/demo" --html "$out/demo_report.html" >/dev/null
# The top of the page: the verdict, the step time per rank and the heat map.
"$browser" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$out/profile" \
  --hide-scrollbars --screenshot="$PWD/docs/demo_report.png" --window-size=1200,1500 \
  "file://$out/demo_report.html" >/dev/null 2>&1
echo "make_demo_report: docs/demo_report.png ($(du -k docs/demo_report.png | cut -f1) KiB)"
