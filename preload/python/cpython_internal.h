// State shared by the CPython hook files (preload/python/cpython_*.cpp). Not for other hook
// families: they use preload/core/python_context.h.
//
// Threading: everything here is written with the GIL held (install, first sight of a code
// object, slot-cache misses) and read by the eval hook, which also holds the GIL. The writer
// thread only reads CodeInfo::name of entries on the main thread's shadow stack; a CodeInfo is
// never freed nor changed after it is published, so that racy read is memory-safe.
#pragma once

#include <cstdint>

#include "preload/core/recorder.h"
#include "preload/python/cpython_api.h"
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
  // A plain function (not recognized, not named by the user): while its calls are cheap
  // (mean_ns below kSampledBelowNs) they are counted, and timed 1 in PERFTRACKER_PY_TIME_EVERY.
  bool may_sample = false;
  bool sampled = false;
  bool had_callees = false;  // a recorded callee ran during the probe: never light
  uint8_t next_way = 0;
  // The cost probe: calls still to be timed before `light` and `sampled` are decided (0:
  // decided, or never probed), and their inclusive time so far.
  static constexpr uint8_t kProbeCalls = 32;
  uint8_t probe_left = 0;
  // Mean inclusive time of recent timed calls: the time an untimed call adds to its caller's
  // callees. Written with the GIL held, like everything here.
  uint32_t mean_ns = 0;
  uint64_t probe_ns = 0;
  uint64_t probe_max_ns = 0;  // left out of the probe's mean: one preempted call must not decide
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
  // co_extra is read in place (layout.co_extra_offset) once first sights proved the offset;
  // until then, and if one disproves it, through PyUnstable_Code_GetExtra.
  bool direct_extra = false;
  bool direct_extra_failed = false;
  uint8_t direct_extra_proofs = 0;
  uint32_t depth_bound = 12;
  uint32_t window_iters = 10;
  uint64_t light_min_ns = 0;  // 0: nothing is folded for being cheap
  uint32_t time_every = 1;    // PERFTRACKER_PY_TIME_EVERY: 1 times every call
  uint64_t iterations = 0;    // step functions that returned
};
extern HookState g_hook;

// cpython_code.cpp: recognition rules (defaults, PERFTRACKER_STEP_FUNCTION,
// PERFTRACKER_PY_INCLUDE), parsed once at install.
void InitRules(const char* step_function, const char* include);
// First sight of a code object: names it and classifies it. nullptr when it cannot be named.
[[gnu::cold]] CodeInfo* NewCodeInfo(PyObject* code);
// Below this mean inclusive time a plain function's calls are timed on a sample: two clock
// readings cost ~20 ns (rdtsc is ~10 ns on the AMD EPYC VMs we measured), 1% of such a call.
inline constexpr uint32_t kSampledBelowNs = 2000;

// The first calls of a function that light mode may fold or that may be sampled: decides
// `light` and `sampled` after kProbeCalls. Only leaves fold (no recorded callee while probed):
// folding one changes no other function's call path, so a rank that decides differently near
// the threshold differs in that function alone, never in the ids of a whole subtree. Sampling
// changes no id at all.
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
// In a forked child, on its only thread: the frames open now (the parent's, down to the caller of
// fork) never return there, and do not count toward PERFTRACKER_PY_DEPTH: a worker's own calls
// are recorded as deep as a spawned one's.
void RebaseForkedThread();
void MainThreadStack(std::vector<std::string>* frames);
// The table of untimed calls (calls of sampled functions), one entry per slot below `capacity`;
// false when it cannot be allocated (every call is then timed). Install, GIL held.
bool InitUntimedCounts(uint32_t capacity);
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

// cpython_watch.cpp: notices when another tool took the frame-evaluation slot, or gave it back.
// GIL held; cheap when nothing changed (no Python call).
void CheckEvalHook();
// Starts the writer thread's watch of the slot. At install, GIL held.
void StartEvalWatch();
// The interpreter is finalizing (Python atexit): the writer stops reading its state.
void MarkPythonExiting();

// cpython_monitoring.cpp: records through sys.monitoring (tool id 4, else 3) from now on;
// false (Python error cleared) before 3.12 or when both tool ids are taken. GIL held.
bool StartMonitoring(int* tool_id);

// cpython_gc.cpp: gc.callbacks → kGc events, atexit → Flush(), os.register_at_fork →
// RecordForkedChild() in a child that runs on in Python. GIL held.
void InstallGcCallback();
void InstallAtexitFlush();
void InstallForkRecording();

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
