// cudaSetDevice: the device the process makes current, published for the writer's GPU sampler
// (hw/, through core's g_cuda_device). Not recorded as a call: PyTorch sets the device at start
// and from its worker threads, and none of it is the job's work.
#include "preload/core/versioned_entry.h"
#include "preload/cuda/cuda_hook.h"

namespace perftracker::preload {
namespace {

constinit RealSymbols g_real{Library::kCudart, {"cudaSetDevice"}};
[[gnu::constructor]] void ResolveDevice() { ResolveAll(g_real); }

}  // namespace
}  // namespace perftracker::preload

namespace perftracker::preload::versioned {

template <int kNode>
cudaError_t cudaSetDevice(int device) {
  const auto real = g_real(kNode, 0).Need<decltype(&::cudaSetDevice)>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  const cudaError_t rc = real(device);
  if (rc == cudaSuccess && Active()) g_cuda_device.store(device, std::memory_order_relaxed);
  return rc;
}

}  // namespace perftracker::preload::versioned

PERFTRACKER_VERSIONED_HOOK(CUDART, cudaSetDevice)
