// Memory: allocations and copies. Device memory is host memory (see core/registry.h); copies
// move the bytes when the device runs them and take the time of the bandwidth model.
#include <cuda_runtime_api.h>

#include <cstring>

#include "core/activity.h"
#include "core/cost_model.h"
#include "core/registry.h"
#include "cudart/runtime_internal.h"
#include "cudart/runtime_state.h"

namespace simgpu::cudart {
namespace {

bool OnDevice(const void* ptr) { return ClassifyPointer(ptr, nullptr) == MemoryKind::kDevice; }

bool ResolveDirection(cudaMemcpyKind kind, void* dst, const void* src, CopyDir* dir) {
  switch (kind) {
    case cudaMemcpyHostToHost:
      *dir = CopyDir::kHostToHost;
      return true;
    case cudaMemcpyHostToDevice:
      *dir = CopyDir::kHostToDevice;
      return true;
    case cudaMemcpyDeviceToHost:
      *dir = CopyDir::kDeviceToHost;
      return true;
    case cudaMemcpyDeviceToDevice:
      *dir = CopyDir::kDeviceToDevice;
      return true;
    case cudaMemcpyDefault:
      *dir = static_cast<CopyDir>((OnDevice(src) ? 2 : 0) | (OnDevice(dst) ? 1 : 0));
      return true;
  }
  return false;
}

// Enqueues a copy or memset and returns its item (null when captured or empty).
cudaError_t EnqueueTransfer(WorkSpec spec, cudaStream_t stream, bool per_thread, WorkRef* item) {
  Stream* s = ResolveStream(stream, per_thread);
  spec.correlation_id = NextCorrelationId();
  *item = DeviceOf(s)->Enqueue(s, std::move(spec));
  return cudaSuccess;
}

cudaError_t CopySpec(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                     WorkSpec* spec) {
  if (count > 0 && (!dst || !src)) return Fail(cudaErrorInvalidValue);
  if (!ResolveDirection(kind, dst, src, &spec->copy.dir)) {
    return Fail(cudaErrorInvalidMemcpyDirection);
  }
  spec->kind = WorkKind::kMemcpy;
  spec->copy.bytes = count;
  spec->duration_ns = CopyDurationNs(spec->copy);
  spec->effect = [dst, src, count] { std::memmove(dst, src, count); };
  return cudaSuccess;
}

cudaError_t SetSpec(void* dst, int value, size_t count, WorkSpec* spec) {
  if (count > 0 && !dst) return Fail(cudaErrorInvalidValue);
  spec->kind = WorkKind::kMemset;
  spec->copy.bytes = count;
  spec->copy.memset_value = static_cast<uint8_t>(value);
  spec->duration_ns = MemsetDurationNs(count);
  spec->effect = [dst, value, count] { std::memset(dst, value, count); };
  return cudaSuccess;
}

cudaError_t Wait(const WorkRef& item) {
  if (item) item->stream->WaitComplete(item);
  return cudaSuccess;
}

}  // namespace

cudaError_t MemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                        cudaStream_t stream, bool per_thread) {
  WorkSpec spec;
  if (cudaError_t e = CopySpec(dst, src, count, kind, &spec); e != cudaSuccess) return e;
  WorkRef item;
  return EnqueueTransfer(std::move(spec), stream, per_thread, &item);
}

cudaError_t Memcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind, bool per_thread) {
  WorkSpec spec;
  if (cudaError_t e = CopySpec(dst, src, count, kind, &spec); e != cudaSuccess) return e;
  WorkRef item;
  EnqueueTransfer(std::move(spec), nullptr, per_thread, &item);
  return Wait(item);  // synchronous with respect to the host, like the real call
}

cudaError_t MemsetAsync(void* dst, int value, size_t count, cudaStream_t stream, bool per_thread) {
  WorkSpec spec;
  if (cudaError_t e = SetSpec(dst, value, count, &spec); e != cudaSuccess) return e;
  WorkRef item;
  return EnqueueTransfer(std::move(spec), stream, per_thread, &item);
}

cudaError_t Memset(void* dst, int value, size_t count, bool per_thread) {
  WorkSpec spec;
  if (cudaError_t e = SetSpec(dst, value, count, &spec); e != cudaSuccess) return e;
  WorkRef item;
  EnqueueTransfer(std::move(spec), nullptr, per_thread, &item);
  return Wait(item);
}

}  // namespace simgpu::cudart

namespace sc = simgpu::cudart;

extern "C" {

cudaError_t cudaMalloc(void** ptr, size_t size) {
  if (!ptr) return sc::Fail(cudaErrorInvalidValue);
  *ptr = simgpu::AllocDeviceMemory(sc::CurrentDeviceOrdinal(), size);
  return *ptr ? cudaSuccess : sc::Fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaFree(void* ptr) {
  // cudaFree(nullptr) is the classic "initialise the context" call.
  if (!ptr) return cudaSuccess;
  return simgpu::FreeDeviceMemory(ptr) ? cudaSuccess : sc::Fail(cudaErrorInvalidValue);
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  if (!ptr) return sc::Fail(cudaErrorInvalidValue);
  *ptr = simgpu::AllocPinnedHostMemory(size);
  return *ptr ? cudaSuccess : sc::Fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int) {
  if (!ptr) return sc::Fail(cudaErrorInvalidValue);
  *ptr = simgpu::AllocPinnedHostMemory(size);
  return *ptr ? cudaSuccess : sc::Fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaFreeHost(void* ptr) {
  if (!ptr) return cudaSuccess;
  return simgpu::FreePinnedHostMemory(ptr) ? cudaSuccess : sc::Fail(cudaErrorInvalidValue);
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* attributes, const void* ptr) {
  if (!attributes) return sc::Fail(cudaErrorInvalidValue);
  int device = -1;
  simgpu::MemoryKind kind = simgpu::ClassifyPointer(ptr, &device);
  *attributes = cudaPointerAttributes{};
  attributes->type = kind == simgpu::MemoryKind::kDevice       ? cudaMemoryTypeDevice
                     : kind == simgpu::MemoryKind::kPinnedHost ? cudaMemoryTypeHost
                                                               : cudaMemoryTypeUnregistered;
  attributes->device = device < 0 ? sc::CurrentDeviceOrdinal() : device;
  attributes->devicePointer =
      kind == simgpu::MemoryKind::kPageable ? nullptr : const_cast<void*>(ptr);
  attributes->hostPointer = kind == simgpu::MemoryKind::kDevice ? nullptr : const_cast<void*>(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  return sc::Memcpy(dst, src, count, kind, false);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return sc::MemcpyAsync(dst, src, count, kind, stream, false);
}

cudaError_t cudaMemset(void* dst, int value, size_t count) {
  return sc::Memset(dst, value, count, false);
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t count, cudaStream_t stream) {
  return sc::MemsetAsync(dst, value, count, stream, false);
}

}  // extern "C"
