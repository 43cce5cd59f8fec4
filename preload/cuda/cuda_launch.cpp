// CUDA runtime hooks: kernel and graph launches (and their per-thread-default-stream variants).
// Each launch counts under its API function, its call site and its kernel; sampled launches
// also get the kernel's device time (see preload/cuda/cuda_hook.h).
#include "preload/core/versioned_entry.h"
#include "preload/cuda/cuda_hook.h"

namespace perftracker::preload {
namespace {

using LaunchFn = cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t);
using LaunchExFn = cudaError_t (*)(const cudaLaunchConfig_t*, const void*, void**);
using GraphLaunchFn = cudaError_t (*)(cudaGraphExec_t, cudaStream_t);

constinit RealSymbols g_real{
    Library::kCudart,
    {"cudaLaunchKernel", "cudaLaunchKernel_ptsz", "cudaLaunchKernelExC", "cudaLaunchKernelExC_ptsz",
     "cudaLaunchCooperativeKernel", "cudaLaunchCooperativeKernel_ptsz", "cudaGraphLaunch",
     "cudaGraphLaunch_ptsz"}};
enum Real { kLaunch, kLaunchPtsz, kLaunchEx, kLaunchExPtsz, kCoop, kCoopPtsz, kGraph, kGraphPtsz };

ApiSlot g_api_launch{"cudaLaunchKernel", format::FunctionKind::kCudaApi};
ApiSlot g_api_launch_ex{"cudaLaunchKernelExC", format::FunctionKind::kCudaApi};
ApiSlot g_api_coop{"cudaLaunchCooperativeKernel", format::FunctionKind::kCudaApi};
ApiSlot g_api_graph{"cudaGraphLaunch", format::FunctionKind::kCudaApi};

[[gnu::constructor]] void ResolveLaunch() { ResolveAll(g_real); }

// A kernel launch of `func` on `stream`, forwarded by `call`.
template <typename Call>
cudaError_t Launch(ApiSlot& api, void* ret, const void* func, cudaStream_t stream, Call call) {
  const Slot kernel = KernelSlot(func);  // before the call: it may ask the runtime for the name
  const bool timed = !g_cupti_timing.load(std::memory_order_relaxed);
  CudaCall record(api, ret, timed, stream, HostTiming::kSampled, /*stream_work=*/true);
  return Recorded(record, call, kernel, kernel);
}

template <typename Call>
cudaError_t GraphLaunch(void* ret, cudaStream_t stream, Call call) {
  // A graph launched into a capturing stream becomes a node of that graph: captured too.
  CudaCall record(g_api_graph, ret, /*timed=*/true, stream, HostTiming::kSampled,
                  /*stream_work=*/true);
  return Recorded(record, call);
}

}  // namespace
}  // namespace perftracker::preload

namespace perftracker::preload::versioned {

template <int kNode>
cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared,
                             cudaStream_t stream) {
  const auto real = g_real(kNode, kLaunch).Need<LaunchFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(func, grid, block, args, shared, stream);
  return Launch(g_api_launch, __builtin_return_address(0), func, stream,
                [&] { return real(func, grid, block, args, shared, stream); });
}

template <int kNode>
cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 grid, dim3 block, void** args,
                                  size_t shared, cudaStream_t stream) {
  const auto real = g_real(kNode, kLaunchPtsz).Need<LaunchFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(func, grid, block, args, shared, stream);
  return Launch(g_api_launch, __builtin_return_address(0), func, PerThread(stream),
                [&] { return real(func, grid, block, args, shared, stream); });
}

template <int kNode>
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  const auto real = g_real(kNode, kLaunchEx).Need<LaunchExFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>() || config == nullptr) return real(config, func, args);
  return Launch(g_api_launch_ex, __builtin_return_address(0), func, config->stream,
                [&] { return real(config, func, args); });
}

template <int kNode>
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func,
                                     void** args) {
  const auto real = g_real(kNode, kLaunchExPtsz).Need<LaunchExFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>() || config == nullptr) return real(config, func, args);
  return Launch(g_api_launch_ex, __builtin_return_address(0), func, PerThread(config->stream),
                [&] { return real(config, func, args); });
}

template <int kNode>
cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 grid, dim3 block, void** args,
                                        size_t shared, cudaStream_t stream) {
  const auto real = g_real(kNode, kCoop).Need<LaunchFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(func, grid, block, args, shared, stream);
  return Launch(g_api_coop, __builtin_return_address(0), func, stream,
                [&] { return real(func, grid, block, args, shared, stream); });
}

template <int kNode>
cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 grid, dim3 block, void** args,
                                             size_t shared, cudaStream_t stream) {
  const auto real = g_real(kNode, kCoopPtsz).Need<LaunchFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(func, grid, block, args, shared, stream);
  return Launch(g_api_coop, __builtin_return_address(0), func, PerThread(stream),
                [&] { return real(func, grid, block, args, shared, stream); });
}

template <int kNode>
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  const auto real = g_real(kNode, kGraph).Need<GraphLaunchFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(exec, stream);
  return GraphLaunch(__builtin_return_address(0), stream, [&] { return real(exec, stream); });
}

template <int kNode>
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream) {
  const auto real = g_real(kNode, kGraphPtsz).Need<GraphLaunchFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(exec, stream);
  return GraphLaunch(__builtin_return_address(0), PerThread(stream),
                     [&] { return real(exec, stream); });
}

}  // namespace perftracker::preload::versioned

PERFTRACKER_VERSIONED_HOOK(CUDART, cudaLaunchKernel)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaLaunchKernel_ptsz)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaLaunchKernelExC)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaLaunchKernelExC_ptsz)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaLaunchCooperativeKernel)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaLaunchCooperativeKernel_ptsz)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaGraphLaunch)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaGraphLaunch_ptsz)
