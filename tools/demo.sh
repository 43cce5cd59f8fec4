#!/usr/bin/env bash
# The main demo: sets up, builds perftracker, runs a real 8-rank training job
# (examples/sim_train on the simulated GPU cluster, under torchrun) with libperftracker.so
# preloaded in every rank and one throttled GPU (rank 3's kernels 1.3x slower), then lets the
# analyzer name the cause and why (its clock and throttle reason, through NVML).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
# Only what the demo runs: the library, the CLI, the simulated GPUs the job links and NVML (the
# throttle reason), and the job's extension; not the test suite.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null  # no debug info: a third less to compile
cmake --build build -j"$(nproc)" --target perftracker perftracker_bin simtorch_C simgpu_nvml \
  >/dev/null
bin=build/analyzer
out=$(mktemp -d /tmp/perftracker-demo.XXXXXX)

# A 40-step job: windows of 5 steps (PERFTRACKER_WINDOW_S=0), not of 20 s as a real job's.
echo "--- training: 8 ranks under torchrun, rank 3's GPU throttled (SIMGPU_COMPUTE_SLOWDOWN=3=1.3, NVML reports HW thermal slowdown)"
LD_PRELOAD="$PWD/build/preload/libperftracker.so" PERFTRACKER_DIR="$out" \
  PERFTRACKER_JOB_ID=demo PERFTRACKER_WINDOW_ITERS=5 PERFTRACKER_WINDOW_S=0 \
  PERFTRACKER_SAMPLE_EVERY=1 \
  PERFTRACKER_RING_MB=4 SIMGPU_TIME_SCALE=1 SIMGPU_JITTER=0.03 SIMGPU_COMPUTE_SLOWDOWN=3=1.3 \
  SIMGPU_NVML_THROTTLE=3=hw_thermal \
  examples/sim_train/run.sh build 8 --iters 40 --layers 4 --seq 2048 --log-every 5 \
  2>&1 | grep -E "sim_train: done|Error" || true

file=$(ls "$out"/demo/*/rank-3.ptr)
echo
echo "--- perftracker dump $file (header, live slot, summary)"
"$bin/perftracker" dump "$file" | sed -n '1,2p' | cut -c1-300
"$bin/perftracker" dump "$file" | tail -1
echo
echo "--- perftracker analyze $out/demo"
"$bin/perftracker" analyze "$out/demo"
