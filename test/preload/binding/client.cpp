// A library linked against one stand-in runtime (libcudart.so.12 or .13): its references carry
// that runtime's version, as a framework's or an extension wheel's do.
#include <cuda_runtime_api.h>

namespace {
void Kernel() {}
}  // namespace

// Launches `n` kernels; returns how many succeeded.
extern "C" int PT_CLIENT_LAUNCH(int n) {
  int ok = 0;
  for (int i = 0; i < n; ++i) {
    ok += cudaLaunchKernel(reinterpret_cast<const void*>(&Kernel), dim3(1), dim3(1), nullptr, 0,
                           nullptr) == cudaSuccess;
  }
  return ok;
}
