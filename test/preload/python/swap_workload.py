"""Other tools take the frame-evaluation slot and give it back, again and again (argv[1] is
libcpython_foreign_eval.so; argv[2] the writer's watch period in seconds, 0 without a writer
thread: the probe library). One iteration (one window) per step:

  chained_step x50   Dynamo's way: an evaluator that calls the one it saved (us) runs compiled()
                     x3, then the saved one is restored and kept() x2 runs. Checks meet the
                     foreign evaluator at gc.collect() and, every tenth step, the writer's watch.
  lossy_step x6      an evaluator that never calls us runs lost() x4 (unrecorded before 3.12;
                     3.12+: sys.monitoring from the first loss on), then the slot is given back
                     (the saved one, or the default) and kept() x2 runs. The loss is found, and
                     its end, by a gc.collect() (odd steps) or by the writer's watch (even).
  clean_step x6      kept() x2, nothing lost; one after every lossy step.

Collection is off: checks run exactly where the script collects, or where it waits for the watch.
"""
import ctypes
import gc
import sys
import time

gc.disable()
lib = ctypes.PyDLL(sys.argv[1])  # the GIL is held in its calls: it uses the C API
lib.foreign_swap_in.argtypes = [ctypes.c_int]
lib.foreign_swap_out.argtypes = [ctypes.c_int]
lib.foreign_eval_calls.restype = ctypes.c_ulong
WATCH_S = float(sys.argv[2])


def f():
    pass


def compiled():
    f()


def lost():
    f()


def kept():
    f()


def monitored():
    """3.12+, after the first loss: sys.monitoring records, and no check looks at the slot."""
    return sys.version_info >= (3, 12) and "perftracker" in (
        sys.monitoring.get_tool(3), sys.monitoring.get_tool(4))


def sleep_through_watch():
    """Long enough for the watch to schedule a check; it runs in the loop after the sleep."""
    time.sleep(10 * WATCH_S)
    for _ in range(1000):
        pass


# Waiting for the watch: loops that call no Python function (no frame reaches an evaluator,
# the foreign one counts none of ours); their back edges run the check the watch scheduled.
def find_loss(by_watch):
    if not by_watch or WATCH_S == 0 or monitored():
        gc.collect()
        return
    # The check probes the slot with a frame of its own: the foreign evaluator counts it.
    before, deadline = lib.foreign_eval_calls(), time.monotonic() + 30
    while lib.foreign_eval_calls() == before:
        if time.monotonic() > deadline:
            sys.exit("timed out waiting for the watch to find the loss")
        time.sleep(WATCH_S / 4)


def find_give_back(by_watch, to_default):
    if not by_watch or WATCH_S == 0 or monitored():
        gc.collect()
    elif to_default:
        deadline = time.monotonic() + 30
        while lib.foreign_slot_is_default():
            if time.monotonic() > deadline:
                sys.exit("timed out waiting for the watch to reinstall us")
            time.sleep(WATCH_S / 4)
    else:
        sleep_through_watch()


def chained_step(i):
    lib.foreign_swap_in(1)
    for _ in range(3):
        compiled()
    if i % 10 == 0 and WATCH_S > 0:
        sleep_through_watch()
    elif i % 2 == 0:
        gc.collect()
    lib.foreign_swap_out(0)
    for _ in range(2):
        kept()


def lossy_step(i):
    gc.collect()  # we are called here: the loss begins after it
    by_watch, to_default = i % 2 == 0, i % 3 == 2
    lib.foreign_swap_in(0)
    find_loss(by_watch)
    for _ in range(4):
        lost()
    lib.foreign_swap_out(to_default)
    find_give_back(by_watch, to_default)
    for _ in range(2):
        kept()


def clean_step(i):
    for _ in range(2):
        kept()


for i in range(50):
    chained_step(i)
for i in range(6):
    lossy_step(i)
    clean_step(i)
print("foreign evaluations:", lib.foreign_eval_calls())
print("swaps: done")
