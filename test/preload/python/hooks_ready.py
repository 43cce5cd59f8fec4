"""Waiting for the CPython hooks before a workload makes the calls its test counts.

The preloaded library attaches on the first extension import or, where the interpreter loads
its stdlib without one (these workloads import only built-in modules), through a pending call a
watcher thread queues once the interpreter is up (preload/python/cpython_install.cpp). On a
loaded machine that thread can run after the script has begun: beside three busy loops on 2 CPUs,
1 start in 40 was attached 8 ms into the script, and CI once lost all 1000 calls of f from g that
way. Install() appends its gc callback in the same call that sets the frame evaluator, so once
gc.callbacks is not empty every later call is seen. run_test.py sets PT_TEST_AWAIT_HOOKS where it
expects the hooks to attach (not for the disabled, rankless or unsupported-version cases).
"""
import gc
import os
import time


def await_hooks(timeout_s=30):
    if not os.environ.get("PT_TEST_AWAIT_HOOKS"):
        return
    deadline = time.monotonic() + timeout_s
    while not gc.callbacks and time.monotonic() < deadline:
        time.sleep(0.001)  # the pending call runs on this thread between two sleeps
