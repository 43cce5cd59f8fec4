// CUDA runtime hooks: copies (per direction), memsets and the allocation family.
// Synchronous copies count their whole duration as wait time; asynchronous copies and memsets
// get sampled device time on their own API-by-direction slot.
#include "preload/core/versioned_entry.h"
#include "preload/cuda/cuda_hook.h"

namespace perftracker::preload {
namespace {

using Kind = format::FunctionKind;
using MemcpyFn = cudaError_t (*)(void*, const void*, size_t, cudaMemcpyKind);
using MemcpyAsyncFn = cudaError_t (*)(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t);
using MemsetFn = cudaError_t (*)(void*, int, size_t);
using MemsetAsyncFn = cudaError_t (*)(void*, int, size_t, cudaStream_t);
using AllocAsyncFn = cudaError_t (*)(void**, size_t, cudaStream_t);
using FreeAsyncFn = cudaError_t (*)(void*, cudaStream_t);

constinit RealSymbols g_real{
    Library::kCudart,
    {"cudaMemcpy", "cudaMemcpy_ptds", "cudaMemcpyAsync", "cudaMemcpyAsync_ptsz", "cudaMemset",
     "cudaMemset_ptds", "cudaMemsetAsync", "cudaMemsetAsync_ptsz", "cudaMalloc", "cudaFree",
     "cudaMallocHost", "cudaHostAlloc", "cudaFreeHost", "cudaMallocManaged", "cudaMallocAsync",
     "cudaMallocAsync_ptsz", "cudaFreeAsync", "cudaFreeAsync_ptsz"}};
enum Real {
  kMemcpy,
  kMemcpyPtds,
  kMemcpyAsync,
  kMemcpyAsyncPtsz,
  kMemset,
  kMemsetPtds,
  kMemsetAsync,
  kMemsetAsyncPtsz,
  kMalloc,
  kFree,
  kMallocHost,
  kHostAlloc,
  kFreeHost,
  kMallocManaged,
  kMallocAsync,
  kMallocAsyncPtsz,
  kFreeAsync,
  kFreeAsyncPtsz
};

// One slot per API and direction (cudaMemcpyKind 0..4): the analyzer compares H2D with H2D.
ApiSlot g_api_memcpy[] = PERFTRACKER_COPY_SLOTS("cudaMemcpy");
ApiSlot g_api_memcpy_async[] = PERFTRACKER_COPY_SLOTS("cudaMemcpyAsync");
ApiSlot g_api_memset{"cudaMemset", Kind::kMemset};
ApiSlot g_api_memset_async{"cudaMemsetAsync", Kind::kMemset};
ApiSlot g_api_malloc{"cudaMalloc", Kind::kAlloc};
ApiSlot g_api_free{"cudaFree", Kind::kAlloc};
ApiSlot g_api_malloc_host{"cudaMallocHost", Kind::kAlloc};
ApiSlot g_api_host_alloc{"cudaHostAlloc", Kind::kAlloc};
ApiSlot g_api_free_host{"cudaFreeHost", Kind::kAlloc};
ApiSlot g_api_malloc_managed{"cudaMallocManaged", Kind::kAlloc};
ApiSlot g_api_malloc_async{"cudaMallocAsync", Kind::kAlloc};
ApiSlot g_api_free_async{"cudaFreeAsync", Kind::kAlloc};

[[gnu::constructor]] void ResolveMemory() { ResolveAll(g_real); }

}  // namespace
}  // namespace perftracker::preload

namespace perftracker::preload::versioned {

template <int kNode>
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  const auto real = g_real(kNode, kMemcpy).Need<MemcpyFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(dst, src, n, kind);
  return HostWork(ByKind(g_api_memcpy, kind), __builtin_return_address(0), n, /*blocking=*/true,
                  [&] { return real(dst, src, n, kind); });
}

template <int kNode>
cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  const auto real = g_real(kNode, kMemcpyPtds).Need<MemcpyFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(dst, src, n, kind);
  return HostWork(ByKind(g_api_memcpy, kind), __builtin_return_address(0), n, /*blocking=*/true,
                  [&] { return real(dst, src, n, kind); });
}

template <int kNode>
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  const auto real = g_real(kNode, kMemcpyAsync).Need<MemcpyAsyncFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(dst, src, n, kind, stream);
  return StreamWork(ByKind(g_api_memcpy_async, kind), __builtin_return_address(0), stream, n,
                    [&] { return real(dst, src, n, kind, stream); });
}

template <int kNode>
cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t n, cudaMemcpyKind kind,
                                 cudaStream_t stream) {
  const auto real =
      g_real(kNode, kMemcpyAsyncPtsz).Need<MemcpyAsyncFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(dst, src, n, kind, stream);
  return StreamWork(ByKind(g_api_memcpy_async, kind), __builtin_return_address(0),
                    PerThread(stream), n, [&] { return real(dst, src, n, kind, stream); });
}

template <int kNode>
cudaError_t cudaMemset(void* dst, int value, size_t n) {
  const auto real = g_real(kNode, kMemset).Need<MemsetFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(dst, value, n);
  return HostWork(g_api_memset, __builtin_return_address(0), n, /*blocking=*/false,
                  [&] { return real(dst, value, n); });
}

template <int kNode>
cudaError_t cudaMemset_ptds(void* dst, int value, size_t n) {
  const auto real = g_real(kNode, kMemsetPtds).Need<MemsetFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(dst, value, n);
  return HostWork(g_api_memset, __builtin_return_address(0), n, /*blocking=*/false,
                  [&] { return real(dst, value, n); });
}

template <int kNode>
cudaError_t cudaMemsetAsync(void* dst, int value, size_t n, cudaStream_t stream) {
  const auto real = g_real(kNode, kMemsetAsync).Need<MemsetAsyncFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(dst, value, n, stream);
  return StreamWork(g_api_memset_async, __builtin_return_address(0), stream, n,
                    [&] { return real(dst, value, n, stream); });
}

template <int kNode>
cudaError_t cudaMemsetAsync_ptsz(void* dst, int value, size_t n, cudaStream_t stream) {
  const auto real =
      g_real(kNode, kMemsetAsyncPtsz).Need<MemsetAsyncFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(dst, value, n, stream);
  return StreamWork(g_api_memset_async, __builtin_return_address(0), PerThread(stream), n,
                    [&] { return real(dst, value, n, stream); });
}

template <int kNode>
cudaError_t cudaMalloc(void** ptr, size_t n) {
  const auto real =
      g_real(kNode, kMalloc).Need<decltype(&::cudaMalloc)>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(ptr, n);
  return HostWork(g_api_malloc, __builtin_return_address(0), n, false,
                  [&] { return real(ptr, n); });
}

template <int kNode>
cudaError_t cudaFree(void* ptr) {
  const auto real = g_real(kNode, kFree).Need<decltype(&::cudaFree)>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(ptr);
  // cudaFree synchronizes the device: its time is waiting.
  return HostWork(g_api_free, __builtin_return_address(0), 0, true, [&] { return real(ptr); });
}

template <int kNode>
cudaError_t cudaMallocHost(void** ptr, size_t n) {
  const auto real =
      g_real(kNode, kMallocHost).Need<decltype(&::cudaMallocHost)>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(ptr, n);
  return HostWork(g_api_malloc_host, __builtin_return_address(0), n, false,
                  [&] { return real(ptr, n); });
}

template <int kNode>
cudaError_t cudaHostAlloc(void** ptr, size_t n, unsigned int flags) {
  const auto real =
      g_real(kNode, kHostAlloc).Need<decltype(&::cudaHostAlloc)>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(ptr, n, flags);
  return HostWork(g_api_host_alloc, __builtin_return_address(0), n, false,
                  [&] { return real(ptr, n, flags); });
}

template <int kNode>
cudaError_t cudaFreeHost(void* ptr) {
  const auto real =
      g_real(kNode, kFreeHost).Need<decltype(&::cudaFreeHost)>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(ptr);
  return HostWork(g_api_free_host, __builtin_return_address(0), 0, true, [&] { return real(ptr); });
}

template <int kNode>
cudaError_t cudaMallocManaged(void** ptr, size_t n, unsigned int flags) {
  const auto real = g_real(kNode, kMallocManaged)
                        .Need<decltype(&::cudaMallocManaged)>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(ptr, n, flags);
  return HostWork(g_api_malloc_managed, __builtin_return_address(0), n, false,
                  [&] { return real(ptr, n, flags); });
}

template <int kNode>
cudaError_t cudaMallocAsync(void** ptr, size_t n, cudaStream_t stream) {
  const auto real = g_real(kNode, kMallocAsync).Need<AllocAsyncFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(ptr, n, stream);
  return HostWork(g_api_malloc_async, __builtin_return_address(0), n, false,
                  [&] { return real(ptr, n, stream); });
}

template <int kNode>
cudaError_t cudaMallocAsync_ptsz(void** ptr, size_t n, cudaStream_t stream) {
  const auto real = g_real(kNode, kMallocAsyncPtsz).Need<AllocAsyncFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(ptr, n, stream);
  return HostWork(g_api_malloc_async, __builtin_return_address(0), n, false,
                  [&] { return real(ptr, n, stream); });
}

template <int kNode>
cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) {
  const auto real = g_real(kNode, kFreeAsync).Need<FreeAsyncFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(ptr, stream);
  return HostWork(g_api_free_async, __builtin_return_address(0), 0, false,
                  [&] { return real(ptr, stream); });
}

template <int kNode>
cudaError_t cudaFreeAsync_ptsz(void* ptr, cudaStream_t stream) {
  const auto real = g_real(kNode, kFreeAsyncPtsz).Need<FreeAsyncFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(ptr, stream);
  return HostWork(g_api_free_async, __builtin_return_address(0), 0, false,
                  [&] { return real(ptr, stream); });
}

}  // namespace perftracker::preload::versioned

PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMemcpy)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMemcpy_ptds)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMemcpyAsync)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMemcpyAsync_ptsz)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMemset)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMemset_ptds)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMemsetAsync)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMemsetAsync_ptsz)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMalloc)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaFree)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMallocHost)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaHostAlloc)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaFreeHost)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMallocManaged)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMallocAsync)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMallocAsync_ptsz)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaFreeAsync)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaFreeAsync_ptsz)
