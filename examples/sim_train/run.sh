#!/bin/sh
# Launches sim_train under torchrun on the simulated GPU cluster.
#   run.sh BUILD_DIR [NPROC] [sim_train.py arguments...]
# BUILD_DIR is the CMake build directory (it holds simgpu/lib and examples/sim_train).
# SIMGPU_* and SIM_TRAIN_* variables in the environment pass through to every rank.
set -eu
if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [NPROC] [sim_train args...]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
shift
nproc=8
if [ $# -gt 0 ]; then nproc=$1; shift; fi
here=$(cd "$(dirname "$0")" && pwd)

# The stand-in libcudart.so.13 / libnccl.so.2 (point this at a real CUDA install instead to use
# real GPUs); the extension and the simtorch package.
export LD_LIBRARY_PATH="$build/simgpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$here:$build/examples/sim_train${PYTHONPATH:+:$PYTHONPATH}"
# A 1 s simulated iteration in 100 ms of wall time unless the caller chose otherwise.
export SIMGPU_TIME_SCALE="${SIMGPU_TIME_SCALE:-0.1}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
export PYTHONDONTWRITEBYTECODE=1  # keep the source tree clean

# Debian's torch 1.13 torchrun on Python 3.11 needs non-zero --redirects/--tee. One node with a
# rendezvous port of its own (--standalone always binds 29400, so two jobs on one machine clash).
exec /usr/bin/python3 -m torch.distributed.run --nnodes 1 --rdzv_backend c10d \
  --rdzv_endpoint localhost:0 --rdzv_id "sim-$$" --nproc_per_node "$nproc" \
  --redirects 1 --tee 1 "$here/sim_train.py" "$@"
