#!/bin/sh
# Launches a training script under torchrun with libperftracker.so in every rank.
#   torchrun.sh NPROC_PER_NODE SCRIPT [ARGS...]
# PERFTRACKER_LIB   the library (default /opt/perftracker/lib/libperftracker.so)
# PERFTRACKER_DIR   node-local output root (default ${TMPDIR:-/tmp}/perftracker-$UID, per user)
# PYTHON            the interpreter with torch (default python3)
# Extra torchrun options (multi-node: --nnodes, --node_rank, --master_addr, ...) go in
# TORCHRUN_ARGS. Ring files: $PERFTRACKER_DIR/<job id>/<host>/rank-<N>.ptr; then
#   perftracker analyze $PERFTRACKER_DIR/<job id>
set -eu
if [ $# -lt 2 ]; then
  echo "usage: $0 NPROC_PER_NODE SCRIPT [ARGS...]" >&2
  exit 2
fi
nproc=$1
shift
export LD_PRELOAD="${PERFTRACKER_LIB:-/opt/perftracker/lib/libperftracker.so}${LD_PRELOAD:+:$LD_PRELOAD}"
export PERFTRACKER_DIR="${PERFTRACKER_DIR:-${TMPDIR:-/tmp}/perftracker-$(id -u)}"
# --standalone unless the caller set up a multi-node rendezvous. --redirects/--tee: Debian's
# torch 1.13 torchrun on Python 3.11 needs non-zero values.
# shellcheck disable=SC2086
exec "${PYTHON:-python3}" -m torch.distributed.run ${TORCHRUN_ARGS:---standalone} \
  --nproc_per_node "$nproc" --redirects 1 --tee 1 "$@"
