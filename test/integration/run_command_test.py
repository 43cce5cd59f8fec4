#!/usr/bin/env python3
"""`perftracker run` (README "perftracker run"), one case per test:

  lone      `run -- python3 job.py lone`: no launcher, no RANK: exactly one ring file, rank 0 of
            1 written by the job's pid, every step in it; `run` passes the exit status on and
            prints the file's directory and the `analyze` command, which reads one rank
  launcher  an unknown launcher (a Python script) that made its own file before starting two
            ranks with RANK set, under one PERFTRACKER_JOB_ID: it yields (its file is gone, the
            ranks' are theirs: rank 0 waited for the name), `run` names the ranks' files
  torchrun  `run -- python3 -m torch.distributed.run --nproc_per_node 2` (real torch, gloo): the
            launcher writes no file, each rank writes one, and its forked loader worker one as
            its helper
  nothing   `run -- /bin/true` and `run -- <a launcher that starts no rank>`: no file, and one
            line saying why
  signal    SIGTERM sent to `run` alone reaches the command; `run` exits 128 + 15

  run_command_test.py --perftracker CLI --case CASE [--torch-job DDP_JOB]
"""
import argparse
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from checks import expect, fail  # noqa: E402
JOB = os.path.join(HERE, "run_command_job.py")
PYTHON = "/usr/bin/python3"


def base_env(tmp):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PERFTRACKER_") and k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
    env.update({"PERFTRACKER_STEP_FUNCTION": "train_step", "OMP_NUM_THREADS": "1",
                "TMPDIR": tmp, "PERFTRACKER_WINDOW_S": "0"})
    return env


def run(args, out, command, env, timeout=300):
    p = subprocess.run([args.perftracker, "run", "--dir", out, "--"] + command, env=env,
                       capture_output=True, text=True, timeout=timeout)
    print(p.stderr[-3000:])
    return p


def ring_files(out):
    return sorted(glob.glob(os.path.join(out, "**", "*.ptr"), recursive=True))


def header(args, path):
    dump = subprocess.run([args.perftracker, "dump", path], capture_output=True, text=True,
                          check=True).stdout
    recs = [json.loads(l) for l in dump.splitlines()]
    head = next(r for r in recs if r.get("type") == "header")
    head["iterations"] = sum(r["iterations"]["count"] for r in recs if r.get("type") == "window")
    return head


def next_command(p):
    lines = [l for l in p.stderr.splitlines() if l.startswith("perftracker: next: ")]
    expect(len(lines) == 1, f"run printed {len(lines)} next commands:\n{p.stderr}")
    cmd = lines[0][len("perftracker: next: "):].split()
    expect(cmd[:2] == ["perftracker", "analyze"] and len(cmd) == 3, f"next command: {lines[0]}")
    return cmd[2]


def analyzed_ranks(args, job_dir):
    p = subprocess.run([args.perftracker, "analyze", job_dir, "--json", "-"], capture_output=True,
                       text=True)
    expect(p.returncode == 0, f"analyze {job_dir} exited {p.returncode}: {p.stderr}")
    return json.loads(p.stdout)["ranks"]["found"]


def case_lone(args, tmp, out):
    env = base_env(tmp)
    env["PERFTRACKER_WINDOW_ITERS"] = "10"
    p = run(args, out, [PYTHON, JOB, "lone"], env)
    expect(p.returncode == 3, f"run exited {p.returncode}, the job 3")
    pid = json.loads(p.stdout.strip().splitlines()[-1])["pid"]
    files = ring_files(out)
    expect([os.path.basename(f) for f in files] == ["rank-0.ptr"], f"ring files: {files}")
    h = header(args, files[0])
    expect(h["pid"] == pid and h["rank"] == 0 and h["world_size"] == 1 and "helper_of" not in h,
           f"header: {h}, job pid {pid}")
    expect(h["iterations"] == 40, f"{h['iterations']} iterations recorded, the job made 40")
    expect(f"1 rank file in {os.path.dirname(files[0])} (rank-0.ptr)" in p.stderr,
           "run did not say where the file is")
    job_dir = next_command(p)
    expect(os.path.dirname(os.path.dirname(files[0])) == job_dir, f"analyze {job_dir}")
    expect(analyzed_ranks(args, job_dir) == 1, "analyze did not read one rank")
    return "one rank file, 40 iterations, analyzed"


def case_launcher(args, tmp, out):
    env = base_env(tmp)
    env.update({"PERFTRACKER_WINDOW_S": "1", "PERFTRACKER_JOB_ID": "shared"})
    p = run(args, out, [PYTHON, JOB, "launcher"], env)
    expect(p.returncode == 0, f"run exited {p.returncode}\n{p.stdout}")
    result = json.loads(p.stdout.strip().splitlines()[-1])
    expect(result["had_file"], "the launcher never made its own file: nothing to yield")
    expect(result["codes"] == [0, 0], f"ranks exited {result['codes']}")
    files = ring_files(out)
    expect([os.path.basename(f) for f in files] == ["rank-0.ptr", "rank-1.ptr"],
           f"ring files: {files}")
    pids = [header(args, f)["pid"] for f in files]
    expect(pids == result["ranks"], f"files written by {pids}, ranks {result['ranks']}, "
                                    f"launcher {result['pid']}")
    expect(next_command(p) == os.path.join(out, "shared"), "analyze command")
    expect("2 rank files in" in p.stderr, "run did not name the ranks' files")
    return "the launcher yielded its file, 2 ranks recorded"


def case_torchrun(args, tmp, out):
    env = base_env(tmp)
    del env["PERFTRACKER_STEP_FUNCTION"]  # the optimizer's step marks torch's iterations
    env.update({"PERFTRACKER_WINDOW_ITERS": "4"})
    cmd = [PYTHON, "-m", "torch.distributed.run", "--nnodes", "1", "--rdzv_backend", "c10d",
           "--rdzv_endpoint", "localhost:0", "--rdzv_id", f"run-{os.getpid()}",
           "--nproc_per_node", "2", "--redirects", "1", "--tee", "1", args.torch_job]
    p = run(args, out, cmd, env, timeout=500)
    expect(p.returncode == 0, f"torchrun exited {p.returncode}\n{p.stdout[-3000:]}")
    files = ring_files(out)
    ranks = [f for f in files if ".helper-" not in f]
    expect(len(ranks) == 2, f"expected one file per rank and none from the launcher: {files}")
    heads = sorted((header(args, f) for f in ranks), key=lambda h: h["rank"])
    expect([(h["rank"], h["world_size"]) for h in heads] == [(0, 2), (1, 2)],
           f"ranks: {[(h['rank'], h['world_size']) for h in heads]}")
    # Each rank's forked DataLoader worker is its helper, never the launcher's.
    helpers = [header(args, f) for f in files if ".helper-" in f]
    expect(sorted(h.get("helper_of") for h in helpers) == sorted(h["pid"] for h in heads),
           f"helpers {[(h['pid'], h.get('helper_of')) for h in helpers]}, "
           f"ranks {[h['pid'] for h in heads]}")
    expect(all(h["iterations"] == 12 for h in heads), "12 iterations on each rank")
    expect(analyzed_ranks(args, next_command(p)) == 2, "analyze did not read 2 ranks")
    return "2 ranks, 2 files and a forked worker's each, none from the launcher"


def case_nothing(args, tmp, out):
    env = base_env(tmp)
    p = run(args, out, ["/bin/true"], env)
    lines = p.stderr.splitlines()
    expect(p.returncode == 0 and len(lines) == 1 and
           lines[0].startswith("perftracker: no process recorded: /bin/true ended before"),
           f"/bin/true: exit {p.returncode}, stderr {lines}")
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir)
    with open(os.path.join(bindir, "torchrun"), "w") as f:
        f.write(f"#!{PYTHON}\nimport sys\nsys.exit(4)\n")
    os.chmod(os.path.join(bindir, "torchrun"), 0o755)
    p = run(args, out, [os.path.join(bindir, "torchrun"), "--nproc_per_node", "2", "x.py"], env)
    lines = p.stderr.splitlines()
    expect(p.returncode == 4 and len(lines) == 1 and "is a launcher (torchrun)" in lines[0],
           f"idle launcher: exit {p.returncode}, stderr {lines}")
    expect(ring_files(out) == [], f"files: {ring_files(out)}")
    return "one line each: nothing recorded, and why"


def case_signal(args, tmp, out):
    env = base_env(tmp)
    proc = subprocess.Popen([args.perftracker, "run", "--dir", out, "--", PYTHON, JOB, "sleep"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    expect(proc.stdout.readline().strip() == "ready", "the job did not start")
    started = time.time()
    os.kill(proc.pid, signal.SIGTERM)
    try:
        code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail("run did not end after SIGTERM: it was not passed on")
    expect(code == 128 + signal.SIGTERM, f"run exited {code}, expected {128 + signal.SIGTERM}")
    return f"SIGTERM passed on, exit 143 after {time.time() - started:.1f} s"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--perftracker", required=True)
    ap.add_argument("--case", required=True)
    ap.add_argument("--torch-job")
    args = ap.parse_args()
    case = globals()["case_" + args.case]
    with tempfile.TemporaryDirectory(prefix="pt-run-") as tmp:
        out = os.path.join(tmp, "out")
        what = case(args, tmp, out)
        leftover = glob.glob(os.path.join(tmp, "perftracker-run-*"))
        expect(leftover == [], f"run left its registry behind: {leftover}")
        print(f"run_command_test {args.case}: ok ({what})")


if __name__ == "__main__":
    main()
