#!/usr/bin/env python3
"""Hang hunt (issue 15): one scenario's job run many times, each with a deadline. A run still
going at its deadline is a hang: the stacks of every process of the job (native and Python) go to
its log, which is kept, and the job is killed. A long stress run to run and report, not part of
the test command.

  hang_hunt.py --build BUILD --scenario torch_clean --runs 200 [--no-lib] [--load]
               [--timeout S] [--keep DIR]

--no-lib runs the same job without libperftracker.so (is a hang ours?); --load keeps both cores
busy with niced spinners (a loaded node). Ends with one line: runs, hangs, failures, median time.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import jobs
from scenarios import SCENARIOS


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="CMake build directory")
    ap.add_argument("--scenario", default="torch_clean", help="the scenario whose job runs")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--timeout", type=float, default=180, help="seconds before a run is a hang")
    ap.add_argument("--no-lib", action="store_true", help="run without the library")
    ap.add_argument("--load", action="store_true", help="two niced busy loops beside the job")
    ap.add_argument("--keep", help="where the logs of hung and failed runs go")
    args = ap.parse_args()
    chosen = [s for s in SCENARIOS if s.name == args.scenario]
    if not chosen or chosen[0].hang:
        sys.exit(f"hang_hunt: no such scenario (or one that hangs on purpose): {args.scenario}")
    s = chosen[0]
    tools = jobs.Tools(args.build)
    if args.no_lib:
        tools.lib = ""
    keep = args.keep or tempfile.mkdtemp(prefix="perftracker-hang-hunt.")
    os.makedirs(keep, exist_ok=True)
    spinners = []
    if args.load:
        spinners = [subprocess.Popen(["nice", "-n", "19", "sh", "-c", "while :; do :; done"])
                    for _ in range(os.cpu_count() or 2)]
    hangs = failures = 0
    times = []
    try:
        for i in range(args.runs):
            out = tempfile.mkdtemp(prefix="run.", dir=keep)
            start = time.monotonic()
            code, how = jobs.run(s, tools, out, timeout_s=args.timeout)
            took = time.monotonic() - start
            if how == "timeout":
                hangs += 1
                print(f"run {i + 1}: HANG after {args.timeout:.0f} s; stacks in {out}/job.log",
                      flush=True)
                continue
            if code != 0:
                failures += 1
                print(f"run {i + 1}: exit {code}; log in {out}/job.log", flush=True)
                continue
            times.append(took)
            shutil.rmtree(out, ignore_errors=True)
            if (i + 1) % 10 == 0:
                print(f"{i + 1} runs, {hangs} hangs", flush=True)
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    median = f"{statistics.median(times):.1f} s" if times else "-"
    lib = "without the library" if args.no_lib else "under the library"
    print(f"hang_hunt {s.name} {lib}{', loaded' if args.load else ''}: {args.runs} runs, "
          f"{hangs} hangs, {failures} failures, median {median} (logs: {keep})")
    return 1 if hangs or failures else 0


if __name__ == "__main__":
    sys.exit(main())
