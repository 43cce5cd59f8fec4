"""The live subset: a cell's fault begins mid-run while `perftracker watch` (its defaults but a 2 s
interval) follows the job, as an operator's terminal would. Scored: the seconds from the fault's
onset to the first event naming it, and every claim before the onset. Its results are kept in
STORE/live/<cell>.json (the watch events, the job's step times); scoring them again needs no
job, but a different analyzer needs a new run: watch's verdicts are made while the job runs.

Onsets: a sim_train GPU fault from NCCL operation onset x (all-reduces a step, counted in the
clean twin's rings), a train_lm thread fault from step `onset` (--fault-from).
"""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from datetime import datetime

import matrix
import record


def ops_per_step(tools, store, twin):
    """All-reduces a step, from a steady window of the clean twin's rank 0."""
    work = tempfile.mkdtemp(prefix="perftracker-live.")
    try:
        import score
        _, rings = score.extract(store, twin, work)
        ring = next((os.path.join(d, f) for d, _, fs in os.walk(rings) for f in fs
                     if f == "rank-0.ptr"), None)
        if ring is None:
            return None  # a reduced archive (the CI subset's): no window of its own to read
        lines = subprocess.run([tools.cli, "dump", ring], capture_output=True,
                               text=True).stdout.splitlines()
        windows = [json.loads(x) for x in lines if '"collectives"' in x]
        w = windows[len(windows) // 2]
        calls = sum(c.get("count", 0) for c in w["collectives"])
        return calls / w["iterations"]["count"]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def live_cell(m, spec, tools, store):
    """The cell of a live spec ({shape, rate, fault, dose, position, seed, onset_step}), its
    onset applied, and the steps it runs."""
    cell = next(c for c in matrix.cells(m) if c.shape == spec["shape"] and
                c.rate == spec["rate"] and c.fault == spec["fault"] and c.dose == spec["dose"]
                and c.position == spec["position"] and c.seed == spec["seed"])
    onset = spec["onset_step"]
    steps = onset + int(spec.get("after_s", 90) / cell.step_s)
    args = [a for a in cell.args]
    env = dict(cell.env)
    count_flag = "--iters" if cell.job == "sim_train" else "--steps"
    args[args.index(count_flag) + 1] = str(steps)
    if cell.job == "sim_train":
        # All-reduces a step depend on the model's parameters, not on the batch: any recorded
        # clean run of the shape counts them.
        clean = [c.id for c in matrix.cells(m) if c.clean and c.shape == cell.shape and
                 os.path.exists(record.archive_path(store, c.id))]
        if not clean:
            raise RuntimeError(f"live: record a clean run of {cell.shape} first")
        ops = next((n for n in (ops_per_step(tools, store, c) for c in clean) if n), None)
        if ops is None:
            raise RuntimeError(f"live: record a clean run of {cell.shape} first (rings, not "
                               "the CI subset's reduced files)")
        env = {k: (f"{v}@{int(round(onset * ops))}" if k == "SIMGPU_COMPUTE_SLOWDOWN" else v)
               for k, v in env.items()}
    else:
        args += ["--fault-from", str(onset)]
    cell.args, cell.env = args, env
    return cell, onset


def watch_events(tools, job_dir, stop, out):
    while not os.path.isdir(job_dir) and not stop.is_set():
        time.sleep(0.5)
    p = subprocess.Popen([tools.cli, "watch", job_dir, "--json-lines", "--interval", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    threading.Thread(target=lambda: out.extend(p.stdout), daemon=True).start()
    stop.wait()
    time.sleep(3)  # one more round after the job's end
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)


def run_live(m, spec, tools, store, ranks):
    cell, onset = live_cell(m, spec, tools, store)
    work = tempfile.mkdtemp(prefix="perftracker-live.")
    prefix = os.path.join(work, "steps")
    s = record.scenario_of(cell, ranks, prefix)
    stop, lines = threading.Event(), []
    watcher = threading.Thread(target=watch_events,
                               args=(tools, os.path.join(work, cell.id), stop, lines))
    watcher.start()
    try:
        rc, how = record.jobs.run(s, tools, work, timeout_s=1200)
    finally:
        stop.set()
        watcher.join()
    result = {"schema": 1, "cell": cell.id, "onset_step": onset, "rc": rc, "how": how,
              "commit": record.commit(), "truth": vars(cell.truth),
              "step_times": _steps(prefix, ranks),
              "events": [json.loads(x) for x in lines if x.strip().startswith("{")]}
    os.makedirs(os.path.join(store, "live"), exist_ok=True)
    with open(os.path.join(store, "live", cell.id + ".json"), "w") as f:
        json.dump(result, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)
    return result


def _unix(stamp):
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _steps(prefix, ranks):
    out = {}
    for r in range(ranks):
        try:
            with open(f"{prefix}.rank{r}.json") as f:
                out[str(r)] = json.load(f)
        except (OSError, ValueError):
            pass
    return out


def judge_live(result):
    """Onset-to-verdict seconds (None: never named), and the claims made before the onset."""
    steps = result["step_times"].get("0")
    if not steps or "start_unix" not in steps:
        return {"cell": result["cell"], "error": "no step times"}
    onset_unix = steps["start_unix"] + steps["ends_s"][result["onset_step"] - 1]
    truth = result["truth"]
    named, before = None, []
    for e in result["events"]:
        if not e.get("type", "").startswith("candidate_") or e["type"] == "candidate_cleared":
            continue
        t = _unix(e["time"])
        right = (sorted(e.get("rank_set", [])) == sorted(truth["ranks"]) and
                 re.fullmatch(truth["category"], e.get("category", "")) is not None and
                 (not truth["function"] or re.search(truth["function"], e.get("function", ""))))
        if t < onset_unix:
            before.append(f"{e.get('category')} {e.get('rank_set')} {e.get('function', '')[-50:]}")
        elif right and named is None:
            named = round(t - onset_unix, 1)
    # No live cell hangs: every hang report is a false one.
    hangs = sum(e.get("type") == "hang" for e in result["events"])
    return {"cell": result["cell"], "onset_to_verdict_s": named, "claims_before_onset": before,
            "false_hangs": hangs, "events": len(result["events"])}


def scored(store):
    d = os.path.join(store, "live")
    if not os.path.isdir(d):
        return []
    out = []
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name)) as f:
            out.append(judge_live(json.load(f)))
    return out
