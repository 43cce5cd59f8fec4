#!/usr/bin/env python3
"""Per-call overhead of the CPython hooks: a tight loop of calls of a trivial function, with and
without libperftracker.so preloaded (RANK=0), min of several runs, ns per call. Columns:
base (no library), folded (hook installed, every function excluded by PERFTRACKER_PY_INCLUDE:
the cost of the hook's lookups alone), light (the default mode: f proves cheap in its first 32
calls and folds into its caller), detailed (PERFTRACKER_MODE=detailed: f is recorded at every
call; being cheap, it is counted at every call and timed at 1 in PERFTRACKER_PY_TIME_EVERY),
cProfile (no library: the same loop under cProfile, the reference the
detailed mode must beat by 4x or more).

  overhead_bench.py --lib libperftracker.so [--rounds 3] PYTHON...
"""
import argparse
import os
import subprocess
import tempfile

LOOP = r"""
import time
if PASSTHROUGH:
    import ctypes
    api = ctypes.pythonapi
    api.PyInterpreterState_Get.restype = ctypes.c_void_p
    api._PyInterpreterState_SetEvalFrameFunc.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    evaluator = ctypes.CDLL(PASSTHROUGH).foreign_eval
    api._PyInterpreterState_SetEvalFrameFunc(api.PyInterpreterState_Get(),
                                             ctypes.cast(evaluator, ctypes.c_void_p).value)
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
# The minimum of each loop separately: the minimum of a difference would pick the run where the
# empty loop happened to be slow.
calls = empty_loop = float("inf")
for _ in range(7):
    t0 = time.perf_counter_ns(); loop(N); t1 = time.perf_counter_ns(); empty(N)
    t2 = time.perf_counter_ns()
    calls, empty_loop = min(calls, t1 - t0), min(empty_loop, t2 - t1)
print(calls / N, empty_loop / N)
"""


def measure(python, env, profile=False, passthrough=None):
    code = f"PROFILE = {profile}\nPASSTHROUGH = {passthrough!r}\n" + LOOP
    out = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    calls, empty = out.stdout.split()[-2:]
    return float(calls), float(empty)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--rounds", type=int, default=3,
                    help="processes per configuration, interleaved; the minimum is kept")
    ap.add_argument("--passthrough",
                    help="libcpython_foreign_eval.so: adds the pep523 column, a frame evaluator "
                         "that only counts and calls CPython's (the interpreter's share of the "
                         "cost: 3.11+ stop inlining Python-to-Python calls for any)")
    ap.add_argument("pythons", nargs="+")
    args = ap.parse_args()
    base_env = {k: v for k, v in os.environ.items()
                if not k.startswith("PERFTRACKER_") and k not in ("RANK", "LOCAL_RANK")}
    print(f"{'python':<42} {'base':>6} {'pep523':>7} {'folded':>7} {'light':>6} {'detailed':>9} "
          f"{'cProfile':>9}   (ns per call; added ns in brackets; cProfile / detailed)")
    with tempfile.TemporaryDirectory() as tmp:
        hooked_env = {**base_env, "LD_PRELOAD": args.lib, "RANK": "0", "PERFTRACKER_DIR": tmp}
        for py in args.pythons:
            configs = {
                "base": (base_env, False, None),
                "pep523": (base_env, False, args.passthrough),
                "folded": ({**hooked_env, "PERFTRACKER_PY_INCLUDE": "no-such-function"}, False,
                           None),
                "light": ({**hooked_env, "PERFTRACKER_MODE": "light"}, False, None),
                "detailed": ({**hooked_env, "PERFTRACKER_MODE": "detailed"}, False, None),
                "cProfile": (base_env, True, None),
            }
            if args.passthrough is None:
                del configs["pep523"]
            # A process's layout moves both loops by a few ns: keep each loop's minimum over
            # all rounds, then subtract.
            best = {name: [float("inf"), float("inf")] for name in configs}
            for _ in range(args.rounds):
                for name, (env, profile, passthrough) in configs.items():
                    calls, empty = measure(py, env, profile, passthrough)
                    best[name] = [min(best[name][0], calls), min(best[name][1], empty)]
            ns = {name: calls - empty for name, (calls, empty) in best.items()}
            base = ns["base"]
            added = {name: ns[name] - base for name in configs}
            ratio = added["cProfile"] / max(added["detailed"], 0.1)
            pep523 = ns.get("pep523", float("nan"))
            print(f"{py:<42} {base:6.1f} {pep523:7.1f} {ns['folded']:7.1f} {ns['light']:6.1f} "
                  f"{ns['detailed']:9.1f} {ns['cProfile']:9.1f}   (+{pep523 - base:.1f}, "
                  f"+{added['folded']:.1f}, "
                  f"+{added['light']:.1f}, +{added['detailed']:.1f}, +{added['cProfile']:.1f}; "
                  f"{ratio:.1f}x)", flush=True)


if __name__ == "__main__":
    main()
