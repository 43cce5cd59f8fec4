// Per-thread event rings: the only channel from hooks to the writer thread.
//
// Who writes: the owning thread (push; head). Who reads: the writer thread (pop; tail).
// Full: the event is dropped and counted in `dropped`; the producer never waits. The last
// kBoundaryReserve slots take only boundary events (iteration markers): a thread that floods its
// ring while the writer is starved (a loaded host) loses calls, never an iteration, which would
// shift every later window of its rank against its peers'.
// Lifetime: rings are never freed. When the owner exits, the ring is marked dead; once the writer
// has drained a dead ring it marks it free, and a new thread may adopt it. Memory stays bounded
// by the largest number of threads that recorded at the same time.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace perftracker::preload {

enum class EventType : uint8_t {
  kCall,        // slot, t = end, a = duration, b = self, c = wait, d = bytes; flags[0]: CallFlags
  kNativeCall,  // slot = API function, a = site | extra << 32, t/b/d: see NativeCallFlags
  kDeviceTime,  // slot, a = device ns
  kCollLaunch,  // slot = collective, t = launch, a = seq, b = host ns, c = epoch after it
  kCollDone,    // slot = collective, a = seq, b = device ns
  kIteration,   // t = end of the iteration, a = epoch after it (0: unknown)
  // Made by the writer, never by a hook (critical_path.h): slot's time on the critical path,
  // t = when it ended, a = ns; slot kNoSlot: the device's idle time in the iteration ending at t.
  kCritical,
};

// kNativeCall, flags in flags[0]. A timed call has t = end and b = host duration; an untimed
// one (host time sampled, see SampleHostTime) has t = kEpochTag | the epoch it ran in, b = 0.
// c = the Python function on top of the thread's stack (kNoSlot: none), d = bytes.
// kNativeCaptured: made while its stream was being captured into a graph (counted apart).
enum NativeCallFlags : uint8_t { kNativeTimed = 1, kNativeBlocking = 2, kNativeCaptured = 4 };

// kCall, flags in flags[0]. A slice is the time so far of a call still running (a loop that
// lasts the whole job): time, but no call; the call's end reports only what comes after it.
// Untimed calls were counted, not timed (a cheap Python function's calls are timed on a
// sample): a = how many, t = kEpochTag | the epoch they ran in; their time is estimated from the
// timed calls of the same function.
enum CallFlags : uint8_t { kCallSlice = 1, kCallUntimed = 2 };

// Epochs order untimed events without a clock: a process-wide counter that every iteration
// marker and every collective launch advances. An event tagged with epoch e happened before the
// boundary event that carries an epoch greater than e.
inline constexpr uint64_t kEpochTag = uint64_t{1} << 63;

struct Event {
  uint32_t slot;
  EventType type;
  uint8_t flags[3];  // per type; kNativeCall: [0] = NativeCallFlags
  uint64_t t;
  uint64_t a;
  uint64_t b;
  uint64_t c;
  uint64_t d;
};
static_assert(sizeof(Event) == 48);

enum class RingState : uint32_t { kInUse, kDead, kFree };

inline constexpr uint64_t kBoundaryReserve = 64;

struct alignas(64) ThreadRing {
  // Producer side.
  std::atomic<uint64_t> head{0};
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> hook_ns{0};
  std::atomic<uint64_t> hook_calls{0};
  uint64_t cached_tail = 0;  // the consumer's tail as last seen: re-read only when it looks full
  alignas(64) std::atomic<uint64_t> tail{0};  // consumer side
  std::atomic<RingState> state{RingState::kInUse};
  std::atomic<int32_t> tid{0};  // the owner thread's, set when it takes the ring (cold path)
  ThreadRing* next = nullptr;  // registry list, written once before publication
  uint64_t capacity = 0;       // a power of two; 0 for the sentinel
  uint64_t limit = 0;          // capacity less kBoundaryReserve: what other events may fill
  Event* events = nullptr;

  // Owner thread only: the slot for the next event, filled in place and published by Commit;
  // null when full (or for the sentinel). In place, because an event built elsewhere and copied
  // in is read back with wide loads right after narrow stores, a store-forwarding stall that
  // cost more than the rest of a hooked launch.
  Event* Claim(uint64_t room) {
    const uint64_t h = head.load(std::memory_order_relaxed);
    if (h - cached_tail >= room) [[unlikely]] {
      // The sentinel is shared by every thread that has no ring yet: never written.
      if (capacity == 0) return nullptr;
      cached_tail = tail.load(std::memory_order_acquire);
      if (h - cached_tail >= room) return nullptr;
    }
    return &events[h & (capacity - 1)];
  }
  Event* Claim() { return Claim(limit); }
  void Commit() { head.store(head.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

  // Owner thread only. False when full (or for the sentinel).
  bool Push(const Event& e) { return PushInto(Claim(), e); }
  // A boundary event: may take the reserve.
  bool PushBoundary(const Event& e) { return PushInto(Claim(capacity), e); }
  bool PushInto(Event* slot, const Event& e) {
    if (slot == nullptr) return false;
    *slot = e;
    Commit();
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

// Every thread starts on the sentinel: capacity 0, so its first Claim fails and takes the cold
// path (recorder.cpp), which installs a real ring. The fast path never asks "initialized?".
// Here rather than in recorder.cpp so that hooks can write their events inline.
inline ThreadRing g_sentinel_ring;
inline thread_local ThreadRing* t_event_ring [[gnu::tls_model("initial-exec")]] = &g_sentinel_ring;

}  // namespace perftracker::preload
