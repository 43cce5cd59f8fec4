// State shared by the CPython hook files (preload/hooks/cpython_*.cpp). Not for other hook
// families: they use preload/python_context.h.
//
// Threading: everything here is written with the GIL held (install, first sight of a code
// object, slot-cache misses) and read by the eval hook, which also holds the GIL. The writer
// thread only reads CodeInfo::name of entries on the main thread's shadow stack; a CodeInfo is
// never freed nor changed after it is published, so that racy read is memory-safe.
#pragma once

#include <cstdint>

#include "preload/cpython_api.h"
#include "preload/recorder.h"
#include "schemas/format/window.h"

namespace perftracker::preload::cpython {

// What we know about one code object, computed once on its first evaluation and hung on the
// code object through its co_extra slot.
struct CodeInfo {
  static constexpr int kCacheWays = 4;
  char name[224];  // "file:firstline:qualname", truncated; file relative to site-packages
  format::FunctionKind kind = format::FunctionKind::kPython;
  bool record = true;   // false: excluded by PERFTRACKER_PY_INCLUDE (time folds into the caller)
  bool always = false;  // recognized (step, dataloader, sync, collective, backward): recorded
                        // beyond PERFTRACKER_PY_DEPTH
  bool step = false;    // the iteration function: MarkIteration when it returns
  bool light = false;   // cheap: folded into the caller outside detailed windows
  uint8_t next_way = 0;
  // Light mode's cost probe: calls still to be timed before `light` is decided (0: decided, or
  // never folded), and their inclusive time so far.
  static constexpr uint8_t kProbeCalls = 32;
  uint8_t probe_left = 0;
  uint64_t probe_ns = 0;
  // Interned slot per parent slot: a call path of bounded depth is (code, parent slot).
  Slot parents[kCacheWays] = {kNoSlot, kNoSlot, kNoSlot, kNoSlot};
  Slot slots[kCacheWays] = {kNoSlot, kNoSlot, kNoSlot, kNoSlot};
  bool filled[kCacheWays] = {};
};

// Interpreter-wide state of the installed hook.
struct HookState {
  FrameLayout layout;
  ssize_t extra_index = -1;
  EvalFrameFn previous = nullptr;  // chained: the default evaluator, or a tool installed earlier
  bool monitoring = false;         // sys.monitoring took over (3.12+): EvalHook passes through
  uint32_t depth_bound = 12;
  uint32_t window_iters = 10;
  uint64_t light_min_ns = 0;  // 0: nothing is folded for being cheap
  uint64_t iterations = 0;    // step functions that returned
};
extern HookState g_hook;

// cpython_code.cpp: recognition rules (defaults, PERFTRACKER_STEP_FUNCTION,
// PERFTRACKER_PY_INCLUDE), parsed once at install.
void InitRules(const char* step_function, const char* include);
// First sight of a code object: names it and classifies it. nullptr when it cannot be named.
[[gnu::cold]] CodeInfo* NewCodeInfo(PyObject* code);
// The first calls of a function that light mode may fold: decides `light` after kProbeCalls.
// Only leaves fold (no recorded callee while probed): folding one changes no other function's
// call path, so a rank that decides differently near the threshold differs in that function
// alone, never in the ids of a whole subtree.
[[gnu::cold]] void ProbeCost(CodeInfo* info, uint64_t inclusive_ns, bool had_callees);
// Cache miss: interns (kind, name, parent) with the recorder and remembers the slot.
[[gnu::cold]] Slot InternSlot(CodeInfo* info, Slot parent);

// cpython_eval.cpp
PyObject* EvalHook(PyThreadState* tstate, void* frame, int throwflag);
// Pushes the frames already running on the calling thread (outermost first) so that the calls
// they make get the right parents. GIL held.
void SeedCurrentThread(PyThreadState* tstate);
// Makes the calling thread the one whose stack the live slot shows.
void AdoptAsMainThread();
void MainThreadStack(std::vector<std::string>* frames);
// Frames the hook saw on the calling thread so far (recorded or not).
uint64_t ThreadHookCalls();
// The facts of a code object that is never recorded (our own probe function).
CodeInfo* UnrecordedInfo();
// Time the calling thread's innermost recorded frame spent in something recorded on its own
// (a GC pause): counted as a callee's, so it leaves the frame's self time. GIL held.
void ChargeToCaller(uint64_t ns);

// sys.monitoring events (3.12+), fed to the same shadow stack as EvalHook: a frame of `code`
// starts (PY_START, PY_RESUME, PY_THROW) or ends (PY_RETURN, PY_YIELD, PY_UNWIND). Frames that
// began before monitoring did end unmatched and are left to whoever pushed them. GIL held.
void MonitorStart(PyObject* code);
void MonitorEnd();

// cpython_install.cpp: notices when another tool took the frame-evaluation slot. GIL held.
void CheckEvalHook();

// cpython_monitoring.cpp: records through sys.monitoring (tool id 4, else 3) from now on;
// false (Python error cleared) before 3.12 or when both tool ids are taken. GIL held.
bool StartMonitoring(int* tool_id);

// cpython_gc.cpp: gc.callbacks → kGc events, atexit → Flush(). GIL held.
void InstallGcCallback();
void InstallAtexitFlush();

// The code object of an evaluated frame, or nullptr for frames that are not user code.
inline PyObject* CodeOfFrame(const void* frame) {
  auto* code = ReadField<PyObject*>(frame, g_hook.layout.code_offset);
  return code != nullptr && TypeOf(code) == g_api.code_type ? code : nullptr;
}

// The frame the calling thread is executing (the caller of a frame about to be evaluated).
inline const void* CurrentFrameOf(const PyThreadState* tstate) {
  const FrameLayout& l = g_hook.layout;
  const void* p = ReadField<const void*>(tstate, l.tstate_frame_offset);
  if (l.cframe_current_offset >= 0 && p != nullptr) {
    p = ReadField<const void*>(p, static_cast<size_t>(l.cframe_current_offset));
  }
  return p;
}

}  // namespace perftracker::preload::cpython
