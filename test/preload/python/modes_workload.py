"""Workload for the light/detailed mode tests (run_test.py --case light|detailed|trigger_file|
slowdown), run with PERFTRACKER_STEP_FUNCTION=train_step and 10 iterations a window.

Every iteration is train_step(i): tiny() 100 times (a leaf of well under a microsecond: light
mode folds it after its 32 probe calls) and work() once (a sleep of milliseconds: recorded in
both modes). wrapper() calls tiny() once: as cheap, but not a leaf (tiny is still recorded when
wrapper is probed), so it stays, and its calls of tiny fold like the others.
  plain N SECONDS:   N iterations of SECONDS each
  trigger_file:      70 iterations of 1 ms; after 25 iterations the workload creates
                     $PERFTRACKER_DIR/<job>/trigger and waits until the writer has read it (it
                     looks once a second): detailed windows start at iteration 30
  slowdown:          100 iterations of 20 ms, then 100 of 40 ms: the slowdown trigger fires once
                     (another period would need a further 5%: 2 ms a step of scheduling noise)
"""
import os
import sys
import time

from hooks_ready import await_hooks


def tiny(x):
    return x + 1


def work(seconds):
    time.sleep(seconds)


def wrapper(x):
    return tiny(x)


def train_step(i, seconds):
    for _ in range(100):
        tiny(i)
    wrapper(i)
    work(seconds)


def wait_until_read(path, timeout_s=30):
    """Until the writer has read `path` (its access time moves: it opens and reads the file it
    finds), so the period starts at the boundary after this iteration however late a loaded
    machine runs the writer's once-a-second look. Where access times do not move (noatime), the
    2.5 s this used to sleep."""
    created = os.stat(path).st_atime_ns
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if os.stat(path).st_atime_ns != created:
            return
        if time.monotonic() - start > 2.5 and noatime(path):
            return
        time.sleep(0.01)


def noatime(path):
    """Whether the file system holding `path` is mounted without access-time updates."""
    best, options = "", ""
    with open("/proc/mounts") as mounts:
        for line in mounts:
            fields = line.split()
            if os.path.realpath(path).startswith(fields[1]) and len(fields[1]) > len(best):
                best, options = fields[1], fields[3]
    return "noatime" in options.split(",")


def main():
    case = sys.argv[1]
    await_hooks()  # else a loaded machine loses the first iterations (hooks_ready.py)
    if case == "plain":
        for i in range(int(sys.argv[2])):
            train_step(i, float(sys.argv[3]))
    elif case == "trigger_file":
        for i in range(70):
            if i == 25:
                job = os.path.join(os.environ["PERFTRACKER_DIR"], os.environ["PERFTRACKER_JOB_ID"])
                os.makedirs(job, exist_ok=True)
                trigger = os.path.join(job, "trigger")
                open(trigger, "w").close()
                wait_until_read(trigger)
            train_step(i, 0.001)
    elif case == "slowdown":
        for i in range(200):
            train_step(i, 0.02 if i < 100 else 0.04)
    print("modes workload: done")


if __name__ == "__main__":
    main()
