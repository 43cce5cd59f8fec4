// Installing the CPython hooks from the preloaded library, without touching the job's script.
//
// Our constructor runs before Py_Initialize, so the hooks are installed later, on the main
// thread with the GIL held (research/interception.md §1e), by whichever comes first:
//  1. the first dlopen() after the interpreter is initialized, from a thread holding the GIL
//     (an extension import: at the latest `import torch`, before Dynamo or any training thread);
//  2. a pending call (Py_AddPendingCall) queued by a short-lived watcher thread as soon as
//     Py_IsInitialized() turns 1 — Debian's static python imports the stdlib without dlopen.
// Both run with the GIL held, which serializes them; the first one installs.
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "preload/core/config.h"
#include "preload/core/log.h"
#include "preload/core/py_mode.h"
#include "preload/core/symbols.h"
#include "preload/core/versioned_entry.h"
#include "preload/python/cpython_internal.h"

namespace perftracker::preload::cpython {

using DlopenFn = void* (*)(const char*, int);
DlopenFn g_real_dlopen = nullptr;

namespace {

enum : int { kPassive = 0, kArmed = 1, kDone = 2 };
std::atomic<int> g_state{kPassive};
pthread_t g_main_thread;
Config g_config;

int AdoptMainThread(void*) {
  AdoptAsMainThread();
  return 0;
}

// Points the interpreter's frame evaluator at EvalHook, chaining whatever was there.
void InstallEvalHook() {
  PyInterpreterState* interp = g_api.InterpreterGet();
  EvalFrameFn current = g_api.GetEvalFrameFunc(interp);
  if (current == nullptr) current = g_api.eval_frame_default;
  if (current != g_api.eval_frame_default) {
    // Installed before us (a debugger's frame evaluator, Dynamo already enabled): it did not
    // capture us, so chaining it cannot recurse; but if it later restores its own saved
    // evaluator, we are gone (reported by the gc-time check in cpython_gc.cpp's caller).
    Warn("another Python frame evaluator is installed; chaining to it");
  }
  g_hook.previous = current;
  g_api.SetEvalFrameFunc(interp, &EvalHook);
}

}  // namespace

// Whether the installed (foreign) evaluator still reaches EvalHook: evaluates one frame of a
// function of ours, unrecorded, and looks for it. No hook call since the last check alone does
// not tell: a thread may just have been in C code (or in two gc.collect() calls in a row).
// GIL held; any Python error is cleared, and then the answer is "no".
bool CallsUs() {
  static PyObject* probe = nullptr;  // `lambda: None`, kept for the process
  PyObject *type, *value, *traceback;
  g_api.ErrFetch(&type, &value, &traceback);
  if (probe == nullptr) {
    PyObject* builtins = g_api.ImportModule("builtins");
    PyObject* name = g_api.UnicodeFromString("eval");
    PyObject* source = g_api.UnicodeFromString("lambda: None");
    PyObject* globals = g_api.DictNew();
    if (builtins && name && source && globals) {
      probe = g_api.CallMethodObjArgs(builtins, name, source, globals, nullptr);
    }
    PyObject* code = probe != nullptr ? g_api.GetAttrString(probe, "__code__") : nullptr;
    if (code == nullptr || g_api.CodeSetExtra(code, g_hook.extra_index, UnrecordedInfo()) != 0) {
      if (probe != nullptr) g_api.DecRef(probe);
      probe = nullptr;
    }
    for (PyObject* o : {code, globals, source, name, builtins}) {
      if (o != nullptr) g_api.DecRef(o);
    }
  }
  bool called = false;
  if (probe != nullptr) {
    const uint64_t before = ThreadHookCalls();
    PyObject* result = g_api.CallObject(probe, nullptr);
    called = ThreadHookCalls() != before;
    if (result != nullptr) g_api.DecRef(result);
  }
  g_api.ErrClear();
  g_api.ErrRestore(type, value, traceback);
  return called;
}

namespace {
// Set once the slot's loss was handled (reinstalled, or reported); read by the writer's watch.
std::atomic<bool> g_eval_loss_reported{false};
std::atomic<bool> g_check_pending{false};
std::atomic<bool> g_python_exiting{false};
PyInterpreterState* g_interp = nullptr;

int PendingCheck(void*) {
  g_check_pending.store(false);
  CheckEvalHook();
  return 0;
}

// The writer thread, about once a second, without the GIL: a gc may be rare (or disabled), so
// the slot is also watched from outside. Reading interp->eval_frame is a plain load; the check
// itself runs on the main thread with the GIL, at its next bytecode boundary.
void WatchEvalHook() {
  // Not g_hook.monitoring: that is the GIL's to read, and only a handled loss starts it.
  if (g_python_exiting.load() || g_interp == nullptr || g_eval_loss_reported.load()) return;
  if (g_api.GetEvalFrameFunc(g_interp) == &EvalHook) return;
  if (!g_check_pending.exchange(true) && g_api.AddPendingCall(&PendingCheck, nullptr) != 0) {
    g_check_pending.store(false);  // the queue is full: next second
  }
}
}  // namespace

void MarkPythonExiting() { g_python_exiting.store(true); }

// GIL held (gc callback, or a pending call the writer's watch scheduled). Dynamo-style tools
// save the evaluator they find and restore it later;
// one that enabled itself before us restores the default and silently drops our hook. A reset
// to the default is undone. A foreign evaluator that no longer calls us (no hook call on this
// thread since the last check, nor for a probe frame) cannot be undone without fighting its owner:
// on 3.12+ recording goes on through sys.monitoring; before, the loss is reported once.
void CheckEvalHook() {
  static uint64_t last_calls = 0;
  if (g_hook.previous == nullptr || g_eval_loss_reported.load()) return;
  PyInterpreterState* interp = g_api.InterpreterGet();
  const EvalFrameFn current = g_api.GetEvalFrameFunc(interp);
  const uint64_t calls = ThreadHookCalls();
  if (current == &EvalHook) {
    last_calls = calls;
    return;
  }
  if (current == g_api.eval_frame_default || current == nullptr) {
    Warn("the Python frame evaluator was reset by another tool; reinstalled");
    g_api.SetEvalFrameFunc(interp, &EvalHook);
    g_eval_loss_reported.store(true);
  } else if (calls == last_calls && !CallsUs()) {
    int tool_id = 0;
    if (StartMonitoring(&tool_id)) {
      Warn(
          "another tool replaced the Python frame evaluator; recording through sys.monitoring "
          "(tool id %d)",
          tool_id);
    } else {
      Warn(
          "another tool replaced the Python frame evaluator; Python functions are no longer "
          "recorded");
    }
    g_eval_loss_reported.store(true);
  }
  last_calls = calls;
}

namespace {

// GIL held. Runs once; every failure leaves Python pass-through after at most one warning.
void Install() {
  int armed = kArmed;
  if (!g_state.compare_exchange_strong(armed, kDone)) return;
  if (!Active()) return;  // the recorder is off (no ring file): stay out of the interpreter
  const int minor = InterpreterMinorVersion(g_config.py_force_version);
  // A free-threaded build (3.13t) has another object header and no GIL to serialize the hook.
  if (std::strstr(g_api.GetVersion(), "free-threading") != nullptr) {
    Warn("free-threaded Python (%s) is not supported; Python functions are not recorded",
         g_api.GetVersion());
    return;
  }
  if (!LayoutFor(minor, &g_hook.layout)) {
    Warn("Python %s is not supported (3.9-3.13); Python functions are not recorded",
         g_config.py_force_version ? g_config.py_force_version : g_api.GetVersion());
    return;
  }
  if (!ResolveApi()) return;
  g_hook.extra_index = g_api.RequestCodeExtraIndex(nullptr);
  if (g_hook.extra_index < 0) {
    g_api.ErrClear();
    Warn("no free co_extra index; Python functions are not recorded");
    return;
  }
  g_hook.depth_bound = static_cast<uint32_t>(g_config.py_depth);
  g_hook.window_iters = static_cast<uint32_t>(std::max<uint64_t>(g_config.window_iters, 1));
  bool mode_ok = true;
  const bool detailed = ParseDetailedMode(g_config.mode, &mode_ok);
  if (!mode_ok) Warn("PERFTRACKER_MODE=%s is neither light nor detailed; light", g_config.mode);
  g_py_mode.forced.store(detailed);
  g_py_mode.detailed.store(detailed);
  g_hook.light_min_ns = detailed ? 0 : g_config.light_min_us * 1000;
  g_hook.time_every =
      static_cast<uint32_t>(std::clamp<uint64_t>(g_config.py_time_every, 1, 1u << 20));
  if (g_hook.time_every > 1 && !InitUntimedCounts(static_cast<uint32_t>(
                                   std::min<uint64_t>(g_config.max_functions, 1u << 24)))) {
    g_hook.time_every = 1;
  }
  InitRules(g_config.step_function, g_config.py_include);
  InstallEvalHook();
  if (pthread_equal(pthread_self(), g_main_thread)) {
    AdoptAsMainThread();
  } else {
    g_api.AddPendingCall(&AdoptMainThread, nullptr);
  }
  SeedCurrentThread(g_api.ThreadStateGet());
  SetPythonStackProvider(&MainThreadStack);
  g_interp = g_api.InterpreterGet();
  SetWriterTick(&WatchEvalHook);
  InstallGcCallback();
  InstallAtexitFlush();
}

int PendingInstall(void*) {
  Install();
  return 0;
}

void* Watch(void*) {
  const timespec tick = {0, 1000 * 1000};
  for (int i = 0; i < 600 * 1000 && g_state.load() == kArmed; ++i) {  // at most ten minutes
    if (g_api.IsInitialized() && g_api.AddPendingCall(&PendingInstall, nullptr) == 0) break;
    nanosleep(&tick, nullptr);
  }
  return nullptr;
}

[[gnu::constructor]] void Arm() {
  g_real_dlopen = reinterpret_cast<DlopenFn>(dlsym(RTLD_NEXT, "dlopen"));
  g_config = ProcessConfig();
  // Active() after bootstrap's constructor (priority 101, before ours): a rank or a helper of
  // one that is recording.
  if (!g_config.enable || !g_config.python || !Active()) return;
  if (!ResolveBootstrapApi()) return;  // not a Python interpreter
  if (g_config.py_depth < 1) g_config.py_depth = 1;
  g_main_thread = pthread_self();
  g_state.store(kArmed);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_t watcher;
  if (pthread_create(&watcher, &attr, &Watch, nullptr) != 0) {
    Warn("could not start the Python install watcher; relying on dlopen");
  }
  pthread_attr_destroy(&attr);
}

}  // namespace

// Interposed dlopen: the install point of the first extension import. glibc's dlopen finds the
// calling object from its return address (its DT_RUNPATH is searched, its namespace used), so
// the interposer must not be the caller: an assembly entry runs the pre-hook, then tail-jumps
// to the real dlopen with the caller's return address still on the stack.
extern "C" [[gnu::visibility("hidden"), gnu::used]] void* perftracker_dlopen_prehook() {
  // Before the load, as the entry never sees it end: a lookup racing with the load itself may
  // record a miss that lasts until the next dlopen (symbols.h).
  NoteLibraryLoad();
  if (g_real_dlopen == nullptr) {  // a constructor of an earlier object called dlopen
    g_real_dlopen = reinterpret_cast<DlopenFn>(dlsym(RTLD_NEXT, "dlopen"));
  }
  if (g_state.load(std::memory_order_relaxed) == kArmed && g_api.IsInitialized() &&
      g_api.GILStateCheck()) {
    Install();
  }
  return reinterpret_cast<void*>(g_real_dlopen);
}

}  // namespace perftracker::preload::cpython

// The entry is exported as dlopen@<base> and dlopen@@GLIBC_2.34 (exports.map.in): programs
// reference glibc's dlopen by version, and an unversioned definition would not be theirs to bind.
#define PT_DLOPEN_VERSIONS                                                     \
  ".symver perftracker_dlopen_entry, dlopen@" PERFTRACKER_GLIBC_BASE "\n"    \
  ".symver perftracker_dlopen_entry, dlopen@@GLIBC_2.34\n"

#if defined(__x86_64__)
// Saves the two argument registers, keeps the stack 16-byte aligned across the call, and jumps
// to the address the pre-hook returns.
asm(R"(
  .text
  .globl perftracker_dlopen_entry
  .type perftracker_dlopen_entry, @function
perftracker_dlopen_entry:
  .cfi_startproc
  endbr64
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  call perftracker_dlopen_prehook
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  jmp *%rax
  .cfi_endproc
  .size perftracker_dlopen_entry, .-perftracker_dlopen_entry
)" PT_DLOPEN_VERSIONS);
#elif defined(__aarch64__)
// Saves the argument registers and the link register across the call, restores the caller's
// link register, and branches (not calls) to the address the pre-hook returns.
asm(R"(
  .text
  .globl perftracker_dlopen_entry
  .type perftracker_dlopen_entry, %function
  .p2align 4
perftracker_dlopen_entry:
  .cfi_startproc
  hint 34
  stp x29, x30, [sp, -32]!
  .cfi_def_cfa_offset 32
  .cfi_offset 29, -32
  .cfi_offset 30, -24
  mov x29, sp
  stp x0, x1, [sp, 16]
  bl perftracker_dlopen_prehook
  mov x16, x0
  ldp x0, x1, [sp, 16]
  ldp x29, x30, [sp], 32
  .cfi_restore 30
  .cfi_restore 29
  .cfi_def_cfa_offset 0
  br x16
  .cfi_endproc
  .size perftracker_dlopen_entry, .-perftracker_dlopen_entry
)" PT_DLOPEN_VERSIONS);
#else
// Elsewhere there is no dlopen entry (it must be a tail jump, see above): the pending-call path
// alone installs the hooks.
#endif
