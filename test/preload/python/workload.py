"""A deterministic workload for the CPython hook tests (run under LD_PRELOAD, RANK=0).

Known shapes the checker asserts on (check.py):
  f: 1000 calls from g, 10 calls from h (two call paths)
  sleeper: 5 calls of a 50 ms sleep inside `sleeper`
  worker: runs on a thread started after installation; calls leaf 300 times
  train_step: PERFTRACKER_STEP_FUNCTION=train_step (set by the test) -> 7 iterations
  collect: 3 explicit gc.collect() over a large heap -> kGc events; the pauses are the
    collector's time, not collect's self time (which is then only its loop)
  spin, nap: two threads beside the loop for 0.4 s, one computing (calling leaf), one asleep ->
    the ring's thread_cpu charges ~0.4 s of CPU to spin's frames and none to nap's
  compiled_call: code compiled under inductor's default cache directory -> named relative to
    it, as a library's is (the user's files alone keep absolute paths)
"""
import gc
import os
import sys
import threading
import time

# Also where a tracer runs this file with runpy, which leaves its directory off sys.path.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hooks_ready import await_hooks  # noqa: E402


def f(x):
    return x + 1


def g():
    total = 0
    for i in range(1000):
        total = f(total)
    return total


def h():
    for _ in range(10):
        f(0)


def sleeper():
    time.sleep(0.05)


def leaf(i):
    return i * 2


def worker():
    for i in range(300):
        leaf(i)


def spin(seconds):
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        n = leaf(n) % 1000
    return n


def nap(seconds):
    time.sleep(seconds)


def train_step(i):
    f(i)


def gen():
    for i in range(5):
        yield i


def collect(heap):
    for _ in range(3):
        gc.collect()
    return len(heap)


def main():
    assert g() == 1000
    h()
    for _ in range(5):
        sleeper()
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    side = [threading.Thread(target=spin, args=(0.4,)), threading.Thread(target=nap, args=(0.4,))]
    for t in side:
        t.start()
    for t in side:
        t.join()
    for i in range(7):
        train_step(i)
    heap = [{"i": i} for i in range(200_000)]  # makes each full collection take milliseconds
    collect(heap)
    del heap
    assert sum(gen()) == 10
    assert run_generated() == 6
    try:
        raise_inside()
    except ValueError:
        pass
    print("workload: done", sys.version_info[:2])


GENERATED = "def compiled_call(x):\n    return x * 2\n"


def run_generated():
    space = {}
    exec(compile(GENERATED, "/tmp/torchinductor_test/ab/cabc123.py", "exec"), space)
    return space["compiled_call"](3)


def raise_inside():
    raise ValueError("expected")


if __name__ == "__main__":
    await_hooks()
    main()
