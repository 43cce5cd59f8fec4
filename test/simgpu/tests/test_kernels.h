// Kernels for simgpu tests: host stubs registered the way nvcc-generated code registers them
// (__cudaRegisterFatBinary + __cudaRegisterFunction), and grids sized for a wanted duration.
#ifndef SIMGPU_TESTS_TEST_KERNELS_H_
#define SIMGPU_TESTS_TEST_KERNELS_H_

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace simgpu_test {

// Registers the stubs below (idempotent).
void RegisterTestKernels();

// Two distinct kernels: "gemm_kernel" and "elementwise_kernel".
const void* GemmKernel();
const void* ElementwiseKernel();
// A stub that is never registered.
const void* UnregisteredKernel();

// With the default cost knobs (2 us base, 4 us per wave of 132 SMs x 8 blocks of 256 threads):
// a grid of 256-thread blocks whose modelled duration is exactly `ns` (ns = 2000 + k * 4000).
dim3 GridForNs(int64_t ns);
inline constexpr int kThreads = 256;

// Holds a stream at this point (a host function that waits) until Open(). Work enqueued behind a
// gate starts back to back when it opens, however slowly the host enqueued it: timing checks on
// it are exact on a loaded machine.
class Gate {
 public:
  explicit Gate(cudaStream_t stream);
  ~Gate() { Open(); }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  void Open();

 private:
  static void Wait(void* self);
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

}  // namespace simgpu_test

#endif  // SIMGPU_TESTS_TEST_KERNELS_H_
