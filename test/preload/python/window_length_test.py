#!/usr/bin/env python3
"""Windows sized by time on a real PyTorch DDP job (torchrun, 2 ranks, gloo): with
PERFTRACKER_WINDOW_S=1 and blocks of 5 iterations of ~9 ms, windows grow from one block to a
block times a power of two that lasts a second, end on multiples of their length, and `analyze`
compares the ranks over the boundaries they share (schemas/FORMAT.md, "Where windows end"); while
the job runs, the live slot holds the window still open.

  window_length_test.py --lib libperftracker.so --perftracker CLI
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
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "test", "support"))
import hang_dump  # noqa: E402
from checks import fail  # noqa: E402

BLOCK = 5
STEPS = 400


def windows(cli, path):
    out = subprocess.run([cli, "dump", path], capture_output=True, text=True, check=True).stdout
    return [w for w in map(json.loads, out.splitlines()) if w.get("type") == "window"]


def open_window(cli, tmp):
    """Rank 0's open window from its live slot, when it has begun iterations and functions."""
    for path in glob.glob(os.path.join(tmp, "**", "rank-0.ptr"), recursive=True):
        p = subprocess.run([cli, "dump", path], capture_output=True, text=True)
        for rec in map(json.loads, p.stdout.splitlines()):
            w = rec.get("open_window") if rec.get("type") == "live" else None
            if w and w["iter_end"] > w["iter_begin"] and w["functions"]:
                return w
    return None


def holding_length(n):
    """The shortest block x 2^k that holds n iterations."""
    length = BLOCK
    while length < n:
        length *= 2
    return length


def shared_keys(ranks):
    """Window starts that no rank's window spans across (analyzer/ingest/align.cpp)."""
    starts = sorted({w["iter_begin"] for ws in ranks for w in ws})
    return [k for k in starts
            if not any(w["iter_begin"] < k < w["iter_end"] for ws in ranks for w in ws)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--perftracker", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PERFTRACKER_")}
        env.update({"LD_PRELOAD": args.lib, "PERFTRACKER_DIR": tmp, "OMP_NUM_THREADS": "1",
                    "PERFTRACKER_JOB_ID": "windows", "PERFTRACKER_WINDOW_ITERS": str(BLOCK),
                    "PERFTRACKER_WINDOW_S": "1", "PYTHONDONTWRITEBYTECODE": "1"})
        cmd = ["/usr/bin/python3", "-m", "torch.distributed.run", "--nnodes", "1",
               "--rdzv_backend", "c10d", "--rdzv_endpoint", "localhost:0",
               "--rdzv_id", f"windows-{os.getpid()}", "--nproc_per_node", "2",
               "--redirects", "1", "--tee", "1",
               os.path.join(ROOT, "test", "scenarios", "torch_ddp_job.py"), "--width", "32",
               "--batch", "16", "--steps", str(STEPS), "--routine-ms", "8"]
        # While it runs, the live slot holds the window still open (FORMAT.md, Live slot).
        job = subprocess.Popen(cmd, env=hang_dump.with_faulthandler(env), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        open_seen = None
        deadline = time.monotonic() + 400
        while job.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
            if open_seen is None:
                open_seen = open_window(args.perftracker, tmp)
        if job.poll() is None:
            job.kill()
        output = job.communicate()[0]
        if job.returncode != 0:
            fail(f"torchrun exited {job.returncode}\n{output[-3000:]}")
        if open_seen is None:
            fail("no live slot showed the open window while the job ran")
        files = sorted(f for f in glob.glob(os.path.join(tmp, "**", "rank-*.ptr"), recursive=True)
                       if ".helper-" not in f)
        if len(files) != 2:
            fail(f"expected 2 ring files: {files}")
        ranks = [windows(args.perftracker, f) for f in files]
        report = subprocess.run([args.perftracker, "analyze", tmp, "--json", "-"],
                                capture_output=True, text=True)
    if report.returncode != 0:
        fail(f"analyze exited {report.returncode}: {report.stderr[-2000:]}")
    summary = []
    for r, ws in enumerate(ranks):
        spans = [(w["iter_begin"], w["iter_end"]) for w in ws if w["iter_end"] > w["iter_begin"]]
        if not spans or spans[0] != (0, BLOCK):
            fail(f"rank {r}: the first window is not one block: {spans[:3]}")
        if sum(e - b for b, e in spans) != STEPS or any(
                a[1] != b[0] for a, b in zip(spans, spans[1:])):
            fail(f"rank {r}: windows do not tile the {STEPS} steps: {spans}")
        # Every window but the exit's ends on a multiple of a length that holds it, or where a
        # detailed period (one-block windows) begins.
        detailed = {w["iter_begin"] for w in ws if w["mode"] == "detailed"}
        for b, e in spans[:-1]:
            if e % holding_length(e - b) != 0 and e not in detailed:
                fail(f"rank {r}: window [{b}, {e}) does not end on a multiple of its length: "
                     f"{spans}, detailed from {sorted(detailed)}")
        # Sized by time: a window of several blocks that lasts the second.
        long = [w for w in ws[1:-1] if w["iter_end"] - w["iter_begin"] >= 4 * BLOCK and
                w["end_mono_ns"] - w["start_mono_ns"] >= 1e9]
        if not long or len(spans) > STEPS // (4 * BLOCK):
            fail(f"rank {r}: windows not sized by time: {spans}")
        summary.append(spans)
    slots = json.loads(report.stdout)["iterations"]["aligned_slots"]
    want = len(shared_keys(ranks))
    if slots != want:
        fail(f"analyze aligned {slots} slots, the ranks share {want} boundaries: {summary}")
    agree = "alike" if summary[0] == summary[1] else "differently"
    print(f"ok: windows {summary[0]} on rank 0, ranks sized them {agree}, {slots} aligned slots; "
          f"live slot showed open window [{open_seen['iter_begin']}, {open_seen['iter_end']})")


if __name__ == "__main__":
    main()
