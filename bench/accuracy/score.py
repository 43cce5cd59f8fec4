"""Scores the recorded cells: each archive re-analyzed with `perftracker analyze --json` (the
project's own report is the reader), its first candidate judged against the cell's truth, and
the figures summed up overall and split by shape, rate, fault, dose and position.

Figures (scoreboard.json, "schema": 2):
  top1            faulty cells (masked ones aside) whose first candidate has the truth's rank
                  set, category and function; rank, category and function also on their own
  false_claims    clean cells with any candidate; masked cells whose first candidate is not the
                  fault (none, or the fault on some of its ranks, is right there). A cell whose
                  job ran no slower than its clean twin, beyond the shape's run-to-run noise
                  (MIN_DOSE at least), is masked whatever its dose says: the fault cost nothing
                  to find (dose_took false; the sim shapes' host faults behind a device queue).
                  A cell recorded beside other load that still ran no slower than its
                  undisturbed twin is masked too (load only slows a job); one that ran slower
                  is scored as its dose says
  margin          the true first candidate's score over the best other candidate's (all scores,
                  --min-score 0): the share at 2x or more, and quantiles
  what_if         the first (true) candidate's "job N% faster" against the clean twin's measured
                  step (the job's own step times): the share within +-25% of the measured saving,
                  or within the twin's own run-to-run noise (the spread of the shape's clean
                  seeds' steps) where that is wider: a quiet fault's saving is no better known.
                  A cell or twin recorded while other processes took more than DISTURBED of the
                  machine's CPUs (the archive's others_cpu_share) is no counterfactual: its
                  what-if is set aside (what_if_disturbed) rather than scored
  diff            `perftracker diff` as a CI gate: exit 1 over pairs of clean runs (false
                  alarms; a pair with a run recorded beside other load set aside), over
                  (clean twin, quiet fault) pairs (detections), and over (clean twin, one
                  function slower on every rank) pairs, where a regression must name it
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import tarfile
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

import live
import matrix
import record
from run import describe  # test/scenarios' one-line candidate (record.py puts it on the path)

SCHEMA = 2
AXES = ("shape", "rate", "fault", "dose", "position")


def extract(store, cell_id, into):
    """The archive's meta.json (as a dict) and the directory of its rings."""
    with tarfile.open(record.archive_path(store, cell_id)) as tar:
        tar.extractall(into)
    with open(os.path.join(into, "meta.json")) as f:
        return json.load(f), os.path.join(into, "rings")


# The CLI's default --min-score: what a user's report lists.
MIN_SCORE = 0.01


def analyze(tools, rings):
    """Every candidate, however small (the runner-up's score is the margin's denominator), and
    the user's report: the same candidates from the threshold up (the CLI's cut is the last step
    of ranking, so one analysis gives both). One thread each: the cells run side by side."""
    everything = tools.analyze(rings, 0, extra=("--jobs", "1", "--top", "1000"))
    report = dict(everything, candidates=[c for c in everything["candidates"]
                                          if c["score"] >= MIN_SCORE])
    return report, everything


def mean_step(step_times):
    """The job's mean step after start-up (its first tenth of steps left out), from its own
    clock: the median over ranks of (last end - first counted end) / steps between."""
    per_rank = []
    for ends in step_times.values():
        if len(ends) < 5:
            continue
        k = max(1, len(ends) // 10)
        per_rank.append((ends[-1] - ends[k]) / (len(ends) - 1 - k))
    return statistics.median(per_rank) if per_rank else None


def parts(c, truth):
    """(ranks right, category right, function right) of candidate c."""
    if c is None:
        return False, False, False
    return (sorted(c["rank_set"]) == sorted(truth["ranks"]),
            re.fullmatch(truth["category"], c["category"]) is not None,
            not truth["function"] or re.search(truth["function"], c["function"]) is not None)


# Other processes' share of the machine's CPUs beyond which a recorded step is no measure of the
# job: a tenth. A clean torch job of four ranks on this machine's two cores ran 362 to 410 ms a
# step between recordings, the slower ones beside a build taking a core.
DISTURBED = 0.1

# The least slowdown against the twin that counts as the dose having taken: the quiet
# dose begins at 5%, and a sim shape's clean seeds agree to 0.1%.
MIN_DOSE = 0.05


def judge(cell, report, everything, twin_step, step, disturbed=False, noise=0.0,
          twin_disturbed=False):
    """One cell's outcome: a dict of what was right, what was said, and its figures."""
    truth = cell["truth"]
    cands = report["candidates"]
    first = cands[0] if cands else None
    out = {"id": cell["id"], "said": describe(first), "hang": bool(report.get("hangs")),
           "step_s": step, "twin_step_s": twin_step}
    for axis in AXES:
        out[axis] = cell[axis] or "-"
    if cell["fault"] == "clean":
        out["kind"] = "clean"
        out["false_claim"] = bool(cands) or out["hang"]
        return out
    r, cat, fn = parts(first, truth)
    right = r and cat and fn
    masked = truth["none_ok"]
    if not masked and step and twin_step:
        took = (step - twin_step) / twin_step >= max(MIN_DOSE, noise)
        # Other load only slows a job: one that ran no slower than an undisturbed twin took no
        # dose however busy the machine was; one that ran slower may owe it to the load.
        if not disturbed or (not took and not twin_disturbed):
            out["dose_took"] = took
            masked = not took
    out.update(kind="masked" if masked else "faulty", right=right, rank_ok=r,
               category_ok=cat, function_ok=fn,
               truth=f"{truth['category']} {truth['ranks']} /{truth['function']}/")
    if masked:
        # The fault itself, on ranks it was put on, is no false claim.
        on_its_ranks = first is not None and set(first["rank_set"]) <= set(truth["ranks"])
        out["false_claim"] = first is not None and not (on_its_ranks and cat and fn)
        return out
    if step and twin_step:
        out["measured_pct"] = round(100 * (step - twin_step) / step, 1)
    true = next((c for c in everything["candidates"] if all(parts(c, truth))), None)
    other = next((c for c in everything["candidates"] if c is not true), None)
    if right and true is not None:
        out["margin"] = (true["score"] / other["score"]) if other and other["score"] > 0 \
            else float("inf")
        wi = first.get("evidence", {}).get("what_if", {})
        if "faster_pct" in wi and out.get("measured_pct") and disturbed:
            out["what_if_disturbed"] = True
        elif "faster_pct" in wi and out.get("measured_pct"):
            out["what_if_pct"] = wi["faster_pct"]
            out["what_if_err"] = round((wi["faster_pct"] - out["measured_pct"]) /
                                       abs(out["measured_pct"]), 3)
            # The twin's step is known to its noise, as a share of this job's step.
            slack = max(0.25 * abs(out["measured_pct"]), 100 * noise * twin_step / step)
            out["what_if_ok"] = abs(wi["faster_pct"] - out["measured_pct"]) <= slack
            out["what_if_bound"] = wi.get("bounded_by")
    return out


def diff_exit(tools, base, cur, names=None):
    """diff's exit status (`base`: one baseline's rings, or a list of several); with `names` (a
    regex), whether a regression it reports is a metric that matches it, as (exit, named)."""
    bases = base if isinstance(base, list) else [base]
    p = subprocess.run([tools.cli, "diff", *bases, cur, "--json", "-"], capture_output=True,
                       text=True)
    if names is None:
        return p.returncode
    try:
        regs = json.loads(p.stdout).get("regressions", [])
    except ValueError:
        regs = []
    return p.returncode, any(re.search(names, r.get("name", "")) for r in regs)


def score_cell(cell, tools, store, twins, noises):
    work = tempfile.mkdtemp(prefix="perftracker-score.")
    try:
        meta, rings = extract(store, cell.id, os.path.join(work, "cell"))
        step = mean_step(meta.get("step_times", {}))
        machine = machine_of(meta)
        twin, twin_step, twin_others = counterfactual(cell, machine, twins)
        twin_disturbed = twin_others is not None and twin_others > DISTURBED
        disturbed = twin_disturbed or (meta.get("others_cpu_share") or 0) > DISTURBED
        # The truth the matrix derives today (a fault's function pattern may have been
        # corrected since the job ran: the job itself is the same, record.current says so).
        judged = dict(meta["cell"], truth=asdict(cell.truth))
        out = judge(judged, *analyze(tools, rings), twin_step, step, disturbed,
                    noises.get((cell.shape, cell.rate, machine), 0.0), twin_disturbed)
        # The library that recorded it: a collector's change reaches only the cells recorded since.
        out["library"] = (meta.get("commit") or "?").replace("+dirty", "")
        out["machine"], out["twin"] = machine, twin
        # diff: a quiet fault against its twin is a planted slowdown to detect
        if cell.dose == "quiet" and twin == cell.twin:
            _, twin_rings = extract(store, cell.twin, os.path.join(work, "twin"))
            truth = judged["truth"]
            if truth.get("diff_names"):
                code, named = diff_exit(tools, twin_rings, rings, truth["function"])
                out["diff_named"] = code == 1 and named
                # A device's kernel or a host function: the two halves of the gate's planted test.
                out["diff_what"] = "kernel" if truth["category"].startswith("gpu") else "function"
            elif out["kind"] == "faulty":
                # A slowdown that took (a masked dose's job ran as fast: nothing to detect),
                # against the twin alone (the step judged by diff's stated run noise), and
                # against the twin and a second clean run (their spread is the noise), as a
                # user's CI with baseline runs of its own does.
                out["diff_detected"] = diff_exit(tools, twin_rings, rings) == 1
                second = second_baseline(cell, twins, machine)
                if second:
                    _, second_rings = extract(store, second, os.path.join(work, "second"))
                    out["diff_detected_2"] = diff_exit(tools, [twin_rings, second_rings],
                                                       rings) == 1
        return out
    except (OSError, RuntimeError, ValueError, KeyError, tarfile.TarError) as e:
        return {"id": cell.id, "error": str(e)[:300]}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def meta_of(store, cell_id):
    with tarfile.open(record.archive_path(store, cell_id)) as tar:
        return json.load(tar.extractfile("meta.json"))


def clean_seeds(cell, twins, machine):
    """(id, step) of the recorded clean runs of the cell's shape and rate, recorded undisturbed
    on `machine` (`twins`: twin_steps' recorded clean runs, in seed order)."""
    same = f"{cell.shape}.{cell.rate}.clean."  # matrix.clean_cell's ids
    return [(cid, step) for cid, (step, others, on) in twins.items()
            if cid.startswith(same) and on == machine and (others or 0) <= DISTURBED]


def second_baseline(cell, twins, machine):
    """A clean run of the cell's shape and rate other than its twin, recorded undisturbed on
    the same machine."""
    return next((cid for cid, _ in clean_seeds(cell, twins, machine) if cid != cell.twin), None)


# Archives recorded before meta.json named the machine (2026-12-02): the machines of the
# sittings before it, of one speed (a clean torch_model step 0.205-0.216 s on each of them).
UNNAMED_MACHINE = "not recorded (before 2026-12-02)"


def machine_of(meta):
    return (meta.get("machine") or {}).get("key") or UNNAMED_MACHINE


def counterfactual(cell, machine, twins):
    """(which, its step, its others_cpu_share): the cell's clean twin where it ran on the same
    machine; else the median step of the shape's clean seeds recorded there undisturbed (a seed
    changes the data and the weights, not the work: the seeds' spread is the run noise the
    judge allows); else nothing to measure the fault against (None, None, None)."""
    step, others, on = twins.get(cell.twin, (None, None, None))
    if step and on == machine:
        return cell.twin, step, others
    steps = [s for _, s in clean_seeds(cell, twins, machine) if s]
    if not steps:
        return None, None, None
    return f"median of {len(steps)} clean seeds", statistics.median(steps), 0.0


def clean_pair(pair, tools, store):
    """diff over clean runs: (base, current) or (base, base, current)."""
    *bases, cur = pair
    base = bases[0] if len(bases) == 1 else bases
    work = tempfile.mkdtemp(prefix="perftracker-score.")
    try:
        metas, rings = [], []
        for i, cell_id in enumerate(pair):
            m, r = extract(store, cell_id, os.path.join(work, str(i)))
            metas.append(m)
            rings.append(r)
        # Two runs of which one shared the machine with other work differ by that work: no
        # measure of run-to-run noise, as no twin of it is a counterfactual.
        if any((m.get("others_cpu_share") or 0) > DISTURBED for m in metas):
            return {"base": base, "cur": cur, "disturbed": True}
        return {"base": base, "cur": cur, "exit": diff_exit(tools, rings[:-1], rings[-1])}
    except (OSError, tarfile.TarError) as e:
        return {"base": base, "cur": cur, "error": str(e)[:300]}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def twin_steps(cells, store):
    out = {}
    for c in cells:
        if c.clean and record.current(store, c):
            meta = meta_of(store, c.id)
            out[c.id] = (mean_step(meta.get("step_times", {})), meta.get("others_cpu_share"),
                         machine_of(meta))
    return out


def run_noise(cells, twins):
    """(shape, rate, machine) -> the spread of its clean seeds' steps over their median,
    recorded undisturbed on that machine: how well one clean run knows the job's step."""
    steps = defaultdict(list)
    for c in cells:
        step, others, machine = twins.get(c.id, (None, None, None))
        if step and (others or 0) <= DISTURBED:
            steps[(c.shape, c.rate, machine)].append(step)
    return {k: (max(v) - min(v)) / statistics.median(v) for k, v in steps.items() if len(v) > 1}


def clean_pairs(cells, twins, baselines=1):
    """Consecutive recorded clean seeds of each shape and rate on one machine, as (base,
    current), or with two baselines (base, base, current): runs on two machines differ by the
    machine."""
    groups = defaultdict(list)
    for c in cells:
        if c.id in twins:
            groups[(c.shape, c.rate, twins[c.id][2])].append(c.id)
    k = baselines + 1
    return [tuple(ids[i:i + k]) for ids in groups.values() for i in range(len(ids) - k + 1)]


def clean_alarms(pairs):
    """diff's exits over clean runs: false alarms, and the runs set aside (beside other load)."""
    return {"n": len([p for p in pairs if "exit" in p]),
            "false_alarms": sum(p.get("exit") == 1 for p in pairs),
            "disturbed": sum(bool(p.get("disturbed")) for p in pairs),
            "pairs": pairs}


def figures(outcomes):
    faulty = [o for o in outcomes if o.get("kind") == "faulty"]
    clean = [o for o in outcomes if o.get("kind") == "clean"]
    masked = [o for o in outcomes if o.get("kind") == "masked"]
    margins = [o["margin"] for o in faulty if "margin" in o]
    errs = [o["what_if_err"] for o in faulty if "what_if_err" in o]
    oks = [o["what_if_ok"] for o in faulty if "what_if_ok" in o]

    def rate(n, k):
        return {"n": n, "k": k, "rate": round(k / n, 3) if n else None}
    f = {"top1": rate(len(faulty), sum(o["right"] for o in faulty)),
         "rank": rate(len(faulty), sum(o["rank_ok"] for o in faulty)),
         "category": rate(len(faulty), sum(o["category_ok"] for o in faulty)),
         "function": rate(len(faulty), sum(o["function_ok"] for o in faulty)),
         "false_claims_clean": rate(len(clean), sum(o["false_claim"] for o in clean)),
         "false_claims_masked": rate(len(masked), sum(o["false_claim"] for o in masked)),
         "margin_2x": rate(len(faulty), sum(m >= 2 for m in margins)),
         "what_if_25pct": rate(len(oks), sum(oks)),
         "doses_not_taken": sum(o.get("dose_took") is False for o in outcomes),
         "what_if_disturbed": sum(bool(o.get("what_if_disturbed")) for o in faulty)}
    # Over every margin: a first candidate with no other beside it is "alone" (an infinite
    # margin, which most are; leaving them out made the quantiles the few close calls').
    ordered = sorted(margins)
    if ordered:
        at = (ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))] for q in (10, 50, 90))
        f["margin_quantiles"] = {q: "alone" if m == float("inf") else round(m, 2)
                                 for q, m in zip((10, 50, 90), at)}
    if errs:
        f["what_if_median_abs_err"] = round(statistics.median(abs(e) for e in errs), 3)
    detected = [o["diff_detected"] for o in outcomes if "diff_detected" in o]
    f["diff_planted"] = rate(len(detected), sum(detected))
    detected = [o["diff_detected_2"] for o in outcomes if "diff_detected_2" in o]
    f["diff_planted_2"] = rate(len(detected), sum(detected))
    for what in ("function", "kernel"):
        named = [o["diff_named"] for o in outcomes
                 if "diff_named" in o and o["diff_what"] == what]
        f[f"diff_{what}_named"] = rate(len(named), sum(named))
    return f


def score(cells, m, tools, store, jobs_n):
    present = [c for c in cells if os.path.exists(record.archive_path(store, c.id))]
    recorded = [c for c in present if record.current(store, c)]
    stale = [c.id for c in present if c not in recorded]
    t0 = time.monotonic()
    twins = twin_steps(matrix.cells(m), store)
    noises = run_noise(matrix.cells(m), twins)
    with ThreadPoolExecutor(max(1, jobs_n)) as pool:
        outcomes = list(pool.map(lambda c: score_cell(c, tools, store, twins, noises), recorded))
        pairs = list(pool.map(lambda p: clean_pair(p, tools, store), clean_pairs(cells, twins)))
        triples = list(pool.map(lambda p: clean_pair(p, tools, store),
                                clean_pairs(cells, twins, baselines=2)))
    errors = [o for o in outcomes if "error" in o]
    outcomes = [o for o in outcomes if "error" not in o]
    board = {"schema": SCHEMA, "commit": record.commit(),
             "scored": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "seconds": round(time.monotonic() - t0, 1),
             "cells": {"matrix": len(matrix.cells(m)), "chosen": len(cells),
                       "recorded": len(recorded), "scored": len(outcomes),
                       "errors": len(errors), "stale": stale},
             "totals": figures(outcomes),
             "diff_clean_pairs": clean_alarms(pairs),
             "diff_clean_triples": clean_alarms(triples),
             "by": {axis: {value: figures([o for o in outcomes if o[axis] == value])
                           for value in sorted({o[axis] for o in outcomes})} for axis in AXES},
             "run_noise": {f"{k[0]}.{k[1]} on {k[2]}": round(v, 4)
                           for k, v in sorted(noises.items())},
             "live": live.scored(store),
             "failures": [o for o in outcomes if (o["kind"] == "faulty" and not o["right"]) or
                          o.get("false_claim")],
             "errors": errors,
             "outcomes": outcomes}
    return board


def alarms_line(what, alarms):
    return (f"| diff: false alarms over {what} | {alarms['false_alarms']} of {alarms['n']} "
            f"({alarms['disturbed']} set aside, recorded beside other load) |")


def pct(f):
    return "-" if not f or f["n"] == 0 else f"{100 * f['rate']:.0f}% ({f['k']}/{f['n']})"



def quantiles(q):
    """The margin's 10th, 50th and 90th percentiles, as the board prints them."""
    return f"(10th, 50th, 90th percentile: {q[10]}, {q[50]}, {q[90]})" if q else ""


def same_fault_measured(outcomes, o):
    """What the other cells of o's shape, rate, fault and dose (other positions and seeds)
    measured against their twins, undisturbed: how well one recording knows the truth a what-if
    is judged by (the same GIL thread cost one job 9 % and its other seed 23 %)."""
    return sorted(x["measured_pct"] for x in outcomes
                  if x is not o and x.get("kind") == "faulty" and "what_if_pct" in x and
                  all(x.get(k) == o.get(k) for k in ("shape", "rate", "fault", "dose")))


def text(board):
    t = board["totals"]
    c = board["cells"]
    lines = [f"# Diagnosis benchmark scoreboard (commit {board['commit']}, {board['scored']})", "",
             f"{c['scored']} cells scored of {c['matrix']} in the matrix ({c['recorded']} "
             f"recorded, {c['errors']} unreadable, {len(c['stale'])} recorded with other "
             f"parameters than the matrix's and left out), in {board['seconds']} s.", "",
             "| figure | value |", "| --- | --- |",
             f"| top-1 (ranks, category and function) | {pct(t['top1'])} |",
             f"| ranks right | {pct(t['rank'])} |",
             f"| category right | {pct(t['category'])} |",
             f"| function right | {pct(t['function'])} |",
             f"| false claims on clean jobs | {pct(t['false_claims_clean'])} |",
             f"| false claims on masked jobs | {pct(t['false_claims_masked'])} "
             f"({t['doses_not_taken']} of them faults whose job ran no slower than its twin) |",
             f"| first candidate >= 2x the runner-up | {pct(t['margin_2x'])} "
             f"{quantiles(t.get('margin_quantiles'))} |",
             f"| what-if within 25% of the clean twin | {pct(t['what_if_25pct'])} "
             f"(median error {t.get('what_if_median_abs_err', '-')}; "
             f"{t['what_if_disturbed']} set aside, recorded beside other load) |",
             alarms_line("clean pairs", board["diff_clean_pairs"]),
             alarms_line("a clean run against two others", board["diff_clean_triples"]),
             f"| diff: quiet faults detected against their twin | {pct(t['diff_planted'])} |",
             f"| diff: quiet faults detected against the twin and a second clean run | "
             f"{pct(t['diff_planted_2'])} |",
             f"| diff: a function 10% slower on every rank named against its twin | "
             f"{pct(t['diff_function_named'])} |",
             f"| diff: a kernel 10% slower on every rank named against its twin | "
             f"{pct(t['diff_kernel_named'])} |", "",
             "The clean seeds' run-to-run spread of the step, by shape: " +
             ", ".join(f"{k} {100 * v:.1f}%" for k, v in board["run_noise"].items()) + ".", "",
             "Recorded on: " + "; ".join(
                 f"{on} ({n} cell{'' if n == 1 else 's'})" for on, n in Counter(
                     o.get("machine", "?") for o in board["outcomes"]).most_common()) +
             ". A cell is measured against its twin recorded on the same machine, else "
             "against the median of its shape's clean seeds recorded there.", "",
             "Recorded with the library of: " + ", ".join(
                 f"{lib} ({n} cell{'' if n == 1 else 's'})" for lib, n in Counter(
                     o.get("library", "?") for o in board["outcomes"]).most_common()) + ".", ""]
    for axis in AXES:
        lines += [f"## By {axis}", "",
                  "| " + axis + " | top-1 | false claims (clean) | false claims (masked) | "
                  "margin >= 2x | what-if +-25% | diff detects |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for value, f in board["by"][axis].items():
            lines.append(f"| {value} | {pct(f['top1'])} | {pct(f['false_claims_clean'])} | "
                         f"{pct(f['false_claims_masked'])} | {pct(f['margin_2x'])} | "
                         f"{pct(f['what_if_25pct'])} | {pct(f['diff_planted'])} |")
        lines.append("")
    lines += ["## Live: `watch` beside a job whose fault begins mid-run", "",
              "| cell | onset to verdict | claims before the onset |", "| --- | --- | --- |"]
    for lv in board.get("live", []):
        named = lv.get("onset_to_verdict_s")
        hangs = lv.get("false_hangs", 0)
        lines.append(f"| {lv['cell']} | {'never' if named is None else f'{named} s'} | "
                     f"{'; '.join(lv.get('claims_before_onset', [])) or 'none'}"
                     f"{f'; {hangs} hang reports (no rank hung)' if hangs else ''} |")
    lines += ["", "## What-if misses", "",
              "| cell | said (job ~N% faster) | measured against the twin | bounded by | "
              "the same fault and dose on the shape, other cells measured |",
              "| --- | --- | --- | --- | --- |"]
    for o in board["outcomes"]:
        if o.get("what_if_ok") is False:
            others = ", ".join(f"{v:.1f}%" for v in same_fault_measured(board["outcomes"], o))
            lines.append(f"| {o['id']} | {o['what_if_pct']:.1f}% | {o['measured_pct']:.1f}% | "
                         f"{o.get('what_if_bound') or '-'} | {others or '-'} |")
    lines += ["", "## Failures", "", "| cell | truth | said instead |", "| --- | --- | --- |"]
    for o in board["failures"]:
        lines.append(f"| {o['id']} | {o.get('truth', 'no claim')} | {o['said']} |")
    for p in board["diff_clean_pairs"]["pairs"] + board["diff_clean_triples"]["pairs"]:
        if p.get("exit") == 1:
            lines.append(f"| diff {p['base']} -> {p['cur']} | exit 0 | exit 1 |")
    for o in board["errors"]:
        lines.append(f"| {o['id']} | - | error: {o['error']} |")
    return "\n".join(lines) + "\n"


def write(board, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "scoreboard.json"), "w") as f:
        json.dump(board, f, indent=1, default=lambda x: None)
    with open(os.path.join(out_dir, "SCOREBOARD.md"), "w") as f:
        f.write(text(board))


CI_DATA = os.path.join(record.REPO, "test", "data", "accuracy")
CI_FLOOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ci_floor.json")
# Figures where more is better, and where less is.
HIGHER = ("top1", "rank", "category", "function", "margin_2x", "what_if_25pct", "diff_planted",
          "diff_planted_2", "diff_function_named", "diff_kernel_named")
LOWER = ("false_claims_clean", "false_claims_masked", "diff_false_alarms")


def ci_cells(m):
    wanted = set(m["ci"]["cells"])
    return [c for c in matrix.cells(m) if c.id in wanted]


def pack_ci(m, tools, store):
    """The CI subset's archives, small: each cell's rings as one reduced file (the report from
    reduced files is the report from the rings) beside its meta.json."""
    os.makedirs(CI_DATA, exist_ok=True)
    for c in ci_cells(m):
        # A cell packed from the same recording keeps its bytes (a store laid anew from the
        # subset holds reduced files already): the repository grows by the new cells only.
        packed = os.path.join(CI_DATA, c.id + ".tgz")
        if os.path.exists(packed) and meta_of(CI_DATA, c.id).get("recorded") == \
                meta_of(store, c.id).get("recorded"):
            continue
        work = tempfile.mkdtemp(prefix="perftracker-pack.")
        try:
            meta, rings = extract(store, c.id, work)
            os.makedirs(os.path.join(work, "reduced"))
            p = subprocess.run([tools.cli, "reduce", rings, "-o",
                                os.path.join(work, "reduced", "node.ptrd")],
                               capture_output=True, text=True)
            if p.returncode != 0:
                raise SystemExit(f"bench: reduce {c.id}: {p.stderr.strip()}")
            with tarfile.open(packed, "w:gz") as tar:
                tar.add(os.path.join(work, "meta.json"), "meta.json")
                tar.add(os.path.join(work, "reduced"), "rings")
        finally:
            shutil.rmtree(work, ignore_errors=True)


def ci_board(m, tools, jobs_n):
    return score(ci_cells(m), m, tools, CI_DATA, jobs_n)


def figure(board, k):
    if k == "diff_false_alarms":
        return sum(board.get(p, {}).get("false_alarms", 0)
                   for p in ("diff_clean_pairs", "diff_clean_triples"))
    return board["totals"][k]["k"]


def floor_of(board):
    return {"commit": board["commit"],
            "figures": {k: figure(board, k) for k in HIGHER + LOWER},
            "cells": {o["id"]: cell_right(o) for o in board["outcomes"]}}


def cell_right(o):
    """A faulty cell named right; a clean or masked one without a false claim."""
    return bool(o.get("right")) if o.get("kind") == "faulty" else not o.get("false_claim")


def compare(floor, board):
    """(failures, lines): the figures below the floor (fewer right, more false claims), fewer
    cells scored than the floor has, and the cells that were right and are not now."""
    now = floor_of(board)
    failed, lines = [], []
    if board["cells"]["scored"] < len(floor["cells"]):
        failed.append(f"{board['cells']['scored']} cells scored of the floor's "
                      f"{len(floor['cells'])} ({len(board['errors'])} unreadable)")
    for k in HIGHER + LOWER:
        was, got = floor["figures"].get(k, 0), now["figures"][k]  # a figure new since: 0
        worse = got < was if k in HIGHER else got > was
        lines.append(f"{'FAIL' if worse else 'ok  '} {k:20} {got} (floor {was})")
        if worse:
            failed.append(f"{k} {got} vs floor {was}")
    for cell, was_right in sorted(floor["cells"].items()):
        if was_right and not now["cells"].get(cell, False):
            o = next((o for o in board["outcomes"] if o["id"] == cell), {})
            lines.append(f"     {cell}: was right, now says "
                         f"{o.get('said', 'nothing (unreadable)')}")
    return failed, lines


def ci(m, tools, jobs_n, update=False):
    """Scores the CI subset and compares it with ci_floor.json: exit 1 below the floor."""
    board = ci_board(m, tools, jobs_n)
    if update:
        with open(CI_FLOOR, "w") as f:
            json.dump(floor_of(board), f, indent=1, sort_keys=True)
            f.write("\n")
        print(text(board))
        print(f"bench: ci: floor written to {CI_FLOOR}")
        return 0
    with open(CI_FLOOR) as f:
        floor = json.load(f)
    failed, lines = compare(floor, board)
    print("\n".join(lines))
    print(f"bench: ci: {board['cells']['scored']} cells in {board['seconds']} s; "
          + ("figures at or above the floor" if not failed else "below the floor: " +
             "; ".join(failed)))
    return 1 if failed else 0
