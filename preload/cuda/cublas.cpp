// cuBLAS hooks: the GEMMs PyTorch issues (cublasGemmEx and cublasGemmStridedBatchedEx for
// half/bf16/tf32, cublasSgemm/cublasHgemm and their strided-batched forms). cuBLAS carries its
// own static runtime, so its kernels never pass through the runtime hooks: these calls are how
// GEMM time is seen by default. Each call records its shape-class pattern (see
// preload/cuda/blas_call.h); the stream comes from cublasGetStream.
#include "preload/core/config.h"
#include "preload/core/versioned_entry.h"
#include "preload/cuda/blas_call.h"

namespace perftracker::preload::blas {
namespace {

constinit RealSymbols g_real{
    Library::kCublas,
    {"cublasGemmEx", "cublasGemmStridedBatchedEx", "cublasSgemm_v2", "cublasSgemmStridedBatched",
     "cublasHgemm", "cublasHgemmStridedBatched", "cublasGetStream_v2"}};
// cublas_api.h overloads these two in C++ (legacy cudaDataType compute types): name the C ones.
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void*, cudaDataType, int, const void*,
                                    cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);
using GemmBatchedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                           int, int, int, const void*, const void*, cudaDataType,
                                           int, long long, const void*, cudaDataType, int,
                                           long long, const void*, void*, cudaDataType, int,
                                           long long, int, cublasComputeType_t, cublasGemmAlgo_t);
enum Real { kGemmEx, kGemmBatchedEx, kSgemm, kSgemmBatched, kHgemm, kHgemmBatched, kGetStream };

[[gnu::constructor]] void ResolveCublas() {
  ResolveAll(g_real);
  const Config& config = ProcessConfig();
  SetGemmSampleEvery(static_cast<uint32_t>(config.sample_every));
}

// Asked of the cuBLAS (version `node`) that made the handle.
cudaStream_t StreamOf(int node, cublasHandle_t handle) {
  cudaStream_t stream = nullptr;
  const auto get = g_real(node, kGetStream).Get<decltype(&cublasGetStream_v2)>();
  if (get == nullptr || get(handle, &stream) != CUBLAS_STATUS_SUCCESS) return nullptr;
  return stream;
}

GemmShape Shape(Api api, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, int batch,
                cudaDataType a, cudaDataType b, cudaDataType c, int compute) {
  return {api, ta != CUBLAS_OP_N, tb != CUBLAS_OP_N, a, b, c, compute, m, n, k, batch};
}

}  // namespace
}  // namespace perftracker::preload::blas

namespace perftracker::preload::versioned {
using namespace blas;  // NOLINT: the shape helpers

template <int kNode>
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void* alpha, const void* A, cudaDataType at,
                            int lda, const void* B, cudaDataType bt, int ldb, const void* beta,
                            void* C, cudaDataType ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo) {
  const auto real = g_real(kNode, kGemmEx).Need<GemmExFn>(__builtin_return_address(0));
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto call = [&] {
    return real(h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, compute, algo);
  };
  if (!BlasTracing()) return call();
  return RecordGemm(Shape(Api::kGemmEx, ta, tb, m, n, k, 1, at, bt, ct, compute),
                    StreamOf(kNode, h), call);
}

template <int kNode>
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void* alpha, const void* A, cudaDataType at,
                                          int lda, long long sa, const void* B, cudaDataType bt,
                                          int ldb, long long sb, const void* beta, void* C,
                                          cudaDataType ct, int ldc, long long sc, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  const auto real =
      g_real(kNode, kGemmBatchedEx).Need<GemmBatchedExFn>(__builtin_return_address(0));
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto call = [&] {
    return real(h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc,
                batch, compute, algo);
  };
  if (!BlasTracing()) return call();
  return RecordGemm(Shape(Api::kGemmStridedBatchedEx, ta, tb, m, n, k, batch, at, bt, ct, compute),
                    StreamOf(kNode, h), call);
}

template <int kNode>
cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                              int n, int k, const float* alpha, const float* A, int lda,
                              const float* B, int ldb, const float* beta, float* C, int ldc) {
  const auto real =
      g_real(kNode, kSgemm).Need<decltype(&::cublasSgemm_v2)>(__builtin_return_address(0));
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto call = [&] { return real(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc); };
  if (!BlasTracing()) return call();
  return RecordGemm(Shape(Api::kSgemm, ta, tb, m, n, k, 1, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                          CUBLAS_COMPUTE_32F),
                    StreamOf(kNode, h), call);
}

template <int kNode>
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float* alpha, const float* A, int lda, long long sa,
                                         const float* B, int ldb, long long sb, const float* beta,
                                         float* C, int ldc, long long sc, int batch) {
  const auto real = g_real(kNode, kSgemmBatched)
                        .Need<decltype(&::cublasSgemmStridedBatched)>(__builtin_return_address(0));
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto call = [&] {
    return real(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
  };
  if (!BlasTracing()) return call();
  return RecordGemm(Shape(Api::kSgemmStridedBatched, ta, tb, m, n, k, batch, CUDA_R_32F, CUDA_R_32F,
                          CUDA_R_32F, CUBLAS_COMPUTE_32F),
                    StreamOf(kNode, h), call);
}

template <int kNode>
cublasStatus_t cublasHgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const __half* alpha, const __half* A, int lda,
                           const __half* B, int ldb, const __half* beta, __half* C, int ldc) {
  const auto real =
      g_real(kNode, kHgemm).Need<decltype(&::cublasHgemm)>(__builtin_return_address(0));
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto call = [&] { return real(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc); };
  if (!BlasTracing()) return call();
  return RecordGemm(Shape(Api::kHgemm, ta, tb, m, n, k, 1, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F,
                          CUBLAS_COMPUTE_16F),
                    StreamOf(kNode, h), call);
}

template <int kNode>
cublasStatus_t cublasHgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const __half* alpha, const __half* A, int lda,
                                         long long sa, const __half* B, int ldb, long long sb,
                                         const __half* beta, __half* C, int ldc, long long sc,
                                         int batch) {
  const auto real = g_real(kNode, kHgemmBatched)
                        .Need<decltype(&::cublasHgemmStridedBatched)>(__builtin_return_address(0));
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto call = [&] {
    return real(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
  };
  if (!BlasTracing()) return call();
  return RecordGemm(Shape(Api::kHgemmStridedBatched, ta, tb, m, n, k, batch, CUDA_R_16F, CUDA_R_16F,
                          CUDA_R_16F, CUBLAS_COMPUTE_16F),
                    StreamOf(kNode, h), call);
}

}  // namespace perftracker::preload::versioned

PERFTRACKER_VERSIONED_HOOK(CUBLAS, cublasGemmEx)
PERFTRACKER_VERSIONED_HOOK(CUBLAS, cublasGemmStridedBatchedEx)
PERFTRACKER_VERSIONED_HOOK(CUBLAS, cublasSgemm_v2)
PERFTRACKER_VERSIONED_HOOK(CUBLAS, cublasSgemmStridedBatched)
PERFTRACKER_VERSIONED_HOOK(CUBLAS, cublasHgemm)
PERFTRACKER_VERSIONED_HOOK(CUBLAS, cublasHgemmStridedBatched)
