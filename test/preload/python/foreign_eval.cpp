// A stand-in for a tool that takes the frame-evaluation slot for good and does not chain to
// whatever was there (foreign_workload.py installs it with ctypes): it counts and evaluates every
// frame with CPython's default evaluator, found at run time like the hooks find it.
#include <dlfcn.h>

namespace {

using EvalFrameFn = void* (*)(void* tstate, void* frame, int throwflag);
EvalFrameFn g_default = nullptr;
unsigned long g_calls = 0;

}  // namespace

extern "C" [[gnu::visibility("default")]] void* foreign_eval(void* tstate, void* frame,
                                                             int throwflag) {
  if (g_default == nullptr) {
    g_default = reinterpret_cast<EvalFrameFn>(dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault"));
  }
  ++g_calls;
  return g_default(tstate, frame, throwflag);
}

extern "C" [[gnu::visibility("default")]] unsigned long foreign_eval_calls() { return g_calls; }

// The Dynamo way: keep the evaluator found at install (us) and chain to it.
namespace {
EvalFrameFn g_previous = nullptr;
}  // namespace

extern "C" [[gnu::visibility("default")]] void foreign_set_previous(void* previous) {
  g_previous = reinterpret_cast<EvalFrameFn>(previous);
}

extern "C" [[gnu::visibility("default")]] void* foreign_eval_chained(void* tstate, void* frame,
                                                                     int throwflag) {
  ++g_calls;
  return g_previous(tstate, frame, throwflag);
}
