// The cuBLASLt subset: handles, matmul and matrix-layout descriptors (in the caller-visible
// opaque storage the header defines, so stack-allocated descriptors would work too), and
// cublasLtMatmul, one kernel per call through the driver (gemm_launch.h). D's layout gives
// m, n and the batch; A's gives k.
#include <cublasLt.h>

#include <cstring>

#include "cublas/gemm_launch.h"

struct cublasLtContext {
  int unused = 0;
};

namespace simgpu::blas {
namespace {

struct Layout {
  uint32_t type;
  int32_t order;
  uint64_t rows;
  uint64_t cols;
  int64_t ld;
  int32_t batch;
  int64_t stride;
};
static_assert(sizeof(Layout) <= sizeof(cublasLtMatrixLayoutOpaque_t));

struct Desc {
  int32_t compute;
  int32_t scale;
  int32_t trans_a;
  int32_t trans_b;
};
static_assert(sizeof(Desc) <= sizeof(cublasLtMatmulDescOpaque_t));

Layout* L(cublasLtMatrixLayout_t l) { return reinterpret_cast<Layout*>(l->data); }
Desc* D(cublasLtMatmulDesc_t d) { return reinterpret_cast<Desc*>(d->data); }

// The field an attribute names, with its size; null for attributes we accept and ignore.
void* LayoutField(Layout* l, cublasLtMatrixLayoutAttribute_t attr, size_t* size) {
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE: *size = 4; return &l->type;
    case CUBLASLT_MATRIX_LAYOUT_ORDER: *size = 4; return &l->order;
    case CUBLASLT_MATRIX_LAYOUT_ROWS: *size = 8; return &l->rows;
    case CUBLASLT_MATRIX_LAYOUT_COLS: *size = 8; return &l->cols;
    case CUBLASLT_MATRIX_LAYOUT_LD: *size = 8; return &l->ld;
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: *size = 4; return &l->batch;
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: *size = 8; return &l->stride;
    default: return nullptr;
  }
}

void* DescField(Desc* d, cublasLtMatmulDescAttributes_t attr, size_t* size) {
  *size = 4;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: return &d->compute;
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: return &d->scale;
    case CUBLASLT_MATMUL_DESC_TRANSA: return &d->trans_a;
    case CUBLASLT_MATMUL_DESC_TRANSB: return &d->trans_b;
    default: return nullptr;
  }
}

cublasStatus_t SetField(void* field, size_t field_size, const void* buf, size_t size) {
  if (buf == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (field == nullptr) return CUBLAS_STATUS_SUCCESS;
  if (size != field_size) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(field, buf, size);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t GetField(const void* field, size_t field_size, void* buf, size_t size,
                        size_t* written) {
  if (field == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (written != nullptr) *written = field_size;
  if (size == 0 && written != nullptr) return CUBLAS_STATUS_SUCCESS;  // a size query
  if (buf == nullptr || size != field_size) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(buf, field, size);
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace
}  // namespace simgpu::blas

namespace sb = simgpu::blas;

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new cublasLtContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

size_t cublasLtGetVersion(void) { return 130000; }

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  if (desc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *desc = new cublasLtMatmulDescOpaque_t{};
  *sb::D(*desc) = {compute, scale, CUBLAS_OP_N, CUBLAS_OP_N};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t size) {
  if (desc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  size_t field_size = 0;
  void* field = sb::DescField(sb::D(desc), attr, &field_size);
  return sb::SetField(field, field_size, buf, size);
}

cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, void* buf,
                                              size_t size, size_t* written) {
  if (desc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  size_t field_size = 0;
  const void* field = sb::DescField(sb::D(desc), attr, &field_size);
  return sb::GetField(field, field_size, buf, size, written);
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  if (layout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *layout = new cublasLtMatrixLayoutOpaque_t{};
  *sb::L(*layout) = {static_cast<uint32_t>(type), CUBLASLT_ORDER_COL, rows, cols, ld, 1, 0};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t size) {
  if (layout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  size_t field_size = 0;
  void* field = sb::LayoutField(sb::L(layout), attr, &field_size);
  return sb::SetField(field, field_size, buf, size);
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr, void* buf,
                                                size_t size, size_t* written) {
  if (layout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  size_t field_size = 0;
  const void* field = sb::LayoutField(sb::L(layout), attr, &field_size);
  return sb::GetField(field, field_size, buf, size, written);
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                              const void* alpha, const void*, cublasLtMatrixLayout_t a_desc,
                              const void*, cublasLtMatrixLayout_t b_desc, const void* beta,
                              const void*, cublasLtMatrixLayout_t c_desc, void*,
                              cublasLtMatrixLayout_t d_desc, const cublasLtMatmulAlgo_t*, void*,
                              size_t, cudaStream_t stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (desc == nullptr || alpha == nullptr || beta == nullptr || a_desc == nullptr ||
      b_desc == nullptr || c_desc == nullptr || d_desc == nullptr) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const sb::Desc& d = *sb::D(desc);
  const sb::Layout& a = *sb::L(a_desc);
  const sb::Layout& out = *sb::L(d_desc);
  sb::Gemm g;
  g.m = static_cast<int64_t>(out.rows);
  g.n = static_cast<int64_t>(out.cols);
  g.op_a = static_cast<cublasOperation_t>(d.trans_a);
  g.op_b = static_cast<cublasOperation_t>(d.trans_b);
  g.k = static_cast<int64_t>(g.op_a == CUBLAS_OP_N ? a.cols : a.rows);
  g.batch = out.batch;
  g.a_type = static_cast<cudaDataType>(a.type);
  g.b_type = static_cast<cudaDataType>(sb::L(b_desc)->type);
  g.c_type = static_cast<cudaDataType>(out.type);
  g.compute = static_cast<cublasComputeType_t>(d.compute);
  if (g.batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  return sb::LaunchGemm(g, stream);
}

}  // extern "C"
