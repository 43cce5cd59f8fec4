// CUDA runtime hooks: kernel and graph launches (and their per-thread-default-stream variants).
// Each launch counts under its API function, its call site and its kernel; sampled launches
// also get the kernel's device time (see preload/cuda/cuda_hook.h).
#include "preload/cuda/cuda_hook.h"

namespace perftracker::preload {
namespace {

using LaunchFn = cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t);
using LaunchExFn = cudaError_t (*)(const cudaLaunchConfig_t*, const void*, void**);
using GraphLaunchFn = cudaError_t (*)(cudaGraphExec_t, cudaStream_t);

RealSymbol g_real[] = {
    {"cudaLaunchKernel", Library::kCudart},
    {"cudaLaunchKernel_ptsz", Library::kCudart},
    {"cudaLaunchKernelExC", Library::kCudart},
    {"cudaLaunchKernelExC_ptsz", Library::kCudart},
    {"cudaLaunchCooperativeKernel", Library::kCudart},
    {"cudaLaunchCooperativeKernel_ptsz", Library::kCudart},
    {"cudaGraphLaunch", Library::kCudart},
    {"cudaGraphLaunch_ptsz", Library::kCudart},
};
enum Real { kLaunch, kLaunchPtsz, kLaunchEx, kLaunchExPtsz, kCoop, kCoopPtsz, kGraph, kGraphPtsz };

ApiSlot g_api_launch{"cudaLaunchKernel", format::FunctionKind::kCudaApi};
ApiSlot g_api_launch_ex{"cudaLaunchKernelExC", format::FunctionKind::kCudaApi};
ApiSlot g_api_coop{"cudaLaunchCooperativeKernel", format::FunctionKind::kCudaApi};
ApiSlot g_api_graph{"cudaGraphLaunch", format::FunctionKind::kCudaApi};

[[gnu::constructor]] void ResolveLaunch() { ResolveAll(g_real, std::size(g_real)); }

// A kernel launch of `func` on `stream`, forwarded by `call`.
template <typename Call>
cudaError_t Launch(ApiSlot& api, void* ret, const void* func, cudaStream_t stream, Call call) {
  const Slot kernel = KernelSlot(func);  // before the call: it may ask the runtime for the name
  const bool timed = !g_cupti_timing.load(std::memory_order_relaxed);
  CudaCall record(api, ret, timed, stream);
  const cudaError_t rc = call();
  record.Finish(rc == cudaSuccess, kernel, kernel);
  return rc;
}

template <typename Call>
cudaError_t GraphLaunch(void* ret, cudaStream_t stream, Call call) {
  CudaCall record(g_api_graph, ret, /*timed=*/true, stream);
  const cudaError_t rc = call();
  record.Finish(rc == cudaSuccess);
  return rc;
}

}  // namespace
}  // namespace perftracker::preload

using namespace perftracker::preload;  // NOLINT: the hooks are extern "C" at global scope

PERFTRACKER_HOOK cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args,
                                              size_t shared, cudaStream_t stream) {
  const auto real = g_real[kLaunch].Get<LaunchFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(func, grid, block, args, shared, stream);
  return Launch(g_api_launch, __builtin_return_address(0), func, stream,
                [&] { return real(func, grid, block, args, shared, stream); });
}

PERFTRACKER_HOOK cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 grid, dim3 block,
                                                   void** args, size_t shared,
                                                   cudaStream_t stream) {
  const auto real = g_real[kLaunchPtsz].Get<LaunchFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(func, grid, block, args, shared, stream);
  return Launch(g_api_launch, __builtin_return_address(0), func, PerThread(stream),
                [&] { return real(func, grid, block, args, shared, stream); });
}

PERFTRACKER_HOOK cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config,
                                                 const void* func, void** args) {
  const auto real = g_real[kLaunchEx].Get<LaunchExFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing() || config == nullptr) return real(config, func, args);
  return Launch(g_api_launch_ex, __builtin_return_address(0), func, config->stream,
                [&] { return real(config, func, args); });
}

PERFTRACKER_HOOK cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config,
                                                      const void* func, void** args) {
  const auto real = g_real[kLaunchExPtsz].Get<LaunchExFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing() || config == nullptr) return real(config, func, args);
  return Launch(g_api_launch_ex, __builtin_return_address(0), func, PerThread(config->stream),
                [&] { return real(config, func, args); });
}

PERFTRACKER_HOOK cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 grid, dim3 block,
                                                         void** args, size_t shared,
                                                         cudaStream_t stream) {
  const auto real = g_real[kCoop].Get<LaunchFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(func, grid, block, args, shared, stream);
  return Launch(g_api_coop, __builtin_return_address(0), func, stream,
                [&] { return real(func, grid, block, args, shared, stream); });
}

PERFTRACKER_HOOK cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 grid,
                                                              dim3 block, void** args,
                                                              size_t shared,
                                                              cudaStream_t stream) {
  const auto real = g_real[kCoopPtsz].Get<LaunchFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(func, grid, block, args, shared, stream);
  return Launch(g_api_coop, __builtin_return_address(0), func, PerThread(stream),
                [&] { return real(func, grid, block, args, shared, stream); });
}

PERFTRACKER_HOOK cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  const auto real = g_real[kGraph].Get<GraphLaunchFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(exec, stream);
  return GraphLaunch(__builtin_return_address(0), stream, [&] { return real(exec, stream); });
}

PERFTRACKER_HOOK cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream) {
  const auto real = g_real[kGraphPtsz].Get<GraphLaunchFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(exec, stream);
  return GraphLaunch(__builtin_return_address(0), PerThread(stream),
                     [&] { return real(exec, stream); });
}
