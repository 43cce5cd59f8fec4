"""Simulates a tool (Dynamo enabled before us) that restores the default frame evaluator: the
check must reinstall the hook, so f's calls after the reset are still counted. By default a
gc.collect() runs the check (gc callbacks); `idle`: the collector is off and the main thread sits
in C for 2.5 s, so only the writer thread's once-a-second watch can notice (it schedules the
check as a pending call, which runs at the next bytecode boundary: the loop after the sleep)."""
import ctypes
import gc
import sys
import time

from calltree import after, before


idle = sys.argv[1:] == ["idle"]
if idle:
    gc.disable()
api = ctypes.pythonapi
api.PyInterpreterState_Get.restype = ctypes.c_void_p
api._PyInterpreterState_SetEvalFrameFunc.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
default = ctypes.cast(api._PyEval_EvalFrameDefault, ctypes.c_void_p).value
before()
api._PyInterpreterState_SetEvalFrameFunc(api.PyInterpreterState_Get(), default)
if idle:
    time.sleep(2.5)
    for _ in range(1000):
        pass
else:
    gc.collect()
after()
print("workload: done")
