// State shared by the recorder's hot path (recorder.cpp) and the writer thread (writer.cpp).
// Not for hooks: they use recorder.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "preload/core/event_ring.h"
#include "preload/core/recorder.h"

namespace perftracker::preload {

struct FunctionEntry {
  format::FunctionKind kind;
  Slot parent;
  std::string name;
};

struct CollectiveEntry {
  uint64_t comm_id;
  uint32_t comm_size;
  uint32_t comm_rank;
  format::CollectiveOp op;
  int32_t peer;
  uint64_t bytes;
  std::string name;
};

// Interned tables. Entries are appended under `mu` into storage reserved up front (never
// reallocated), then published by a release store of the count: the writer reads entries below
// the count without the lock.
struct Tables {
  std::mutex mu;
  std::vector<FunctionEntry> functions;
  std::vector<CollectiveEntry> collectives;
  std::atomic<uint32_t> function_count{0};
  std::atomic<uint32_t> collective_count{0};
  std::atomic<uint64_t> dropped_functions{0};
};

Tables& GetTables();

// InternFunction without waiting: when the tables' lock is held elsewhere, sets *busy and
// returns kNoSlot. For the writer thread, which must not wait on that lock while holding its own.
Slot TryInternFunction(format::FunctionKind kind, std::string_view name, Slot parent, bool* busy);

// The first ring of the registry list; rings are pushed at the front and never removed.
ThreadRing* FirstRing();

// In a forked child, before it records as a process of its own: the rings of the parent's
// threads (copies of what the parent had not drained yet: the parent's events) are left behind,
// and the calling thread, the child's only one, takes a fresh ring at its next event.
void ForgetParentThreads();

// Sets up the tables and ring sizes; called by Start before any hook can record.
void InitRecorder(uint32_t max_functions, uint64_t ring_events);
void SetActive(bool active);

// Called by the writer and by exit paths.
struct FlushCallbacks {
  std::atomic<int> count{0};
  FlushCallback callbacks[16] = {};
};
FlushCallbacks& GetFlushCallbacks();
PythonStackProvider GetPythonStackProvider();
// The writer ticks (AddWriterTick), read by the writer thread: `count` published after its entry.
struct WriterTicks {
  static constexpr int kMax = 4;
  std::atomic<int> count{0};
  WriterTick ticks[kMax] = {};
  uint64_t period_ns[kMax] = {};
};
WriterTicks& GetWriterTicks();

}  // namespace perftracker::preload
