// The PEP 523 frame-evaluation hook and the per-thread shadow stack.
//
// Every Python frame evaluation (call, generator/coroutine resumption) on every thread of the
// interpreter passes through EvalHook with the GIL held; installing a hook also makes 3.11+ stop
// inlining Python-to-Python calls, so none is missed (research/interception.md §1a). Entry and
// exit are one C frame, so inclusive time is exact and exceptions are covered.
//
// Hot path rules: no allocation, no locks, no syscalls beyond the vDSO clock (NowNs), no Python
// calls. The per-code facts live on the code object (co_extra); the slot of (code, parent slot)
// is a 4-way cache in CodeInfo. Misses and first sights go to [[gnu::cold]] functions.
//
// Timing: the two clock readings of a call cost more than everything else the hook does (rdtsc
// is ~10 ns on the AMD VMs we measured; 3.12's call itself ~14 ns). Calls of functions that
// proved cheap (CodeInfo::sampled) are counted at every call and timed at random intervals of
// PERFTRACKER_PY_TIME_EVERY calls on average; the aggregator scales their time from the timed
// ones, and an untimed call adds its function's recent mean to its caller's callee time, so the
// caller's self time stays right. Untimed calls are not events: they are counted per slot in one
// table, which the GIL serializes (every evaluation holds it), and flushed as one event per slot
// at every iteration end, at the first untimed call after a window was written, and at exit.
//
// Shadow stack: written only by its own thread. The writer thread reads the main thread's
// (MainThreadStack) without synchronization beyond relaxed/acquire loads: a torn read gives a
// stale frame name, never a dangling pointer (CodeInfo is immortal).
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>

#include "preload/core/py_mode.h"
#include "preload/core/python_context.h"
#include "preload/python/cpython_internal.h"

namespace perftracker::preload {
namespace cpython {
namespace {

struct ShadowFrame {
  const void* frame;  // the evaluated frame (identifies seeds when they end unseen)
  CodeInfo* info;
  Slot slot;
  uint32_t epoch;     // g_slice_epoch when start_ns was last set
  uint64_t start_ns;  // kUntimed: counted only
  uint64_t child_ns;  // inclusive time of recorded callees: self = duration - child
};
constexpr uint64_t kUntimed = 0;
static_assert(sizeof(ShadowFrame) == 40);

// Frames deeper than this are passed through unrecorded (their time stays in the caller).
constexpr uint32_t kCapacity = 256;
// sys.monitoring frames deeper than this (recorded or not) are not recorded.
constexpr uint32_t kMonitorWords = 16;
constexpr uint32_t kMonitorCapacity = kMonitorWords * 64;

struct ShadowStack {
  uint32_t depth;         // published with release stores for the live-slot reader
  uint32_t seeds;         // entries [0, seeds) were running at install: their end is never seen
  uint32_t base;          // a forked child's: entries [0, base) are its parent's callers of fork,
                          // and the depth bound counts from there
  uint32_t steps;         // nesting of step functions: only the outermost one ends an iteration
  uint64_t calls;         // evaluations seen (CheckEvalHook: are we still being called?)
  uint32_t untimed_left;  // calls of sampled functions before the next timed one
  uint64_t random;        // xorshift64 state for the sampling intervals (0: not seeded)
  ShadowFrame frames[kCapacity];
  // sys.monitoring has no C frame around a call: its start and end events pair by nesting.
  // Bit i says whether the frame that started at monitoring depth i pushed a shadow frame.
  uint32_t monitor_depth;
  uint64_t monitor_pushed[kMonitorWords];
};

// Zero-initialized static TLS of the preloaded library: no allocation, no "initialized?" check.
thread_local ShadowStack t_stack [[gnu::tls_model("initial-exec")]];

// Untimed calls per slot since the last flush. GIL held for every access; slots >= capacity are
// never left untimed.
struct UntimedCounts {
  uint32_t* count = nullptr;
  Slot* touched = nullptr;  // the slots whose count is not 0, in first-call order
  uint32_t touched_n = 0;
  uint32_t capacity = 0;
  uint32_t slice_epoch = 0;  // g_slice_epoch at the last flush: a window written since -> flush
  uint64_t epoch = 0;        // g_event_epoch at the first count since the last flush
};
UntimedCounts g_untimed;
std::atomic<ShadowStack*> g_main_stack{nullptr};

CodeInfo g_unnamed = [] {
  CodeInfo c;
  c.record = false;
  return c;
}();

uint32_t LoadDepth(const ShadowStack& s) { return __atomic_load_n(&s.depth, __ATOMIC_ACQUIRE); }
void StoreDepth(ShadowStack& s, uint32_t d) { __atomic_store_n(&s.depth, d, __ATOMIC_RELEASE); }

// _PyCodeObjectExtra, the same in 3.9-3.13.
struct CodeExtra {
  ssize_t size;
  void* extras[1];
};

// The co_extra offset of the layout table is right when setting our extra turns that field
// from NULL into a block whose entry at our index is what we set: nothing else in a code object
// changes then. Proven on kDirectExtraProofs code objects (never dereferencing the field before
// it is proven), the hot path reads it in place.
constexpr uint8_t kDirectExtraProofs = 4;
void ProveDirectExtra(PyObject* code, CodeInfo* info) {
  const size_t offset = g_hook.layout.co_extra_offset;
  HookState& h = g_hook;
  const bool was_null = offset != 0 && ReadField<const CodeExtra*>(code, offset) == nullptr;
  g_api.CodeSetExtra(code, h.extra_index, info);
  if (!was_null) return;  // another tool's extras were there: proves nothing
  const CodeExtra* extra = ReadField<const CodeExtra*>(code, offset);
  if (extra != nullptr && extra->size > h.extra_index && extra->extras[h.extra_index] == info) {
    h.direct_extra = ++h.direct_extra_proofs >= kDirectExtraProofs;
  } else {
    h.direct_extra_failed = true;
  }
}

[[gnu::cold, gnu::noinline]] CodeInfo* FirstSight(PyObject* code) {
  CodeInfo* info = NewCodeInfo(code);
  if (info == nullptr) info = &g_unnamed;
  if (!g_hook.direct_extra && !g_hook.direct_extra_failed) {
    ProveDirectExtra(code, info);
  } else {
    g_api.CodeSetExtra(code, g_hook.extra_index, info);
  }
  return info;
}

inline CodeInfo* InfoOf(PyObject* code) {
  void* found = nullptr;
  if (g_hook.direct_extra) [[likely]] {
    const auto* extra = ReadField<const CodeExtra*>(code, g_hook.layout.co_extra_offset);
    if (extra != nullptr && extra->size > g_hook.extra_index)
      found = extra->extras[g_hook.extra_index];
  } else {
    g_api.CodeGetExtra(code, g_hook.extra_index, &found);  // cannot fail for a code object
  }
  return found != nullptr ? static_cast<CodeInfo*>(found) : FirstSight(code);
}

inline Slot SlotOf(CodeInfo* info, Slot parent) {
  for (int i = 0; i < CodeInfo::kCacheWays; ++i) {
    if (info->parents[i] == parent && info->filled[i]) return info->slots[i];
  }
  return InternSlot(info, parent);
}

// The top of the stack is a seed: seeds may have returned since install, unseen. Keep the seeds
// up to the innermost one still on the interpreter's stack: the caller itself, or an ancestor of
// an unrecorded (folded) caller. None left (e.g. the main module starting after an import that
// installed us): drop them all.
[[gnu::cold, gnu::noinline]] void TrimSeeds(ShadowStack& s, const PyThreadState* tstate) {
  constexpr int kMaxWalk = 64;
  const void* fr = CurrentFrameOf(tstate);
  for (int walked = 0; fr != nullptr && walked < kMaxWalk; ++walked) {
    for (uint32_t i = s.seeds; i-- > 0;) {
      if (s.frames[i].frame == fr) {
        s.seeds = i + 1;
        StoreDepth(s, i + 1);
        return;
      }
    }
    fr = ReadField<const void*>(fr, g_hook.layout.previous_offset);
  }
  if (fr == nullptr) {
    s.seeds = 0;
    StoreDepth(s, 0);
  }
}

[[gnu::cold, gnu::noinline]] void FlushUntimed() {
  UntimedCounts& u = g_untimed;
  for (uint32_t i = 0; i < u.touched_n; ++i) {
    const Slot slot = u.touched[i];
    RecordUntimedCalls(slot, u.count[slot], u.epoch);
    u.count[slot] = 0;
  }
  u.touched_n = 0;
  u.slice_epoch = g_slice_epoch.load(std::memory_order_relaxed);
}

[[gnu::cold, gnu::noinline]] void FirstUntimed(Slot slot) {
  UntimedCounts& u = g_untimed;
  if (u.touched_n == 0) u.epoch = g_event_epoch.load(std::memory_order_relaxed);
  u.touched[u.touched_n++] = slot;
}

inline void CountUntimed(Slot slot) {
  UntimedCounts& u = g_untimed;
  if (u.slice_epoch != g_slice_epoch.load(std::memory_order_relaxed)) [[unlikely]]
    FlushUntimed();
  uint32_t& count = u.count[slot];
  if (count == 0) [[unlikely]]
    FirstUntimed(slot);
  ++count;
}

// An iteration ended: the next one may begin a window, where the mode switches (py_mode.h).
// The untimed calls so far belong to it: flushed before its marker.
[[gnu::cold, gnu::noinline]] void EndIteration(uint64_t end) {
  FlushUntimed();
  MarkIteration(end);
  const uint64_t n = ++g_hook.iterations;
  g_py_mode.python_iterations.store(n, std::memory_order_relaxed);
  if (n % g_hook.window_iters == 0) ApplyPyModeAt(n / g_hook.window_iters);
}

[[gnu::cold, gnu::noinline]] bool ReloadTimeSample(ShadowStack& s) {
  if (s.random == 0) s.random = reinterpret_cast<uintptr_t>(&s) | 1;
  s.untimed_left = NextSampleInterval(s.random, g_hook.time_every);
  return true;
}

inline bool TimeThisCall(ShadowStack& s, const CodeInfo* info, Slot slot) {
  if (!info->sampled || slot >= g_untimed.capacity) return true;
  if (s.untimed_left > 1) {
    --s.untimed_left;
    return false;
  }
  return ReloadTimeSample(s);
}

// A timed call of a function that may be sampled: the mean follows the function's recent calls
// (1/8 weight each), so one that turns slow is timed at every call again within a few samples.
// A sample counts for at most 16 times the mean: one call preempted for a scheduler tick would
// otherwise raise the estimate charged for the next untimed calls by hundreds of microseconds
// and erase their caller's own time; a function that really turns slow still reaches the
// threshold in about four samples.
inline void Remean(CodeInfo* info, uint64_t duration) {
  const auto mean = static_cast<int64_t>(info->mean_ns);
  const uint64_t cap = mean > 0 ? 16 * static_cast<uint64_t>(mean) : INT32_MAX;
  const auto d = static_cast<int64_t>(std::min<uint64_t>({duration, cap, INT32_MAX}));
  info->mean_ns = static_cast<uint32_t>(mean + (d - mean) / 8);
  info->sampled = info->mean_ns < kSampledBelowNs;
}

inline void FinishUntimed(ShadowStack& s, const ShadowFrame& f) {
  const uint32_t depth = s.depth;
  if (depth > 0) s.frames[depth - 1].child_ns += f.info->mean_ns;
  if (Active()) CountUntimed(f.slot);
}

inline void Finish(ShadowStack& s, const ShadowFrame& f, CodeInfo* info, uint64_t end) {
  const uint64_t duration = end - f.start_ns;
  const uint32_t depth = s.depth;
  if (depth > 0) s.frames[depth - 1].child_ns += duration;
  if (info->probe_left != 0) [[unlikely]] {
    ProbeCost(info, duration, f.child_ns != 0);
  } else if (info->may_sample) {
    Remean(info, duration);
  }
  const bool iteration_end = info->step && --s.steps == 0;
  if (!Active()) return;  // a forked child: the recorder is off
  const uint64_t self = f.child_ns < duration ? duration - f.child_ns : 0;
  RecordCall(f.slot, end, duration, self);
  if (iteration_end) EndIteration(end);
}

// The open frames of this thread started before the last iteration end or window (g_slice_epoch):
// each reports the time it ran so far as a slice and starts again from now. Innermost first, so
// that a running callee's time is its caller's child time, as it will be when it returns.
[[gnu::cold, gnu::noinline]] void SliceOpenFrames(ShadowStack& s, uint32_t depth) {
  const uint32_t epoch = g_slice_epoch.load(std::memory_order_relaxed);
  const uint64_t now = NowNs();
  for (uint32_t i = depth; i-- > 0;) {
    ShadowFrame& f = s.frames[i];
    f.epoch = epoch;
    // An unrecorded seed, or an untimed call: its time is its caller's.
    if (!f.info->record || f.start_ns == kUntimed) continue;
    const uint64_t ran = now > f.start_ns ? now - f.start_ns : 0;
    if (i > 0) s.frames[i - 1].child_ns += ran;
    RecordSlice(f.slot, now, ran, f.child_ns < ran ? ran - f.child_ns : 0);
    f.start_ns = now;
    f.child_ns = 0;
  }
}

// One load and compare on every evaluation.
inline void SliceIfStale(ShadowStack& s, uint32_t depth) {
  if (depth > 0 && s.frames[depth - 1].epoch != g_slice_epoch.load(std::memory_order_relaxed))
      [[unlikely]] {
    SliceOpenFrames(s, depth);
  }
}

inline bool Folded(const CodeInfo* info, const ShadowStack& s, uint32_t depth) {
  const uint32_t own = depth - std::min(depth, s.base);
  return !info->record || depth >= kCapacity || (own >= g_hook.depth_bound && !info->always) ||
         (info->light && !g_py_mode.detailed.load(std::memory_order_relaxed));
}

}  // namespace

PyObject* EvalHook(PyThreadState* tstate, void* frame, int throwflag) {
  const EvalFrameFn previous = g_hook.previous;
  PyObject* code = CodeOfFrame(frame);
  if (code == nullptr || !Active() || g_hook.monitoring) return previous(tstate, frame, throwflag);
  CodeInfo* info = InfoOf(code);
  ShadowStack& s = t_stack;
  ++s.calls;
  uint32_t depth = s.depth;
  if (depth == s.seeds && depth > 0) {
    TrimSeeds(s, tstate);
    depth = s.depth;
  }
  SliceIfStale(s, depth);
  if (Folded(info, s, depth)) return previous(tstate, frame, throwflag);
  const Slot slot = SlotOf(info, depth > 0 ? s.frames[depth - 1].slot : kNoSlot);
  if (slot == kNoSlot) return previous(tstate, frame, throwflag);  // function table full
  ShadowFrame& f = s.frames[depth];
  f.frame = frame;
  f.info = info;
  f.slot = slot;
  f.child_ns = 0;
  f.epoch = g_slice_epoch.load(std::memory_order_relaxed);
  s.steps += info->step;
  StoreDepth(s, depth + 1);
  if (!TimeThisCall(s, info, slot)) {  // never a step function: those are not sampled
    f.start_ns = kUntimed;
    PyObject* result = previous(tstate, frame, throwflag);
    StoreDepth(s, depth);
    FinishUntimed(s, f);
    return result;
  }
  f.start_ns = NowNs();
  PyObject* result = previous(tstate, frame, throwflag);
  const uint64_t end = NowNs();
  StoreDepth(s, depth);
  Finish(s, f, info, end);
  return result;
}

void SeedCurrentThread(PyThreadState* tstate) {
  // Walk from the innermost running frame outwards, then store outermost first.
  const void* chain[kCapacity / 2];
  uint32_t n = 0;
  for (const void* fr = CurrentFrameOf(tstate); fr != nullptr && n < kCapacity / 2;
       fr = ReadField<const void*>(fr, g_hook.layout.previous_offset)) {
    const FrameLayout& l = g_hook.layout;
    if (l.owner_offset >= 0 &&
        ReadField<char>(fr, static_cast<size_t>(l.owner_offset)) == kFrameOwnedByCStack) {
      continue;
    }
    const PyObject* code = CodeOfFrame(fr);
    if (code != nullptr && !InReadOnlyImage(code)) chain[n++] = fr;
  }
  ShadowStack& s = t_stack;
  uint32_t depth = s.depth;
  if (depth != 0) return;  // already running hooked frames: nothing to seed
  for (uint32_t i = n; i-- > 0 && depth < kCapacity / 2;) {
    CodeInfo* info = InfoOf(CodeOfFrame(chain[i]));
    ShadowFrame& f = s.frames[depth];
    const Slot parent = depth > 0 ? s.frames[depth - 1].slot : kNoSlot;
    f = ShadowFrame{chain[i], info, info->record ? SlotOf(info, parent) : parent, 0, NowNs(), 0};
    ++depth;
  }
  s.seeds = depth;
  StoreDepth(s, depth);
}

void MonitorStart(PyObject* code) {
  if (!Active()) return;
  CodeInfo* info = InfoOf(code);
  ShadowStack& s = t_stack;
  ++s.calls;
  const uint32_t at = s.monitor_depth++;
  if (at >= kMonitorCapacity) return;
  uint64_t& word = s.monitor_pushed[at / 64];
  const uint64_t bit = uint64_t{1} << (at % 64);
  word &= ~bit;
  const uint32_t depth = s.depth;
  SliceIfStale(s, depth);
  if (Folded(info, s, depth)) return;
  const Slot slot = SlotOf(info, depth > 0 ? s.frames[depth - 1].slot : kNoSlot);
  if (slot == kNoSlot) return;
  word |= bit;
  s.frames[depth] =
      ShadowFrame{nullptr, info, slot, g_slice_epoch.load(std::memory_order_relaxed), 0, 0};
  s.steps += info->step;
  StoreDepth(s, depth + 1);
  s.frames[depth].start_ns = NowNs();
}

void MonitorEnd() {
  ShadowStack& s = t_stack;
  if (s.monitor_depth == 0 || !Active()) return;  // began before monitoring did
  const uint32_t at = --s.monitor_depth;
  if (at >= kMonitorCapacity || (s.monitor_pushed[at / 64] >> (at % 64) & 1) == 0) return;
  const uint64_t end = NowNs();
  const uint32_t depth = s.depth - 1;
  StoreDepth(s, depth);
  const ShadowFrame& f = s.frames[depth];
  Finish(s, f, f.info, end);
}

uint64_t ThreadHookCalls() { return t_stack.calls; }

bool InitUntimedCounts(uint32_t capacity) {
  UntimedCounts& u = g_untimed;
  u.count = static_cast<uint32_t*>(std::calloc(capacity, sizeof(uint32_t)));
  u.touched = static_cast<Slot*>(std::calloc(capacity, sizeof(Slot)));
  if (u.count == nullptr || u.touched == nullptr) {
    std::free(u.count);
    std::free(u.touched);
    u.count = u.touched = nullptr;
    return false;
  }
  u.capacity = capacity;
  AddFlushCallback(&FlushUntimed);
  return true;
}

CodeInfo* UnrecordedInfo() { return &g_unnamed; }

void ChargeToCaller(uint64_t ns) {
  ShadowStack& s = t_stack;
  if (s.depth > 0) s.frames[s.depth - 1].child_ns += ns;
}

void AdoptAsMainThread() { g_main_stack.store(&t_stack, std::memory_order_release); }

void RebaseForkedThread() { t_stack.base = t_stack.depth; }

void MainThreadStack(std::vector<std::string>* frames) {
  const ShadowStack* s = g_main_stack.load(std::memory_order_acquire);
  if (s == nullptr) return;
  const uint32_t depth = LoadDepth(*s);
  for (uint32_t i = 0; i < depth && i < kCapacity; ++i) {
    const CodeInfo* info = __atomic_load_n(&s->frames[i].info, __ATOMIC_RELAXED);
    if (info != nullptr) frames->emplace_back(info->name);
  }
}

}  // namespace cpython

Slot CurrentPythonSlot() {
  const cpython::ShadowStack& s = cpython::t_stack;
  const uint32_t depth = s.depth;
  return depth > 0 ? s.frames[depth - 1].slot : kNoSlot;
}

}  // namespace perftracker::preload
