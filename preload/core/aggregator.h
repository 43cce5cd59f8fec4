// Turns drained events into window summaries. Owned by the writer thread; single-threaded.
//
// Windows end on iteration boundaries that every rank agrees on (window_schedule.h: a multiple of
// the window's length, PERFTRACKER_WINDOW_ITERS times a power of two, and where a detailed period
// begins and ends, py_mode.h). Iteration i ends at the i-th kIteration event (counting from 0): a
// Python step marker (MarkIteration), or without those a boundary of the collective period that
// the writer adds (collective_iterations.h). Window 0 also holds everything before the first step
// (start-up). A process with neither gets windows of `window_ns`, with an empty iteration range.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "preload/core/event_ring.h"
#include "preload/core/recorder_state.h"
#include "preload/core/signal_set.h"
#include "preload/core/window_schedule.h"
#include "schemas/format/live.h"
#include "schemas/format/window.h"

namespace perftracker::preload {

class Aggregator {
 public:
  // Windows of `block_iters` x 2^k iterations lasting at least `window_ns` (0: one block);
  // without iterations, windows of `window_ns`.
  Aggregator(uint64_t block_iters, uint64_t window_ns, uint64_t start_ns);

  // Events must come in time order per thread; across threads, merged by the caller.
  void Add(const Event& e, const Tables& tables);
  // A window that is complete (boundary or time reached), if any.
  std::optional<format::Window> TakeFinished(uint64_t now_ns, const Tables& tables);
  // The open window as it is now (for exit paths); the next window starts empty.
  format::Window TakePartial(uint64_t now_ns, const Tables& tables);
  // The open window as it is now, which goes on (the live slot's, for `watch`).
  format::Window Snapshot(uint64_t now_ns, const Tables& tables);

  void AddHealth(uint64_t dropped_events, uint64_t hook_ns, uint64_t hook_calls);
  // The iteration thread's time on a CPU and in a run queue since the last call (sched_stat.h).
  void AddSchedStat(uint64_t cpu_ns, uint64_t run_delay_ns);
  // Time on a CPU of a thread other than the iteration thread, charged to Python function
  // `slot` (thread_cpu.h).
  void AddThreadCpu(Slot slot, uint64_t cpu_ns);
  // Per-communicator progress and the iteration count, for the live slot.
  format::LiveState Live(uint64_t now_ns) const;

  // Hardware and host samples of the open window (writer ticks add them; Build takes them).
  SignalSet& signals() { return signals_; }

  uint64_t iterations() const { return iterations_; }
  const WindowSchedule& windows() const { return schedule_; }
  uint64_t windows_done() const { return window_seq_; }

 private:
  // Host time may be sampled (kNativeCall): `count` counts every call, `timed` the calls whose
  // duration is known; totals are scaled from those when the window is built.
  struct FunctionAcc {
    uint64_t count = 0, timed = 0, total = 0, self = 0, min = 0, max = 0, wait = 0, bytes = 0;
    uint64_t device_samples = 0, device_ns = 0;
    // The iteration in progress (carried across windows): calls, timed calls, their time.
    uint64_t iter_count = 0, iter_timed = 0, iter_ns = 0;
    // Slices of calls still running (kCallSlice): time without calls, added after scaling.
    uint64_t slice_total = 0, slice_self = 0, iter_slice_ns = 0;
    uint64_t mean_ns = 0;  // of recent timed calls: the estimate when none was timed
    format::Histogram duration, device, per_iteration;
    // Self times of the timed calls, kept once one differed from its duration (until then it
    // would equal `duration`, which it copies at that moment).
    format::Histogram self_duration;
    bool self_differs = false;
    // Critical-path time (kCritical) of the timed calls, scaled to all calls at build; of slices.
    uint64_t critical = 0, critical_slice = 0;
    uint64_t captured = 0;  // calls captured into a graph (kNativeCaptured), not in count
    uint64_t thread_cpu = 0;  // AddThreadCpu's, this window
  };
  struct CollectiveAcc {
    uint64_t count = 0, host_ns = 0, device_samples = 0, device_ns = 0;
    uint64_t first_seq = 0, last_launched = 0, last_completed = 0;
    bool launched = false, completed = false;
    format::Histogram device, launch_offset;
  };
  struct CommState {
    uint64_t comm_id = 0;
    uint32_t size = 0, rank = 0;
    uint64_t launched = 0, completed = 0;
    bool any_launched = false, any_completed = false;
    uint8_t inflight_op = 0;
    uint64_t inflight_since = 0;
  };

  void AddCall(const Event& e);
  void AddNativeCall(const Event& e, const Tables& tables);
  // The accumulator of `slot`, listed in touched_ on its first event of the iteration.
  FunctionAcc& Touch(Slot slot);
  void AddSample(Slot slot, bool timed, uint64_t ns, uint64_t self_ns, uint64_t wait_ns,
                 uint64_t bytes);
  Slot PyNativeSlot(Slot python, Slot target, const Tables& tables);
  void AddCollective(const Event& e, const Tables& tables);
  void EndIteration(uint64_t end_ns, const Tables& tables);
  CommState& Comm(const CollectiveEntry& entry);
  format::Window Build(uint64_t end_ns, const Tables& tables);
  format::Window Describe(uint64_t end_ns, const Tables& tables, bool take);

  WindowSchedule schedule_;
  uint64_t window_ns_;
  uint64_t window_start_ns_;
  uint64_t window_seq_ = 0;
  uint64_t iterations_ = 0;         // iterations ended so far
  uint64_t window_first_iter_ = 0;  // first iteration of the open window
  uint64_t iteration_start_ns_;     // start of the iteration in progress
  std::vector<format::Window> finished_;
  uint64_t dropped_functions_seen_ = 0;
  format::IterationStats iteration_stats_;
  bool critical_path_ = false;  // a kCritical event arrived in this window
  uint64_t device_idle_ns_ = 0;
  uint64_t thread_cpu_ns_ = 0, run_delay_ns_ = 0;
  format::Health health_;
  std::vector<FunctionAcc> functions_;
  std::vector<uint32_t> touched_;                 // functions called in the iteration in progress
  std::unordered_map<uint64_t, Slot> py_native_;  // (python << 32 | target) -> kPyNative slot
  std::vector<CollectiveAcc> collectives_;
  std::vector<CommState> comms_;
  SignalSet signals_;
};

}  // namespace perftracker::preload
