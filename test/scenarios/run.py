#!/usr/bin/env python3
"""Fault scenarios: each runs a real job under libperftracker.so, then `perftracker analyze
--json`, and checks the first candidate (category, rank set, function) against the injected
fault. Prints one line per scenario and ends with "N passed, N failed".

  run.py --build BUILD [--ci | --all | --only NAME[,NAME]] [--list] [--keep DIR] [--lib SO]

Without --all only the CI subset runs (scenarios.py marks it). Each line shows the score of the
true cause and of the runner-up (the best other candidate at --min-score 0).
"""

import argparse
import os
import re
import shutil
import sys
import tempfile
import time

import jobs
from scenarios import SCENARIOS


def matches(c, e):
    ev = c.get("evidence", {})
    return (re.fullmatch(e.category, c["category"]) is not None and sorted(c["rank_set"]) == sorted(e.ranks) and
            re.search(e.function, c["function"], re.I) is not None and
            (not e.source or ev.get("source") == e.source) and
            (not e.hang or ev.get("hang") == e.hang))


def describe(c):
    if c is None:
        return "none"
    ranks = ",".join(map(str, c["rank_set"]))
    return f"{c['score']:.3f} {c['category']} [{ranks}] {c['function'][-60:]}"


def hang_frames_ok(report, e):
    """A missing rank's hang names its last Python frame."""
    if e.hang != "non_communication":
        return True
    frames = [f for h in report.get("hangs", []) for f in h.get("last_python_frame", [])]
    return any(f["rank"] in e.ranks and f["frame"] not in ("", "(no Python frame)")
               for f in frames)


def gemm_ok(c, e):
    """A throttled GPU shows in the achieved TFLOP/s of its GEMMs, like for like with its peers."""
    if not e.gemm_tflops_below:
        return True
    parts = c.get("evidence", {}).get("top_functions", [])
    return any(p.get("peer_tflops", 0) > 0 and
               p.get("achieved_tflops", 0) <= e.gemm_tflops_below * p["peer_tflops"]
               for p in parts)


def helpers_ok(c, e):
    """A data-loader verdict names what the rank's helper processes (its workers) spent time on."""
    if not e.helpers:
        return True
    ranks = c.get("evidence", {}).get("helpers", {}).get("ranks", [])
    return any(re.search(e.helpers, b["function"]) for r in ranks for b in r.get("busiest", []))


def why_ok(c, e):
    """The verdict's hardware and host reasons (evidence signals) say what the fault was."""
    if not e.why:
        return True
    texts = "\n".join(x.get("text", "") for x in c.get("evidence", {}).get("signals", []))
    return re.search(e.why, texts) is not None


def warning_ok(s, report):
    if not s.warning:
        return True
    return any(re.search(s.warning, w.get("text", "")) for w in report.get("signal_warnings", []))


def judge(s, report, everything):
    """(passed, summary): the verdict on the reported candidates, scores from all of them."""
    cands = report["candidates"]
    if s.expect is None:
        top = everything["candidates"][0] if everything["candidates"] else None
        ok = not cands and not report.get("hangs")
        warned = warning_ok(s, report)
        return ok and warned, f"expected none; first {describe(cands[0] if cands else None)}; " \
                              f"best below threshold {describe(top)}" + \
            ("" if warned else f"; no warning matching {s.warning!r}: "
                               f"{[w['text'] for w in report.get('signal_warnings', [])]}")
    true = next((c for c in everything["candidates"] if matches(c, s.expect)), None)
    runner = next((c for c in everything["candidates"] if c is not true), None)
    margin = ""
    if true and runner and runner["score"] > 0:
        margin = f"; margin {true['score'] / runner['score']:.1f}x"
    elif true:
        margin = "; margin inf"
    ok = bool(cands) and matches(cands[0], s.expect) and hang_frames_ok(report, s.expect) and \
        gemm_ok(cands[0], s.expect) and helpers_ok(cands[0], s.expect) and warning_ok(s, report)
    first = "" if ok else f"; first {describe(cands[0] if cands else None)}"
    if cands and matches(cands[0], s.expect) and not why_ok(cands[0], s.expect):
        ok = False
        reasons = [x.get("text") for x in cands[0].get("evidence", {}).get("signals", [])]
        first += f"; reasons {reasons} do not match {s.expect.why!r}"
    return ok, f"true cause {describe(true)}; runner-up {describe(runner)}{margin}{first}"


def run_one(s, tools, root):
    out_dir = os.path.join(root, s.name)
    os.makedirs(out_dir, exist_ok=True)
    job_dir = os.path.join(out_dir, s.name)
    until = None
    if s.hang:
        def until():
            try:
                return bool(tools.analyze(job_dir, extra=s.analyze_args)["hangs"])
            except (RuntimeError, ValueError):
                return False
    rc, how = jobs.run(s, tools, out_dir, until)
    if how == "timeout" or (how == "exited" and (rc != 0) != s.hang):
        return False, f"job {how} (exit {rc}); log {out_dir}/job.log"
    return judge(s, tools.analyze(job_dir, extra=s.analyze_args),
                 tools.analyze(job_dir, min_score=0, extra=s.analyze_args))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="CMake build directory")
    ap.add_argument("--lib", help="libperftracker.so (default: the build's)")
    ap.add_argument("--all", action="store_true", help="every scenario, not only the CI subset")
    ap.add_argument("--only", help="comma-separated scenario names")
    ap.add_argument("--ci", action="store_true", help="the CI subset (the default)")
    ap.add_argument("--list", action="store_true", help="list the chosen scenarios")
    ap.add_argument("--keep", help="keep ring files and logs under this directory")
    args = ap.parse_args()
    chosen = [s for s in SCENARIOS if args.all or s.ci]
    if args.only:
        names = args.only.split(",")
        chosen = [s for s in SCENARIOS if s.name in names]
        if len(chosen) != len(names):
            sys.exit(f"unknown scenario in {args.only}; --list shows them")
    if args.list:
        for s in chosen:
            print(f"{s.name:20} {'ci ' if s.ci else 'all'} {s.what}")
        return 0
    tools = jobs.Tools(args.build, args.lib)
    root = args.keep or tempfile.mkdtemp(prefix="perftracker-scenarios.")
    passed = failed = 0
    t0 = time.monotonic()
    for s in chosen:
        t = time.monotonic()
        try:
            ok, summary = run_one(s, tools, root)
        except Exception as e:  # one broken scenario must not hide the others' results
            ok, summary = False, f"error: {e}"
        passed, failed = passed + ok, failed + (not ok)
        print(f"{'PASS' if ok else 'FAIL'} {s.name:20} {time.monotonic() - t:5.1f} s  {summary}",
              flush=True)
    if not args.keep and failed == 0:
        shutil.rmtree(root, ignore_errors=True)
    elif not args.keep:
        print(f"kept for inspection: {root}")
    print(f"scenarios: {time.monotonic() - t0:.0f} s")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
