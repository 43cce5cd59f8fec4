// Per-connection network accounting from NCCL's proxy events (the profiler plugin,
// nccl/nccl_profiler.cpp): for every (communicator, peer, direction), the bytes moved and the
// time they spent on the wire. C4's slow-detection matrix (research/perftracker.md §10, §12.6)
// is built from these cells: the wire time of a send is the time after the peer gave credit and
// the GPU filled the buffer, so a fast link behind a slow one waits (in SendGPUWait) instead of
// looking slow, unlike API-level or kernel-level times.
//
// Threads: NCCL calls from its proxy progress threads (several communicators, several threads).
// Everything here is lock-free: fixed pools claimed with compare-and-swap, atomics for totals.
// A full pool drops the event (counted); a foreign or null handle is ignored.
#pragma once

#include <atomic>
#include <cstdint>

namespace perftracker::preload::net {

// One finished proxy operation: what a sink receives.
struct Transfer {
  int32_t peer = -1;
  bool is_send = false;
  uint64_t bytes = 0;
  uint64_t wire_ns = 0;  // sends: in SendWait; receives: in RecvWait
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t seq = 0;  // per communicator, from 1
};

struct Comm {
  std::atomic<bool> used{false};
  uint64_t id = 0;  // NCCL's commHash: equal on every rank of the communicator
  uint32_t size = 0;
  uint32_t rank = 0;
  std::atomic<uint64_t> seq{0};
};

struct Connection {
  std::atomic<uint64_t> key{0};  // 0: free
  const Comm* comm = nullptr;
  int32_t peer = -1;
  bool is_send = false;
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> wire_ns{0};
  std::atomic<uint64_t> ops{0};
  std::atomic<uint64_t> cache{0};  // the sink's memo (e.g. a pattern slot), owned by the sink
};

using Sink = void (*)(Connection& connection, const Transfer& transfer);

class NetLinks {
 public:
  static constexpr size_t kComms = 256, kConnections = 2048, kOps = 1024, kSteps = 8192;

  explicit NetLinks(Sink sink) : sink_(sink) {}
  NetLinks(const NetLinks&) = delete;
  NetLinks& operator=(const NetLinks&) = delete;

  // Null when the table is full (that communicator is not recorded).
  Comm* OpenComm(uint64_t id, uint32_t size, uint32_t rank);
  // Comm slots are never reused: ops still in flight keep pointing at them.
  void CloseComm(Comm* comm) { (void)comm; }

  // Handles are opaque to NCCL; null when a pool is full.
  void* StartOp(Comm* comm, int32_t peer, bool is_send, uint64_t step_bytes, int steps,
                uint64_t now_ns);
  void* StartStep(void* op, uint64_t now_ns);
  void StepState(void* step, int state, uint64_t bytes, uint64_t now_ns);
  void Stop(void* handle, uint64_t now_ns);

  // Cold path (tests, diagnostics): every connection seen.
  template <typename F>
  void ForEachConnection(F f) const {
    for (const Connection& c : connections_) {
      if (c.key.load(std::memory_order_acquire) != 0 &&
          __atomic_load_n(&c.comm, __ATOMIC_ACQUIRE) != nullptr) {
        f(c);
      }
    }
  }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  struct Op {
    std::atomic<bool> used{false};
    Connection* connection = nullptr;
    uint64_t start_ns = 0;
    uint64_t fallback_bytes = 0;  // steps x chunk size, when no step reports its size
    std::atomic<uint64_t> bytes{0};
    std::atomic<uint64_t> wire_ns{0};
  };
  struct Step {
    std::atomic<bool> used{false};
    Op* op = nullptr;
    int state = 0;
    uint64_t since_ns = 0;
    uint64_t bytes = 0;
  };

  Connection* Find(const Comm* comm, int32_t peer, bool is_send);
  Op* AsOp(void* h);
  Step* AsStep(void* h);
  void CloseState(Step* s, uint64_t now_ns);
  template <typename T, size_t N>
  T* Claim(T (&pool)[N], std::atomic<uint32_t>& next);

  Sink sink_;
  Comm comms_[kComms];
  Connection connections_[kConnections];
  Op ops_[kOps];
  Step steps_[kSteps];
  std::atomic<uint32_t> next_comm_{0}, next_op_{0}, next_step_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace perftracker::preload::net

namespace perftracker::preload {
// Points NCCL_PROFILER_PLUGIN at this library unless the user chose another plugin (one
// warning, no link data). Bootstrap calls it once an active rank is set up
// (nccl/nccl_profiler.cpp).
void ConfigureNcclProfilerPlugin();
}  // namespace perftracker::preload
