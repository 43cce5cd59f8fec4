// The recorder: what every hook family (CUDA runtime, NCCL, CPython, CUPTI) reports to, and the
// only way events reach the ring file.
//
// Hot path (Record*, MarkIteration): no locks, no allocation, no syscalls beyond the vDSO clock,
// no exceptions. Each thread appends fixed-size events to its own single-producer ring; when the
// ring is full the event is dropped and counted (health.dropped_events), never waited for. The
// first event of a thread allocates its ring (a cold path, once per thread).
//
// Cold path (Intern*): first sight of a function or collective pattern. Takes a mutex and may
// allocate; hooks cache the returned slot (per code object, kernel pointer, call site, ...).
//
// One background thread (writer.cpp) drains every ring every PERFTRACKER_DRAIN_MS, aggregates
// events into the window summary, cuts windows on iteration boundaries (every
// PERFTRACKER_WINDOW_ITERS iterations, all ranks alike; by time when no iteration is seen), and
// appends them to the ring file. It refreshes the live slot at least once a second.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "preload/core/event_ring.h"
#include "schemas/format/window.h"

namespace perftracker::preload {

using Slot = uint32_t;
inline constexpr Slot kNoSlot = ~Slot{0};

// True when this process records: a training rank, enabled, not a forked child, and the ring
// file could be created. Hooks test this first and pass through when false. Inline: every hook
// asks, and a call across the library costs as much as the test.
inline std::atomic<bool> g_recorder_active{false};
inline bool Active() { return g_recorder_active.load(std::memory_order_relaxed); }

// The CUDA runtime entries (version nodes, versioned_entry.h) called since the last window: a bit
// per node. Read before it is written, so a steady state costs a shared load, not a store.
alignas(64) inline std::atomic<uint32_t> g_cuda_runtime_nodes{0};
inline void NoteCudaRuntimeNode(int node) {
  const uint32_t bit = 1u << node;
  if ((g_cuda_runtime_nodes.load(std::memory_order_relaxed) & bit) == 0) [[unlikely]] {
    g_cuda_runtime_nodes.fetch_or(bit, std::memory_order_relaxed);
  }
}
// Every node called in a window already written (the writer's: runtime_visibility.cpp).
inline std::atomic<uint32_t> g_cuda_runtime_nodes_ever{0};

// What the process uses, for the writer's samplers (hw/): the CUDA device ordinal it last made
// current (cuda/'s cudaSetDevice hook; -1 none, and then device 0 once CUDA is used), and whether
// it created an NCCL communicator (nccl/). Written on cold paths only.
inline std::atomic<int> g_cuda_device{-1};
inline std::atomic<bool> g_nccl_used{false};

// Monotonic nanoseconds (CLOCK_MONOTONIC through the vDSO): the time base of every event.
uint64_t NowNs();

// ---- cold path ----------------------------------------------------------------------------

// The slot of a function (kind, name, caller). The same arguments give the same slot. kNoSlot
// when the function table is full (PERFTRACKER_MAX_FUNCTIONS; counted as dropped_functions).
Slot InternFunction(format::FunctionKind kind, std::string_view name, Slot parent = kNoSlot);

// The slot of a collective pattern: one per (communicator, op, bytes, peer).
Slot InternCollective(uint64_t comm_id, uint32_t comm_size, uint32_t comm_rank,
                      format::CollectiveOp op, int32_t peer, uint64_t bytes, std::string_view name);

// The Python context provider: fills `frames` (outermost first) with the Python stack of the
// thread that is running the training loop. Called from the writer thread without the GIL; it
// must only read memory it owns (a shadow stack), never call Python.
using PythonStackProvider = void (*)(std::vector<std::string>* frames);
void SetPythonStackProvider(PythonStackProvider provider);

// Runs on the writer thread every `period_ns` (0: about once a second, PERFTRACKER_TEST_WATCH_MS),
// holding none of the recorder's locks and not the GIL: for work that must not wait for hooked
// code to call in (the CPython hooks: is our frame evaluator still installed?; the hardware
// samplers). It must not block for long. Registering a tick twice keeps the first; at most 4.
using WriterTick = void (*)();
void AddWriterTick(WriterTick tick, uint64_t period_ns = 0);

// ---- hot path -----------------------------------------------------------------------------

// One completed call of `slot` that ended at `end_ns`.
//   self_ns: exclusive time (= duration_ns for leaves); wait_ns: time blocked in a
//   synchronizing call; bytes: bytes moved (copies, collectives).
void RecordCall(Slot slot, uint64_t end_ns, uint64_t duration_ns, uint64_t self_ns,
                uint64_t wait_ns = 0, uint64_t bytes = 0);
// Advanced at every iteration end and every window written. A Python frame still running from an
// older epoch reports a slice of its time at its thread's next Python call (python/
// cpython_eval.cpp), so the time of a loop that never returns (a background thread's) lands in
// the iterations and windows where it was spent. Only frames open across an iteration boundary
// are cut: the outer loop, background loops, not the calls inside a step.
inline std::atomic<uint32_t> g_slice_epoch{0};
// Windows written so far (the writer's Append). The device sampler times each call site's first
// call in a window besides 1 in PERFTRACKER_SAMPLE_EVERY (cuda/cuda_sites.h SampleSite).
inline std::atomic<uint32_t> g_window_epoch{0};

// The time a call still running spent up to `now_ns` since its start or its previous slice
// (kCallSlice): it counts in this window's totals, not as a call.
void RecordSlice(Slot slot, uint64_t now_ns, uint64_t duration_ns, uint64_t self_ns);

// `calls` calls of `slot` that were counted but not timed (kCallUntimed), made in event epoch
// `epoch` (g_event_epoch) or later: their time is estimated from the timed calls of the same
// slot, as for sampled native calls.
void RecordUntimedCalls(Slot slot, uint64_t calls, uint64_t epoch);

// One call of a hooked native API (CUDA runtime, driver), counted under its API function and,
// when not kNoSlot, its call site and `extra` (kernel, copy kind): one event for all three.
// Host time is measured on a sample of calls (SampleHostTime): `timed` calls carry end_ns and
// duration_ns; the others are counted and their time is estimated from the timed ones of the
// same function. Blocking calls are always timed (their wait is the point). `python` is the
// Python function that made the call (CurrentPythonSlot()), kNoSlot outside Python.
// Inline, written in place into the thread's ring: the hottest path of the library.
// `captured`: the call was recorded into a CUDA graph, not run (counted apart, untimed).
inline void RecordNativeCall(Slot api, Slot site, Slot extra, Slot python, bool timed,
                             bool blocking, uint64_t end_ns, uint64_t duration_ns,
                             uint64_t bytes = 0, bool captured = false);

// True for the calls whose host time this thread measures: 1 in PERFTRACKER_HOST_SAMPLE_EVERY
// on average, at random intervals so that no periodic call pattern is always or never timed.
// A thread-local countdown: no clock, no shared cache line.
inline thread_local uint32_t t_host_countdown [[gnu::tls_model("initial-exec")]] = 0;
// Of the timed calls, 1 in 8 also measures the hook's own cost (two more clock readings).
inline thread_local uint32_t t_timed_calls [[gnu::tls_model("initial-exec")]] = 0;
[[gnu::cold, gnu::noinline]] bool ReloadHostSample();
// The calls until the next timed one when 1 in `every` is timed: uniform in [1, 2 * every - 1],
// a mean interval of `every`. `state` is a per-thread xorshift64, never 0; seeded from a
// thread-local address, threads do not sample in step. Shared by the native hooks' host time
// and the Python hook's cheap functions.
inline uint32_t NextSampleInterval(uint64_t& state, uint32_t every) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  // Multiply-shift, not %: a 64-bit division costs as much as the rest of a hook. The clamp
  // keeps the range below 2^32, so the product fits.
  const uint64_t range = 2 * uint64_t{std::clamp<uint32_t>(every, 1, 1u << 30)} - 1;
  return 1 + static_cast<uint32_t>(((state & 0xffffffffu) * range) >> 32);
}
// Whether the `n`th counted call (from 0) of a call site, kernel or GEMM class has its device
// time measured: 1 in `every` on average (never if 0, always if 1), and the first. Not n % every:
// a site's calls repeat each iteration, and where their count divides `every` the same position
// is timed every time (one attention launcher, 8 forward and then 8 backward launches a step, at
// 1 in 64: the backward kernel never, its device time unknown and its work missing from the
// critical path's queue). The call's index hashed instead (a Weyl sequence: n times 2^64 over
// the golden ratio, its high half): sampled positions drift through every phase of any period,
// deterministic, no state, two multiplications.
inline bool SampledCall(uint32_t n, uint32_t every) {
  const uint64_t h = (uint64_t{n} * 0x9E3779B97F4A7C15ull) >> 32;
  return every != 0 && h * every < (uint64_t{1} << 32);
}

inline bool SampleHostTime() {
  if (t_host_countdown > 1) [[likely]] {
    --t_host_countdown;
    return false;
  }
  return ReloadHostSample();
}
void SetHostSampleEvery(uint32_t every);

// A device-time measurement of one launch of `slot` (sampled kernels, copies), reported when it
// is known (by the event poller, possibly much later than the launch).
void RecordDeviceTime(Slot slot, uint64_t device_ns);

// A collective call launched at `launch_ns` with per-communicator sequence number `seq`; host_ns
// is the time spent in the API call itself.
void RecordCollectiveLaunch(Slot collective, uint64_t seq, uint64_t launch_ns, uint64_t host_ns);

// Collective `seq` completed on the device after `device_ns` (from the launch of its stream work
// to its end: time spent waiting for late peers included). device_ns == 0: it completed but
// was not timed (captured into a graph, or no timer was free); progress only.
void RecordCollectiveDone(Slot collective, uint64_t seq, uint64_t device_ns);

// An iteration ended at `end_ns` (the step function returned). Iteration numbers count these
// calls from 0, the same on every rank that runs the same loop.
void MarkIteration(uint64_t end_ns);

// Time spent inside a hook, for health.hook_ns / hook_calls. Hooks may report it sampled.
void RecordHookOverhead(uint64_t ns, uint64_t calls = 1);

}  // namespace perftracker::preload

namespace perftracker::preload {

// ---- exit paths ---------------------------------------------------------------------------

// Runs before the final flush, on the thread that flushes, e.g. to collect pending device
// timers while CUDA is still alive. Register from a constructor or an install path.
using FlushCallback = void (*)();
void AddFlushCallback(FlushCallback callback);

// Drains every ring and writes the partial window and the live slot now. Called by the exit
// paths (Python atexit, C atexit, SIGTERM); safe to call more than once and from any thread.
void Flush();

}  // namespace perftracker::preload

namespace perftracker::preload {

// ---- inline hot path ----------------------------------------------------------------------

// See kEpochTag (event_ring.h). Written by iteration markers and collective launches, read by
// every untimed native call: a line that is read far more often than written.
alignas(64) inline std::atomic<uint64_t> g_event_epoch{0};

// A full ring (counted as dropped) or a thread's first event (installs its ring). Cold.
[[gnu::cold, gnu::noinline]] void PushEventSlow(const Event& e);

inline void RecordNativeCall(Slot api, Slot site, Slot extra, Slot python, bool timed,
                             bool blocking, uint64_t end_ns, uint64_t duration_ns, uint64_t bytes,
                             bool captured) {
  if (api == kNoSlot) return;
  timed = timed && !captured;
  const auto flags = static_cast<uint8_t>((timed ? kNativeTimed : 0) |
                                          (blocking ? kNativeBlocking : 0) |
                                          (captured ? kNativeCaptured : 0));
  const uint64_t t = timed ? end_ns : kEpochTag | g_event_epoch.load(std::memory_order_relaxed);
  const uint64_t slots = uint64_t{site} | uint64_t{extra} << 32;
  ThreadRing* ring = t_event_ring;
  Event* e = ring->Claim();
  if (e == nullptr) [[unlikely]] {
    PushEventSlow(Event{api,
                        EventType::kNativeCall,
                        {flags, 0, 0},
                        t,
                        slots,
                        timed ? duration_ns : 0,
                        python,
                        bytes});
    return;
  }
  e->slot = api;
  e->type = EventType::kNativeCall;
  e->flags[0] = flags;
  e->t = t;
  e->a = slots;
  e->b = timed ? duration_ns : 0;
  e->c = python;
  e->d = bytes;
  ring->Commit();
}

}  // namespace perftracker::preload
