// The interpreter's own lifecycle callbacks, each a C function wrapped in a PyCFunction object
// (no module of ours): garbage-collector pauses (kGc) through gc.callbacks, the Python-level exit
// flush through atexit, and a forked child's start as a helper through os.register_at_fork.
//
// The gc callback runs on the collecting thread with the GIL held, once with phase "start" and
// once with "stop"; one collection never nests in another, so a thread_local start time is
// enough. It only reads its arguments and calls the recorder: no allocation on the hot path.
#include <cstdio>
#include <cstring>

#include "preload/core/log.h"
#include "preload/core/writer.h"
#include "preload/python/cpython_internal.h"

namespace perftracker::preload::cpython {
namespace {

constexpr int kGenerations = 3;
Slot g_gc_slots[kGenerations] = {kNoSlot, kNoSlot, kNoSlot};
thread_local uint64_t t_gc_start_ns [[gnu::tls_model("initial-exec")]] = 0;

PyObject* ReturnNone() {
  g_api.IncRef(g_api.none);
  return g_api.none;
}

long Generation(PyObject* info) {
  PyObject* generation = info != nullptr ? g_api.DictGetItemString(info, "generation") : nullptr;
  if (generation == nullptr) return 0;
  const long g = g_api.LongAsLong(generation);  // borrowed reference: no DecRef
  return g >= 0 && g < kGenerations ? g : 0;
}

// gc.callbacks entry: callback(phase, info).
PyObject* OnGc(PyObject*, PyObject* args) {
  const uint64_t now = NowNs();
  PyObject* phase = g_api.TupleGetItem(args, 0);
  const char* text = phase != nullptr ? g_api.UnicodeAsUTF8(phase) : nullptr;
  if (text == nullptr) {
    g_api.ErrClear();
    return ReturnNone();
  }
  if (std::strcmp(text, "start") == 0) {
    CheckEvalHook();
    t_gc_start_ns = NowNs();
  } else if (t_gc_start_ns != 0 && Active()) {
    const Slot slot = g_gc_slots[Generation(g_api.TupleGetItem(args, 1))];
    const uint64_t duration = now - t_gc_start_ns;
    if (slot != kNoSlot) {
      RecordCall(slot, now, duration, duration);
      // The pause is the collector's time: left in the self time of the Python function that
      // happened to trigger it, it would be counted twice and blamed on that function too.
      ChargeToCaller(duration);
    }
    t_gc_start_ns = 0;
  }
  return ReturnNone();
}

// atexit entry: the final flush while the interpreter (and CUDA) are still alive.
PyObject* OnExit(PyObject*, PyObject*) {
  MarkPythonExiting();
  if (Active()) Flush();
  return ReturnNone();
}

// os.register_at_fork's after_in_child entry, on the child's only thread with the GIL held: a
// child that runs on in Python (a worker multiprocessing started by fork) records as a helper.
PyObject* OnForkedChild(PyObject*, PyObject*) {
  if (RecordForkedChild()) {
    AdoptAsMainThread();
    RebaseForkedThread();
  }
  return ReturnNone();
}

MethodDef g_fork_def = {"perftracker_forked", &OnForkedChild, kMethNoargs,
                        "perftracker: records a forked child as its rank's helper"};
MethodDef g_gc_def = {"perftracker_gc_callback", &OnGc, kMethVarargs,
                      "perftracker: records garbage-collection pauses"};
MethodDef g_exit_def = {"perftracker_flush", &OnExit, kMethNoargs,
                        "perftracker: writes the last window at exit"};

// module.attribute.append(fn) or module.register(fn); false on any Python error (cleared).
bool AddToModule(const char* module_name, MethodDef* def, bool append_to_callbacks) {
  PyObject* module = g_api.ImportModule(module_name);
  PyObject* fn = module != nullptr ? g_api.CFunctionNewEx(def, nullptr, nullptr) : nullptr;
  bool ok = false;
  if (fn != nullptr && append_to_callbacks) {
    if (PyObject* list = g_api.GetAttrString(module, "callbacks")) {
      ok = g_api.ListAppend(list, fn) == 0;
      g_api.DecRef(list);
    }
  } else if (fn != nullptr) {
    PyObject* name = g_api.UnicodeFromString("register");
    PyObject* result =
        name != nullptr ? g_api.CallMethodObjArgs(module, name, fn, nullptr) : nullptr;
    ok = result != nullptr;
    if (result != nullptr) g_api.DecRef(result);
    if (name != nullptr) g_api.DecRef(name);
  }
  if (fn != nullptr) g_api.DecRef(fn);
  if (module != nullptr) g_api.DecRef(module);
  if (!ok) g_api.ErrClear();
  return ok;
}

}  // namespace

void InstallGcCallback() {
  char name[32];
  for (int g = 0; g < kGenerations; ++g) {
    std::snprintf(name, sizeof name, "gc.collect:generation%d", g);
    g_gc_slots[g] = InternFunction(format::FunctionKind::kGc, name);
  }
  if (!AddToModule("gc", &g_gc_def, true))
    Warn("could not add a gc callback; GC pauses are not recorded");
}

void InstallAtexitFlush() {
  if (!AddToModule("atexit", &g_exit_def, false)) Warn("could not register the Python exit flush");
}

void InstallForkRecording() {
  // register_at_fork takes keywords only: a lambda passes ours on as after_in_child. From posix,
  // the built-in module behind os: the install may run while os itself is still being imported.
  PyObject* builtins = g_api.ImportModule("builtins");
  PyObject* eval = g_api.UnicodeFromString("eval");
  PyObject* source =
      g_api.UnicodeFromString("lambda f: __import__('posix').register_at_fork(after_in_child=f)");
  PyObject* globals = g_api.DictNew();
  PyObject* call = g_api.UnicodeFromString("__call__");
  PyObject* fn = g_api.CFunctionNewEx(&g_fork_def, nullptr, nullptr);
  PyObject* registrar = builtins && eval && source && globals
                            ? g_api.CallMethodObjArgs(builtins, eval, source, globals, nullptr)
                            : nullptr;
  PyObject* result =
      registrar && call && fn ? g_api.CallMethodObjArgs(registrar, call, fn, nullptr) : nullptr;
  for (PyObject* o : {result, registrar, fn, call, globals, source, eval, builtins}) {
    if (o != nullptr) g_api.DecRef(o);
  }
  if (result == nullptr) {
    g_api.ErrClear();
    Warn("could not register an after-fork hook; workers started by fork are not recorded");
  }
}

}  // namespace perftracker::preload::cpython
