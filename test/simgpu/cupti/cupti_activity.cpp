// The CUPTI Activity API subset: the client registers buffer callbacks and enables kinds; the
// simulated device logs what it ran (core/activity.h); a flush packs completed work into the
// client's buffers as real CUpti_ActivityKernel10 / Memcpy6 / Memset4 records.
//
// Threads: flushes run on the caller's thread, or on the periodic flush thread started by
// cuptiActivityFlushPeriod; g_mu serializes them so records keep their order.
#include <cupti_activity.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "core/activity.h"
#include "core/clock.h"

namespace simgpu::cupti {
namespace {

std::mutex g_mu;
CUpti_BuffersCallbackRequestFunc g_request = nullptr;
CUpti_BuffersCallbackCompleteFunc g_complete = nullptr;
CUpti_ActivityKind g_kernel_kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;

struct Flusher {
  std::mutex mu;
  std::condition_variable cv;
  uint32_t period_ms = 0;
  bool started = false;
};
Flusher& GetFlusher() {
  static Flusher* flusher = new Flusher;  // leaked: its thread runs until exit
  return *flusher;
}

size_t RecordSize(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return sizeof(CUpti_ActivityMemset4);
    default:
      return 0;
  }
}

uint8_t CopyKind(CopyDir dir) {
  switch (dir) {
    case CopyDir::kHostToDevice:
      return CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    case CopyDir::kDeviceToHost:
      return CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    case CopyDir::kDeviceToDevice:
      return CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
    case CopyDir::kHostToHost:
      return CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
  }
  return CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN;
}

void FillKernel(const ActivityRecord& r, CUpti_ActivityKernel10* k) {
  k->kind = g_kernel_kind;
  k->start = static_cast<uint64_t>(r.start_ns);
  k->end = static_cast<uint64_t>(r.end_ns);
  k->completed = k->end;
  k->deviceId = static_cast<uint32_t>(r.device);
  k->contextId = static_cast<uint32_t>(r.device) + 1;
  k->streamId = r.stream_id;
  k->gridX = static_cast<int32_t>(r.kernel.grid[0]);
  k->gridY = static_cast<int32_t>(r.kernel.grid[1]);
  k->gridZ = static_cast<int32_t>(r.kernel.grid[2]);
  k->blockX = static_cast<int32_t>(r.kernel.block[0]);
  k->blockY = static_cast<int32_t>(r.kernel.block[1]);
  k->blockZ = static_cast<int32_t>(r.kernel.block[2]);
  k->dynamicSharedMemory = static_cast<int32_t>(r.kernel.dynamic_shared_bytes);
  k->correlationId = r.correlation_id;
  k->name = r.kernel.name;
}

void FillMemcpy(const ActivityRecord& r, CUpti_ActivityMemcpy6* m) {
  m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m->copyKind = CopyKind(r.copy.dir);
  bool src_dev = r.copy.dir == CopyDir::kDeviceToHost || r.copy.dir == CopyDir::kDeviceToDevice;
  bool dst_dev = r.copy.dir == CopyDir::kHostToDevice || r.copy.dir == CopyDir::kDeviceToDevice;
  m->srcKind = src_dev ? CUPTI_ACTIVITY_MEMORY_KIND_DEVICE : CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  m->dstKind = dst_dev ? CUPTI_ACTIVITY_MEMORY_KIND_DEVICE : CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  m->bytes = r.copy.bytes;
  m->start = static_cast<uint64_t>(r.start_ns);
  m->end = static_cast<uint64_t>(r.end_ns);
  m->deviceId = static_cast<uint32_t>(r.device);
  m->contextId = static_cast<uint32_t>(r.device) + 1;
  m->streamId = r.stream_id;
  m->correlationId = r.correlation_id;
  m->copyCount = 1;
}

void FillMemset(const ActivityRecord& r, CUpti_ActivityMemset4* m) {
  m->kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m->value = r.copy.memset_value;
  m->bytes = r.copy.bytes;
  m->start = static_cast<uint64_t>(r.start_ns);
  m->end = static_cast<uint64_t>(r.end_ns);
  m->deviceId = static_cast<uint32_t>(r.device);
  m->contextId = static_cast<uint32_t>(r.device) + 1;
  m->streamId = r.stream_id;
  m->correlationId = r.correlation_id;
  m->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
}

// Writes one record at `out` (room for `room` bytes); returns its size, 0 if it does not fit.
size_t Pack(const ActivityRecord& r, uint8_t* out, size_t room) {
  CUpti_ActivityKind kind = r.kind == WorkKind::kKernel   ? g_kernel_kind
                            : r.kind == WorkKind::kMemcpy ? CUPTI_ACTIVITY_KIND_MEMCPY
                                                          : CUPTI_ACTIVITY_KIND_MEMSET;
  size_t size = RecordSize(kind);
  if (size > room) return 0;
  std::memset(out, 0, size);
  if (r.kind == WorkKind::kKernel) FillKernel(r, reinterpret_cast<CUpti_ActivityKernel10*>(out));
  if (r.kind == WorkKind::kMemcpy) FillMemcpy(r, reinterpret_cast<CUpti_ActivityMemcpy6*>(out));
  if (r.kind == WorkKind::kMemset) FillMemset(r, reinterpret_cast<CUpti_ActivityMemset4*>(out));
  return size;
}

void Flush(bool forced) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_request || !g_complete) return;
  std::vector<ActivityRecord> records;
  TakeActivity(DeviceNowNs(), forced, &records);
  size_t next = 0;
  while (next < records.size()) {
    uint8_t* buffer = nullptr;
    size_t size = 0;
    size_t max_records = 0;
    g_request(&buffer, &size, &max_records);
    if (!buffer || size == 0) return;  // the client gave no buffer: drop, like CUPTI
    size_t used = 0;
    size_t packed = 0;
    while (next < records.size() && (max_records == 0 || packed < max_records)) {
      size_t n = Pack(records[next], buffer + used, size - used);
      if (n == 0) break;
      used += n;
      ++packed;
      ++next;
    }
    g_complete(nullptr, 0, buffer, size, used);
    if (packed == 0) return;  // a buffer too small for one record
  }
}

void FlushLoop() {
  Flusher& f = GetFlusher();
  std::unique_lock<std::mutex> lock(f.mu);
  for (;;) {
    if (f.period_ms == 0) {
      f.cv.wait(lock);
      continue;
    }
    f.cv.wait_for(lock, std::chrono::milliseconds(f.period_ms));
    if (f.period_ms == 0) continue;
    lock.unlock();
    Flush(false);
    lock.lock();
  }
}

bool SetKind(CUpti_ActivityKind kind, bool enabled) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      if (enabled) g_kernel_kind = kind;
      SetActivityEnabled(WorkKind::kKernel, enabled);
      return true;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      SetActivityEnabled(WorkKind::kMemcpy, enabled);
      return true;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      SetActivityEnabled(WorkKind::kMemset, enabled);
      return true;
    default:
      return false;  // accepted, never produced (see README)
  }
}

}  // namespace
}  // namespace simgpu::cupti

namespace sp = simgpu::cupti;

extern "C" {

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                           CUpti_BuffersCallbackCompleteFunc complete) {
  if (!request || !complete) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(sp::g_mu);
  sp::g_request = request;
  sp::g_complete = complete;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  sp::SetKind(kind, true);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  sp::SetKind(kind, false);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  sp::Flush((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushPeriod(uint32_t time_ms) {
  sp::Flusher& f = sp::GetFlusher();
  std::lock_guard<std::mutex> lock(f.mu);
  f.period_ms = time_ms;
  if (!f.started && time_ms > 0) {
    f.started = true;
    std::thread(sp::FlushLoop).detach();
  }
  f.cv.notify_all();
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid_bytes,
                                       CUpti_Activity** record) {
  if (!buffer || !record) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t offset = 0;
  if (*record) {
    auto* current = reinterpret_cast<uint8_t*>(*record);
    offset = static_cast<size_t>(current - buffer) + sp::RecordSize((*record)->kind);
  }
  if (offset + sizeof(CUpti_Activity) > valid_bytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  size_t size = sp::RecordSize(next->kind);
  if (size == 0 || offset + size > valid_bytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = next;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  if (!dropped) return CUPTI_ERROR_INVALID_PARAMETER;
  *dropped = simgpu::DroppedActivityCount();
  return CUPTI_SUCCESS;
}

}  // extern "C"
