#!/usr/bin/env python3
"""Ring-file bytes per rank-hour at real step rates, with windows of fixed length and sized by
time, printed as a table.

  ring_bytes_bench.py --build BUILD [--seconds 120] [--workloads torch40,torch300,sim]

Workloads (each run for about --seconds of training):
- torch40, torch300: the real PyTorch DDP job (test/scenarios/torch_ddp_job.py: CPU, gloo,
  torchrun, 2 ranks), its MLP sized for ~40 ms and ~300 ms steps on this machine;
- sim: sim_train on simgpu (8 ranks, SIMGPU_TIME_SCALE=1, the scenarios' small model: ~80 ms
  steps on 2 cores).
Each runs twice: `fixed` (PERFTRACKER_WINDOW_S=0: a window every PERFTRACKER_WINDOW_ITERS = 10
iterations, the writer before time-sized windows) and `default` (the library's defaults).

Rate: rank 0's steady windows -- all but the first (start-up) and the last (the exit's partial
window) -- as they lie on disk (frame, payload, padding: read from the ring file's record frames,
schemas/FORMAT.md), over the wall time they span, per hour; plus, once, every function table
the process stored in the table region (format 2: both copies; a steady job stores its tables
during start-up and its first windows, and a job whose functions keep changing shows it there). Target (issue 32): <= 5 MB per rank-hour at the
defaults, whatever the step time.
"""

import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PYTHON = "/usr/bin/python3"
TORCH_JOB = os.path.join(ROOT, "test", "scenarios", "torch_ddp_job.py")
SIM_RUN = os.path.join(ROOT, "examples", "sim_train", "run.sh")
RECORD_MAGIC = 0x31435250  # "PRC1"
TABLE_ENTRY_MAGIC = 0x31455450  # "PTE1"


def torch_job(width, step_s):
    def command(build, seconds):
        steps = max(20, int(seconds / step_s))
        return ([PYTHON, "-m", "torch.distributed.run", "--nnodes", "1", "--rdzv_backend", "c10d",
                 "--rdzv_endpoint", "localhost:0", "--nproc_per_node", "2", "--redirects", "1",
                 "--tee", "1", TORCH_JOB, "--width", str(width), "--steps", str(steps)], {})
    return command


def sim_job(build, seconds):
    iters = max(20, int(seconds / 0.08))
    return ([SIM_RUN, build, "8", "--iters", str(iters), "--layers", "4", "--seq", "2048"],
            {"SIMGPU_TIME_SCALE": "1"})


# name: (command maker, what it is)
WORKLOADS = {
    "torch40": (torch_job(480, 0.040), "torch CPU gloo, 2 ranks, ~40 ms steps"),
    "torch300": (torch_job(1400, 0.300), "torch CPU gloo, 2 ranks, ~300 ms steps"),
    "sim": (sim_job, "simgpu sim_train, 8 ranks, ~80 ms steps"),
}


def record_sizes(path):
    """({seq: bytes on disk} of a ring file's records (one lap: the bench's rings never wrap),
    bytes of the table region's entries)."""
    with open(path, "rb") as f:
        data = f.read()
    live_offset, live_size = struct.unpack_from("<QI", data, 24)
    data_offset, capacity = struct.unpack_from("<QQ", data, 40)
    sizes, at = {}, data_offset
    while at + 32 <= data_offset + capacity:
        magic, payload, seq = struct.unpack_from("<IIQ", data, at)
        if magic != RECORD_MAGIC:
            break
        size = (32 + payload + 7) // 8 * 8
        sizes[seq] = size
        at += size
    table, at = 0, live_offset + live_size
    while at + 24 <= data_offset:
        magic, payload = struct.unpack_from("<II", data, at)
        if magic != TABLE_ENTRY_MAGIC:
            break
        table += (24 + payload + 7) // 8 * 8
        at += (24 + payload + 7) // 8 * 8
    return sizes, table


def rate(perftracker, pt_dir):
    """(MB per rank-hour, bytes per steady window, steady windows, seconds per window)."""
    for root, _, files in os.walk(pt_dir):
        if "rank-0.ptr" in files:
            path = os.path.join(root, "rank-0.ptr")
            break
    else:
        sys.exit(f"ring_bytes_bench: no rank-0.ptr under {pt_dir}")
    out = subprocess.run([perftracker, "dump", path], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    windows = [w for w in map(json.loads, out) if w.get("type") == "window"]
    sizes, table = record_sizes(path)
    steady = windows[1:-1] or windows
    nbytes = sum(sizes[w["seq"]] for w in steady)
    span_s = sum(w["end_mono_ns"] - w["start_mono_ns"] for w in steady) / 1e9
    return ((nbytes / span_s * 3600 + table) / 1e6, nbytes / len(steady), len(steady),
            span_s / len(steady), table)


def run(build, name, seconds, window_s, scratch):
    make, _ = WORKLOADS[name]
    cmd, extra = make(build, seconds)
    pt_dir = os.path.join(scratch, f"{name}-{window_s}")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PERFTRACKER_", "SIMGPU_")) and k != "LD_PRELOAD"}
    env.update(extra)
    env.update(OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1",
               LD_PRELOAD=os.path.join(build, "preload", "libperftracker.so"),
               PERFTRACKER_DIR=pt_dir, PERFTRACKER_JOB_ID="bench")
    if window_s is not None:
        env["PERFTRACKER_WINDOW_S"] = str(window_s)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    text = p.stdout + p.stderr
    m = re.search(r"done: .* in ([0-9.]+) s", text)
    if p.returncode != 0 or not m:
        sys.exit(f"ring_bytes_bench: {name} failed (exit {p.returncode}):\n{text[-3000:]}")
    steps = re.search(r"x (\d+) (?:steps|iterations)", text)
    step_ms = float(m.group(1)) / int(steps.group(1)) * 1e3 if steps else float("nan")
    return rate(os.path.join(build, "analyzer", "perftracker"), pt_dir) + (step_ms,)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    scratch = tempfile.mkdtemp(prefix="perftracker-ringbytes.")
    rows = []
    try:
        for name in args.workloads.split(","):
            # Fixed windows need few of them for a rate: a shorter run.
            for label, window_s, seconds in (("fixed", 0, min(args.seconds, 30)),
                                             ("default", None, args.seconds)):
                mb, per_window, n, window_len, table, step_ms = run(build, name, seconds,
                                                                    window_s, scratch)
                rows.append((name, label, step_ms, n, window_len, per_window, table, mb))
                print(f"{name} {label}: {step_ms:.0f} ms steps, {n} steady windows of "
                      f"{window_len:.1f} s, {per_window / 1e3:.1f} kB each, tables "
                      f"{table / 1e3:.1f} kB: {mb:.2f} MB per rank-hour", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("\n| workload | windows | step | window | bytes per window | tables | MB per rank-hour |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for name, label, step_ms, n, window_len, per_window, table, mb in rows:
        print(f"| {WORKLOADS[name][1]} | {label} | {step_ms:.0f} ms | {window_len:.1f} s | "
              f"{per_window / 1e3:.1f} kB | {table / 1e3:.1f} kB | {mb:.2f} |")
    worst = max((r[7] for r in rows if r[1] == "default"), default=0)
    print(f"\ndefaults: at most {worst:.2f} MB per rank-hour, target <= 5")


if __name__ == "__main__":
    main()
