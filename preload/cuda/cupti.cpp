// CUPTI mode (PERFTRACKER_CUPTI=1): device time of every kernel and copy from CUPTI activity
// records instead of sampled timing events.
//
// libcupti.so.13 is dlopened at run time, never linked: without the variable nothing of it is
// loaded. Started on the first timed CUDA call, not in the constructor, so a profiler the
// application starts itself (torch.profiler, Nsight) keeps its subscriber: when cuptiSubscribe
// says another subscriber exists we warn once and stay on timing events.
//
// Who runs here: the poller thread flushes every ~100 ms (cuptiActivityFlushAll); CUPTI calls
// the buffer callbacks on its own threads or the flushing one. Buffers come from a fixed
// pre-allocated pool; when all are in use CUPTI gets none and drops (and counts) records.
#include <cupti.h>
#include <dlfcn.h>

#include <cstdlib>

#include "preload/cuda/cuda_hook.h"
#include "preload/core/log.h"
#include "preload/core/symbols.h"

namespace perftracker::preload {

void StartCupti();  // cuda_runtime.cpp calls it through MaybeStartCupti

namespace {

struct CuptiApi {
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
};
CuptiApi g_cupti;

constexpr size_t kBufferBytes = 1 << 20;
constexpr int kBuffers = 16;
uint8_t* g_buffers[kBuffers];
std::atomic<bool> g_buffer_busy[kBuffers];

// Copy direction -> device-time slot, by CUPTI_ACTIVITY_MEMCPY_KIND_* (0..10).
ApiSlot g_copy_slots[] = {
    {"device memcpy other", format::FunctionKind::kMemcpy},
    {"device memcpy HtoD", format::FunctionKind::kMemcpy},
    {"device memcpy DtoH", format::FunctionKind::kMemcpy},
    {"device memcpy other", format::FunctionKind::kMemcpy},
    {"device memcpy other", format::FunctionKind::kMemcpy},
    {"device memcpy other", format::FunctionKind::kMemcpy},
    {"device memcpy other", format::FunctionKind::kMemcpy},
    {"device memcpy other", format::FunctionKind::kMemcpy},
    {"device memcpy DtoD", format::FunctionKind::kMemcpy},
    {"device memcpy HtoH", format::FunctionKind::kMemcpy},
    {"device memcpy PtoP", format::FunctionKind::kMemcpy},
};

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  for (int i = 0; i < kBuffers; ++i) {
    bool expected = false;
    if (g_buffer_busy[i].compare_exchange_strong(expected, true)) {
      *buffer = g_buffers[i];
      *size = kBufferBytes;
      return;
    }
  }
}

void Consume(const CUpti_Activity* record) {
  if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
      record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    const Slot slot = k->name != nullptr ? KernelSlotByName(k->name) : kNoSlot;
    if (slot != kNoSlot && k->end >= k->start) RecordDeviceTime(slot, k->end - k->start);
  } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
    const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
    const size_t kind = m->copyKind < std::size(g_copy_slots) ? m->copyKind : 0;
    const Slot slot = g_copy_slots[kind].Get();
    if (slot != kNoSlot && m->end >= m->start) RecordDeviceTime(slot, m->end - m->start);
  }
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  while (g_cupti.next_record(buffer, valid, &record) == CUPTI_SUCCESS) Consume(record);
  for (int i = 0; i < kBuffers; ++i) {
    if (g_buffers[i] == buffer) g_buffer_busy[i].store(false, std::memory_order_release);
  }
}

void CUPTIAPI IgnoreCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

void FlushActivity() {
  if (g_cupti.flush_all != nullptr) g_cupti.flush_all(0);
}

bool LoadCupti() {
  void* lib = RealDlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    Warn("PERFTRACKER_CUPTI=1 but libcupti.so.13 cannot be loaded (%s); using timing events",
         dlerror());
    return false;
  }
  g_cupti.subscribe = reinterpret_cast<decltype(&cuptiSubscribe)>(dlsym(lib, "cuptiSubscribe"));
  g_cupti.register_callbacks = reinterpret_cast<decltype(&cuptiActivityRegisterCallbacks)>(
      dlsym(lib, "cuptiActivityRegisterCallbacks"));
  g_cupti.enable =
      reinterpret_cast<decltype(&cuptiActivityEnable)>(dlsym(lib, "cuptiActivityEnable"));
  g_cupti.flush_all =
      reinterpret_cast<decltype(&cuptiActivityFlushAll)>(dlsym(lib, "cuptiActivityFlushAll"));
  g_cupti.next_record = reinterpret_cast<decltype(&cuptiActivityGetNextRecord)>(
      dlsym(lib, "cuptiActivityGetNextRecord"));
  if (g_cupti.subscribe && g_cupti.register_callbacks && g_cupti.enable && g_cupti.flush_all &&
      g_cupti.next_record) {
    return true;
  }
  Warn("libcupti.so.13 lacks the Activity API; PERFTRACKER_CUPTI ignored, using timing events");
  g_cupti.flush_all = nullptr;
  return false;
}

bool AllocateBuffers() {
  for (int i = 0; i < kBuffers; ++i) {
    // CUPTI wants 8-byte aligned buffers; allocated once, never freed (records may be late).
    g_buffers[i] = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    if (g_buffers[i] == nullptr) return false;
  }
  return true;
}

}  // namespace

void StartCupti() {
  if (!LoadCupti() || !AllocateBuffers()) return;
  CUpti_SubscriberHandle subscriber = nullptr;
  const CUptiResult rc = g_cupti.subscribe(&subscriber, &IgnoreCallback, nullptr);
  if (rc != CUPTI_SUCCESS) {
    Warn("CUPTI is in use by another tool (error %d); PERFTRACKER_CUPTI ignored, using timing "
         "events", static_cast<int>(rc));
    g_cupti.flush_all = nullptr;
    return;
  }
  if (g_cupti.register_callbacks(&BufferRequested, &BufferCompleted) != CUPTI_SUCCESS ||
      g_cupti.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS ||
      g_cupti.enable(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS) {
    Warn("CUPTI activity tracing could not be enabled; using timing events");
    return;
  }
  g_cupti_timing.store(true, std::memory_order_release);
  SetPollerTick(&FlushActivity);
  EnsurePoller();
}

}  // namespace perftracker::preload
