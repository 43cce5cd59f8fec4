#!/usr/bin/env bash
# On a GPU machine (../shared/gpu/README.md): real training jobs under the library, clean and
# with faults injected from outside the program, each job's rings tarred with its log under
# $OUT. Expects .gpu/ as tools/gpu/README.md makes it.
set -uo pipefail
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=$PWD/.gpu/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out"
pt=.gpu/bin/perftracker
nvidia-smi -L 2>&1 | head -2
job() {  # NAME ENV... : a 4-rank DDP job of tools/gpu/train_loop.py
  local name=$1; shift
  local dir=/tmp/ptjobs/$name
  rm -rf "$dir"; mkdir -p "$dir"
  local t0=$SECONDS
  env PERFTRACKER_JOB_ID="$name" PERFTRACKER_RING_MB=16 "$@" timeout 240 \
    $pt run --dir "$dir" -- python3 -m torch.distributed.run --nproc-per-node 4 \
    --master-port $((29500 + RANDOM % 1000)) tools/gpu/fault_wrap.py tools/gpu/train_loop.py \
    >"$out/$name.log" 2>&1
  echo "$name: rc=$? $((SECONDS - t0)) s, $(python3 .gpu/step_ms.py "$out/$name.log" 10)"
  tar czf "$out/$name.tgz" -C "$dir" .
}
single() {  # NAME ENV... : one process of tools/gpu/train_loop.py on the GPU alone
  local name=$1; shift
  local dir=/tmp/ptjobs/$name
  rm -rf "$dir"; mkdir -p "$dir"
  local t0=$SECONDS
  env PERFTRACKER_JOB_ID="$name" "$@" timeout 240 \
    $pt run --dir "$dir" -- python3 tools/gpu/train_loop.py >"$out/$name.log" 2>&1
  echo "$name: rc=$? $((SECONDS - t0)) s, $(python3 .gpu/step_ms.py "$out/$name.log" 10)"
  tar czf "$out/$name.tgz" -C "$dir" .
}
for j in ${JOBS:-clean slowdata aux}; do
  case $j in
    clean) job gpu4-clean ITERS=80 ;;
    slowdata) job gpu4-slowdata-rank2 ITERS=80 FAULT=slowdata FAULT_RANK=2 SLOW_S=0.0015 ;;
    aux) job gpu4-aux-rank1 ITERS=80 FAULT=aux FAULT_RANK=1 ;;
    # CUPTI's kernel records time every kernel: the device's real busy time, against which the
    # collector's estimated device idle is checked (test/bench/device_timeline_error.py).
    clean-cupti) job gpu4-clean-cupti ITERS=80 PERFTRACKER_CUPTI=1 ;;
    single) single gpu1-clean ITERS=120 BATCH=32 ;;
    single-cupti) single gpu1-clean-cupti ITERS=120 BATCH=32 PERFTRACKER_CUPTI=1 ;;
  esac
done
ls -la "$out"
