// The scheduler's account of the threads other than the training loop's, charged to the Python
// functions they ran. A thread body that never returns (a metrics exporter, a sidecar, a
// watchdog) has the window's length as its self time whether it computes or sleeps in a queue's
// get; its time on a CPU tells the two apart, and a thread that holds the GIL or a core while
// the loop needs it is the cause of a step no function of the loop explains (FORMAT.md
// thread_cpu). Writer thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "preload/core/aggregator.h"
#include "preload/core/event_ring.h"
#include "preload/core/recorder_state.h"
#include "preload/core/sched_stat.h"

namespace perftracker::preload {

class ThreadCpu {
 public:
  // After a drain of `ring` (thread `tid`): where `events` carry Python self time, the thread's
  // CPU time since its previous sample is split over those functions by their share of it. A
  // drain without Python time reads nothing, and the next one that has some takes the time in
  // between: a thread's CPU lands on its own frames, never on another thread's.
  void Charge(const ThreadRing* ring, pid_t tid, std::span<const Event> events,
              const Tables& tables, Aggregator* aggregator);
  // The ring is free again: its next owner is another thread.
  void Forget(const ThreadRing* ring) { threads_.erase(ring); }

  // Threads read at most: each keeps its schedstat file open (one descriptor).
  static constexpr size_t kMaxThreads = 32;

 private:
  std::unordered_map<const ThreadRing*, std::unique_ptr<SchedStat>> threads_;
  std::vector<std::pair<Slot, uint64_t>> self_;  // this drain's Python self time, by function
};

}  // namespace perftracker::preload
