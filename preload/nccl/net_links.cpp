#include "preload/nccl/net_links.h"

#include <algorithm>

#include "preload/nccl/nccl_profiler_abi.h"

namespace perftracker::preload::net {
namespace {

constexpr uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

bool WireState(int state) {
  return state == nccl_profiler::kSendWait || state == nccl_profiler::kRecvWait;
}

}  // namespace

template <typename T, size_t N>
T* NetLinks::Claim(T (&pool)[N], std::atomic<uint32_t>& next) {
  const uint32_t start = next.fetch_add(1, std::memory_order_relaxed);
  for (size_t i = 0; i < N; ++i) {
    T& t = pool[(start + i) % N];
    bool expected = false;
    if (!t.used.load(std::memory_order_relaxed) &&
        t.used.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
      return &t;
    }
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

Comm* NetLinks::OpenComm(uint64_t id, uint32_t size, uint32_t rank) {
  const uint32_t i = next_comm_.fetch_add(1, std::memory_order_relaxed);
  if (i >= kComms) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  Comm& c = comms_[i];
  c.id = id, c.size = size, c.rank = rank;
  c.used.store(true, std::memory_order_release);
  return &c;
}

Connection* NetLinks::Find(const Comm* comm, int32_t peer, bool is_send) {
  const auto index = static_cast<uint64_t>(comm - comms_);
  const uint64_t key = ((index << 33) | (static_cast<uint64_t>(static_cast<uint32_t>(peer)) << 1) |
                        (is_send ? 1 : 0)) +
                       1;
  const uint64_t h = Mix(key);
  for (size_t i = 0; i < kConnections; ++i) {
    Connection& c = connections_[(h + i) % kConnections];
    uint64_t k = c.key.load(std::memory_order_acquire);
    if (k == key) {
      // The claimer fills the fields right after its CAS; wait the few cycles it takes.
      while (__atomic_load_n(&c.comm, __ATOMIC_ACQUIRE) == nullptr) {
      }
      return &c;
    }
    if (k != 0) continue;
    if (c.key.compare_exchange_strong(k, key, std::memory_order_acq_rel)) {
      c.peer = peer;
      c.is_send = is_send;
      __atomic_store_n(&c.comm, comm, __ATOMIC_RELEASE);
      return &c;
    }
    if (k == key) {
      while (__atomic_load_n(&c.comm, __ATOMIC_ACQUIRE) == nullptr) {
      }
      return &c;
    }
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

NetLinks::Op* NetLinks::AsOp(void* h) {
  auto* p = static_cast<Op*>(h);
  if (p < ops_ || p >= ops_ + kOps) return nullptr;
  return p->used.load(std::memory_order_acquire) ? p : nullptr;
}

NetLinks::Step* NetLinks::AsStep(void* h) {
  auto* p = static_cast<Step*>(h);
  if (p < steps_ || p >= steps_ + kSteps) return nullptr;
  return p->used.load(std::memory_order_acquire) ? p : nullptr;
}

void* NetLinks::StartOp(Comm* comm, int32_t peer, bool is_send, uint64_t step_bytes, int steps,
                        uint64_t now_ns) {
  if (comm == nullptr || peer < 0) return nullptr;
  Connection* c = Find(comm, peer, is_send);
  if (c == nullptr) return nullptr;
  Op* op = Claim(ops_, next_op_);
  if (op == nullptr) return nullptr;
  op->connection = c;
  op->start_ns = now_ns;
  op->fallback_bytes = step_bytes * static_cast<uint64_t>(std::max(steps, 0));
  op->bytes.store(0, std::memory_order_relaxed);
  op->wire_ns.store(0, std::memory_order_relaxed);
  return op;
}

void* NetLinks::StartStep(void* op_handle, uint64_t now_ns) {
  Op* op = AsOp(op_handle);
  if (op == nullptr) return nullptr;
  Step* s = Claim(steps_, next_step_);
  if (s == nullptr) return nullptr;
  s->op = op;
  s->state = 0;
  s->since_ns = now_ns;
  s->bytes = 0;
  return s;
}

void NetLinks::CloseState(Step* s, uint64_t now_ns) {
  if (WireState(s->state) && now_ns > s->since_ns) {
    s->op->wire_ns.fetch_add(now_ns - s->since_ns, std::memory_order_relaxed);
  }
}

void NetLinks::StepState(void* step, int state, uint64_t bytes, uint64_t now_ns) {
  Step* s = AsStep(step);
  if (s == nullptr) return;
  CloseState(s, now_ns);
  s->state = state;
  s->since_ns = now_ns;
  if (bytes > 0) s->bytes = bytes;
}

void NetLinks::Stop(void* handle, uint64_t now_ns) {
  if (Step* s = AsStep(handle)) {
    CloseState(s, now_ns);
    s->op->bytes.fetch_add(s->bytes, std::memory_order_relaxed);
    s->used.store(false, std::memory_order_release);
    return;
  }
  Op* op = AsOp(handle);
  if (op == nullptr) return;
  Connection& c = *op->connection;
  Transfer t;
  t.peer = c.peer;
  t.is_send = c.is_send;
  t.bytes = op->bytes.load(std::memory_order_relaxed);
  if (t.bytes == 0) t.bytes = op->fallback_bytes;
  t.wire_ns = op->wire_ns.load(std::memory_order_relaxed);
  t.start_ns = op->start_ns;
  t.end_ns = now_ns;
  op->used.store(false, std::memory_order_release);
  if (t.bytes == 0) return;  // nothing moved (an empty op)
  // The comm is immutable once opened; seq is the one field we bump.
  t.seq = const_cast<Comm*>(c.comm)->seq.fetch_add(1, std::memory_order_relaxed) + 1;
  c.bytes.fetch_add(t.bytes, std::memory_order_relaxed);
  c.wire_ns.fetch_add(t.wire_ns, std::memory_order_relaxed);
  c.ops.fetch_add(1, std::memory_order_relaxed);
  if (sink_ != nullptr) sink_(c, t);
}

}  // namespace perftracker::preload::net
