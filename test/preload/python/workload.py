"""A deterministic workload for the CPython hook tests (run under LD_PRELOAD, RANK=0).

Known shapes the checker asserts on (check.py):
  f: 1000 calls from g, 10 calls from h (two call paths)
  sleeper: 5 calls of a 50 ms sleep inside `sleeper`
  worker: runs on a thread started after installation; calls leaf 300 times
  train_step: PERFTRACKER_STEP_FUNCTION=train_step (set by the test) -> 7 iterations
  collect: 3 explicit gc.collect() over a large heap -> kGc events; the pauses are the
    collector's time, not collect's self time (which is then only its loop)
"""
import gc
import sys
import threading
import time


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
    for i in range(7):
        train_step(i)
    heap = [{"i": i} for i in range(200_000)]  # makes each full collection take milliseconds
    collect(heap)
    del heap
    assert sum(gen()) == 10
    try:
        raise_inside()
    except ValueError:
        pass
    print("workload: done", sys.version_info[:2])


def raise_inside():
    raise ValueError("expected")


if __name__ == "__main__":
    main()
