#!/usr/bin/env python3
"""End-to-end cost of libperftracker.so on a real PyTorch DDP job (test/scenarios/torch_ddp_job.py:
CPU, gloo, launched by torchrun), in light and detailed mode, printed as ratios.

  torch_ddp_bench.py --build BUILD [--rounds 3] [--ranks 2]

Each round runs the job plain, preloaded in light mode (the default) and preloaded with
PERFTRACKER_MODE=detailed, one after the other, so that the machine's drift hits all three alike;
the slowdown is the median over rounds of (preloaded loop time / plain loop time - 1), and the
ratio of the fastest runs (on 2 shared cores the loop time is bimodal, +-3%, with or without the
library: the fastest run of each mode is the steadiest comparison). The loop
time is the job's own (first to last step, barriers around it), start-up excluded. Two models:
`small` (width 256, ~15 ms steps on one core: the most Python per unit of compute) and `medium`
(width 768, ~100 ms steps). One rank per core: 2 ranks on the 2-core CI machines.
Targets (issue 5): slowdown <= 2% light, <= 10% detailed.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
JOB = os.path.join(ROOT, "test", "scenarios", "torch_ddp_job.py")
PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch
MODELS = {"small": ["--width", "256", "--steps", "200"],
          "medium": ["--width", "768", "--steps", "40"]}
MODES = {"plain": None, "light": "light", "detailed": "detailed"}


def run_job(lib, mode, model, ranks, pt_dir):
    """Loop seconds of one torchrun job."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PERFTRACKER_") and k != "LD_PRELOAD"}
    env.update(OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    if mode is not None:
        env.update(LD_PRELOAD=lib, PERFTRACKER_DIR=pt_dir, PERFTRACKER_JOB_ID="bench",
                   PERFTRACKER_MODE=mode)
    cmd = [PYTHON, "-m", "torch.distributed.run", "--nnodes", "1", "--rdzv_backend", "c10d",
           "--rdzv_endpoint", "localhost:0", "--nproc_per_node", str(ranks),
           "--redirects", "1", "--tee", "1", JOB] + model
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    m = re.search(r"torch_ddp_job: done: .* in ([0-9.]+) s", p.stdout + p.stderr)
    if p.returncode != 0 or not m:
        sys.exit(f"torch_ddp_bench: job failed (exit {p.returncode}):\n{(p.stdout + p.stderr)[-3000:]}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated: small,medium")
    args = ap.parse_args()
    lib = os.path.abspath(os.path.join(args.build, "preload", "libperftracker.so"))
    if not os.path.exists(lib):
        sys.exit(f"torch_ddp_bench: {lib} not found")
    print(f"torch_ddp_bench: {args.ranks} ranks, {args.rounds} rounds; loop seconds per round, "
          f"slowdown = median of preloaded / plain - 1")
    for name in args.models.split(","):
        model = MODELS[name]
        times = {mode: [] for mode in MODES}
        for _ in range(args.rounds):
            for mode, value in MODES.items():
                with tempfile.TemporaryDirectory() as pt_dir:
                    times[mode].append(run_job(lib, value, model, args.ranks, pt_dir))
        plain = times["plain"]
        cells = []
        for mode in ("light", "detailed"):
            ratios = [t / p - 1 for t, p in zip(times[mode], plain)]
            fastest = min(times[mode]) / min(plain) - 1
            cells.append(f"{mode} {100 * statistics.median(ratios):+.1f}% "
                         f"({', '.join(f'{100 * r:+.1f}' for r in ratios)}; fastest "
                         f"{100 * fastest:+.1f}%)")
        print(f"  {name:<7} plain {statistics.median(plain):.2f} s/loop; " + "; ".join(cells),
              flush=True)


if __name__ == "__main__":
    main()
