#!/bin/bash
# After a job, on clusters reached by pdsh or ssh (no scheduler step): one `perftracker reduce`
# per node, all nodes at once, each writing <host>.ptrd into a directory on shared storage; then
# `perftracker analyze` on that directory. Only the reduced files (a few MB a node, however long
# the job ran) cross the network.
#   reduce_nodes.sh HOSTS JOB_ID [GATHER_DIR]
# HOSTS       pdsh's host list (node[01-16],gpu7) when pdsh is installed, else a comma-separated
#             list of hosts for ssh
# GATHER_DIR  shared storage mounted at the same path on every node (default $PWD/perftracker)
# PERFTRACKER_DIR  where the ranks wrote on each node (default: the library's default,
#                  ${TMPDIR:-/tmp}/perftracker-$UID as the remote shell sees it)
# PERFTRACKER_BIN  perftracker on the nodes (default: perftracker on their PATH)
# PERFTRACKER_ANALYZER  perftracker here (default: perftracker on the PATH)
# FANOUT           hosts reduced at once (default 64)
# REMOTE_SHELL     pdsh or ssh (default: pdsh when installed)
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 HOSTS JOB_ID [GATHER_DIR]" >&2
  exit 2
fi
hosts=$1 job=$2 gather=$(readlink -m "${3:-$PWD/perftracker}")
bin=${PERFTRACKER_BIN:-perftracker}
mkdir -p "$gather/$job"
# Runs on the node: single quotes keep $TMPDIR and $(hostname) for the node's shell.
root=${PERFTRACKER_DIR:-'${TMPDIR:-/tmp}/perftracker-$(id -u)'}
remote="$bin reduce $root/$job -o $gather/$job/\$(hostname).ptrd"
shell=${REMOTE_SHELL:-$(command -v pdsh >/dev/null && echo pdsh || echo ssh)}
if [[ $shell == pdsh ]]; then
  pdsh -f "${FANOUT:-64}" -w "$hosts" "$remote" || true
else
  IFS=, read -ra list <<< "$hosts"
  running=0
  for h in "${list[@]}"; do
    ssh -o BatchMode=yes "$h" "$remote" 2>&1 | sed "s/^/$h: /" &
    if (( ++running >= ${FANOUT:-64} )); then wait -n || true; running=$((running - 1)); fi
  done
  wait
fi
reduced=$(find "$gather/$job" -maxdepth 1 -name '*.ptrd' | wc -l)
echo "reduce_nodes: $reduced node files in $gather/$job"
exec "${PERFTRACKER_ANALYZER:-perftracker}" analyze "$gather/$job"
