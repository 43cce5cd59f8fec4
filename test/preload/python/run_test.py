#!/usr/bin/env python3
"""Runs test/preload/python/workload.py under LD_PRELOAD with one interpreter and checks what
the CPython hooks recorded.

  run_test.py --lib LIB --python PY [--probe | --perftracker CLI] [--case NAME]

--probe: LIB is libperftracker_cpython_probe.so (the hooks with a test-double recorder that
         writes exact per-slot totals to probe-rank-0.tsv).
--perftracker CLI: LIB is the real libperftracker.so; totals come from `CLI dump` of the ring
         file, summed over every window.
Cases: workload (default), cprofile (the workload under cProfile: both see every call),
torch_profiler (torch.profiler with_stack sees the same stacks with and without us),
evaluator_reset (another tool restores the default evaluator: reinstalled, one warning),
evaluator_swaps (evaluators taken and given back all along: recorded after each give-back, one
warning, losses flagged in their windows),
disabled, norank, unknown_version.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "support"))
from checks import expect, fail  # noqa: E402
KIND = {1: "python", 6: "collective", 7: "sync", 8: "gc", 9: "dataloader"}


# Runs the script named by argv[1] under a trace function that counts the calls of f.
TRACED = """
import runpy, sys
calls = [0]
def tracer(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "f":
        calls[0] += 1
sys.settrace(tracer)
runpy.run_path(sys.argv[1], run_name="__main__")
sys.settrace(None)
print("traced f:", calls[0])
"""


def test_env(args, env_extra, tmp, unset=()):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("PERFTRACKER_") or k in ("RANK", "LOCAL_RANK"):
            del env[k]
    # Exact counts of every call: detailed mode, unless a case asks for light. Windows of
    # PERFTRACKER_WINDOW_ITERS steps, however short the steps. The workloads wait for the hooks
    # to attach (hooks_ready.py) unless a case unsets PT_TEST_AWAIT_HOOKS.
    env.update({"LD_PRELOAD": args.lib, "PERFTRACKER_DIR": tmp, "RANK": "0",
                "PERFTRACKER_JOB_ID": "cpython-test", "PERFTRACKER_MODE": "detailed",
                "PERFTRACKER_WINDOW_S": "0", "PT_TEST_AWAIT_HOOKS": "1"})
    for k in unset:
        env.pop(k, None)
    env.update(env_extra)
    return env


def run(args, env_extra, tmp, script="workload.py", unset=(), python_args=(), script_args=()):
    env = test_env(args, env_extra, tmp, unset)
    p = subprocess.run([args.python, *python_args, os.path.join(HERE, script), *script_args],
                       env=env,
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail(f"{args.python} exited {p.returncode}: {p.stderr[-2000:]}")
    return p


class Fn:
    def __init__(self, key, kind, parent, name):
        self.key, self.kind, self.parent, self.name = key, kind, parent, name
        self.count = self.total = self.self_ns = 0
        self.critical = None  # critical-path ns; None where no window carried it
        self.timed = 0  # calls whose time was measured (the rest: counted, time estimated)
        self.self_hist = None  # ring: timed calls in the self-time histogram (0: equals duration)
        self.thread_cpu = 0  # ring: CPU ns of threads beside the loop charged to it


def load_probe(tmp):
    fns, iterations, stack = {}, 0, []
    path = os.path.join(tmp, "probe-rank-0.tsv")
    expect(os.path.exists(path), "no probe output")
    for line in open(path):
        cols = line.rstrip("\n").split("\t")
        if cols[0] == "fn":
            fn = Fn(int(cols[1]), KIND.get(int(cols[2]), cols[2]), int(cols[3]), cols[7])
            fn.count, fn.total, fn.self_ns = int(cols[4]), int(cols[5]), int(cols[6])
            fn.timed = int(cols[8])
            fns[fn.key] = fn
        elif cols[0] == "iterations":
            iterations = int(cols[1])
        elif cols[0] == "stack":
            stack.append(cols[1])
    return fns, iterations, stack


def load_ring(cli, tmp):
    files = glob.glob(os.path.join(tmp, "**", "rank-0.ptr"), recursive=True)
    expect(len(files) == 1, f"expected one ring file, found {files}")
    out = subprocess.run([cli, "dump", files[0]], capture_output=True, text=True, check=True)
    fns, iterations, stack = {}, 0, []
    for line in out.stdout.splitlines():
        rec = json.loads(line)
        if rec.get("type") == "live":
            stack = rec.get("python_stack") or []
        if rec.get("type") != "window":
            continue
        window = rec
        iterations += window["iterations"]["count"]
        for p in window["functions"]:
            fn = fns.get(p["id"])
            if fn is None:
                fn = fns[p["id"]] = Fn(p["id"], p["kind"], p["parent_id"] or -1, p["name"])
            fn.count += p["count"]
            fn.total += p["total_ns"]
            fn.self_ns += p["self_ns"]
            if "critical_ns" in p:
                fn.critical = (fn.critical or 0) + p["critical_ns"]
            fn.timed += sum(p["duration"].get("counts", []))  # one entry per timed call
            fn.self_hist = (fn.self_hist or 0) + sum(p.get("self_duration", {}).get("counts", []))
            fn.thread_cpu += p.get("thread_cpu_ns", 0)
    return fns, iterations, stack


def load_windows(cli, tmp, rank=0, field="mode", default=None):
    """Per window: (iter_begin, its `field`, {qualname: count}) of the Python functions."""
    files = glob.glob(os.path.join(tmp, "**", f"rank-{rank}.ptr"), recursive=True)
    expect(len(files) == 1, f"expected one ring file, found {files}")
    out = subprocess.run([cli, "dump", files[0]], capture_output=True, text=True, check=True)
    windows = []
    for line in out.stdout.splitlines():
        rec = json.loads(line)
        if rec.get("type") != "window":
            continue
        counts = {}
        for p in rec["functions"]:
            if p["kind"] == "python":
                q = p["name"].rsplit(":", 1)[-1]
                counts[q] = counts.get(q, 0) + p["count"]
        windows.append((rec["iter_begin"], rec.get(field, default), counts))
    return sorted(windows, key=lambda w: w[0])


def load_flagged_windows(cli, tmp):
    """Per window: (iter_begin, python_unrecorded, {qualname: count}) of the Python functions."""
    return load_windows(cli, tmp, 0, "python_unrecorded", False)


def check_swaps(args, tmp, p, minor):
    """swap_workload.py: 50 Dynamo-like swaps, then 6 losses to an evaluator that does not call
    us, each followed by a clean step; one window per step (windows 0-49 chained, 50 + 2j lossy,
    51 + 2j clean, 62 the exit's). Before 3.12 lost() is never recorded and every lossy window is
    flagged; 3.12+ records it through sys.monitoring from the first loss, whose window alone is
    flagged (frames before the check that found it went unrecorded)."""
    monitored = minor >= 12
    expect(int(p.stdout.split("foreign evaluations: ")[1].split()[0]) > 0,
           "the foreign evaluators ran")
    warnings = [l for l in p.stderr.splitlines() if l.startswith("perftracker:")]
    want = "sys.monitoring (tool id 4)" if monitored else "does not call ours"
    expect(len(warnings) == 1 and want in warnings[0], f"stderr: {p.stderr}")
    fns, iterations, _ = load_probe(tmp) if args.probe else load_ring(args.perftracker, tmp)
    expect(iterations == 62, f"iterations: {iterations}")
    # f from kept: one call path per step kind (<step>:kept:f), each counted in full.
    tree = {(q, parent): [x.count for x in find(fns, q, parent)]
            for q, parent in (("compiled", "chained_step"), ("f", "compiled"),
                              ("kept", "chained_step"), ("kept", "lossy_step"),
                              ("kept", "clean_step"), ("f", "kept"), ("lost", "lossy_step"),
                              ("f", "lost"))}
    lost = [24] if monitored else []
    expect(tree == {("compiled", "chained_step"): [150], ("f", "compiled"): [150],
                    ("kept", "chained_step"): [100], ("kept", "lossy_step"): [12],
                    ("kept", "clean_step"): [12], ("f", "kept"): [100, 12, 12],
                    ("lost", "lossy_step"): lost, ("f", "lost"): lost}, f"call tree: {tree}")
    if args.probe:
        return
    windows = load_flagged_windows(args.perftracker, tmp)
    expect([w[0] for w in windows] == list(range(63)),
           f"window begins: {[w[0] for w in windows]}")
    lossy = set(range(50, 62, 2))
    flagged = {w[0] for w in windows if w[1]}
    expect(flagged == ({50} if monitored else lossy), f"flagged windows: {sorted(flagged)}")
    for begin, _, counts in windows[:62]:
        # kept() runs after every give-back: recorded in each step's own window.
        want = {"kept": 2, "lost": 4 if monitored and begin in lossy else 0,
                "compiled": 3 if begin < 50 else 0}
        got = {q: counts.get(q, 0) for q in want}
        expect(got == want, f"window {begin}: {got}, expected {want}")


def check_modes(args, tmp, light, iterations):
    """tiny: 100 calls an iteration, folded after its 32 probe calls in light mode; work and
    train_step: once an iteration, recorded in both modes."""
    fns, marked, _ = load_probe(tmp) if args.probe else load_ring(args.perftracker, tmp)
    expect(marked == iterations, f"iterations: {marked}")
    tiny = sum(f.count for f in find(fns, "tiny", "train_step"))
    expect(tiny == (32 if light else 100 * iterations), f"tiny recorded {tiny} times")
    # tiny's 32 probe calls are its first 32 calls, all from train_step in iteration 0.
    tiny_in_wrapper = sum(f.count for f in find(fns, "tiny", "wrapper"))
    expect(tiny_in_wrapper == (0 if light else iterations), f"tiny in wrapper {tiny_in_wrapper}")
    for q in ("work", "train_step", "wrapper"):
        expect(sum(f.count for f in find(fns, q)) == iterations, f"{q} count")
    if not args.probe:
        # No device: work() (a sleep, no Python callee) is on the critical path all its own time.
        (work,) = find(fns, "work")
        expect(work.critical is not None and work.self_ns > 0 and work.critical == work.self_ns,
               f"work: critical {work.critical} ns, self {work.self_ns} ns")
    if not args.probe:
        modes = {w[1] for w in load_windows(args.perftracker, tmp)}
        expect(modes == {"light" if light else "detailed"}, f"window modes {modes}")


def check_detailed_period(args, tmp, first_allowed):
    """Exactly PERFTRACKER_DETAILED_WINDOWS (3) consecutive detailed windows, starting at a
    window boundary in first_allowed; in them tiny is recorded at every call, elsewhere (after
    its probe, all in window 0) never."""
    windows = load_windows(args.perftracker, tmp)
    detailed = [w for w in windows if w[1] == "detailed"]
    begins = [w[0] for w in detailed]
    expect(len(detailed) == 3 and begins[0] in first_allowed and
           begins == [begins[0], begins[0] + 10, begins[0] + 20],
           f"detailed windows begin at {begins}; all: {[(w[0], w[1]) for w in windows]}")
    for begin, mode, counts in windows:
        # 10 iterations of 100 calls from train_step and 1 from wrapper.
        want = 1010 if mode == "detailed" else (32 if begin == 0 else 0)
        expect(counts.get("tiny", 0) == want,
               f"window {begin} ({mode}): tiny {counts.get('tiny', 0)}, expected {want}")
        expect(begin + 10 > windows[-1][0] or counts.get("work") == 10,
               f"window {begin}: work {counts.get('work')}")


def find(fns, qualname, parent=None):
    """Functions whose qualname is `qualname` (and whose caller's qualname is `parent`)."""
    out = [f for f in fns.values() if f.name.rsplit(":", 1)[-1] == qualname and f.count]
    if parent is not None:
        out = [f for f in out if f.parent in fns and fns[f.parent].name.rsplit(":", 1)[-1] == parent]
    return out


def check_sampling(fns, probe, sampled):
    """f (a cheap leaf) from g: its first 32 calls are timed (the cost probe), then 1 in 16 at
    random intervals of 1-31 calls: 968 / 16 = 60.5, standard deviation ~4.4. Every call counted.
    g's self time leaves out its untimed calls of f too: each adds f's recent mean (> 5 ns) to
    g's callee time, which the probe sees as g.total - g.self - (time of the timed calls of f)."""
    f_g, g = find(fns, "f", "g")[0], find(fns, "g", "main")[0]
    if not sampled:
        expect(f_g.timed == 1000, f"f from g: {f_g.timed} of 1000 calls timed")
        if probe:
            expect(g.total - g.self_ns == f_g.total, "g's callee time is f's measured time")
        return
    expect(32 + 40 <= f_g.timed <= 32 + 100, f"f from g: {f_g.timed} of 1000 calls timed")
    if probe:
        untimed_charge = g.total - g.self_ns - f_g.total
        expect(untimed_charge >= 5 * (1000 - f_g.timed),
               f"g's callee time has {untimed_charge} ns for {1000 - f_g.timed} untimed calls")


def check_workload(fns, iterations, stack, probe, minor, monitored=False, sampled=True):
    f_g, f_h = find(fns, "f", "g"), find(fns, "f", "h")
    expect(len(f_g) == 1 and f_g[0].count == 1000, f"f from g: {[x.count for x in f_g]}")
    check_sampling(fns, probe, sampled and not monitored)
    expect(len(f_h) == 1 and f_h[0].count == 10, f"f from h: {[x.count for x in f_h]}")
    expect(f_g[0].key != f_h[0].key, "f from g and from h share an id")
    g = find(fns, "g", "main")
    expect(len(g) == 1 and g[0].count == 1, "g called once from main")
    expect(0 < g[0].self_ns < g[0].total, f"g: self {g[0].self_ns} < inclusive {g[0].total}")
    if not probe:
        # A caller's self times have a histogram of their own; a leaf's would equal its durations.
        expect(g[0].self_hist == 1, f"g: {g[0].self_hist} self-time histogram entries")
        expect(f_g[0].self_hist == 0, f"f: {f_g[0].self_hist} self-time histogram entries")
    # Where f's calls are sampled its total is an estimate (the timed calls' mean times the
    # calls), which one timed call stretched by a preemption on a loaded host inflates past g's
    # measured total: the bound holds only where every call was timed.
    if not sampled or monitored:
        expect(g[0].total >= f_g[0].total, "g inclusive covers its callees")
    s = find(fns, "sleeper", "main")
    expect(len(s) == 1 and s[0].count == 5, "sleeper called 5 times")
    ratio = s[0].total / 0.25e9
    expect(0.95 < ratio < 1.6, f"5 x 50 ms sleeps measured as {s[0].total / 1e6:.1f} ms")
    expect(s[0].self_ns > 0.9 * s[0].total, "sleep is self time (C code)")
    leaf = find(fns, "leaf", "worker")
    expect(len(leaf) == 1 and leaf[0].count == 300, "thread started later: leaf x300")
    gen = find(fns, "gen", "main")
    # 5 yields + the final return; 3.11+ also evaluates the creating call (RETURN_GENERATOR),
    # which sys.monitoring does not report.
    resumptions = 7 if minor >= 11 and not monitored else 6
    expect(len(gen) == 1 and gen[0].count == resumptions,
           f"generator evaluations: {[x.count for x in gen]}")
    expect(len(find(fns, "raise_inside", "main")) == 1, "a call that raises is recorded")
    if not probe:
        # A thread's CPU lands on the frames it ran between two drains: spin's own, and the
        # leaf calls it made. At most a drain period (20 ms) is lost as it exits, and a loaded
        # host runs it less than its wall time; asleep, nap's thread runs nothing.
        spun = sum(x.thread_cpu for x in find(fns, "spin") + find(fns, "leaf", "spin"))
        napped = sum(x.thread_cpu for x in find(fns, "nap"))
        expect(spun > 0.1e9, f"the spinning thread's CPU: {spun / 1e6:.1f} ms of 400")
        expect(napped < 0.2 * spun, f"the sleeping thread's CPU: {napped / 1e6:.1f} ms")
    generated = [x.name for x in find(fns, "compiled_call")]
    expect(generated == ["torchinductor_test/ab/cabc123.py:1:compiled_call"],
           f"generated code named from its cache root: {generated}")
    expect(iterations == 7, f"iterations: {iterations}")
    gcs = [f for f in fns.values() if f.kind == "gc" and f.count]
    expect(sum(f.count for f in gcs) >= 3, f"gc events: {[(f.name, f.count) for f in gcs]}")
    col = find(fns, "collect", "main")
    expect(len(col) == 1 and col[0].total > 0, f"collect: {[x.total for x in col]}")
    # collect only loops over gc.collect(): its inclusive time is the three pauses, its self time
    # the loop's few microseconds. Pauses not taken out of its self time would make that most of
    # the inclusive time. Not a tighter bound: self time is wall time, and a loaded host that
    # preempts the loop adds a scheduler slice to it (8.1 of 68.5 ms seen, beside two busy
    # processes on 2 cores).
    expect(col[0].self_ns < 0.5 * col[0].total,
           f"gc pauses left in collect's self time: self {col[0].self_ns}, total {col[0].total}")
    expect(all(f.kind == "python" for f in find(fns, "g")), "plain functions are kPython")
    if probe:
        names = [n.rsplit(":", 1)[-1] for n in stack]
        expect("main" in names and "train_step" not in names[:-1] and names[0] == "<module>",
               f"live python stack: {names}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--probe", action="store_true")
    ap.add_argument("--perftracker")
    ap.add_argument("--case", default="workload")
    ap.add_argument("--foreign", help="libcpython_foreign_eval.so (case foreign_evaluator)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.case in ("workload", "time_every_one"):
            # time_every_one: PERFTRACKER_PY_TIME_EVERY=1 times every call.
            every = "1" if args.case == "time_every_one" else "16"
            p = run(args, {"PERFTRACKER_STEP_FUNCTION": "train_step",
                           "PERFTRACKER_PY_TIME_EVERY": every}, tmp)
            expect("workload: done" in p.stdout, "workload output")
            expect("perftracker:" not in p.stderr, f"unexpected warnings: {p.stderr}")
            data = load_probe(tmp) if args.probe else load_ring(args.perftracker, tmp)
            minor = int(p.stdout.split("workload: done (3, ")[1].split(")")[0])
            check_workload(*data, probe=args.probe, minor=minor, sampled=every != "1")
        elif args.case == "workload_monitored":
            # 3.12+: the whole workload (threads, generators, exceptions, gc, iterations)
            # through sys.monitoring, after a foreign evaluator took the slot.
            p = run(args, {"PERFTRACKER_STEP_FUNCTION": "train_step"}, tmp,
                    script="foreign_run.py",
                    script_args=(args.foreign, os.path.join(HERE, "workload.py")))
            warnings = [l for l in p.stderr.splitlines() if l.startswith("perftracker:")]
            expect(len(warnings) == 1 and "sys.monitoring" in warnings[0], f"stderr: {p.stderr}")
            data = load_probe(tmp) if args.probe else load_ring(args.perftracker, tmp)
            minor = int(p.stdout.split("workload: done (3, ")[1].split(")")[0])
            check_workload(*data, probe=args.probe, minor=minor, monitored=True)
        elif args.case == "cprofile":
            p = run(args, {"PERFTRACKER_STEP_FUNCTION": "train_step"}, tmp,
                    python_args=("-m", "cProfile", "-s", "calls"))
            rows = [l.split() for l in p.stdout.splitlines() if l.endswith("(f)")]
            expect(rows and rows[0][0] == "1017", f"cProfile's count of f: {rows}")
            data = load_probe(tmp) if args.probe else load_ring(args.perftracker, tmp)
            expect(sum(x.count for x in find(data[0], "f")) == 1017, "our count of f")
            expect(data[1] == 7, f"iterations under cProfile: {data[1]}")
        elif args.case == "settrace":
            # A debugger's trace function (sys.settrace, what pdb uses) sees every call of f
            # on the main thread while we record them all too.
            p = run(args, {"PERFTRACKER_STEP_FUNCTION": "train_step"}, tmp,
                    python_args=("-c", TRACED))
            traced = int(p.stdout.split("traced f: ")[1].split()[0])
            expect(traced == 1017, f"the trace function's count of f: {traced}")
            data = load_probe(tmp) if args.probe else load_ring(args.perftracker, tmp)
            expect(sum(x.count for x in find(data[0], "f")) == 1017, "our count of f")
        elif args.case == "torch_profiler":
            counts = []
            for extra, unset in (({}, ()), ({}, ("LD_PRELOAD", "RANK"))):
                p = run(args, extra, tmp, script="profiler_workload.py", unset=unset)
                counts.append(p.stdout.split("our frames: ")[1].split()[0])
            expect(counts[0] == counts[1] and int(counts[0]) > 0, f"profiler events {counts}")
            fns = load_probe(tmp)[0] if args.probe else load_ring(args.perftracker, tmp)[0]
            expect([x.count for x in find(fns, "f", "step")] == [20], "our count of f")
        elif args.case in ("evaluator_reset", "evaluator_reset_idle"):
            idle = ("idle",) if args.case == "evaluator_reset_idle" else ()
            p = run(args, {}, tmp, script="reset_workload.py", script_args=idle)
            warnings = [l for l in p.stderr.splitlines() if l.startswith("perftracker:")]
            expect(len(warnings) == 1 and "reinstalled" in warnings[0], f"stderr: {p.stderr}")
            fns = load_probe(tmp)[0] if args.probe else load_ring(args.perftracker, tmp)[0]
            counts = {q: [x.count for x in find(fns, "f", q)] for q in ("before", "after")}
            expect(counts == {"before": [50], "after": [100]}, f"f counts: {counts}")
        elif args.case == "evaluator_swaps":
            # Evaluators swapped in and out all along the run (swap_workload.py).
            watch_s = "0" if args.probe else "0.1"
            p = run(args, {"PERFTRACKER_STEP_FUNCTION": "chained_step,lossy_step,clean_step",
                           "PERFTRACKER_WINDOW_ITERS": "1", "PERFTRACKER_TEST_WATCH_MS": "100"},
                    tmp, script="swap_workload.py", script_args=(args.foreign, watch_s))
            expect("swaps: done" in p.stdout, "workload output")
            minor = int(subprocess.run([args.python, "-c", "import sys; print(sys.version_info[1])"],
                                       capture_output=True, text=True).stdout)
            check_swaps(args, tmp, p, minor)
        elif args.case == "foreign_chained":
            p = run(args, {}, tmp, script="foreign_workload.py", script_args=(args.foreign, "chain"))
            expect(int(p.stdout.split("foreign evaluations: ")[1].split()[0]) > 0,
                   "the foreign evaluator ran")
            expect("perftracker:" not in p.stderr, f"unexpected warnings: {p.stderr}")
            fns = load_probe(tmp)[0] if args.probe else load_ring(args.perftracker, tmp)[0]
            counts = {q: [x.count for x in find(fns, "f", q)] for q in ("before", "after")}
            expect(counts == {"before": [50], "after": [100]}, f"f counts: {counts}")
            raised = [x.count for x in find(fns, "raise_inside", "nested")]
            expect(raised == [3], f"raise_inside: {raised}")
        elif args.case in ("foreign_evaluator", "foreign_cprofile_tool3"):
            # foreign_cprofile_tool3 (3.12+): cProfile (tool id 2) watches too, and tool id 4 is
            # taken: we record through tool id 3, and cProfile still counts every call.
            minor = int(subprocess.run([args.python, "-c", "import sys; print(sys.version_info[1])"],
                                       capture_output=True, text=True).stdout)
            monitored = minor >= 12
            crowded = args.case == "foreign_cprofile_tool3"
            expect(monitored or not crowded, "foreign_cprofile_tool3 needs 3.12+")
            p = run(args, {}, tmp, script="foreign_workload.py",
                    script_args=(args.foreign, "take_tool_4") if crowded else (args.foreign,),
                    python_args=("-m", "cProfile", "-s", "calls") if crowded else ())
            expect(int(p.stdout.split("foreign evaluations: ")[1].split()[0]) > 0,
                   "the foreign evaluator ran")
            if crowded:
                rows = [l.split() for l in p.stdout.splitlines() if l.endswith("(f)")]
                expect(rows and rows[0][0] == "150", f"cProfile's count of f: {rows}")
            warnings = [l for l in p.stderr.splitlines() if l.startswith("perftracker:")]
            want = (f"sys.monitoring (tool id {3 if crowded else 4})" if monitored
                    else "does not call ours")
            expect(len(warnings) == 1 and want in warnings[0], f"stderr: {p.stderr}")
            fns = load_probe(tmp)[0] if args.probe else load_ring(args.perftracker, tmp)[0]
            counts = {q: [x.count for x in find(fns, "f", q)] for q in ("before", "after")}
            tree = {(q, parent): [x.count for x in find(fns, q, parent)]
                    for q, parent in (("after", "nested"), ("gen", "nested"),
                                      ("raise_inside", "nested"))}
            if monitored:
                expect(counts == {"before": [50], "after": [100]}, f"f counts: {counts}")
                # gen: PY_START + 5 PY_RESUME (monitoring never sees the creating call).
                expect(tree == {("after", "nested"): [1], ("gen", "nested"): [6],
                                ("raise_inside", "nested"): [3]}, f"call tree: {tree}")
                nested = find(fns, "nested")
                expect(len(nested) == 1 and nested[0].count == 1 and
                       nested[0].total >= find(fns, "after", "nested")[0].total,
                       f"nested: {[(x.count, x.total) for x in nested]}")
            else:
                expect(counts == {"before": [50], "after": []}, f"f counts: {counts}")
        elif args.case in ("light", "detailed", "unknown_mode"):
            # unknown_mode: one warning, then light.
            light = args.case != "detailed"
            mode = {"unknown_mode": "fast"}.get(args.case, args.case)
            p = run(args, {"PERFTRACKER_STEP_FUNCTION": "train_step", "PERFTRACKER_MODE": mode},
                    tmp, script="modes_workload.py", script_args=("plain", "30", "0.001"))
            warnings = [l for l in p.stderr.splitlines() if l.startswith("perftracker:")]
            expect(len(warnings) == (args.case == "unknown_mode") and
                   all("PERFTRACKER_MODE=fast is neither" in w for w in warnings),
                   f"stderr: {p.stderr}")
            check_modes(args, tmp, light, 30)
        elif args.case == "trigger_file":
            p = run(args, {"PERFTRACKER_STEP_FUNCTION": "train_step", "PERFTRACKER_MODE": "light"},
                    tmp, script="modes_workload.py", script_args=("trigger_file",))
            expect("perftracker:" not in p.stderr, f"unexpected warnings: {p.stderr}")
            check_detailed_period(args, tmp, (30,))
        elif args.case == "trigger_iteration":
            # Two ranks at different speeds see the trigger file appear at different iterations
            # of theirs; the iteration it names makes both switch at iteration 100.
            procs = []
            for rank, seconds in ((0, "0.02"), (1, "0.04")):
                env = test_env(args, {"PERFTRACKER_STEP_FUNCTION": "train_step",
                                      "PERFTRACKER_MODE": "light", "RANK": str(rank)}, tmp)
                procs.append(subprocess.Popen(
                    [args.python, os.path.join(HERE, "modes_workload.py"), "plain", "130",
                     seconds], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    text=True))
            time.sleep(0.3)
            job = os.path.join(tmp, "cpython-test")
            os.makedirs(job, exist_ok=True)
            with open(os.path.join(job, "trigger.tmp"), "w") as out:
                out.write("100\n")
            os.rename(os.path.join(job, "trigger.tmp"), os.path.join(job, "trigger"))
            for proc in procs:
                _, err = proc.communicate(timeout=300)
                expect(proc.returncode == 0 and "perftracker:" not in err, f"rank: {err}")
            for rank in (0, 1):
                windows = load_windows(args.perftracker, tmp, rank)
                begins = [w[0] for w in windows if w[1] == "detailed"]
                expect(begins == [100, 110, 120], f"rank {rank}: detailed windows {begins}")
                tiny = [w[2].get("tiny", 0) for w in windows if w[1] == "detailed"]
                expect(tiny == [1010] * 3, f"rank {rank}: tiny in detailed windows {tiny}")
        elif args.case == "slowdown":
            p = run(args, {"PERFTRACKER_STEP_FUNCTION": "train_step", "PERFTRACKER_MODE": "light"},
                    tmp, script="modes_workload.py", script_args=("slowdown",))
            expect("perftracker:" not in p.stderr, f"unexpected warnings: {p.stderr}")
            # 20 ms steps until iteration 100, then 40 ms: the mean of 50 passes 1.05 x the low
            # 3 slow steps in; decided at the boundary after that (110), applied at the next.
            check_detailed_period(args, tmp, (120, 130))
        elif args.case in ("disabled", "norank"):
            extra = {"PERFTRACKER_ENABLE": "0"} if args.case == "disabled" else {}
            unset = ("RANK",) if args.case == "norank" else ()
            p = run(args, extra, tmp, unset=unset + ("PT_TEST_AWAIT_HOOKS",))
            expect("workload: done" in p.stdout, "workload output")
            expect(p.stderr == "", f"stderr: {p.stderr}")
            expect(os.listdir(tmp) == [], f"files written: {os.listdir(tmp)}")
        elif args.case == "unknown_version":
            p = run(args, {"PERFTRACKER_PY_FORCE_VERSION": "3.8"}, tmp,
                    unset=("PT_TEST_AWAIT_HOOKS",))
            expect("workload: done" in p.stdout, "workload output")
            warnings = [l for l in p.stderr.splitlines() if l.startswith("perftracker:")]
            expect(len(warnings) == 1 and "not supported" in warnings[0], f"stderr: {p.stderr}")
            fns = load_probe(tmp)[0] if args.probe else load_ring(args.perftracker, tmp)[0]
            expect(not [f for f in fns.values() if f.kind in ("python", "gc") and f.count],
                   "an unsupported version records nothing from Python")
        else:
            fail("unknown case " + args.case)
    print(f"ok: {args.case} {os.path.basename(args.python)} {'probe' if args.probe else 'ring'}")


if __name__ == "__main__":
    main()
