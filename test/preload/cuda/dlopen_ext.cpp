// The extension lifecycle_workload dlopens, the way Python loads one: RTLD_LOCAL, DT_NEEDED on
// libcudart.so.13, which is therefore loaded only now, after libperftracker.so has started.
#include <cuda_runtime_api.h>

#include "tests/test_kernels.h"

// N kernel launches on the legacy stream, then a device synchronization; 0 when all succeeded.
extern "C" [[gnu::visibility("default")]] int pt_ext_launch(int n) {
  simgpu_test::RegisterTestKernels();
  for (int i = 0; i < n; ++i) {
    if (cudaLaunchKernel(simgpu_test::ElementwiseKernel(), simgpu_test::GridForNs(20'000),
                         dim3(simgpu_test::kThreads), nullptr, 0, nullptr) != cudaSuccess) {
      return 1;
    }
  }
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}

// N allocations and frees: hooked calls that need no device thread, so a forked child (where
// simgpu's device threads, like a real GPU context, did not follow) can make them.
extern "C" [[gnu::visibility("default")]] int pt_ext_alloc(int n) {
  for (int i = 0; i < n; ++i) {
    void* p = nullptr;
    if (cudaMalloc(&p, 4096) != cudaSuccess || cudaFree(p) != cudaSuccess) return 1;
  }
  return 0;
}
