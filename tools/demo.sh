#!/usr/bin/env bash
# The main demo: sets up, builds and installs perftracker, writes the ring files of a synthetic
# 8-rank job with one throttled GPU, and shows what is on disk.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
cmake --install build --prefix build/install >/dev/null
bin=build/install/bin
out=$(mktemp -d /tmp/perftracker-demo.XXXXXX)
"$bin/perftracker-gen" --dir "$out" --job demo --ranks 8 --windows 4 --slow-rank 5 --slow-factor 1.3
file="$out/demo/node0/rank-5.ptr"
echo "--- perftracker dump $file (header, live slot, first record abridged, summary)"
"$bin/perftracker" dump "$file" | sed -n '1,2p'
"$bin/perftracker" dump "$file" | sed -n '3p' | cut -c1-400
"$bin/perftracker" dump "$file" | tail -1
