"""A rank that starts helper processes (run by helpers_test.py with libperftracker.so preloaded
and RANK set, or under torchrun for `restart`). Every step calls train_step (the step function
the test names), so the rank's file must hold exactly `steps` iterations whatever its helpers
did. Prints one JSON line: {"pid": ..., "steps": ...}.

  helpers_job.py subprocess STEPS     /bin/true and a Python child every 3 steps
  helpers_job.py spawn|forkserver|fork  a DataLoader with 2 workers of that start method, 3 epochs
  helpers_job.py pool STEPS           a spawn ProcessPoolExecutor (as torch.compile's workers)
  helpers_job.py restart STEPS FLAG   fails once (until FLAG exists), as an elastic restart wants
"""
import json
import multiprocessing
import os
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor


def busy(seconds):
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        n += 1
    return n


def slow_item(i):
    busy(0.003)
    return float(i)


def pool_work(i):
    return busy(0.002) + i


def train_step(value):
    busy(0.002)
    return value


def run_subprocess(steps):
    for s in range(steps):
        train_step(s)
        if s % 3 == 0:
            subprocess.run(["/bin/true"], check=True)
            subprocess.run([sys.executable, "-c", "sum(range(200000))"], check=True)
    return steps


class Items:
    """A map-style dataset (what a DataLoader needs), slow per item; module-level so spawn and
    forkserver workers can unpickle it."""

    def __len__(self):
        return 16

    def __getitem__(self, i):
        return slow_item(i)


def run_loader(method):
    from torch.utils.data import DataLoader

    loader = DataLoader(Items(), batch_size=4, num_workers=2, multiprocessing_context=method)
    steps = 0
    for _ in range(3):
        for batch in loader:
            train_step(batch)
            steps += 1
    return steps


def run_pool(steps):
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        for s in range(steps):
            list(pool.map(pool_work, range(4)))
            train_step(s)
    return steps


def main():
    mode = sys.argv[1]
    if mode == "subprocess":
        steps = run_subprocess(int(sys.argv[2]))
    elif mode in ("spawn", "forkserver", "fork"):
        steps = run_loader(mode)
    elif mode == "pool":
        steps = run_pool(int(sys.argv[2]))
    elif mode == "restart":
        if not os.path.exists(sys.argv[3]):
            open(sys.argv[3], "w").close()
            for s in range(4):
                train_step(s)
            sys.exit(3)  # the agent restarts the worker group
        steps = run_subprocess(int(sys.argv[2]))
    else:
        sys.exit(f"unknown mode {mode}")
    print(json.dumps({"pid": os.getpid(), "steps": steps}), flush=True)


if __name__ == "__main__":
    main()
