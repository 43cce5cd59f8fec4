"""Simulates a tool (Dynamo enabled before us) that restores the default frame evaluator:
the gc-time check must reinstall the hook, so f's calls after the reset are still counted."""
import ctypes
import gc

from calltree import after, before


api = ctypes.pythonapi
api.PyInterpreterState_Get.restype = ctypes.c_void_p
api._PyInterpreterState_SetEvalFrameFunc.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
default = ctypes.cast(api._PyEval_EvalFrameDefault, ctypes.c_void_p).value
before()
api._PyInterpreterState_SetEvalFrameFunc(api.PyInterpreterState_Get(), default)
gc.collect()
after()
print("workload: done")
