// A deliberately broken interposer for the selftest's negative test: preloaded behind
// libperftracker.so, it changes the scale factor of one selftest_saxpy launch, but only in the
// runs that profile (PERFTRACKER_DIR set), as a hook that mangled kernel arguments would. The
// profile's counts stay right; the device's result does not, and `selftest` must say so.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>

namespace {
std::atomic<bool> g_done{false};
}

extern "C" __attribute__((visibility("default"))) cudaError_t cudaLaunchKernel(
    const void* func, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream) {
  using Fn = cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t);
  static const Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "cudaLaunchKernel"));
  // selftest_saxpy(u32 n, f32 a, f32* x, f32* y): args[1] is a.
  if (std::getenv("PERFTRACKER_DIR") != nullptr && !g_done.exchange(true)) {
    float a = *static_cast<float*>(args[1]) + 1.0f;
    void* altered[] = {args[0], &a, args[2], args[3]};
    return real(func, grid, block, altered, shared, stream);
  }
  return real(func, grid, block, args, shared, stream);
}
