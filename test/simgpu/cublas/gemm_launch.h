// The GEMM launcher shared by the cuBLAS and cuBLASLt stand-ins: one kernel per call, loaded and
// launched through the driver (core/driver_loader.h), named like cuBLAS's kernels after the data
// types and transposes, its grid sized from the FLOPs (as sim_train sizes its own kernels), so
// the device model -- including a rank's SIMGPU_COMPUTE_SLOWDOWN -- decides its duration.
#ifndef SIMGPU_CUBLAS_GEMM_LAUNCH_H_
#define SIMGPU_CUBLAS_GEMM_LAUNCH_H_

#include <cublas_api.h>

#include <cstdint>

namespace simgpu::blas {

struct Gemm {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  cublasOperation_t op_a = CUBLAS_OP_N, op_b = CUBLAS_OP_N;
  cudaDataType a_type = CUDA_R_32F, b_type = CUDA_R_32F, c_type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
};

// Checks the arguments cuBLAS checks (sizes, leading dimensions) before launching.
bool ValidDims(const Gemm& g, int64_t lda, int64_t ldb, int64_t ldc);

// Launches `g` on `stream` (a CUDA stream handle). Nothing is launched for an empty product.
cublasStatus_t LaunchGemm(const Gemm& g, cudaStream_t stream);

}  // namespace simgpu::blas

#endif  // SIMGPU_CUBLAS_GEMM_LAUNCH_H_
