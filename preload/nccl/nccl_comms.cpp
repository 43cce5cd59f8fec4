#include "preload/nccl/nccl_comms.h"

#include "preload/core/log.h"
#include "preload/core/symbols.h"

namespace perftracker::preload {
namespace {

RealSymbol g_comm_count{"ncclCommCount", Library::kNccl};
RealSymbol g_comm_user_rank{"ncclCommUserRank", Library::kNccl};
RealSymbol g_get_version{"ncclGetVersion", Library::kNccl};

constexpr size_t kComms = 1024;  // power of two
CommEntry g_comms[kComms];
std::atomic<uint64_t> g_late_comms{0};

struct PatternEntry {
  std::atomic<uint64_t> key{0};
  std::atomic<Slot> slot{kNoSlot - 1};
};
constexpr size_t kPatterns = 8192;  // power of two
PatternEntry g_patterns[kPatterns];

size_t Home(uint64_t key, size_t n) { return (key * 0x9E3779B97F4A7C15ull >> 32) & (n - 1); }

CommEntry* Lookup(ncclComm_t comm, bool insert) {
  const auto key = reinterpret_cast<uintptr_t>(comm);
  size_t i = Home(key, kComms);
  for (size_t probe = 0; probe < 64; ++probe, i = (i + 1) & (kComms - 1)) {
    uintptr_t k = g_comms[i].key.load(std::memory_order_acquire);
    if (k == key) return &g_comms[i];
    if (k == 0) {
      if (!insert) return nullptr;
      if (g_comms[i].key.compare_exchange_strong(k, key) || k == key) return &g_comms[i];
    }
  }
  return nullptr;
}

[[gnu::cold, gnu::noinline]] CommEntry* RegisterLate(ncclComm_t comm) {
  // Ranks that run the same program meet their communicators in the same order.
  const uint64_t order = g_late_comms.fetch_add(1);
  const uint64_t id = HashBytes(&order, sizeof order, HashBytes("late", 4));
  RegisterComm(comm, id);
  return Lookup(comm, false);
}

}  // namespace

uint64_t HashBytes(const void* data, size_t size, uint64_t seed) {
  uint64_t h = seed;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

void RegisterComm(ncclComm_t comm, uint64_t id) {
  if (comm == nullptr) return;
  g_nccl_used.store(true, std::memory_order_relaxed);  // the hardware samplers' cue (hw/)
  CommEntry* e = Lookup(comm, true);
  if (e == nullptr) return;
  e->live.store(false, std::memory_order_relaxed);
  e->id = id;
  e->identity_known.store(false, std::memory_order_relaxed);
  e->seq.store(0, std::memory_order_relaxed);
  e->splits.store(0, std::memory_order_relaxed);
  e->pending_seq.store(0, std::memory_order_relaxed);
  e->live.store(true, std::memory_order_release);
}

void ForgetComm(ncclComm_t comm) {
  if (CommEntry* e = Lookup(comm, false)) e->live.store(false, std::memory_order_release);
}

CommEntry* KnownComm(ncclComm_t comm) {
  CommEntry* e = comm == nullptr ? nullptr : Lookup(comm, false);
  return e != nullptr && e->live.load(std::memory_order_acquire) ? e : nullptr;
}

CommEntry* FindComm(ncclComm_t comm) {
  CommEntry* e = Lookup(comm, false);
  if (e != nullptr && e->live.load(std::memory_order_acquire)) [[likely]] return e;
  return comm == nullptr ? nullptr : RegisterLate(comm);
}

bool EnsureIdentity(CommEntry* e, ncclComm_t comm, const void* caller) {
  if (e->identity_known.load(std::memory_order_acquire)) [[likely]] return true;
  const auto count = g_comm_count.Get<decltype(&ncclCommCount)>(caller);
  const auto user_rank = g_comm_user_rank.Get<decltype(&ncclCommUserRank)>(caller);
  int size = 0, rank = 0;
  if (count == nullptr || user_rank == nullptr || count(comm, &size) != ncclSuccess ||
      user_rank(comm, &rank) != ncclSuccess) {
    return false;
  }
  e->size.store(static_cast<uint32_t>(size), std::memory_order_relaxed);
  e->rank.store(static_cast<uint32_t>(rank), std::memory_order_relaxed);
  e->identity_known.store(true, std::memory_order_release);
  return true;
}

Slot CollectiveSlot(CommEntry* e, format::CollectiveOp op, int32_t peer, uint64_t bytes,
                    const char* name) {
  uint64_t key = HashBytes(&e->id, sizeof e->id);
  key = HashBytes(&op, sizeof op, key);
  key = HashBytes(&peer, sizeof peer, key);
  key = HashBytes(&bytes, sizeof bytes, key) | 1;
  size_t i = Home(key, kPatterns);
  for (size_t probe = 0; probe < 64; ++probe, i = (i + 1) & (kPatterns - 1)) {
    PatternEntry& p = g_patterns[i];
    uint64_t k = p.key.load(std::memory_order_acquire);
    if (k == 0 && !p.key.compare_exchange_strong(k, key) && k != key) continue;
    if (k != 0 && k != key) continue;
    const Slot s = p.slot.load(std::memory_order_acquire);
    if (s != kNoSlot - 1) [[likely]] return s;
    const Slot interned = InternCollective(e->id, e->size.load(std::memory_order_relaxed),
                                           e->rank.load(std::memory_order_relaxed), op, peer,
                                           bytes, name);
    p.slot.store(interned, std::memory_order_release);
    return interned;
  }
  return InternCollective(e->id, e->size.load(std::memory_order_relaxed),  // table full: cold
                          e->rank.load(std::memory_order_relaxed), op, peer, bytes, name);
}

uint64_t DtypeBytes(ncclDataType_t type) {
  switch (type) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

bool NcclSupported() {
  // 0: not checked yet, 1: supported, 2: unknown version (pass-through).
  static std::atomic<int> state{0};
  const int s = state.load(std::memory_order_acquire);
  if (s != 0) [[likely]] return s == 1;
  const auto get_version = g_get_version.Get<decltype(&ncclGetVersion)>();
  int version = 0;
  if (get_version == nullptr || get_version(&version) != ncclSuccess) return false;  // retry
  // Codes are major*1000+minor*100+patch before 2.9, major*10000+minor*100+patch since.
  const int major = version >= 10000 ? version / 10000 : version / 1000;
  int expected = 0;
  const int verdict = major == 2 ? 1 : 2;
  if (state.compare_exchange_strong(expected, verdict) && verdict == 2) {
    Warn("NCCL version %d is unknown to this build; NCCL calls pass through unrecorded "
         "(PERFTRACKER_ENABLE=0 turns everything off)", version);
  }
  return verdict == 1;
}

}  // namespace perftracker::preload
