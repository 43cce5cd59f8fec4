// sys.monitoring (PEP 669, 3.12+) as the fallback when another tool takes the frame-evaluation
// slot for good (research/interception.md §1c): C METH_FASTCALL callbacks for the six events
// that bracket every Python frame evaluation, registered as tool id 4 (3 if 4 is taken; 2 is
// cProfile's), feeding the same shadow stack and recorder as EvalHook. Global events reach every
// thread, including threads started later. Each event costs a vectorcall into C (~30 ns).
#include <cstdio>

#include "preload/core/log.h"
#include "preload/python/cpython_internal.h"

namespace perftracker::preload::cpython {
namespace {

PyObject* ReturnNone() {
  g_api.IncRef(g_api.none);
  return g_api.none;
}

// callback(code, offset[, value]): the code object is all we need.
PyObject* OnStart(PyObject*, PyObject* const* args, ssize_t nargs) {
  if (nargs > 0 && TypeOf(args[0]) == g_api.code_type) MonitorStart(args[0]);
  return ReturnNone();
}

PyObject* OnEnd(PyObject*, PyObject* const*, ssize_t) {
  MonitorEnd();
  return ReturnNone();
}

// PyMethodDef stores every calling convention as PyCFunction; void(*)() is the cast the
// compiler accepts between function types.
CFunction AsCFunction(FastCFunction fn) {
  return reinterpret_cast<CFunction>(reinterpret_cast<void (*)()>(fn));
}

MethodDef g_start_def = {"perftracker_frame_start", AsCFunction(&OnStart), kMethFastcall,
                         "perftracker: a Python frame starts or resumes"};
MethodDef g_end_def = {"perftracker_frame_end", AsCFunction(&OnEnd), kMethFastcall,
                       "perftracker: a Python frame returns, yields or unwinds"};

// monitoring.<method>(ints..., object): a new reference, or nullptr with the error set.
PyObject* Call(PyObject* monitoring, const char* method, long a, long b, PyObject* last) {
  PyObject* name = g_api.UnicodeFromString(method);
  PyObject* x = g_api.LongFromLong(a);
  PyObject* y = b >= 0 ? g_api.LongFromLong(b) : nullptr;
  PyObject* result = nullptr;
  if (name != nullptr && x != nullptr && (b < 0 || y != nullptr)) {
    result = y == nullptr ? g_api.CallMethodObjArgs(monitoring, name, x, last, nullptr)
                          : g_api.CallMethodObjArgs(monitoring, name, x, y, last, nullptr);
  }
  for (PyObject* o : {name, x, y}) {
    if (o != nullptr) g_api.DecRef(o);
  }
  return result;
}

long EventBit(PyObject* events, const char* name) {
  PyObject* value = g_api.GetAttrString(events, name);
  if (value == nullptr) return -1;
  const long bit = g_api.LongAsLong(value);
  g_api.DecRef(value);
  return bit;
}

bool Register(PyObject* monitoring, int* tool_id) {
  PyObject* label = g_api.UnicodeFromString("perftracker");
  if (label == nullptr) return false;
  int id = -1;
  for (int candidate : {4, 3}) {
    if (PyObject* r = Call(monitoring, "use_tool_id", candidate, -1, label)) {
      g_api.DecRef(r);
      id = candidate;
      break;
    }
    g_api.ErrClear();  // taken by another tool
  }
  g_api.DecRef(label);
  if (id < 0) return false;
  PyObject* events = g_api.GetAttrString(monitoring, "events");
  if (events == nullptr) return false;
  struct Hook {
    const char* event;
    MethodDef* def;
  };
  constexpr Hook kHooks[] = {{"PY_START", &g_start_def}, {"PY_RESUME", &g_start_def},
                             {"PY_THROW", &g_start_def}, {"PY_RETURN", &g_end_def},
                             {"PY_YIELD", &g_end_def},   {"PY_UNWIND", &g_end_def}};
  long mask = 0;
  bool ok = true;
  for (const Hook& h : kHooks) {
    const long bit = EventBit(events, h.event);
    PyObject* fn = bit > 0 ? g_api.CFunctionNewEx(h.def, nullptr, nullptr) : nullptr;
    PyObject* r = fn != nullptr ? Call(monitoring, "register_callback", id, bit, fn) : nullptr;
    if (fn != nullptr) g_api.DecRef(fn);
    if (r == nullptr) {
      ok = false;
      break;
    }
    g_api.DecRef(r);
    mask |= bit;
  }
  g_api.DecRef(events);
  PyObject* r = nullptr;
  if (ok) {
    // From the first event on, frames are ours to push: EvalHook passes through even if some
    // tool calls it again (no frame counted twice).
    g_hook.monitoring = true;
    PyObject* bits = g_api.LongFromLong(mask);
    r = bits != nullptr ? Call(monitoring, "set_events", id, -1, bits) : nullptr;
    if (bits != nullptr) g_api.DecRef(bits);
  }
  if (r == nullptr) {
    g_hook.monitoring = false;
    g_api.ErrClear();
    if (PyObject* f = Call(monitoring, "free_tool_id", id, -1, nullptr)) g_api.DecRef(f);
    return false;
  }
  g_api.DecRef(r);
  *tool_id = id;
  return true;
}

}  // namespace

bool StartMonitoring(int* tool_id) {
  if (g_hook.layout.minor < 12) return false;
  PyObject* sys = g_api.ImportModule("sys");
  PyObject* monitoring = sys != nullptr ? g_api.GetAttrString(sys, "monitoring") : nullptr;
  const bool ok = monitoring != nullptr && Register(monitoring, tool_id);
  if (!ok) g_api.ErrClear();
  if (monitoring != nullptr) g_api.DecRef(monitoring);
  if (sys != nullptr) g_api.DecRef(sys);
  return ok;
}

}  // namespace perftracker::preload::cpython
