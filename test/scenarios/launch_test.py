#!/usr/bin/env python3
"""The launch recipes of examples/launch, exercised here where they can run:

  torchrun  torchrun.sh runs the real-torch job: one ring file per rank
  slurm     slurm.sbatch under a fake `srun` that runs each node's command locally, in its own
            UTS namespace (hostname nodeK) with its own node-local TMPDIR; the gathered
            directory holds one reduced file per node and the analyzer reads every rank
  k8s       pytorchjob.yaml and reduce_daemonset.yaml parse as YAML and have the fields the
            recipes depend on (the DaemonSet mounts the job's hostPath); the DaemonSet's script
            runs for real on one node's rings and leaves its reduced file
  nodes     reduce_nodes.sh through a fake pdsh and a fake ssh (each host a UTS namespace with
            its own TMPDIR holding perftracker-gen rings): one reduced file per host, and the
            analyzer names the generated slow rank
  ci        ci_perf_gate.sh on sim_train: clean vs clean exits 0, clean vs slowed exits 1

  launch_test.py --build BUILD CASE
"""

import argparse
import glob
import os
import subprocess
import sys
import tempfile

import jobs  # puts test/support on the path
from checks import fail  # noqa: E402

LAUNCH = os.path.join(jobs.REPO, "examples", "launch")
DDP_JOB = os.path.join(jobs.HERE, "torch_ddp_job.py")

# Runs "$@" as host $1: its own UTS namespace (hostname) and node-local TMPDIR under the fake
# cluster's root. The fake ssh and pdsh below are built on it.
AS_HOST = """#!/bin/bash
host=$1; shift
mkdir -p "$FAKE_CLUSTER_ROOT/$host-tmp"
TMPDIR="$FAKE_CLUSTER_ROOT/$host-tmp" exec unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' \\
  "$host" "$*"
"""
# ssh [-o OPT]... HOST COMMAND
SSH = """#!/bin/bash
while [[ $1 == -* ]]; do shift 2; done
exec "$(dirname "$0")/as-host" "$@"
"""
# pdsh [-f N] -w HOST,HOST... COMMAND: every host at once, output prefixed "host: "
PDSH = """#!/bin/bash
while [[ $1 == -* ]]; do
  [[ $1 == -w ]] && hosts=$2
  shift 2
done
IFS=, read -ra list <<< "$hosts"
for h in "${list[@]}"; do
  "$(dirname "$0")/as-host" "$h" "$@" 2>&1 | sed "s/^/$h: /" &
done
wait
"""

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


def base_env(tools):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PERFTRACKER_", "SIMGPU_"))}
    env.update({"PERFTRACKER_LIB": tools.lib, "PYTHON": jobs.PYTHON, "OMP_NUM_THREADS": "1",
                "PERFTRACKER_RING_MB": "2", "PERFTRACKER_WINDOW_ITERS": "5",
                "PERFTRACKER_WINDOW_S": "0"})
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
    if p.returncode != 0 or hosts != ["node0.ptrd", "node1.ptrd"]:
        fail(f"slurm.sbatch exit {p.returncode}, gathered {hosts}\n"
             f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    if "4/4 ranks, 4 files" not in p.stdout:
        fail(f"the analyzer did not read 4 ranks:\n{p.stdout[-1500:]}")
    return "2 nodes x 2 ranks reduced on their nodes, gathered, analyzed"


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
    host_path = vols["perftracker"]["hostPath"]["path"]

    with open(os.path.join(LAUNCH, "reduce_daemonset.yaml")) as f:
        ds = yaml.safe_load(f.read().replace("${JOB}", "gen"))
    pod = ds["spec"]["template"]["spec"]
    c = pod["containers"][0]
    env = {e["name"]: e for e in c["env"]}
    mount = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    vols = {v["name"]: v for v in pod["volumes"]}
    if not (ds["kind"] == "DaemonSet" and vols["perftracker"]["hostPath"]["path"] == host_path
            and env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
            and env["JOB"]["value"] == "gen" and "persistentVolumeClaim" in vols["gather"]):
        fail("DaemonSet: not on the job's hostPath, or without node name, job or shared volume")
    # The pod's script, for real, on one node's rings: the mounts become local directories.
    root = os.path.join(tmp, "cluster")
    write_rings(tools, root, 1, 4, slow_rank=2)
    local = os.path.join(root, "node0-tmp", f"perftracker-{os.getuid()}")
    gather = os.path.join(tmp, "gather")
    script = (c["args"][0].replace("/opt/perftracker/bin/perftracker", tools.cli)
              .replace(mount["perftracker"] + "/", local + "/")
              .replace(mount["gather"] + "/", gather + "/"))
    p = subprocess.Popen(c["command"] + [script], env={**base_env(tools), "JOB": "gen",
                                                       "NODE_NAME": "node0"},
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = []
    for line in p.stdout:  # the pod then sleeps until the DaemonSet is deleted
        output.append(line)
        if line.strip() == "reduced":
            break
    p.kill()
    p.wait()
    reduced = os.path.join(gather, "gen", "node0.ptrd")
    a = subprocess.run([tools.cli, "analyze", reduced], capture_output=True, text=True)
    if not os.path.exists(reduced) or "4/4 ranks" not in a.stdout:
        fail(f"DaemonSet script left no analyzable {reduced}:\n{''.join(output)}\n{a.stdout}")
    return ("PyTorchJob: preload, job id, node-local hostPath output; reduce DaemonSet on that "
            "hostPath, its script reduced one node's 4 ranks")


def write_rings(tools, root, hosts, ranks_per_host, slow_rank):
    stage = os.path.join(root, "stage")
    subprocess.run([tools.gen, "--dir", stage, "--job", "gen", "--ranks",
                    str(hosts * ranks_per_host), "--ranks-per-host", str(ranks_per_host),
                    "--windows", "12", "--functions", "300", "--slow-rank", str(slow_rank),
                    "--slow-factor", "1.3"], check=True, capture_output=True)
    for h in range(hosts):
        local = os.path.join(root, f"node{h}-tmp", f"perftracker-{os.getuid()}", "gen")
        os.makedirs(local)
        os.rename(os.path.join(stage, "gen", f"node{h}"), os.path.join(local, f"node{h}"))


def fake_bin(tmp, scripts):
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir, exist_ok=True)
    for name, text in scripts.items():
        with open(os.path.join(bindir, name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(bindir, name), 0o755)
    return bindir


def case_nodes(tools, tmp):
    root = os.path.join(tmp, "cluster")
    write_rings(tools, root, 3, 4, slow_rank=6)
    bindir = fake_bin(tmp, {"as-host": AS_HOST, "ssh": SSH, "pdsh": PDSH})
    results = []
    for shell in ("pdsh", "ssh"):
        gather = os.path.join(tmp, "gathered-" + shell)
        env = base_env(tools)
        env.update({"PATH": bindir + ":" + env["PATH"], "FAKE_CLUSTER_ROOT": root,
                    "REMOTE_SHELL": shell, "PERFTRACKER_BIN": tools.cli,
                    "PERFTRACKER_ANALYZER": tools.cli})
        p = subprocess.run([os.path.join(LAUNCH, "reduce_nodes.sh"), "node0,node1,node2", "gen",
                            gather], env=env, capture_output=True, text=True, timeout=300)
        got = sorted(os.listdir(os.path.join(gather, "gen"))) \
            if os.path.isdir(os.path.join(gather, "gen")) else []
        if p.returncode != 0 or got != ["node0.ptrd", "node1.ptrd", "node2.ptrd"]:
            fail(f"{shell}: reduce_nodes.sh exit {p.returncode}, gathered {got}\n"
                 f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        lines = p.stdout.splitlines()
        first = next((l for l in lines if l.lstrip().startswith("1 ")), "")
        if "12/12 ranks, 12 files" not in p.stdout or first.split()[5:6] != ["6"]:
            fail(f"{shell}: the analyzer did not read 12 ranks and name rank 6:\n{p.stdout[-2000:]}")
        results.append(shell)
    return "3 hosts x 4 ranks reduced through " + " and ".join(results) + "; slow rank 6 named"


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
    ap.add_argument("case", choices=("torchrun", "slurm", "k8s", "nodes", "ci"))
    args = ap.parse_args()
    tools = jobs.Tools(args.build)
    with tempfile.TemporaryDirectory(prefix="perftracker-launch.") as tmp:
        print(f"ok: {args.case}: {globals()['case_' + args.case](tools, tmp)}")


if __name__ == "__main__":
    main()
