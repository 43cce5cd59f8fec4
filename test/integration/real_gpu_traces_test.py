#!/usr/bin/env python3
"""The analyzer on ring files with known truths (cases.json in test/data/real_gpu, written on
real GPUs, and in test/data/scenarios): a clean job gets no candidate, an injected cause is named
first at the user's depth with a clear margin, and the step time is the program's own within 5%.

Usage: real_gpu_traces_test.py PERFTRACKER DATA_DIR
"""
import json
import pathlib
import re
import subprocess
import sys
import tarfile
import tempfile


def check(perftracker, data, case, tmp):
    name = case["archive"]
    where = pathlib.Path(tmp) / name.removesuffix(".tgz")
    with tarfile.open(data / name) as tar:
        try:
            tar.extractall(where, filter="data")
        except TypeError:  # Python before 3.11.4: our own archives, members checked by hand
            if any(m.name.startswith("/") or ".." in m.name for m in tar.getmembers()):
                raise
            tar.extractall(where)
    html = pathlib.Path(tmp) / (name + ".html")
    out = subprocess.run([perftracker, "analyze", str(where), "--json", "-", "--min-score", "0",
                          "--html", str(html)], capture_output=True, text=True, check=True).stdout
    report = json.loads(out)
    problems = steady_state_drawn(html.read_text())
    step_ms = report["iterations"]["median_s"] * 1e3
    if abs(step_ms / case["step_ms"] - 1) > 0.05:
        problems.append(f"step time {step_ms:.1f} ms, the program measured {case['step_ms']} ms")
    above = [c for c in report["candidates"] if c["score"] >= 0.01]
    expect = case["expect"]
    if expect is None:
        if above:
            c = above[0]
            problems.append(f"{len(above)} candidate(s) on a clean job, first {c['function']} "
                            f"on ranks {c['rank_set']} (score {c['score']:.3f})")
    elif not above:
        problems.append("no candidate")
    else:
        first = above[0]
        runner_up = report["candidates"][1]["score"] if len(report["candidates"]) > 1 else 0
        if first["rank_set"] != expect["rank_set"]:
            problems.append(f"first candidate on ranks {first['rank_set']}, not {expect['rank_set']}")
        if not re.search(expect["function"], first["function"]):
            problems.append(f"first candidate is {first['function']}, not /{expect['function']}/")
        if runner_up > 0 and first["score"] < expect["min_ratio"] * runner_up:
            problems.append(f"score {first['score']:.3f} vs runner-up {runner_up:.3f}: "
                            f"under {expect['min_ratio']}x")
    print(f"{name}: {'ok' if not problems else 'FAIL: ' + '; '.join(problems)} "
          f"(step {step_ms:.1f} ms, {len(above)} candidate(s))")
    return not problems


def steady_state_drawn(html):
    """The step-time chart is fitted to the steady state: a start-up slot many steps long is
    drawn on the top edge, labelled, and the steady slots' median is not squashed into the
    bottom fifth of the plot (y from 16 at the top to 236 at the bottom)."""
    chart = re.search(r'id=steptime-svg.*?</svg>', html, re.S)
    if not chart:
        return ["no step-time chart in the HTML report"]
    median = re.search(r'<polyline class=median points="([^"]*)"', chart.group(0))
    ys = [float(p.split(",")[1]) for p in median.group(1).split()] if median else []
    if len(ys) < 3:
        return [f"the step-time chart's median line has {len(ys)} points"]
    steady = sorted(ys[1:])
    middle = steady[len(steady) // 2]
    if middle > 236 - 0.2 * (236 - 16):
        return [f"the steady state is squashed to the bottom of the step-time chart (y {middle})"]
    if ys[0] <= 16.0 and "&uarr;" not in chart.group(0):
        return ["start-up drawn on the chart's top edge without its value"]
    return []


def main():
    perftracker, data = sys.argv[1], pathlib.Path(sys.argv[2])
    cases = json.loads((data / "cases.json").read_text())["cases"]
    with tempfile.TemporaryDirectory() as tmp:
        results = [check(perftracker, data, c, tmp) for c in cases]
    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
