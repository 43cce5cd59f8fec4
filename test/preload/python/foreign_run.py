"""Runs a script (argv[2]) after a foreign frame evaluator (argv[1], libcpython_foreign_eval.so)
took the slot for good: on 3.12+ everything the script does is recorded through sys.monitoring."""
import ctypes, gc, runpy, sys
api = ctypes.pythonapi
api.PyInterpreterState_Get.restype = ctypes.c_void_p
api._PyInterpreterState_SetEvalFrameFunc.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
lib = ctypes.CDLL(sys.argv[1])
api._PyInterpreterState_SetEvalFrameFunc(api.PyInterpreterState_Get(), ctypes.cast(lib.foreign_eval, ctypes.c_void_p).value)
gc.collect(); gc.collect()
runpy.run_path(sys.argv[2], run_name="__main__")
