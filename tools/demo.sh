#!/usr/bin/env bash
# The main demo: sets up, builds and installs perftracker, writes the ring files of a synthetic
# 16-rank job (4 hosts) with one throttled GPU, shows one file, and lets the analyzer name the
# cause.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
cmake --install build --prefix build/install >/dev/null
bin=build/install/bin
out=$(mktemp -d /tmp/perftracker-demo.XXXXXX)
"$bin/perftracker-gen" --dir "$out" --job demo --ranks 16 --ranks-per-host 4 --windows 4 \
  --fault slow-gpu --fault-rank 5 --fault-factor 1.3
file="$out/demo/node1/rank-5.ptr"
echo "--- perftracker dump $file (header, live slot, first record abridged, summary)"
"$bin/perftracker" dump "$file" | sed -n '1,2p'
"$bin/perftracker" dump "$file" | sed -n '3p' | cut -c1-400
"$bin/perftracker" dump "$file" | tail -1
echo
echo "--- perftracker analyze $out/demo"
"$bin/perftracker" analyze "$out/demo"
