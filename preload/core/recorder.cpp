// The hot path of recorder.h: per-thread rings, and the interned tables behind slots.
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <mutex>
#include <unordered_map>

#include "preload/core/log.h"
#include "preload/core/recorder_state.h"

namespace perftracker::preload {
namespace {

std::atomic<ThreadRing*> g_rings{nullptr};
uint64_t g_ring_events = 1 << 16;
std::atomic<PythonStackProvider> g_python_stack{nullptr};
std::atomic<uint32_t> g_host_sample_every{8};

struct FunctionKey {
  format::FunctionKind kind;
  Slot parent;
  std::string name;
  bool operator==(const FunctionKey&) const = default;
};
struct FunctionKeyHash {
  size_t operator()(const FunctionKey& k) const {
    return std::hash<std::string>()(k.name) ^ (size_t{k.parent} << 8) ^ size_t(k.kind);
  }
};
struct CollectiveKey {
  uint64_t comm_id;
  format::CollectiveOp op;
  int32_t peer;
  uint64_t bytes;
  bool operator==(const CollectiveKey&) const = default;
};
struct CollectiveKeyHash {
  size_t operator()(const CollectiveKey& k) const {
    return std::hash<uint64_t>()(k.comm_id * 31 + k.bytes) ^ (size_t(k.op) << 4) ^
           (size_t(uint32_t(k.peer)) << 12);
  }
};
std::unordered_map<FunctionKey, Slot, FunctionKeyHash>* g_function_index = nullptr;
std::unordered_map<CollectiveKey, Slot, CollectiveKeyHash>* g_collective_index = nullptr;

thread_local bool tls_exited = false;

// Marks the calling thread's ring dead when the thread exits. Hooks that run later in the
// thread's exit (other TLS destructors) find the sentinel and record nothing.
struct RingOwner {
  ThreadRing* ring = nullptr;
  ~RingOwner() {
    if (ring != nullptr) ring->state.store(RingState::kDead, std::memory_order_release);
    t_event_ring = &g_sentinel_ring;
    tls_exited = true;
  }
};

ThreadRing* AdoptOrCreateRing() {
  for (ThreadRing* r = g_rings.load(std::memory_order_acquire); r != nullptr; r = r->next) {
    RingState expected = RingState::kFree;
    if (r->state.compare_exchange_strong(expected, RingState::kInUse)) return r;
  }
  // mmap, not malloc: the hook may run inside an allocator or a signal-sensitive context.
  const size_t bytes = sizeof(ThreadRing) + g_ring_events * sizeof(Event);
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return nullptr;
  auto* ring = new (mem) ThreadRing();
  ring->capacity = g_ring_events;
  ring->limit = g_ring_events - kBoundaryReserve;  // InitRecorder: at least 1024
  ring->events = reinterpret_cast<Event*>(static_cast<char*>(mem) + sizeof(ThreadRing));
  ThreadRing* head = g_rings.load(std::memory_order_relaxed);
  do {
    ring->next = head;
  } while (!g_rings.compare_exchange_weak(head, ring, std::memory_order_release));
  return ring;
}

}  // namespace

void PushEventSlow(const Event& e) {
  ThreadRing* ring = t_event_ring;
  if (ring != &g_sentinel_ring) {  // a real ring that is full
    ThreadRing::Bump(ring->dropped, 1);
    return;
  }
  if (!g_recorder_active.load(std::memory_order_relaxed) || tls_exited) return;
  ring = AdoptOrCreateRing();
  if (ring == nullptr) return;
  // The main thread's TLS destructors run in exit() before the atexit handlers, which still
  // record (final flushes): its ring lives as long as the process and needs no owner.
  if (gettid() != getpid()) {
    thread_local RingOwner owner;
    owner.ring = ring;
  }
  ring->tid.store(static_cast<int32_t>(gettid()), std::memory_order_relaxed);
  t_event_ring = ring;
  ring->Push(e);
}

namespace {

inline void Push(const Event& e) {
  if (!t_event_ring->Push(e)) [[unlikely]]
    PushEventSlow(e);
}

}  // namespace

void SetActive(bool active) { g_recorder_active.store(active, std::memory_order_release); }

Tables& GetTables() {
  static Tables* tables = new Tables();  // never destroyed: hooks may run during exit
  return *tables;
}

ThreadRing* FirstRing() { return g_rings.load(std::memory_order_acquire); }

void ForgetParentThreads() {
  // The copies stay mapped: the forking thread's RingOwner may still mark its old ring dead.
  g_rings.store(nullptr, std::memory_order_release);
  t_event_ring = &g_sentinel_ring;
  tls_exited = false;
}

void InitRecorder(uint32_t max_functions, uint64_t ring_events) {
  Tables& t = GetTables();
  std::lock_guard lock(t.mu);
  if (g_function_index != nullptr) return;  // once per process
  t.functions.reserve(max_functions);
  t.collectives.reserve(4096);
  g_function_index = new std::unordered_map<FunctionKey, Slot, FunctionKeyHash>();
  g_collective_index = new std::unordered_map<CollectiveKey, Slot, CollectiveKeyHash>();
  g_ring_events = std::bit_ceil(std::max<uint64_t>(ring_events, 1024));
}

namespace {

Slot InternFunctionLocked(Tables& t, format::FunctionKind kind, std::string_view name,
                          Slot parent) {
  if (g_function_index == nullptr) return kNoSlot;
  FunctionKey key{kind, parent, std::string(name)};
  if (auto it = g_function_index->find(key); it != g_function_index->end()) return it->second;
  if (t.functions.size() == t.functions.capacity()) {
    t.dropped_functions.fetch_add(1, std::memory_order_relaxed);
    return kNoSlot;
  }
  const auto slot = static_cast<Slot>(t.functions.size());
  t.functions.push_back(FunctionEntry{kind, parent, key.name});
  g_function_index->emplace(std::move(key), slot);
  t.function_count.store(slot + 1, std::memory_order_release);
  return slot;
}

}  // namespace

Slot InternFunction(format::FunctionKind kind, std::string_view name, Slot parent) {
  Tables& t = GetTables();
  std::lock_guard lock(t.mu);
  return InternFunctionLocked(t, kind, name, parent);
}

Slot TryInternFunction(format::FunctionKind kind, std::string_view name, Slot parent, bool* busy) {
  Tables& t = GetTables();
  std::unique_lock lock(t.mu, std::try_to_lock);
  *busy = !lock.owns_lock();
  return *busy ? kNoSlot : InternFunctionLocked(t, kind, name, parent);
}

Slot InternCollective(uint64_t comm_id, uint32_t comm_size, uint32_t comm_rank,
                      format::CollectiveOp op, int32_t peer, uint64_t bytes,
                      std::string_view name) {
  Tables& t = GetTables();
  std::lock_guard lock(t.mu);
  if (g_collective_index == nullptr) return kNoSlot;
  const CollectiveKey key{comm_id, op, peer, bytes};
  if (auto it = g_collective_index->find(key); it != g_collective_index->end()) return it->second;
  if (t.collectives.size() == t.collectives.capacity()) return kNoSlot;
  const auto slot = static_cast<Slot>(t.collectives.size());
  t.collectives.push_back(
      CollectiveEntry{comm_id, comm_size, comm_rank, op, peer, bytes, std::string(name)});
  g_collective_index->emplace(key, slot);
  t.collective_count.store(slot + 1, std::memory_order_release);
  return slot;
}

void SetPythonStackProvider(PythonStackProvider provider) { g_python_stack.store(provider); }
WriterTicks& GetWriterTicks() {
  static WriterTicks ticks;
  return ticks;
}

void AddWriterTick(WriterTick tick, uint64_t period_ns) {
  static std::mutex mu;  // registrants only; the writer reads the published count
  std::lock_guard lock(mu);
  WriterTicks& t = GetWriterTicks();
  const int n = t.count.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i) {
    if (t.ticks[i] == tick) return;
  }
  if (n >= WriterTicks::kMax) return;
  t.ticks[n] = tick;
  t.period_ns[n] = period_ns;
  t.count.store(n + 1, std::memory_order_release);
}
PythonStackProvider GetPythonStackProvider() { return g_python_stack.load(); }

FlushCallbacks& GetFlushCallbacks() {
  static FlushCallbacks callbacks;
  return callbacks;
}

void AddFlushCallback(FlushCallback callback) {
  FlushCallbacks& f = GetFlushCallbacks();
  const int i = f.count.load();
  if (i >= static_cast<int>(std::size(f.callbacks))) return;
  f.callbacks[i] = callback;
  f.count.store(i + 1);
}

void RecordCall(Slot slot, uint64_t end_ns, uint64_t duration_ns, uint64_t self_ns,
                uint64_t wait_ns, uint64_t bytes) {
  if (slot == kNoSlot) return;
  Push(Event{slot, EventType::kCall, {}, end_ns, duration_ns, self_ns, wait_ns, bytes});
}

void RecordSlice(Slot slot, uint64_t now_ns, uint64_t duration_ns, uint64_t self_ns) {
  if (slot == kNoSlot) return;
  Push(Event{slot, EventType::kCall, {kCallSlice, 0, 0}, now_ns, duration_ns, self_ns, 0, 0});
}

void RecordUntimedCalls(Slot slot, uint64_t calls, uint64_t epoch) {
  if (slot == kNoSlot || calls == 0) return;
  Push(Event{slot, EventType::kCall, {kCallUntimed, 0, 0}, kEpochTag | epoch, calls, 0, 0, 0});
}

bool ReloadHostSample() {
  thread_local uint64_t state [[gnu::tls_model("initial-exec")]] =
      reinterpret_cast<uintptr_t>(&state) | 1;
  t_host_countdown =
      NextSampleInterval(state, g_host_sample_every.load(std::memory_order_relaxed));
  return true;
}

void SetHostSampleEvery(uint32_t every) {
  g_host_sample_every.store(std::max<uint32_t>(every, 1), std::memory_order_relaxed);
}

void RecordDeviceTime(Slot slot, uint64_t device_ns) {
  if (slot == kNoSlot) return;
  Push(Event{slot, EventType::kDeviceTime, {}, 0, device_ns, 0, 0, 0});
}

void RecordCollectiveLaunch(Slot collective, uint64_t seq, uint64_t launch_ns, uint64_t host_ns) {
  if (collective == kNoSlot) return;
  const uint64_t epoch = g_event_epoch.fetch_add(1, std::memory_order_relaxed) + 1;
  Push(Event{collective, EventType::kCollLaunch, {}, launch_ns, seq, host_ns, epoch, 0});
}

void RecordCollectiveDone(Slot collective, uint64_t seq, uint64_t device_ns) {
  if (collective == kNoSlot) return;  // device_ns == 0: completed, duration unknown
  Push(Event{collective, EventType::kCollDone, {}, 0, seq, device_ns, 0, 0});
}

void MarkIteration(uint64_t end_ns) {
  g_slice_epoch.fetch_add(1, std::memory_order_relaxed);
  const uint64_t epoch = g_event_epoch.fetch_add(1, std::memory_order_relaxed) + 1;
  const Event e{0, EventType::kIteration, {}, end_ns, epoch, 0, 0, 0};
  if (!t_event_ring->PushBoundary(e)) PushEventSlow(e);
}

void RecordHookOverhead(uint64_t ns, uint64_t calls) {
  ThreadRing* ring = t_event_ring;
  if (ring == &g_sentinel_ring) return;
  ThreadRing::Bump(ring->hook_ns, ns);
  ThreadRing::Bump(ring->hook_calls, calls);
}

}  // namespace perftracker::preload
