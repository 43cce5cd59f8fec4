// A stream: an in-order queue of work run by its own device thread.
//
// Writers: host threads append work (Push) under mu_. Reader: the stream's device thread pops the
// head, waits for its dependencies, computes its start/end device times and marks it done. Host
// threads wait for an item on done_cv_ and then sleep until the device clock reaches its end.
//
// Time model: the device thread does not sleep through plain work. An item starts at
// max(its submit time, the end of the previous item, the end of its dependencies) and ends after
// its modelled duration; these are device times, possibly ahead of the clock. Whoever observes
// completion (synchronize, query, elapsed time, CUPTI) also requires the clock to have passed the
// end. So timing is exact however coarse the host's sleeps are, and idle device threads block on
// a condition variable (16 ranks on 2 cores must not spin).
#ifndef SIMGPU_CORE_STREAM_H_
#define SIMGPU_CORE_STREAM_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "core/work.h"

namespace simgpu {

class Stream {
 public:
  Stream(int device, uint32_t id, bool blocking, int priority);
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Appends work. Returns the new item (never null).
  WorkRef Push(WorkSpec spec, std::vector<WorkRef> deps);
  // The most recently pushed item, or null.
  WorkRef Last();

  // Blocks until the device thread has run `item`; its times are then final.
  void WaitRun(const WorkRef& item);
  bool HasRun(const WorkRef& item);
  // Blocks until `item` has run and the device clock has passed its end.
  void WaitComplete(const WorkRef& item);
  bool IsComplete(const WorkRef& item);

  // Stream capture (CUDA graphs): while set, the device routes work into the graph.
  Graph* capture() const { return capture_; }
  void set_capture(Graph* graph) { capture_ = graph; }

  // The device thread exits once the queue drains; the object itself is never freed because
  // events and other streams may still hold items that point at it.
  void Retire();

  int device() const { return device_; }
  uint32_t id() const { return id_; }
  bool blocking() const { return blocking_; }
  int priority() const { return priority_; }

 private:
  void Loop();
  void Run(const WorkRef& item);
  int64_t Duration(const WorkItem& item) const;

  const int device_;
  const uint32_t id_;
  const bool blocking_;
  const int priority_;
  Graph* capture_ = nullptr;  // host-thread state, like CUDA's (not thread-safe either)

  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<WorkRef> queue_;
  WorkRef last_;
  uint64_t next_index_ = 0;
  bool thread_idle_ = false;
  bool retired_ = false;
  bool thread_started_ = false;
  int64_t tail_end_ns_ = 0;  // device thread only
};

}  // namespace simgpu

#endif  // SIMGPU_CORE_STREAM_H_
