// CUDA runtime hooks: copies (per direction), memsets and the allocation family.
// Synchronous copies count their whole duration as wait time; asynchronous copies and memsets
// get sampled device time on their own API-by-direction slot.
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

RealSymbol g_real[] = {
    {"cudaMemcpy", Library::kCudart},      {"cudaMemcpy_ptds", Library::kCudart},
    {"cudaMemcpyAsync", Library::kCudart}, {"cudaMemcpyAsync_ptsz", Library::kCudart},
    {"cudaMemset", Library::kCudart},      {"cudaMemset_ptds", Library::kCudart},
    {"cudaMemsetAsync", Library::kCudart}, {"cudaMemsetAsync_ptsz", Library::kCudart},
    {"cudaMalloc", Library::kCudart},      {"cudaFree", Library::kCudart},
    {"cudaMallocHost", Library::kCudart},  {"cudaHostAlloc", Library::kCudart},
    {"cudaFreeHost", Library::kCudart},    {"cudaMallocManaged", Library::kCudart},
    {"cudaMallocAsync", Library::kCudart}, {"cudaMallocAsync_ptsz", Library::kCudart},
    {"cudaFreeAsync", Library::kCudart},   {"cudaFreeAsync_ptsz", Library::kCudart},
};
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

[[gnu::constructor]] void ResolveMemory() { ResolveAll(g_real, std::size(g_real)); }

}  // namespace
}  // namespace perftracker::preload

using namespace perftracker::preload;  // NOLINT: the hooks are extern "C" at global scope

PERFTRACKER_HOOK cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  const auto real = g_real[kMemcpy].Get<MemcpyFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(dst, src, n, kind);
  return HostWork(ByKind(g_api_memcpy, kind), __builtin_return_address(0), n, /*blocking=*/true,
                  [&] { return real(dst, src, n, kind); });
}

PERFTRACKER_HOOK cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t n,
                                             cudaMemcpyKind kind) {
  const auto real = g_real[kMemcpyPtds].Get<MemcpyFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(dst, src, n, kind);
  return HostWork(ByKind(g_api_memcpy, kind), __builtin_return_address(0), n, /*blocking=*/true,
                  [&] { return real(dst, src, n, kind); });
}

PERFTRACKER_HOOK cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n,
                                             cudaMemcpyKind kind, cudaStream_t stream) {
  const auto real = g_real[kMemcpyAsync].Get<MemcpyAsyncFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(dst, src, n, kind, stream);
  return StreamWork(ByKind(g_api_memcpy_async, kind), __builtin_return_address(0), stream, n,
                    [&] { return real(dst, src, n, kind, stream); });
}

PERFTRACKER_HOOK cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t n,
                                                  cudaMemcpyKind kind, cudaStream_t stream) {
  const auto real = g_real[kMemcpyAsyncPtsz].Get<MemcpyAsyncFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(dst, src, n, kind, stream);
  return StreamWork(ByKind(g_api_memcpy_async, kind), __builtin_return_address(0),
                    PerThread(stream), n, [&] { return real(dst, src, n, kind, stream); });
}

PERFTRACKER_HOOK cudaError_t cudaMemset(void* dst, int value, size_t n) {
  const auto real = g_real[kMemset].Get<MemsetFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(dst, value, n);
  return HostWork(g_api_memset, __builtin_return_address(0), n, /*blocking=*/false,
                  [&] { return real(dst, value, n); });
}

PERFTRACKER_HOOK cudaError_t cudaMemset_ptds(void* dst, int value, size_t n) {
  const auto real = g_real[kMemsetPtds].Get<MemsetFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(dst, value, n);
  return HostWork(g_api_memset, __builtin_return_address(0), n, /*blocking=*/false,
                  [&] { return real(dst, value, n); });
}

PERFTRACKER_HOOK cudaError_t cudaMemsetAsync(void* dst, int value, size_t n, cudaStream_t stream) {
  const auto real = g_real[kMemsetAsync].Get<MemsetAsyncFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(dst, value, n, stream);
  return StreamWork(g_api_memset_async, __builtin_return_address(0), stream, n,
                    [&] { return real(dst, value, n, stream); });
}

PERFTRACKER_HOOK cudaError_t cudaMemsetAsync_ptsz(void* dst, int value, size_t n,
                                                  cudaStream_t stream) {
  const auto real = g_real[kMemsetAsyncPtsz].Get<MemsetAsyncFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(dst, value, n, stream);
  return StreamWork(g_api_memset_async, __builtin_return_address(0), PerThread(stream), n,
                    [&] { return real(dst, value, n, stream); });
}

PERFTRACKER_HOOK cudaError_t cudaMalloc(void** ptr, size_t n) {
  const auto real = g_real[kMalloc].Get<decltype(&cudaMalloc)>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(ptr, n);
  return HostWork(g_api_malloc, __builtin_return_address(0), n, false,
                  [&] { return real(ptr, n); });
}

PERFTRACKER_HOOK cudaError_t cudaFree(void* ptr) {
  const auto real = g_real[kFree].Get<decltype(&cudaFree)>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(ptr);
  // cudaFree synchronizes the device: its time is waiting.
  return HostWork(g_api_free, __builtin_return_address(0), 0, true, [&] { return real(ptr); });
}

PERFTRACKER_HOOK cudaError_t cudaMallocHost(void** ptr, size_t n) {
  const auto real = g_real[kMallocHost].Get<decltype(&cudaMallocHost)>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(ptr, n);
  return HostWork(g_api_malloc_host, __builtin_return_address(0), n, false,
                  [&] { return real(ptr, n); });
}

PERFTRACKER_HOOK cudaError_t cudaHostAlloc(void** ptr, size_t n, unsigned int flags) {
  const auto real = g_real[kHostAlloc].Get<decltype(&cudaHostAlloc)>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(ptr, n, flags);
  return HostWork(g_api_host_alloc, __builtin_return_address(0), n, false,
                  [&] { return real(ptr, n, flags); });
}

PERFTRACKER_HOOK cudaError_t cudaFreeHost(void* ptr) {
  const auto real = g_real[kFreeHost].Get<decltype(&cudaFreeHost)>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(ptr);
  return HostWork(g_api_free_host, __builtin_return_address(0), 0, true, [&] { return real(ptr); });
}

PERFTRACKER_HOOK cudaError_t cudaMallocManaged(void** ptr, size_t n, unsigned int flags) {
  const auto real = g_real[kMallocManaged].Get<decltype(&cudaMallocManaged)>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(ptr, n, flags);
  return HostWork(g_api_malloc_managed, __builtin_return_address(0), n, false,
                  [&] { return real(ptr, n, flags); });
}

PERFTRACKER_HOOK cudaError_t cudaMallocAsync(void** ptr, size_t n, cudaStream_t stream) {
  const auto real = g_real[kMallocAsync].Get<AllocAsyncFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(ptr, n, stream);
  return HostWork(g_api_malloc_async, __builtin_return_address(0), n, false,
                  [&] { return real(ptr, n, stream); });
}

PERFTRACKER_HOOK cudaError_t cudaMallocAsync_ptsz(void** ptr, size_t n, cudaStream_t stream) {
  const auto real = g_real[kMallocAsyncPtsz].Get<AllocAsyncFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(ptr, n, stream);
  return HostWork(g_api_malloc_async, __builtin_return_address(0), n, false,
                  [&] { return real(ptr, n, stream); });
}

PERFTRACKER_HOOK cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) {
  const auto real = g_real[kFreeAsync].Get<FreeAsyncFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(ptr, stream);
  return HostWork(g_api_free_async, __builtin_return_address(0), 0, false,
                  [&] { return real(ptr, stream); });
}

PERFTRACKER_HOOK cudaError_t cudaFreeAsync_ptsz(void* ptr, cudaStream_t stream) {
  const auto real = g_real[kFreeAsyncPtsz].Get<FreeAsyncFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(ptr, stream);
  return HostWork(g_api_free_async, __builtin_return_address(0), 0, false,
                  [&] { return real(ptr, stream); });
}
