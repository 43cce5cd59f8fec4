"""Another tool takes the frame-evaluation slot after our install and never calls us (a
debugger's evaluator, Dynamo enabled before us restoring its own): argv[1] is
libcpython_foreign_eval.so. The gc-time check then finds the slot taken and idle: on 3.12+ the
known call tree below is still recorded exactly, through sys.monitoring; before, the loss is
reported once. With `take_tool_4`, tool id 4 is taken first: we use 3. With `chain`, the
foreign evaluator calls the one it found (us, as Dynamo does): nothing changes, no warning.

  before -> f x50                  (eval hook)
  nested -> after -> f x100        (sys.monitoring on 3.12+)
  nested -> gen: 1 start + 5 resumptions
  nested -> raise_inside x3        (unwinds, caught in nested)
"""
import ctypes
import gc
import sys

from calltree import after, before


def gen():
    for i in range(5):
        yield i


def raise_inside():
    raise ValueError("expected")


def nested():
    after()
    assert sum(gen()) == 10
    for _ in range(3):
        try:
            raise_inside()
        except ValueError:
            pass


mode = sys.argv[2] if len(sys.argv) > 2 else ""
if mode == "take_tool_4":  # another monitoring tool came first
    sys.monitoring.use_tool_id(4, "someone else")
api = ctypes.pythonapi
api.PyInterpreterState_Get.restype = ctypes.c_void_p
api._PyInterpreterState_GetEvalFrameFunc.restype = ctypes.c_void_p
api._PyInterpreterState_GetEvalFrameFunc.argtypes = [ctypes.c_void_p]
api._PyInterpreterState_SetEvalFrameFunc.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
foreign = ctypes.CDLL(sys.argv[1])
foreign.foreign_eval_calls.restype = ctypes.c_ulong
foreign.foreign_set_previous.argtypes = [ctypes.c_void_p]
before()
interp = api.PyInterpreterState_Get()
evaluator = foreign.foreign_eval
if mode == "chain":  # Dynamo enabled after us: it calls us for the frames it does not compile
    foreign.foreign_set_previous(api._PyInterpreterState_GetEvalFrameFunc(interp))
    evaluator = foreign.foreign_eval_chained
api._PyInterpreterState_SetEvalFrameFunc(interp, ctypes.cast(evaluator, ctypes.c_void_p).value)
gc.collect()  # the first check sees the hook called since the last one
gc.collect()  # the second sees it idle: taken for good
nested()
print("foreign evaluations:", foreign.foreign_eval_calls())
print("workload: done")
