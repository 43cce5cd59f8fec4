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

// A pitched copy of `rows` rows of `width` bytes: row r of a box starts at base + offset(r).
// Timed like one contiguous copy of width x rows bytes (the model has no pitch penalty).
struct Pitched {
  char* dst;
  const char* src;
  size_t dpitch, spitch, width, height, depth;
  size_t dslice, sslice;  // bytes between 2D slices of a 3D box
};

cudaError_t PitchedSpec(const Pitched& p, cudaMemcpyKind kind, WorkSpec* spec) {
  const size_t bytes = p.width * p.height * p.depth;
  if (bytes > 0 && (!p.dst || !p.src)) return Fail(cudaErrorInvalidValue);
  if (p.width > p.dpitch || p.width > p.spitch) return Fail(cudaErrorInvalidPitchValue);
  if (!ResolveDirection(kind, p.dst, p.src, &spec->copy.dir)) {
    return Fail(cudaErrorInvalidMemcpyDirection);
  }
  spec->kind = WorkKind::kMemcpy;
  spec->copy.bytes = bytes;
  spec->duration_ns = CopyDurationNs(spec->copy);
  spec->effect = [p] {
    for (size_t z = 0; z < p.depth; ++z) {
      for (size_t y = 0; y < p.height; ++y) {
        std::memmove(p.dst + z * p.dslice + y * p.dpitch, p.src + z * p.sslice + y * p.spitch,
                     p.width);
      }
    }
  };
  return cudaSuccess;
}

// Linear memory only: copies from or to CUDA arrays are not modelled.
bool Pitched3D(const cudaMemcpy3DParms* p, Pitched* out) {
  if (p == nullptr || p->srcArray != nullptr || p->dstArray != nullptr) return false;
  const cudaPitchedPtr& s = p->srcPtr;
  const cudaPitchedPtr& d = p->dstPtr;
  const size_t sslice = s.pitch * s.ysize, dslice = d.pitch * d.ysize;
  *out = Pitched{
      static_cast<char*>(d.ptr) + p->dstPos.z * dslice + p->dstPos.y * d.pitch + p->dstPos.x,
      static_cast<const char*>(s.ptr) + p->srcPos.z * sslice + p->srcPos.y * s.pitch + p->srcPos.x,
      d.pitch,
      s.pitch,
      p->extent.width,
      p->extent.height,
      p->extent.depth,
      dslice,
      sslice};
  return true;
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

cudaError_t Memcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                     size_t height, cudaMemcpyKind kind, cudaStream_t stream, bool async,
                     bool per_thread) {
  WorkSpec spec;
  const Pitched p{static_cast<char*>(dst),
                  static_cast<const char*>(src),
                  dpitch,
                  spitch,
                  width,
                  height,
                  1,
                  0,
                  0};
  if (cudaError_t e = PitchedSpec(p, kind, &spec); e != cudaSuccess) return e;
  WorkRef item;
  EnqueueTransfer(std::move(spec), async ? stream : nullptr, per_thread, &item);
  return async ? cudaSuccess : Wait(item);
}

cudaError_t Memcpy3D(const cudaMemcpy3DParms* params, cudaStream_t stream, bool async,
                     bool per_thread) {
  Pitched p;
  if (!Pitched3D(params, &p)) return Fail(cudaErrorInvalidValue);
  WorkSpec spec;
  if (cudaError_t e = PitchedSpec(p, params->kind, &spec); e != cudaSuccess) return e;
  WorkRef item;
  EnqueueTransfer(std::move(spec), async ? stream : nullptr, per_thread, &item);
  return async ? cudaSuccess : Wait(item);
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
  if (cudaError_t rc = sc::CheckCaptureSafe(); rc != cudaSuccess) return rc;
  *ptr = simgpu::AllocDeviceMemory(sc::CurrentDeviceOrdinal(), size);
  return *ptr ? cudaSuccess : sc::Fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaFree(void* ptr) {
  // cudaFree(nullptr) is the classic "initialise the context" call.
  if (!ptr) return cudaSuccess;
  // The real cudaFree synchronizes the device before it returns the memory: a caching
  // allocator emptied every step (torch.cuda.empty_cache) stalls the host on the device's queue.
  sc::CurrentDevice()->Synchronize();
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

cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                         size_t height, enum cudaMemcpyKind kind) {
  return sc::Memcpy2D(dst, dpitch, src, spitch, width, height, kind, nullptr, false, false);
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind,
                              cudaStream_t stream) {
  return sc::Memcpy2D(dst, dpitch, src, spitch, width, height, kind, stream, true, false);
}

cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms* p) {
  return sc::Memcpy3D(p, nullptr, false, false);
}

cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms* p, cudaStream_t stream) {
  return sc::Memcpy3D(p, stream, true, false);
}

cudaError_t cudaMemset(void* dst, int value, size_t count) {
  return sc::Memset(dst, value, count, false);
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t count, cudaStream_t stream) {
  return sc::MemsetAsync(dst, value, count, stream, false);
}

}  // extern "C"
