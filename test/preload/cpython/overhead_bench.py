#!/usr/bin/env python3
"""Per-call overhead of the CPython hooks: a tight loop of calls of a trivial function, with and
without libperftracker.so preloaded (RANK=0), min of several runs, ns per call. Columns:
base (no library), folded (hook installed, every function excluded by PERFTRACKER_PY_INCLUDE:
the cost of the hook's lookups alone), light (the default mode: f proves cheap in its first 32
calls and folds into its caller), detailed (PERFTRACKER_MODE=detailed: two clock reads + one
recorder event per call), cProfile (no library: the same loop under cProfile, the reference the
detailed mode must beat by 4x or more).

  overhead_bench.py --lib libperftracker.so PYTHON...
"""
import argparse
import os
import subprocess
import tempfile

LOOP = r"""
import time
def f(x):
    return x + 1
def loop(n):
    x = 0
    for _ in range(n):
        x = f(x)
    return x
def empty(n):
    x = 0
    for _ in range(n):
        x = x + 1
    return x
N = 2_000_000
if PROFILE:
    import cProfile
    profiler = cProfile.Profile()
    profiler.enable()
best = float("inf")
for _ in range(5):
    t0 = time.perf_counter_ns(); loop(N); t1 = time.perf_counter_ns(); empty(N)
    t2 = time.perf_counter_ns()
    best = min(best, ((t1 - t0) - (t2 - t1)) / N)
print(best)
"""


def measure(python, env, profile=False):
    code = f"PROFILE = {profile}\n" + LOOP
    out = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    return float(out.stdout.split()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("pythons", nargs="+")
    args = ap.parse_args()
    base_env = {k: v for k, v in os.environ.items()
                if not k.startswith("PERFTRACKER_") and k not in ("RANK", "LOCAL_RANK")}
    print(f"{'python':<42} {'base':>6} {'folded':>7} {'light':>6} {'detailed':>9} "
          f"{'cProfile':>9}   (ns per call; added ns in brackets; cProfile / detailed)")
    with tempfile.TemporaryDirectory() as tmp:
        hooked_env = {**base_env, "LD_PRELOAD": args.lib, "RANK": "0", "PERFTRACKER_DIR": tmp}
        for py in args.pythons:
            base = measure(py, base_env)
            folded = measure(py, {**hooked_env, "PERFTRACKER_PY_INCLUDE": "no-such-function"})
            light = measure(py, {**hooked_env, "PERFTRACKER_MODE": "light"})
            detailed = measure(py, {**hooked_env, "PERFTRACKER_MODE": "detailed"})
            profiled = measure(py, base_env, profile=True)
            ratio = (profiled - base) / max(detailed - base, 0.1)
            print(f"{py:<42} {base:6.1f} {folded:7.1f} {light:6.1f} {detailed:9.1f} "
                  f"{profiled:9.1f}   (+{folded - base:.1f}, +{light - base:.1f}, "
                  f"+{detailed - base:.1f}, +{profiled - base:.1f}; {ratio:.1f}x)")


if __name__ == "__main__":
    main()
