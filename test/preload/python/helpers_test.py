#!/usr/bin/env python3
"""A rank's helper processes never touch its ring file (README "Files and safety").

  helpers_test.py --lib LIB --perftracker CLI --case subprocess|spawn|forkserver|fork|pool|restart

Runs helpers_job.py as rank 0 under LD_PRELOAD (Debian's python3 with torch; `restart` under
torchrun with --max-restarts 1) and checks: the rank's file is its own (header pid = the job's
pid), whole (exactly `steps` iterations), not set aside (no rank-0.prev.ptr, except the first
attempt's after a restart); helpers that ran Python left rank-0.helper-<pid>.ptr files that
name the rank's pid and hold the helpers' own functions; `perftracker analyze` sees one rank
and attaches the helpers to it.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "helpers_job.py")
sys.path.insert(0, os.path.join(HERE, "..", "..", "support"))
import hang_dump  # noqa: E402
from checks import expect, fail  # noqa: E402


def dump(cli, path):
    out = subprocess.run([cli, "dump", path], capture_output=True, text=True, check=True)
    header, iterations, names = None, 0, set()
    for line in out.stdout.splitlines():
        rec = json.loads(line)
        if rec.get("type") == "header":
            header = rec
        elif rec.get("type") == "window":
            iterations += rec["iterations"]["count"]
            names.update(f["name"] for f in rec["functions"])
    expect(header is not None, f"{path}: no header in dump")
    return header, iterations, names


def run_job(args, tmp, env):
    steps = "12"
    if args.case == "restart":
        flag = os.path.join(tmp, "failed-once")
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1",
               "--rdzv_backend", "c10d", "--rdzv_endpoint", "localhost:0",
               "--rdzv_id", f"helpers-{os.getpid()}", "--nproc_per_node", "1",
               "--max_restarts", "1", "--redirects", "1", "--tee", "1",
               JOB, "restart", steps, flag]
    else:
        cmd = [sys.executable, JOB, args.case, steps]
        env = dict(env, RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
    p = hang_dump.run(cmd, env=env, timeout=400)
    if p.returncode != 0:
        fail(f"job exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    lines = [json.loads(l.split(":", 1)[-1] if l.startswith("[") else l)
             for l in p.stdout.splitlines() if l.rstrip().endswith("}") and '"pid"' in l]
    expect(lines, f"the job printed no result\n{p.stdout[-2000:]}")
    return lines[-1], p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--perftracker", required=True)
    ap.add_argument("--case", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pt-helpers-") as tmp:
        env = dict(os.environ, LD_PRELOAD=args.lib, PERFTRACKER_DIR=tmp,
                   PERFTRACKER_JOB_ID="helpers", PERFTRACKER_STEP_FUNCTION="train_step",
                   PERFTRACKER_WINDOW_ITERS="4", PERFTRACKER_WINDOW_S="0",
                   PYTHONPATH=HERE, OMP_NUM_THREADS="1")
        for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "PERFTRACKER_RANK_PID"):
            env.pop(k, None)
        result, p = run_job(args, tmp, env)
        (host_dir,) = glob.glob(os.path.join(tmp, "helpers", "*"))
        files = sorted(os.listdir(host_dir))
        print("files:", files)

        header, iterations, _ = dump(args.perftracker, os.path.join(host_dir, "rank-0.ptr"))
        expect(header["pid"] == result["pid"],
               f"rank-0.ptr was written by pid {header['pid']}, not the rank ({result['pid']})")
        expect("helper_of" not in header, "the rank's file is marked a helper's")
        expect(iterations == result["steps"],
               f"rank-0.ptr holds {iterations} iterations, the rank made {result['steps']}")
        prev = "rank-0.prev.ptr" in files
        expect(prev == (args.case == "restart"),
               f"rank-0.prev.ptr {'present' if prev else 'missing'}: {files}")
        if prev:  # the first attempt's file, kept whole
            first, first_iterations, _ = dump(args.perftracker,
                                              os.path.join(host_dir, "rank-0.prev.ptr"))
            expect(first["pid"] != header["pid"], "the restart did not start a new file")
            expect(first_iterations == 4, f"the first attempt's file holds {first_iterations}")

        helpers = [f for f in files if ".helper-" in f]
        helper_names = set()
        for f in helpers:
            h, _, names = dump(args.perftracker, os.path.join(host_dir, f))
            expect(h.get("helper_of") == result["pid"] and h["rank"] == 0,
                   f"{f}: helper_of {h.get('helper_of')}, rank {h['rank']}")
            expect(f == f"rank-0.helper-{h['pid']}.ptr", f"{f} is named for pid {h['pid']}")
            helper_names |= names
        # Workers forked (by the rank, or by the forkserver, itself a helper) record from the
        # interpreter's after-fork hook, and flush at the os._exit they end with.
        want = {"subprocess": None, "spawn": "slow_item", "forkserver": "slow_item",
                "fork": "slow_item", "pool": "pool_work", "restart": None}[args.case]
        if args.case == "subprocess" or args.case == "restart":
            # 4 Python children (a file each); /bin/true, which runs no Python, leaves none.
            expect(len(helpers) == 4, f"expected 4 helper files, got {helpers}")
        if args.case == "fork":
            # 2 workers an epoch, 3 epochs: each forked worker its own file, whole at os._exit.
            expect(len(helpers) == 6, f"expected 6 helper files, got {helpers}")
        if want is not None:
            expect(any(n.endswith(want) for n in helper_names),
                   f"no helper recorded {want}: {sorted(helper_names)[:20]}")

        out = subprocess.run([args.perftracker, "analyze", tmp, "--json", "-"],
                             capture_output=True, text=True)
        expect(out.returncode == 0, f"analyze exited {out.returncode}: {out.stderr}")
        report = json.loads(out.stdout)
        expect(report["ranks"]["found"] == 1, f"ranks: {report['ranks']}")
        counts = report["inputs"]["diagnostics"]
        attached = sorted(os.path.basename(h["path"]) for h in report["inputs"]["helpers"]
                          if h["rank"] == 0)
        expect(attached == helpers, f"analyze attached {attached}, files {helpers}")
        expect(counts["helper_file"] == len(helpers), f"helper_file: {counts}")
        expect(counts["restarted_rank"] == (1 if args.case == "restart" else 0),
               f"restarted_rank: {counts}")
        print(f"helpers_test {args.case}: ok ({iterations} iterations, {len(helpers)} helper files)")


if __name__ == "__main__":
    main()
