"""Processes for run_command_test.py, by the first argument:

  lone       40 steps of Python work (train_step), then exit 3; prints {"pid": ...}
  launcher   an unknown launcher: Python work until its own first window made its file, then two
             ranks of this script (`rank`, RANK=0/1) and waits; prints its pid, the ranks' pids
  rank       20 steps of Python work
  sleep      prints "ready" and sleeps (a signal ends it)
"""
import glob
import json
import os
import subprocess
import sys
import time


def work(n):
    return sum(i * i for i in range(n))


def train_step():
    work(3000)
    time.sleep(0.002)


def steps(n):
    for _ in range(n):
        train_step()


def launcher():
    mine = os.path.join(os.environ["PERFTRACKER_DIR"], "**", "rank-0.ptr")
    deadline = time.time() + 30
    while not glob.glob(mine, recursive=True) and time.time() < deadline:
        work(1000)
    had_file = bool(glob.glob(mine, recursive=True))
    ranks = [subprocess.Popen([sys.executable, __file__, "rank"],
                              env=dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE="2"))
             for r in range(2)]
    codes = [p.wait() for p in ranks]
    print(json.dumps({"pid": os.getpid(), "had_file": had_file, "codes": codes,
                      "ranks": [p.pid for p in ranks]}), flush=True)


def main():
    mode = sys.argv[1]
    if mode == "lone":
        steps(40)
        print(json.dumps({"pid": os.getpid()}), flush=True)
        sys.exit(3)
    elif mode == "launcher":
        launcher()
    elif mode == "rank":
        steps(20)
    elif mode == "sleep":
        print("ready", flush=True)
        time.sleep(60)


if __name__ == "__main__":
    main()
