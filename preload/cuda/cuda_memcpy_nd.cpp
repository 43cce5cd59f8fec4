// CUDA runtime hooks: pitched 2D and 3D copies (image-like tensors, padded layouts, some
// all-to-all packing). Like the 1D family: per API and direction, synchronous forms count as
// wait, asynchronous ones get sampled device time on their own slot. Bytes are the bytes moved
// (width x height [x depth]), not the pitched footprint.
#include "preload/core/versioned_entry.h"
#include "preload/cuda/cuda_hook.h"

namespace perftracker::preload {
namespace {

using Copy2DFn = cudaError_t (*)(void*, size_t, const void*, size_t, size_t, size_t,
                                 cudaMemcpyKind);
using Copy2DAsyncFn = cudaError_t (*)(void*, size_t, const void*, size_t, size_t, size_t,
                                      cudaMemcpyKind, cudaStream_t);
using Copy3DFn = cudaError_t (*)(const cudaMemcpy3DParms*);
using Copy3DAsyncFn = cudaError_t (*)(const cudaMemcpy3DParms*, cudaStream_t);

constinit RealSymbols g_real{
    Library::kCudart,
    {"cudaMemcpy2D", "cudaMemcpy2D_ptds", "cudaMemcpy2DAsync", "cudaMemcpy2DAsync_ptsz",
     "cudaMemcpy3D", "cudaMemcpy3D_ptds", "cudaMemcpy3DAsync", "cudaMemcpy3DAsync_ptsz"}};
enum Real { k2D, k2DPtds, k2DAsync, k2DAsyncPtsz, k3D, k3DPtds, k3DAsync, k3DAsyncPtsz };

ApiSlot g_api_2d[] = PERFTRACKER_COPY_SLOTS("cudaMemcpy2D");
ApiSlot g_api_2d_async[] = PERFTRACKER_COPY_SLOTS("cudaMemcpy2DAsync");
ApiSlot g_api_3d[] = PERFTRACKER_COPY_SLOTS("cudaMemcpy3D");
ApiSlot g_api_3d_async[] = PERFTRACKER_COPY_SLOTS("cudaMemcpy3DAsync");

[[gnu::constructor]] void ResolveCopyNd() { ResolveAll(g_real); }

// For array copies the extent's width counts elements, not bytes: the count is then a lower
// bound, still alike on every rank that makes the same copy.
uint64_t Bytes3D(const cudaMemcpy3DParms* p) {
  return uint64_t{p->extent.width} * std::max<size_t>(p->extent.height, 1) *
         std::max<size_t>(p->extent.depth, 1);
}

}  // namespace
}  // namespace perftracker::preload

namespace perftracker::preload::versioned {

template <int kNode>
cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                         size_t height, cudaMemcpyKind kind) {
  const auto real = g_real(kNode, k2D).Need<Copy2DFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(dst, dpitch, src, spitch, width, height, kind);
  return HostWork(ByKind(g_api_2d, kind), __builtin_return_address(0), uint64_t{width} * height,
                  /*blocking=*/true,
                  [&] { return real(dst, dpitch, src, spitch, width, height, kind); });
}

template <int kNode>
cudaError_t cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind) {
  const auto real = g_real(kNode, k2DPtds).Need<Copy2DFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(dst, dpitch, src, spitch, width, height, kind);
  return HostWork(ByKind(g_api_2d, kind), __builtin_return_address(0), uint64_t{width} * height,
                  /*blocking=*/true,
                  [&] { return real(dst, dpitch, src, spitch, width, height, kind); });
}

template <int kNode>
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind,
                              cudaStream_t stream) {
  const auto real = g_real(kNode, k2DAsync).Need<Copy2DAsyncFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(dst, dpitch, src, spitch, width, height, kind, stream);
  return StreamWork(ByKind(g_api_2d_async, kind), __builtin_return_address(0), stream,
                    uint64_t{width} * height,
                    [&] { return real(dst, dpitch, src, spitch, width, height, kind, stream); });
}

template <int kNode>
cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch,
                                   size_t width, size_t height, cudaMemcpyKind kind,
                                   cudaStream_t stream) {
  const auto real = g_real(kNode, k2DAsyncPtsz).Need<Copy2DAsyncFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(dst, dpitch, src, spitch, width, height, kind, stream);
  return StreamWork(ByKind(g_api_2d_async, kind), __builtin_return_address(0), PerThread(stream),
                    uint64_t{width} * height,
                    [&] { return real(dst, dpitch, src, spitch, width, height, kind, stream); });
}

template <int kNode>
cudaError_t cudaMemcpy3D(const cudaMemcpy3DParms* p) {
  const auto real = g_real(kNode, k3D).Need<Copy3DFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>() || p == nullptr) return real(p);
  return HostWork(ByKind(g_api_3d, p->kind), __builtin_return_address(0), Bytes3D(p),
                  /*blocking=*/true, [&] { return real(p); });
}

template <int kNode>
cudaError_t cudaMemcpy3D_ptds(const cudaMemcpy3DParms* p) {
  const auto real = g_real(kNode, k3DPtds).Need<Copy3DFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>() || p == nullptr) return real(p);
  return HostWork(ByKind(g_api_3d, p->kind), __builtin_return_address(0), Bytes3D(p),
                  /*blocking=*/true, [&] { return real(p); });
}

template <int kNode>
cudaError_t cudaMemcpy3DAsync(const cudaMemcpy3DParms* p, cudaStream_t stream) {
  const auto real = g_real(kNode, k3DAsync).Need<Copy3DAsyncFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>() || p == nullptr) return real(p, stream);
  return StreamWork(ByKind(g_api_3d_async, p->kind), __builtin_return_address(0), stream,
                    Bytes3D(p), [&] { return real(p, stream); });
}

template <int kNode>
cudaError_t cudaMemcpy3DAsync_ptsz(const cudaMemcpy3DParms* p, cudaStream_t stream) {
  const auto real = g_real(kNode, k3DAsyncPtsz).Need<Copy3DAsyncFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>() || p == nullptr) return real(p, stream);
  return StreamWork(ByKind(g_api_3d_async, p->kind), __builtin_return_address(0), PerThread(stream),
                    Bytes3D(p), [&] { return real(p, stream); });
}

}  // namespace perftracker::preload::versioned

PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMemcpy2D)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMemcpy2D_ptds)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMemcpy2DAsync)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMemcpy2DAsync_ptsz)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMemcpy3D)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMemcpy3D_ptds)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMemcpy3DAsync)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaMemcpy3DAsync_ptsz)
