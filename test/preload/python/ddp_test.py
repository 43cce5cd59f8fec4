#!/usr/bin/env python3
"""torchrun (4 ranks, gloo, Debian's torch) under LD_PRELOAD: the data loader, the forward pass,
the backward pass, the optimizer step (iterations) and torch.distributed collectives are each
recorded once a step, with the same function ids and counts on every rank. A trigger file naming
iteration 4 (windows of 4 iterations) makes every rank record detailed windows from iteration 4
on, alike.

  ddp_test.py --lib libperftracker.so --perftracker CLI [--nproc 4]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "support"))
import hang_dump  # noqa: E402
from checks import fail  # noqa: E402
STEPS = 12


def load(cli, path):
    out = subprocess.run([cli, "dump", path], capture_output=True, text=True, check=True).stdout
    fns, iterations, modes = {}, 0, []
    for line in out.splitlines():
        rec = json.loads(line)
        if rec.get("type") != "window":
            continue
        iterations += rec["iterations"]["count"]
        if rec["iterations"]["count"]:
            modes.append((rec["iter_begin"], rec["mode"]))
        for p in rec["functions"]:
            fn = fns.setdefault(p["id"], {"kind": p["kind"], "name": p["name"], "count": 0})
            fn["count"] += p["count"]
    return fns, iterations, modes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--perftracker", required=True)
    ap.add_argument("--nproc", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PERFTRACKER_")}
        env.update({"LD_PRELOAD": args.lib, "PERFTRACKER_DIR": tmp, "OMP_NUM_THREADS": "1",
                    "PERFTRACKER_JOB_ID": "ddp", "PERFTRACKER_WINDOW_ITERS": "4",
                    "PERFTRACKER_WINDOW_S": "0"})
        os.makedirs(os.path.join(tmp, "ddp"))
        with open(os.path.join(tmp, "ddp", "trigger"), "w") as out:
            out.write("4\n")
        # A rendezvous port of its own (--standalone always binds 29400: a torchrun beside
        # this one would make it wait forever).
        cmd = ["/usr/bin/python3", "-m", "torch.distributed.run", "--nnodes", "1",
               "--rdzv_backend", "c10d", "--rdzv_endpoint", "localhost:0",
               "--rdzv_id", f"ddp-{os.getpid()}", "--nproc_per_node", str(args.nproc), "--redirects", "1", "--tee", "1",
               os.path.join(HERE, "ddp_job.py")]
        p = hang_dump.run(cmd, env=env, timeout=500)
        if p.returncode != 0:
            fail(f"torchrun exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        files = sorted(f for f in glob.glob(os.path.join(tmp, "**", "rank-*.ptr"), recursive=True)
                       if ".helper-" not in f)
        if len(files) != args.nproc:
            fail(f"expected {args.nproc} ring files (no file from the agent or loader workers): "
                 f"{files}")
        ranks = [load(args.perftracker, f) for f in files]
    signatures = []
    want_modes = [(0, "light"), (4, "detailed"), (8, "detailed")]
    for r, (fns, iterations, modes) in enumerate(ranks):
        if modes != want_modes:
            fail(f"rank {r}: window modes {modes}, expected {want_modes}")
        if iterations != STEPS:
            fail(f"rank {r}: {iterations} iterations, expected {STEPS}")
        loader = {i: f for i, f in fns.items() if f["kind"] == "dataloader"}
        if sum(f["count"] for f in loader.values()) != STEPS or not all(
                "torch/utils/data/dataloader.py" in f["name"] for f in loader.values()):
            fail(f"rank {r}: dataloader {list(loader.values())}")
        colls = {i: f for i, f in fns.items() if f["kind"] == "collective"}
        by_name = {}
        for f in colls.values():
            q = f["name"].rsplit(":", 1)[-1]
            by_name[q] = by_name.get(q, 0) + f["count"]
        if by_name.get("all_reduce") != STEPS or by_name.get("barrier", 0) < 1:
            fail(f"rank {r}: collectives {by_name}")
        # What the job did each step: forward (DDP's, then the model's), backward (the tensor's,
        # then autograd's), the optimizer step.
        per_step = {}
        for label, suffix in (("forward", ":DistributedDataParallel.forward"),
                              ("model", ":Sequential.forward"),
                              ("backward", ":Tensor.backward"),
                              ("autograd", "torch/autograd/__init__.py"),
                              ("step", ":SGD.step")):
            found = {i: f for i, f in fns.items() if f["kind"] == "python" and (
                f["name"].endswith(suffix) if suffix.startswith(":") else
                suffix in f["name"] and f["name"].endswith(":backward"))}
            if sum(f["count"] for f in found.values()) != STEPS:
                fail(f"rank {r}: {label} {list(found.values())}")
            per_step.update(found)
        # Same ids and counts on every rank.
        signatures.append(sorted((i, f["count"])
                                 for i, f in {**loader, **colls, **per_step}.items()))
    if any(s != signatures[0] for s in signatures):
        fail(f"ranks disagree: {signatures}")
    print(f"ok: ddp {args.nproc} ranks, {STEPS} iterations, {len(signatures[0])} ids alike")


if __name__ == "__main__":
    main()
