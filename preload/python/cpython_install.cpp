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
#include "preload/core/entry_call.h"
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
    // capture us, so chaining it cannot recurse; if it later restores the evaluator it saved
    // (the default), we are gone until the watch reinstalls us (cpython_watch.cpp).
    Warn("another Python frame evaluator is installed; chaining to it");
  }
  g_hook.previous = current;
  g_api.SetEvalFrameFunc(interp, &EvalHook);
}

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
  StartEvalWatch();
  InstallGcCallback();
  InstallAtexitFlush();
  InstallForkRecording();
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
)" PT_ENTRY_CALL("perftracker_dlopen_prehook") R"(
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
)" PT_ENTRY_CALL("perftracker_dlopen_prehook") R"(
  mov x16, x0
)" PT_ENTRY_RESTORE R"(
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
