// The cuBLAS subset: handles, streams, math mode, and the GEMMs PyTorch issues (GemmEx and its
// strided-batched form, S/Hgemm and theirs). Each GEMM is one kernel launched through the
// driver (gemm_launch.h), on the handle's stream, as the real library does with its static
// runtime. Buffers are never touched: GEMMs model time only, like simgpu's collectives.
#include <cublas_api.h>

#include "cublas/gemm_launch.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
};

namespace simgpu::blas {
namespace {

constexpr int kVersion = 130000;  // CUBLAS_VERSION of 13.0

cublasStatus_t Run(cublasHandle_t h, const Gemm& g, const void* alpha, const void* beta,
                   int64_t lda, int64_t ldb, int64_t ldc) {
  if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (alpha == nullptr || beta == nullptr || !ValidDims(g, lda, ldb, ldc)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  return LaunchGemm(g, h->stream);
}

Gemm Shape(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, int batch,
           cudaDataType type, cublasComputeType_t compute) {
  Gemm g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.batch = batch;
  g.op_a = ta;
  g.op_b = tb;
  g.a_type = g.b_type = g.c_type = type;
  g.compute = compute;
  return g;
}

}  // namespace
}  // namespace simgpu::blas

namespace sb = simgpu::blas;

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int* version) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (version == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *version = sb::kVersion;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (stream == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->math;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    default: return "unknown error";
  }
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                              int n, int k, const float* alpha, const float*, int lda,
                              const float*, int ldb, const float* beta, float*, int ldc) {
  const cublasComputeType_t compute = h != nullptr && h->math == CUBLAS_TF32_TENSOR_OP_MATH
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  return sb::Run(h, sb::Shape(ta, tb, m, n, k, 1, CUDA_R_32F, compute), alpha, beta, lda, ldb,
                 ldc);
}

cublasStatus_t cublasHgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const __half* alpha, const __half*, int lda,
                           const __half*, int ldb, const __half* beta, __half*, int ldc) {
  return sb::Run(h, sb::Shape(ta, tb, m, n, k, 1, CUDA_R_16F, CUBLAS_COMPUTE_16F), alpha, beta,
                 lda, ldb, ldc);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float* alpha, const float*, int lda, long long,
                                         const float*, int ldb, long long, const float* beta,
                                         float*, int ldc, long long, int batch) {
  return sb::Run(h, sb::Shape(ta, tb, m, n, k, batch, CUDA_R_32F, CUBLAS_COMPUTE_32F), alpha,
                 beta, lda, ldb, ldc);
}

cublasStatus_t cublasHgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const __half* alpha, const __half*, int lda, long long,
                                         const __half*, int ldb, long long, const __half* beta,
                                         __half*, int ldc, long long, int batch) {
  return sb::Run(h, sb::Shape(ta, tb, m, n, k, batch, CUDA_R_16F, CUBLAS_COMPUTE_16F), alpha,
                 beta, lda, ldb, ldc);
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void* alpha, const void*, cudaDataType a_type,
                            int lda, const void*, cudaDataType b_type, int ldb, const void* beta,
                            void*, cudaDataType c_type, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t) {
  sb::Gemm g = sb::Shape(ta, tb, m, n, k, 1, a_type, compute);
  g.b_type = b_type;
  g.c_type = c_type;
  return sb::Run(h, g, alpha, beta, lda, ldb, ldc);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void* alpha, const void*, cudaDataType a_type,
                                          int lda, long long, const void*, cudaDataType b_type,
                                          int ldb, long long, const void* beta, void*,
                                          cudaDataType c_type, int ldc, long long, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t) {
  sb::Gemm g = sb::Shape(ta, tb, m, n, k, batch, a_type, compute);
  g.b_type = b_type;
  g.c_type = c_type;
  return sb::Run(h, g, alpha, beta, lda, ldb, ldc);
}

}  // extern "C"
