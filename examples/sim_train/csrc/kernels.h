// The "kernels" of the simulated training job: host stubs registered with the CUDA runtime the
// way nvcc-generated code registers them, and launchers that size each grid from the work
// (FLOPs or bytes), so the simulator's per-block cost model turns work into time.
#ifndef SIM_TRAIN_CSRC_KERNELS_H_
#define SIM_TRAIN_CSRC_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace simtorch {

enum class Kernel : int {
  kGemm,
  kFlashFwd,
  kFlashBwd,
  kLayerNorm,
  kGelu,
  kAdd,
  kEmbedding,
  kSoftmaxXent,
  kAdamW,
  kFill,
  kCount,
};

// Registers every kernel once (from module init, as a fat binary's constructor would).
void RegisterKernels();

// Looks a kernel up by its short Python-facing name ("gelu", "add", ...); false if unknown.
bool KernelByName(const char* name, Kernel* out);

// Launches: one cudaLaunchKernel each; GEMMs one cublasGemmEx (a driver-level launch).
cudaError_t LaunchGemm(int64_t m, int64_t n, int64_t k, cudaStream_t stream);
cudaError_t LaunchAttention(int64_t batch, int64_t heads, int64_t seq, int64_t head_dim,
                            bool backward, cudaStream_t stream);
// A memory-bound kernel touching `bytes` of device memory.
cudaError_t LaunchMemoryBound(Kernel kernel, int64_t bytes, cudaStream_t stream);

}  // namespace simtorch

#endif  // SIM_TRAIN_CSRC_KERNELS_H_
