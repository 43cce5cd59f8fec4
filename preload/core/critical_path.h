// Critical-path time of host functions, per window (the paper's beta; research/perftracker.md
// §6, §12.4): at each instant the highest-priority activity running is on the critical path --
// device work first, then the host. A host function is charged the part of its own (exclusive)
// time during which the device had nothing queued; while the device works, the host only runs
// ahead of it. Writer thread only.
//
// What it sees: the events of the thread that ends iterations (the training loop), in the order
// that thread recorded them; the device work every other thread of the rank enqueued (autograd's
// device threads launch the backward pass, NCCL and compiled code launch from threads of their
// own), merged into the walk by time; and device durations from every thread.
//   - Host intervals: Python calls and slices are [end - duration, end); a call's own time is
//     its interval minus its callees' (they end first: a stack of finished intervals).
//   - The device queue, estimated: a native call whose kind of work has a known device time
//     (a kernel, a copy: the running mean of its sampled device times, CUPTI's when on) enqueues
//     that much after max(its host end, the queue's end); a collective launch likewise, and a
//     cuBLAS GEMM, a timed call of its shape's slot (cuBLAS launches past the runtime hooks:
//     without its GEMMs the queue held a fifth of a transformer step's work, and a host delay
//     the device's queue absorbed was charged as critical). With the driver tier on
//     (PERFTRACKER_DRIVER=1) cuBLAS's own launches are seen as well and a GEMM counts twice:
//     the queue overstated, host time undercharged. Calls whose host time was not sampled
//     have no timestamp: they are placed evenly between the timed events around them. A
//     blocking call that waited (a sync, a blocking copy) proves the device busy until it
//     returned; on the training loop's thread it also drains the queue there (the estimate,
//     long where streams overlap, would otherwise drift ahead of the device step after step).
//     An event synchronized early in the queue is taken for the queue's end too: host time
//     after it is overcharged until the next launches.
//   - Idle: the gaps the queue had before each enqueue, and after its end up to now.
// Error: device time is a per-kind mean over sampled launches (1 in PERFTRACKER_SAMPLE_EVERY per
// call site), streams are one queue (overlapping streams overstate the queue, so host time is
// undercharged), and a launch's host time counts as its Python caller's. Without device work
// (CPU training) the device is never busy: a function's critical time is its own time on the
// iteration thread, which includes time blocked in unhooked waits (gloo).
//
// Output: kCritical events appended to the batch, ordered with it by time: (slot, t = the
// call's end, a = ns) for a function; slot kNoSlot for device idle, emitted at iteration ends.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <unordered_map>
#include <vector>

#include "preload/core/event_ring.h"
#include "preload/core/recorder.h"

namespace perftracker::preload {

class CriticalPath {
 public:
  // Device durations, from any thread's events (kDeviceTime, kCollDone).
  void Learn(const Event& e);
  // One drained batch of another thread (`thread` tells threads apart): its launches wait to be
  // merged, by time, into the next walks. Call before the round's Walk.
  void Feed(const void* thread, std::span<const Event> events);
  // One drained batch of the iteration thread, in its own order.
  void Walk(std::span<const Event> events, std::vector<Event>* out);
  // True once any enqueued work had a device time: the rank drives a device.
  bool device_seen() const { return device_seen_; }

 private:
  struct Interval {
    uint64_t begin, end;
  };
  struct Launch {
    uint64_t at, device_ns;
  };
  void Enqueue(uint64_t at, uint64_t device_ns);
  // Device ns of a placed event (a native call's work, a collective); 0 when unknown.
  uint64_t DeviceNs(const Event& e) const;
  // Other threads' launches up to `t`, into the queue in time order.
  void EnqueueOthers(uint64_t t);
  void HostCall(const Event& e, uint64_t end, std::vector<Event>* out);
  uint64_t IdleWithin(uint64_t begin, uint64_t end) const;
  void EndIteration(uint64_t t, std::vector<Event>* out);

  std::unordered_map<Slot, uint64_t> kernel_ns_;      // running mean device ns by work slot
  std::unordered_map<Slot, uint64_t> collective_ns_;  // by collective slot
  std::vector<Interval> finished_;  // host intervals not yet claimed by a caller, by begin
  std::deque<Interval> idle_;       // closed device-idle gaps, oldest first
  std::vector<uint64_t> times_;     // scratch: each event's time for the walk
  std::vector<Launch> others_;      // other threads' launches not yet walked past, by time
  std::vector<uint64_t> other_times_;  // scratch: Feed's placed times
  std::unordered_map<const void*, uint64_t> other_last_;  // each other thread's latest time
  uint64_t queue_end_ = 0;          // when the device finishes what was enqueued so far
  uint64_t last_time_ = 0;          // the latest timestamp walked
  uint64_t iteration_start_ = 0;
  uint64_t previous_iteration_start_ = 0;
  bool device_seen_ = false;
  bool started_ = false;
};

}  // namespace perftracker::preload
