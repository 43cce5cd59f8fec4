#!/usr/bin/env python3
"""End-to-end cost of libperftracker.so on sim_train (8 ranks, simgpu), printed as ratios.

  collector_bench.py --build BUILD [--pairs 3]

- slowdown: the training loop's wall time with the library preloaded over the same job without
  it (sim_train's own "done ... in X s wall", start-up excluded), runs alternating so that the
  machine's drift hits both alike; the median of the pairs' ratios. Two models at run.sh's time
  scale (0.1), 8 ranks sharing 2 cores: sim_train's default (~28 ms steps), and the scenarios'
  small one (~9 ms steps), where the writer's fixed cost per window (every 10 iterations:
  11 windows a second per rank) shows most.
- memory: peak RSS of the largest process of the job (a rank), preloaded minus plain.
- ring bytes per rank-hour at the defaults: rank 0's records on disk over the loop's wall time,
  at SIMGPU_TIME_SCALE=1 (~250 ms steps, the scenarios' job) so windows come as often as in a
  real job with that step time; also per window, to scale to other step times.
Targets (issue 4): slowdown <= 1%, memory <= 64 MiB per process, ring <= 50 MB per rank-hour.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RUN = os.path.join(ROOT, "examples", "sim_train", "run.sh")
SMALL = ["--layers", "4", "--seq", "2048"]
MODELS = {"default": ([], 300), "small": (SMALL, 600)}  # model arguments, steps


def run_job(build, lib, model, iters, env_extra, pt_dir):
    """(loop wall seconds, peak RSS MiB of the largest process) of one 8-rank sim_train run."""
    env = dict(os.environ, **env_extra)
    env.pop("LD_PRELOAD", None)
    if lib:
        env.update(LD_PRELOAD=lib, PERFTRACKER_DIR=pt_dir, PERFTRACKER_JOB_ID="bench")
    # A wrapper process per run, so that its children's peak RSS is this run's alone.
    wrapper = ("import resource, subprocess, sys\n"
               "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
               "sys.stdout.write(p.stdout + p.stderr)\n"
               "print('maxrss_kb', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
               "sys.exit(p.returncode)\n")
    p = subprocess.run([sys.executable, "-c", wrapper, RUN, build, "8", "--iters", str(iters)]
                       + model, env=env, capture_output=True, text=True, timeout=900)
    wall = re.search(r"sim_train: done: .* in ([0-9.]+) s wall", p.stdout)
    rss = re.search(r"maxrss_kb (\d+)", p.stdout)
    if p.returncode != 0 or not wall or not rss:
        sys.exit(f"collector_bench: job failed (exit {p.returncode}):\n{p.stdout[-3000:]}")
    return float(wall.group(1)), int(rss.group(1)) / 1024


def ring_bytes(perftracker, pt_dir):
    """(bytes of rank 0's records on disk, windows) after a preloaded run."""
    for root, _, files in os.walk(pt_dir):
        if "rank-0.ptr" in files:
            out = subprocess.run([perftracker, "dump", os.path.join(root, "rank-0.ptr")],
                                 capture_output=True, text=True, check=True).stdout.splitlines()
            summary = json.loads(out[-1])
            return summary["record_bytes"], summary["records_read"]
    sys.exit(f"collector_bench: no rank-0.ptr under {pt_dir}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--ring-iters", type=int, default=80)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    lib = os.path.join(build, "preload", "libperftracker.so")
    perftracker = os.path.join(build, "analyzer", "perftracker")
    scratch = tempfile.mkdtemp(prefix="perftracker-bench.")
    try:
        slowdowns, rss_plain, rss_pre = {}, [], []
        for name, (model, iters) in MODELS.items():
            ratios = []
            for i in range(args.pairs):
                order = [False, True] if i % 2 == 0 else [True, False]
                walls = {}
                for preloaded in order:
                    pt_dir = os.path.join(scratch, f"{name}{i}")
                    wall, rss = run_job(build, lib if preloaded else None, model, iters, {},
                                        pt_dir)
                    walls[preloaded] = wall
                    (rss_pre if preloaded else rss_plain).append(rss)
                ratios.append(walls[True] / walls[False])
                print(f"{name} pair {i}: plain {walls[False]:.2f} s, preloaded "
                      f"{walls[True]:.2f} s, ratio {ratios[-1]:.4f}", flush=True)
            slowdowns[name] = (statistics.median(ratios) - 1, iters,
                               statistics.median(walls.values()) / iters * 1e3)
        mem = statistics.median(rss_pre) - statistics.median(rss_plain)

        ring_dir = os.path.join(scratch, "ring")
        wall, _ = run_job(build, lib, SMALL, args.ring_iters, {"SIMGPU_TIME_SCALE": "1"},
                          ring_dir)
        nbytes, windows = ring_bytes(perftracker, ring_dir)
        per_hour = nbytes / wall * 3600 / 1e6
        step_ms = wall / args.ring_iters * 1e3

        for name, (slowdown, iters, model_step_ms) in slowdowns.items():
            print(f"slowdown, {name} model ({model_step_ms:.0f} ms steps): {slowdown * 100:+.2f}% "
                  f"(median of {args.pairs} pairs of {iters}-step runs) target <= 1%")
        print(f"memory: +{mem:.1f} MiB peak RSS per rank (plain {statistics.median(rss_plain):.0f}"
              f" MiB, preloaded {statistics.median(rss_pre):.0f} MiB) target <= 64 MiB")
        print(f"ring: {nbytes / max(windows, 1) / 1e3:.1f} kB per window, {windows} windows in "
              f"{wall:.1f} s ({step_ms:.0f} ms steps): {per_hour:.1f} MB per rank-hour "
              f"target <= 50 MB")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
