#!/usr/bin/env python3
"""The collector's device timeline against the truth, on rings from a real GPU.

The collector estimates, per window, how long the device had nothing queued (FORMAT.md
device_idle_ns; preload/core/critical_path.h). With PERFTRACKER_CUPTI=1 every kernel, copy and
memset carries its real device time, so a window's true idle time is its wall time less the
device's busy time (one process per GPU, streams taken as not overlapping: an upper bound on
idle). Prints, per rank file, the median over steady windows (not the first) of both, per
iteration, and the estimate's error as a share of the step.

Usage: device_timeline_error.py PERFTRACKER ESTIMATE_DIR [TRUTH_DIR]
  ESTIMATE_DIR: rings whose estimate is judged; TRUTH_DIR (default ESTIMATE_DIR): rings of the
  same job recorded with PERFTRACKER_CUPTI=1.
"""
import json
import pathlib
import statistics
import subprocess
import sys

DEVICE_KINDS = {"kernel", "memcpy", "memset"}


def windows(perftracker, ring):
    out = subprocess.run([perftracker, "dump", str(ring)], capture_output=True, text=True,
                         check=True).stdout
    ws = [json.loads(line) for line in out.splitlines()]
    ws = [w for w in ws if w.get("type") == "window" and w["iterations"]["count"] > 0]
    return ws[1:] if len(ws) > 1 else ws  # the first holds start-up


def per_iteration(perftracker, ring):
    idle, busy, step = [], [], []
    for w in windows(perftracker, ring):
        n = w["iterations"]["count"]
        step.append(w["iterations"]["total_ns"] / n)
        idle.append(w.get("device_idle_ns", 0) / n)
        # Call sites repeat their API function's calls ("name @ site"): count the functions only.
        busy.append(sum(f["device_ns"] for f in w["functions"]
                        if f["kind"] in DEVICE_KINDS and " @ " not in f["name"]) / n)
    return statistics.median(idle), statistics.median(busy), statistics.median(step)


def main():
    perftracker, est_dir = sys.argv[1], pathlib.Path(sys.argv[2])
    truth_dir = pathlib.Path(sys.argv[3]) if len(sys.argv) > 3 else est_dir
    truth = {r.name: r for r in truth_dir.rglob("rank-*.ptr") if ".helper-" not in r.name}
    for ring in sorted(est_dir.rglob("rank-*.ptr")):
        if ".helper-" in ring.name or ring.name not in truth:
            continue
        est_idle, _, est_step = per_iteration(perftracker, ring)
        _, busy, step = per_iteration(perftracker, truth[ring.name])
        true_idle = max(0.0, step - busy)
        print(f"{ring.name}: step {est_step / 1e6:.2f} ms; device idle estimated "
              f"{est_idle / 1e6:.2f} ms, true {true_idle / 1e6:.2f} ms a step (busy "
              f"{busy / 1e6:.2f} of {step / 1e6:.2f} ms); error "
              f"{(est_idle - true_idle) / step * 100:+.1f}% of the step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
