// Per-thread event rings: the only channel from hooks to the writer thread.
//
// Who writes: the owning thread (push; head). Who reads: the writer thread (pop; tail).
// Full: the event is dropped and counted in `dropped`; the producer never waits.
// Lifetime: rings are never freed. When the owner exits, the ring is marked dead; once the writer
// has drained a dead ring it marks it free, and a new thread may adopt it. Memory stays bounded
// by the largest number of threads that recorded at the same time.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace perftracker::preload {

enum class EventType : uint8_t {
  kCall,             // slot, t = end, a = duration, b = self, c = wait, d = bytes
  kDeviceTime,       // slot, a = device ns
  kCollLaunch,       // slot = collective, t = launch, a = seq, b = host ns
  kCollDone,         // slot = collective, a = seq, b = device ns
  kIteration,        // t = end of the iteration
};

struct Event {
  uint32_t slot;
  EventType type;
  uint8_t reserved[3];
  uint64_t t;
  uint64_t a;
  uint64_t b;
  uint64_t c;
  uint64_t d;
};
static_assert(sizeof(Event) == 48);

enum class RingState : uint32_t { kInUse, kDead, kFree };

struct alignas(64) ThreadRing {
  // Producer side.
  std::atomic<uint64_t> head{0};
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> hook_ns{0};
  std::atomic<uint64_t> hook_calls{0};
  alignas(64) std::atomic<uint64_t> tail{0};  // consumer side
  std::atomic<RingState> state{RingState::kInUse};
  ThreadRing* next = nullptr;  // registry list, written once before publication
  uint64_t capacity = 0;       // a power of two; 0 for the sentinel
  Event* events = nullptr;

  // Owner thread only. False when full (or for the sentinel).
  bool Push(const Event& e) {
    const uint64_t h = head.load(std::memory_order_relaxed);
    if (h - tail.load(std::memory_order_acquire) >= capacity) return false;
    events[h & (capacity - 1)] = e;
    head.store(h + 1, std::memory_order_release);
    return true;
  }

  // Writer thread only: calls f(event) for everything pushed so far.
  template <class F>
  uint64_t Drain(F&& f) {
    const uint64_t t = tail.load(std::memory_order_relaxed);
    const uint64_t h = head.load(std::memory_order_acquire);
    for (uint64_t i = t; i < h; ++i) f(events[i & (capacity - 1)]);
    tail.store(h, std::memory_order_release);
    return h - t;
  }

  // Producer-only counters: plain load + store, no locked instruction on the hot path.
  static void Bump(std::atomic<uint64_t>& counter, uint64_t by) {
    counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
};

}  // namespace perftracker::preload
