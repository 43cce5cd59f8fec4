#!/usr/bin/env python3
"""The launch recipes of examples/launch, exercised here where they can run:

  torchrun  torchrun.sh runs the real-torch job: one ring file per rank
  slurm     slurm.sbatch under a fake `srun` that runs each node's command locally, in its own
            UTS namespace (hostname nodeK) with its own node-local TMPDIR; the gathered
            directory holds every rank of both nodes and the analyzer reads it
  k8s       pytorchjob.yaml parses as YAML and has the fields the recipe depends on
  ci        ci_perf_gate.sh on sim_train: clean vs clean exits 0, clean vs slowed exits 1

  launch_test.py --build BUILD CASE
"""

import argparse
import glob
import os
import subprocess
import sys
import tempfile

import jobs

LAUNCH = os.path.join(jobs.REPO, "examples", "launch")
DDP_JOB = os.path.join(jobs.HERE, "torch_ddp_job.py")

# A fake srun: runs "$@" once per node, in parallel, each as its own host with its own /tmp.
SRUN = """#!/bin/bash
root=$FAKE_SLURM_ROOT
pids=()
for ((n = 0; n < SLURM_NNODES; n++)); do
  mkdir -p "$root/node$n-tmp"
  while [[ $1 == -* ]]; do shift; done
  SLURM_NODEID=$n TMPDIR="$root/node$n-tmp" \\
    unshare --uts sh -c 'hostname "$0" && exec "$@"' "node$n" "$@" &
  pids+=($!)
done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
exit $fail
"""


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def base_env(tools):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PERFTRACKER_", "SIMGPU_"))}
    env.update({"PERFTRACKER_LIB": tools.lib, "PYTHON": jobs.PYTHON, "OMP_NUM_THREADS": "1",
                "PERFTRACKER_RING_MB": "2", "PERFTRACKER_WINDOW_ITERS": "5"})
    return env


def case_torchrun(tools, tmp):
    env = base_env(tools)
    env.update({"PERFTRACKER_DIR": tmp, "PERFTRACKER_JOB_ID": "tr"})
    p = subprocess.run([os.path.join(LAUNCH, "torchrun.sh"), "2", DDP_JOB, "--steps", "10"],
                       env=env, capture_output=True, text=True, timeout=300)
    files = glob.glob(os.path.join(tmp, "tr", "*", "rank-*.ptr"))
    if p.returncode != 0 or len(files) != 2:
        fail(f"torchrun.sh exit {p.returncode}, files {files}\n{p.stdout[-2000:]}")
    return "2 ranks, 2 ring files"


def case_slurm(tools, tmp):
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir)
    with open(os.path.join(bindir, "srun"), "w") as f:
        f.write(SRUN)
    os.chmod(os.path.join(bindir, "srun"), 0o755)
    env = base_env(tools)
    env.update({"PATH": bindir + ":" + env["PATH"], "FAKE_SLURM_ROOT": tmp,
                "SLURM_NNODES": "2", "SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "node[0-1]",
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(jobs.free_port()),
                "GPUS_PER_NODE": "2", "GATHER_DIR": os.path.join(tmp, "gathered"),
                "PERFTRACKER_BIN": tools.cli, "PERFTRACKER_EXAMPLES": LAUNCH})
    p = subprocess.run(["bash", os.path.join(LAUNCH, "slurm.sbatch"), DDP_JOB, "--steps", "10"],
                       env=env, capture_output=True, text=True, timeout=300, cwd=tmp)
    hosts = sorted(os.listdir(os.path.join(tmp, "gathered", "4242"))) \
        if os.path.isdir(os.path.join(tmp, "gathered", "4242")) else []
    files = glob.glob(os.path.join(tmp, "gathered", "4242", "*", "rank-*.ptr"))
    if p.returncode != 0 or hosts != ["node0", "node1"] or len(files) != 4:
        fail(f"slurm.sbatch exit {p.returncode}, hosts {hosts}, files {files}\n"
             f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    if "4/4 ranks" not in p.stdout:
        fail(f"the analyzer did not read 4 ranks:\n{p.stdout[-1500:]}")
    return "2 nodes x 2 ranks gathered from node-local dirs, analyzed"


def case_k8s(tools, tmp):
    import yaml  # Debian's python3-yaml
    with open(os.path.join(LAUNCH, "pytorchjob.yaml")) as f:
        job = yaml.safe_load(f)
    specs = job["spec"]["pytorchReplicaSpecs"]
    for role in ("Master", "Worker"):
        pod = specs[role]["template"]["spec"]
        c = pod["containers"][0]
        env = {e["name"]: e for e in c["env"]}
        mount = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        vols = {v["name"]: v for v in pod["volumes"]}
        if not (job["kind"] == "PyTorchJob" and "libperftracker.so" in env["LD_PRELOAD"]["value"]
                and env["PERFTRACKER_DIR"]["value"] == mount["perftracker"]
                and "hostPath" in vols["perftracker"] and "PERFTRACKER_JOB_ID" in env):
            fail(f"{role}: missing preload, output dir or node-local volume")
    return "PyTorchJob: preload, job id, node-local hostPath output"


def case_ci(tools, tmp):
    env = base_env(tools)
    env.update(jobs.SIMGPU_ENV)
    env.update(jobs.sim_train_paths(tools))
    env.update({"PERFTRACKER_BIN": tools.cli, "PERFTRACKER_SAMPLE_EVERY": "1"})
    job = jobs.sim_train_command(tools, 4, ["--iters", "30", "--layers", "4", "--seq", "2048",
                                             "--log-every", "5"])
    gate = os.path.join(LAUNCH, "ci_perf_gate.sh")
    codes, outputs = {}, {}
    for name, cand in (("same", ""), ("slowed", "SIMGPU_COMPUTE_SLOWDOWN=*=1.5")):
        env["CANDIDATE_ENV"] = cand
        p = subprocess.run([gate, os.path.join(tmp, name), "--"] + job, env=env,
                           capture_output=True, text=True, timeout=400)
        codes[name] = p.returncode
        outputs[name] = p.stdout[-3000:]
        if p.returncode not in (0, 1):
            fail(f"{name}: exit {p.returncode}\n{p.stdout[-1500:]}\n{p.stderr[-1500:]}")
    if codes != {"same": 0, "slowed": 1}:
        fail(f"exit codes {codes}, expected clean vs clean 0 and clean vs slowed 1\n"
             f"clean vs clean:\n{outputs['same']}")
    return "clean vs clean exit 0, clean vs slowed (kernels x1.5) exit 1"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("case", choices=("torchrun", "slurm", "k8s", "ci"))
    args = ap.parse_args()
    tools = jobs.Tools(args.build)
    with tempfile.TemporaryDirectory(prefix="perftracker-launch.") as tmp:
        print(f"ok: {args.case}: {globals()['case_' + args.case](tools, tmp)}")


if __name__ == "__main__":
    main()
