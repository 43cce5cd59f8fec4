// cuBLASLt hook: cublasLtMatmul (what torch uses for bf16/fp8 GEMMs with epilogues). The shape
// comes from the descriptors through the library's own getters: D's rows and columns are m and
// n, A's inner dimension (after the transpose) is k, D's batch count the batch.
#include <cublasLt.h>

#include "preload/core/versioned_entry.h"
#include "preload/cuda/blas_call.h"

namespace perftracker::preload::blas {
namespace {

constinit RealSymbols g_real{
    Library::kCublasLt,
    {"cublasLtMatmul", "cublasLtMatrixLayoutGetAttribute", "cublasLtMatmulDescGetAttribute"}};
enum Real { kMatmul, kLayoutGet, kDescGet };

[[gnu::constructor]] void ResolveCublasLt() { ResolveAll(g_real); }

template <typename T>
T LayoutAttr(int node, cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
             T fallback) {
  const auto get = g_real(node, kLayoutGet).Get<decltype(&cublasLtMatrixLayoutGetAttribute)>();
  T value{};
  size_t written = 0;
  if (get == nullptr || get(layout, attr, &value, sizeof value, &written) != 0) return fallback;
  return value;
}

template <typename T>
T DescAttr(int node, cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, T fallback) {
  const auto get = g_real(node, kDescGet).Get<decltype(&cublasLtMatmulDescGetAttribute)>();
  T value{};
  size_t written = 0;
  if (get == nullptr || get(desc, attr, &value, sizeof value, &written) != 0) return fallback;
  return value;
}

// False when a descriptor cannot be read: the call then passes through unrecorded.
bool ShapeOf(int node, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
             cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t d, GemmShape* out) {
  if (desc == nullptr || a == nullptr || b == nullptr || d == nullptr) return false;
  const int32_t trans_a = DescAttr<int32_t>(node, desc, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_N);
  const int32_t trans_b = DescAttr<int32_t>(node, desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  const int32_t compute = DescAttr<int32_t>(node, desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, -1);
  const uint64_t a_rows = LayoutAttr<uint64_t>(node, a, CUBLASLT_MATRIX_LAYOUT_ROWS, 0);
  const uint64_t a_cols = LayoutAttr<uint64_t>(node, a, CUBLASLT_MATRIX_LAYOUT_COLS, 0);
  *out = {Api::kLtMatmul,
          trans_a != CUBLAS_OP_N,
          trans_b != CUBLAS_OP_N,
          static_cast<int>(LayoutAttr<uint32_t>(node, a, CUBLASLT_MATRIX_LAYOUT_TYPE, 63)),
          static_cast<int>(LayoutAttr<uint32_t>(node, b, CUBLASLT_MATRIX_LAYOUT_TYPE, 63)),
          static_cast<int>(LayoutAttr<uint32_t>(node, d, CUBLASLT_MATRIX_LAYOUT_TYPE, 63)),
          compute,
          static_cast<int64_t>(LayoutAttr<uint64_t>(node, d, CUBLASLT_MATRIX_LAYOUT_ROWS, 0)),
          static_cast<int64_t>(LayoutAttr<uint64_t>(node, d, CUBLASLT_MATRIX_LAYOUT_COLS, 0)),
          static_cast<int64_t>(trans_a != CUBLAS_OP_N ? a_rows : a_cols),
          LayoutAttr<int32_t>(node, d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 1)};
  return compute >= 0;
}

}  // namespace
}  // namespace perftracker::preload::blas

namespace perftracker::preload::versioned {
using namespace blas;  // NOLINT: the shape helpers

template <int kNode>
cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t a_desc, const void* B,
                              cublasLtMatrixLayout_t b_desc, const void* beta, const void* C,
                              cublasLtMatrixLayout_t c_desc, void* D, cublasLtMatrixLayout_t d_desc,
                              const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  const auto real =
      g_real(kNode, kMatmul).Need<decltype(&::cublasLtMatmul)>(__builtin_return_address(0));
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto call = [&] {
    return real(h, desc, alpha, A, a_desc, B, b_desc, beta, C, c_desc, D, d_desc, algo, workspace,
                workspace_bytes, stream);
  };
  GemmShape shape;
  if (!BlasTracing() || !ShapeOf(kNode, desc, a_desc, b_desc, d_desc, &shape)) return call();
  return RecordGemm(shape, stream, call);
}

}  // namespace perftracker::preload::versioned

PERFTRACKER_VERSIONED_HOOK(CUBLASLT, cublasLtMatmul)
