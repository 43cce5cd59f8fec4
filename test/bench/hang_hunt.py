#!/usr/bin/env python3
"""Runs one multi-process job many times and counts the runs that hang (a stress script, not a
test: README's benchmark list). A run that does not finish in time has the stacks of every
process of the job written to the log directory (test/support/hang_dump.py), then is killed.

  test/bench/hang_hunt.py --build build --job ddp|sim_train --runs 200 [--load] [--no-lib]
                          [--logs DIR] [--timeout S]

--job ddp: the real torch DDP job of the scenarios (4 ranks, gloo, torchrun);
--job sim_train: examples/sim_train on simgpu (4 ranks).
--load: two busy processes run beside the job the whole time (the machine has two cores).
--no-lib: the same job without libperftracker.so, for comparison.
Prints one line per hang as it happens and a summary: runs, hangs, median run time.
"""
import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scenarios"))
import jobs  # noqa: E402


def spin():
    while True:
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--job", choices=("ddp", "sim_train"), default="ddp")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--load", action="store_true")
    ap.add_argument("--no-lib", action="store_true")
    ap.add_argument("--logs", default=None)
    args = ap.parse_args()
    tools = jobs.Tools(args.build)
    logs = args.logs or tempfile.mkdtemp(prefix="pt-hang-hunt-")
    os.makedirs(logs, exist_ok=True)
    load = [multiprocessing.Process(target=spin, daemon=True) for _ in range(2 if args.load else 0)]
    for p in load:
        p.start()
    if args.job == "ddp":
        cmd = jobs.torchrun(4, os.path.join(jobs.HERE, "torch_ddp_job.py"), ["--steps", "20"])
    else:
        cmd = jobs.sim_train_command(tools, 4, ["--iters", "20"])
    hangs, failures, times = 0, 0, []
    try:
        for i in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="pt-hang-") as out:
                env = jobs.job_env(tools, out, f"hunt-{i}", {}, simgpu=args.job == "sim_train")
                if args.no_lib:
                    env.pop("LD_PRELOAD", None)
                log = os.path.join(logs, f"run-{i}.log")
                start = time.monotonic()
                rc, how = jobs.run_job(cmd, env, log, args.timeout)
                elapsed = time.monotonic() - start
                if how == "timeout":
                    hangs += 1
                    print(f"run {i}: HANG after {args.timeout:.0f} s, stacks in {log}", flush=True)
                    continue
                times.append(elapsed)
                if rc != 0:
                    failures += 1
                    print(f"run {i}: exit {rc}, log {log}", flush=True)
                else:
                    os.unlink(log)
    finally:
        for p in load:
            p.terminate()
    median = statistics.median(times) if times else float("nan")
    print(f"hang_hunt: job {args.job}, library {'off' if args.no_lib else 'on'}, "
          f"{'loaded' if args.load else 'idle'}: {args.runs} runs, {hangs} hangs, "
          f"{failures} failed, median {median:.1f} s; logs in {logs}")
    return 1 if hangs or failures else 0


if __name__ == "__main__":
    sys.exit(main())
