"""How a scenario's job runs: a real training job under torchrun with libperftracker.so
preloaded into every rank, its ring files under a fresh directory.

Two jobs: examples/sim_train on the simulated GPU cluster (SIMGPU_* / SIM_TRAIN_* faults), and
torch_ddp_job.py, a real PyTorch DDP job on CPU. A hang scenario is watched with `perftracker
analyze` while it runs and killed with SIGKILL once the analyzer sees the hang, as an operator
would kill a stuck job.
"""

import json
import os
import shlex
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import hang_dump  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"  # Debian's interpreter: the one with torch

# Small windows of a fixed length and small rings: short jobs still give several windows, the
# same ones on every run, and 16 rings stay light.
PRELOAD_ENV = {"PERFTRACKER_WINDOW_ITERS": "5", "PERFTRACKER_WINDOW_S": "0",
               "PERFTRACKER_RING_MB": "2", "PERFTRACKER_SAMPLE_EVERY": "1"}
# Light enough for 16 ranks on 2 cores; jitter and a fixed seed make every run the same run.
SIMGPU_ENV = {"SIMGPU_TIME_SCALE": "1", "SIMGPU_JITTER": "0.03", "SIMGPU_SEED": "7"}


class Tools:
    """The build's artifacts a scenario needs."""

    def __init__(self, build, lib=None):
        self.build = os.path.abspath(build)
        self.lib = lib or os.path.join(self.build, "preload", "libperftracker.so")
        self.cli = os.path.join(self.build, "analyzer", "perftracker")
        self.gen = os.path.join(self.build, "tools", "perftracker-gen")

    def analyze(self, job_dir, min_score=None, extra=()):
        cmd = [self.cli, "analyze", job_dir, "--json", "-", "--top", "20"] + list(extra)
        if min_score is not None:
            cmd += ["--min-score", str(min_score)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"perftracker analyze exited {p.returncode}: {p.stderr.strip()}")
        return json.loads(p.stdout)


# One node, rendezvous on a port of its own: --standalone always binds 29400, and a second
# job on the machine (a test running beside this one) would wait for it forever.
SINGLE_NODE = ["--nnodes", "1", "--rdzv_backend", "c10d", "--rdzv_endpoint", "localhost:0"]


def torchrun(nproc, script, args):
    # --redirects/--tee: Debian's torch 1.13 torchrun needs non-zero values on Python 3.11.
    return [PYTHON, "-m", "torch.distributed.run"] + SINGLE_NODE + [
        "--rdzv_id", f"scenario-{os.getpid()}", "--nproc_per_node", str(nproc),
        "--redirects", "1", "--tee", "1", script] + list(args)


def sim_train_command(tools, nproc, args):
    return [os.path.join(REPO, "examples", "sim_train", "run.sh"), tools.build, str(nproc)] + \
        list(args)


def job_env(tools, out_dir, job_id, extra, simgpu, preload=None):
    """The job's environment: the library's settings (`preload`, default PRELOAD_ENV; {} runs
    it at its defaults, as bench/accuracy does), simgpu's, then the scenario's own."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PERFTRACKER_", "SIMGPU_", "SIM_TRAIN_"))}
    env.update(PRELOAD_ENV if preload is None else preload)
    if simgpu:
        env.update(SIMGPU_ENV)
    env.update({"LD_PRELOAD": tools.lib, "PERFTRACKER_DIR": out_dir,
                "PERFTRACKER_JOB_ID": job_id, "OMP_NUM_THREADS": "1",
                "PYTHONDONTWRITEBYTECODE": "1", "PYTHONFAULTHANDLER": "1"})
    env.update(extra)
    return env


def kill_tree(proc):
    for pid in [proc.pid] + hang_dump.descendants(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def run_job(cmd, env, log_path, timeout_s, until=None, poll_s=3.0):
    """Runs `cmd`; with `until`, polls it while the job runs and SIGKILLs the job once it
    returns true. Returns (exit code or None when killed, how)."""
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        deadline = time.monotonic() + timeout_s
        try:
            while proc.poll() is None:
                if time.monotonic() > deadline:
                    log.write(f"=== hang: the job is still running after {timeout_s} s\n")
                    log.flush()
                    hang_dump.dump_and_kill(proc.pid, out=log)
                    proc.wait()
                    return None, "timeout"
                if until is not None and until():
                    kill_tree(proc)
                    return None, "killed"
                time.sleep(poll_s)
        except BaseException:
            # The job has a session of its own, out of reach of the terminal's ^C: interrupted
            # here, it would run on and hold the cores the next job is timed on.
            kill_tree(proc)
            raise
        return proc.returncode, "exited"


FAKE_HOST = os.path.join(REPO, "test", "support", "fake_host.py")


def host_roots(out_dir, node):
    root = os.path.join(out_dir, f"host{node}")
    return {"PERFTRACKER_SYSFS_ROOT": os.path.join(root, "sys"),
            "PERFTRACKER_PROCFS_ROOT": os.path.join(root, "proc")}


def start_hosts(s, out_dir):
    """Builds each node's fake /sys and /proc and starts advancing its counters (the scenario's
    rates on its node, idle counters elsewhere); returns the processes to stop."""
    procs = []
    for node in range(s.nodes):
        root = os.path.join(out_dir, f"host{node}")
        subprocess.run([PYTHON, FAKE_HOST, "build", root, "--ib", "mlx5_0:1", "--cgroup", "/job"],
                       check=True)
        rates = [arg for rate in s.hosts.get(node, []) for arg in ("--rate", rate)]
        procs.append(subprocess.Popen([PYTHON, FAKE_HOST, "run", root] + rates))
    return procs


def stop_hosts(procs):
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait()


def node_command(tools, s, node, port, out_dir=None):
    """One node of a multi-node job: its own hostname (a UTS namespace), torchrun's static
    rendezvous on this machine; with fake hosts, its own /sys and /proc roots."""
    script = os.path.join(REPO, "examples", "sim_train", "sim_train.py")
    per_node = s.nproc // s.nodes
    launch = [PYTHON, "-m", "torch.distributed.run", "--nnodes", str(s.nodes), "--node_rank",
              str(node), "--nproc_per_node", str(per_node), "--master_addr", "127.0.0.1",
              "--master_port", str(port), "--redirects", "1", "--tee", "1", script] + s.args
    roots = [f"{k}={v}" for k, v in host_roots(out_dir, node).items()] if s.hosts else []
    return (["env"] + roots if roots else []) + \
        ["unshare", "--uts", "sh", "-c", f'hostname "$0" && exec "$@"', f"node{node}"] + launch


def sim_train_paths(tools):
    """What examples/sim_train/run.sh sets up: the stand-in libraries and the extension."""
    here = os.path.join(REPO, "examples", "sim_train")
    return {"LD_LIBRARY_PATH": os.path.join(tools.build, "simgpu", "lib"),
            "PYTHONPATH": f"{here}:{os.path.join(tools.build, 'examples', 'sim_train')}"}


def free_port():
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(s, tools, out_dir, until=None, timeout_s=300):
    """Runs scenario `s` with its ring files under out_dir/<s.name>; see run_job."""
    hosts = start_hosts(s, out_dir) if s.hosts else []
    try:
        return run_scenario_job(s, tools, out_dir, until, timeout_s)
    finally:
        stop_hosts(hosts)


def run_scenario_job(s, tools, out_dir, until, timeout_s):
    simgpu = s.job == "sim_train"
    env = job_env(tools, out_dir, s.name, s.env, simgpu, s.preload_env)
    log = os.path.join(out_dir, "job.log")
    if s.job == "torch_ddp":
        script = s.script or os.path.join(HERE, "torch_ddp_job.py")
        return run_job(torchrun(s.nproc, script, s.args), env, log, timeout_s, until)
    if s.nodes == 1:
        if s.hosts:
            env.update(host_roots(out_dir, 0))
        return run_job(sim_train_command(tools, s.nproc, s.args), env, log, timeout_s, until)
    env.update(sim_train_paths(tools))
    env["SIMGPU_RANKS_PER_NODE"] = str(s.nproc // s.nodes)
    port = free_port()
    # The nodes as one job: a shell starts them all and fails when one fails.
    starts = "".join(f"{shlex.join(node_command(tools, s, n, port, out_dir))} & pids=\"$pids $!\"\n"
                     for n in range(s.nodes))
    script = starts + "fail=0; for p in $pids; do wait $p || fail=1; done; exit $fail"
    return run_job(["sh", "-c", script], env, log, timeout_s, until)
