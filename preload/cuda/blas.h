// cuBLAS / cuBLASLt hooks' building blocks: the real library symbols, and GEMM patterns keyed by
// shape class, so that the same GEMM on different ranks lands in the same-named pattern.
//
// Shape class: m, n, k and batch rounded up to three significant bits (4096, 5120, 6144, 7168,
// 8192, ...: model dimensions are exact, odd ones share a bucket, about 8 buckets per octave),
// plus the API, the transposes, the data types and the compute type. The pattern's name is
// derived from the class only -- e.g. "cublasGemmEx bf16,bf16->bf16 f32 tn m=8192 n=12288
// k=4096". The exact operations of every call are summed in the pattern's work column (Flops),
// so calls of one class with different exact shapes still give the right achieved FLOP rate.
//
// Hot path (FindGemm, SampleGemm): one hash, a few relaxed loads, no locks, no allocation.
// Cold path (first sight of a class): InternFunction under the recorder's mutex.
#pragma once

#include <library_types.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "preload/core/recorder.h"
#include "preload/core/symbols.h"

namespace perftracker::preload::blas {

// Real cuBLAS/cuBLASLt functions are preload::RealSymbol entries (symbols.h) with
// Library::kCublas / kCublasLt.

enum class Api : uint8_t {
  kGemmEx,
  kGemmStridedBatchedEx,
  kSgemm,
  kSgemmStridedBatched,
  kHgemm,
  kHgemmStridedBatched,
  kLtMatmul,
};

struct GemmShape {
  Api api;
  bool trans_a;
  bool trans_b;
  int a_type;  // cudaDataType
  int b_type;
  int c_type;
  int compute;  // cublasComputeType_t
  int64_t m, n, k, batch;
};

// Floating-point operations of one call: a multiply-add is 2, and 8 on complex numbers (4
// multiplies, 4 adds).
inline bool IsComplex(int type) {
  switch (static_cast<cudaDataType>(type)) {
    case CUDA_C_16F:
    case CUDA_C_16BF:
    case CUDA_C_32F:
    case CUDA_C_64F:
    case CUDA_C_4I:
    case CUDA_C_4U:
    case CUDA_C_8I:
    case CUDA_C_8U:
    case CUDA_C_16I:
    case CUDA_C_16U:
    case CUDA_C_32I:
    case CUDA_C_32U:
    case CUDA_C_64I:
    case CUDA_C_64U:
      return true;
    default:
      return false;
  }
}
inline uint64_t Flops(const GemmShape& s) {
  const bool complex = IsComplex(s.a_type);
  const auto dim = [](int64_t d) { return static_cast<uint64_t>(d > 0 ? d : 0); };
  return (complex ? 8 : 2) * dim(s.m) * dim(s.n) * dim(s.k) * std::max<uint64_t>(1, dim(s.batch));
}

// Who writes, who reads: any thread calling cuBLAS. A class claims an entry with one CAS and
// keeps it; its slot is interned once (idempotent). Full table: the call is not recorded.
struct GemmEntry {
  std::atomic<uint64_t> key{0};
  std::atomic<Slot> slot{kNoSlot - 1};
  std::atomic<uint32_t> calls{0};  // sampling counter
};

// The entry of `shape`'s class (null when the table is full) and its pattern slot.
GemmEntry* FindGemm(const GemmShape& shape);
Slot GemmSlot(GemmEntry* entry, const GemmShape& shape);
// True on the 1st, (N+1)th, ... call of the class (N = PERFTRACKER_SAMPLE_EVERY; 0: never).
bool SampleGemm(GemmEntry* entry);
void SetGemmSampleEvery(uint32_t every);

// Exposed for tests: a dimension's class value, and the pattern name of a shape.
int64_t ShapeClassDim(int64_t d);
void GemmName(const GemmShape& shape, char* out, size_t size);

// True while this thread is inside a cuBLAS hook: cuBLAS calling cuBLASLt is one GEMM.
inline thread_local bool t_in_blas [[gnu::tls_model("initial-exec")]] = false;

}  // namespace perftracker::preload::blas
