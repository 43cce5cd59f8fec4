// A stand-in for a tool that takes the frame-evaluation slot and does not chain to
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

// Taking the slot and giving it back, as Dynamo does (torch/csrc/dynamo/eval_frame.c): save the
// evaluator found, install one's own, later restore the saved one; some tools restore the default
// instead. Called through ctypes.PyDLL: the GIL is held, as PyInterpreterState_Get requires.
namespace {
using InterpFn = void* (*)();
using GetEvalFn = void* (*)(void* interp);
using SetEvalFn = void (*)(void* interp, void* eval);
EvalFrameFn g_saved = nullptr;

template <typename Fn>
Fn Resolve(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

void* Interpreter() { return Resolve<InterpFn>("PyInterpreterState_Get")(); }

void SetSlot(EvalFrameFn eval) {
  Resolve<SetEvalFn>("_PyInterpreterState_SetEvalFrameFunc")(Interpreter(),
                                                             reinterpret_cast<void*>(eval));
}
}  // namespace

// chain: the evaluator installed calls the saved one (Dynamo); else it never does.
extern "C" [[gnu::visibility("default")]] void foreign_swap_in(int chain) {
  g_saved = reinterpret_cast<EvalFrameFn>(
      Resolve<GetEvalFn>("_PyInterpreterState_GetEvalFrameFunc")(Interpreter()));
  g_previous = g_saved;
  SetSlot(chain ? &foreign_eval_chained : &foreign_eval);
}

// to_default: CPython's default evaluator, not the saved one.
extern "C" [[gnu::visibility("default")]] void foreign_swap_out(int to_default) {
  SetSlot(to_default ? Resolve<EvalFrameFn>("_PyEval_EvalFrameDefault") : g_saved);
}

// Whether the slot holds CPython's default evaluator.
extern "C" [[gnu::visibility("default")]] int foreign_slot_is_default() {
  return Resolve<GetEvalFn>("_PyInterpreterState_GetEvalFrameFunc")(Interpreter()) ==
         reinterpret_cast<void*>(Resolve<EvalFrameFn>("_PyEval_EvalFrameDefault"));
}
