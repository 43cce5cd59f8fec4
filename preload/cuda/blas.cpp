#include "preload/cuda/blas.h"

#include <dlfcn.h>

#include <cstdio>

#include "preload/core/symbols.h"

namespace perftracker::preload::blas {
namespace {

constexpr size_t kTableSize = 4096;  // power of two
constexpr int kMaxProbes = 32;
GemmEntry g_table[kTableSize];
std::atomic<uint32_t> g_every{64};

// 8 bits: exponent (6) and the two bits after the leading one, rounded up.
uint64_t DimCode(int64_t d) {
  if (d <= 0) return 0;
  const uint64_t v = static_cast<uint64_t>(d);
  if (v < 4) return v;
  int e = 63 - __builtin_clzll(v);
  uint64_t q = (v + (uint64_t{1} << (e - 2)) - 1) >> (e - 2);  // 4..8
  if (q == 8) {
    ++e;
    q = 4;
  }
  return (static_cast<uint64_t>(e) << 2) | (q - 4);
}

int64_t DimValue(uint64_t code) {
  if (code < 4) return static_cast<int64_t>(code);
  const int e = static_cast<int>(code >> 2);
  return static_cast<int64_t>(((code & 3) + 4) << (e - 2));
}

uint64_t Small(int v, int base, int bits) {
  const int x = v - base;
  const int top = (1 << bits) - 1;
  return static_cast<uint64_t>(x >= 0 && x < top ? x : top);
}

uint64_t KeyOf(const GemmShape& s) {
  uint64_t key = DimCode(s.m) | DimCode(s.n) << 8 | DimCode(s.k) << 16 | DimCode(s.batch) << 24;
  key |= Small(s.a_type, 0, 6) << 32 | Small(s.b_type, 0, 6) << 38 | Small(s.c_type, 0, 6) << 44;
  key |= Small(s.compute, 64, 4) << 50 | uint64_t{s.trans_a} << 54 | uint64_t{s.trans_b} << 55;
  key |= static_cast<uint64_t>(s.api) << 56;
  return key | uint64_t{1} << 63;  // never 0 (0 = free entry)
}

const char* TypeName(int t) {
  switch (t) {
    case 0: return "f32";    // CUDA_R_32F
    case 1: return "f64";    // CUDA_R_64F
    case 2: return "f16";    // CUDA_R_16F
    case 3: return "i8";     // CUDA_R_8I
    case 10: return "i32";   // CUDA_R_32I
    case 14: return "bf16";  // CUDA_R_16BF
    case 28: return "e4m3";  // CUDA_R_8F_E4M3
    case 29: return "e5m2";  // CUDA_R_8F_E5M2
    default: return "t?";
  }
}

const char* ComputeName(int c) {
  switch (c) {
    case 64: case 65: return "f16";    // CUBLAS_COMPUTE_16F[_PEDANTIC]
    case 68: case 69: return "f32";    // CUBLAS_COMPUTE_32F[_PEDANTIC]
    case 74: return "f32/f16";         // CUBLAS_COMPUTE_32F_FAST_16F
    case 75: return "f32/bf16";        // CUBLAS_COMPUTE_32F_FAST_16BF
    case 77: return "tf32";            // CUBLAS_COMPUTE_32F_FAST_TF32
    case 70: case 71: return "f64";    // CUBLAS_COMPUTE_64F[_PEDANTIC]
    case 72: case 73: return "i32";    // CUBLAS_COMPUTE_32I[_PEDANTIC]
    default: return "c?";
  }
}

const char* ApiName(Api api) {
  static const char* const kNames[] = {"cublasGemmEx", "cublasGemmStridedBatchedEx",
                                       "cublasSgemm",  "cublasSgemmStridedBatched",
                                       "cublasHgemm",  "cublasHgemmStridedBatched",
                                       "cublasLtMatmul"};
  return kNames[static_cast<int>(api)];
}

}  // namespace

int64_t ShapeClassDim(int64_t d) { return DimValue(DimCode(d)); }

void GemmName(const GemmShape& s, char* out, size_t size) {
  const bool batched = s.api == Api::kGemmStridedBatchedEx || s.api == Api::kSgemmStridedBatched ||
                       s.api == Api::kHgemmStridedBatched || ShapeClassDim(s.batch) != 1;
  int n = std::snprintf(out, size, "%s %s,%s->%s %s %c%c m=%lld n=%lld k=%lld", ApiName(s.api),
                        TypeName(s.a_type), TypeName(s.b_type), TypeName(s.c_type),
                        ComputeName(s.compute), s.trans_a ? 't' : 'n', s.trans_b ? 't' : 'n',
                        static_cast<long long>(ShapeClassDim(s.m)),
                        static_cast<long long>(ShapeClassDim(s.n)),
                        static_cast<long long>(ShapeClassDim(s.k)));
  if (batched && n > 0 && static_cast<size_t>(n) < size) {
    std::snprintf(out + n, size - static_cast<size_t>(n), " batch=%lld",
                  static_cast<long long>(ShapeClassDim(s.batch)));
  }
}

GemmEntry* FindGemm(const GemmShape& shape) {
  const uint64_t key = KeyOf(shape);
  size_t i = (key * 0x9E3779B97F4A7C15ull) >> 52;  // 12 bits
  for (int probe = 0; probe < kMaxProbes; ++probe, i = (i + 1) & (kTableSize - 1)) {
    GemmEntry& e = g_table[i];
    uint64_t seen = e.key.load(std::memory_order_acquire);
    if (seen == key) return &e;
    if (seen == 0 && e.key.compare_exchange_strong(seen, key, std::memory_order_acq_rel)) {
      return &e;
    }
    if (seen == key) return &e;
  }
  return nullptr;
}

Slot GemmSlot(GemmEntry* entry, const GemmShape& shape) {
  const Slot s = entry->slot.load(std::memory_order_acquire);
  if (s != kNoSlot - 1) [[likely]] return s;
  char name[160];
  GemmName(shape, name, sizeof name);
  const Slot interned = InternFunction(format::FunctionKind::kKernel, name);
  entry->slot.store(interned, std::memory_order_release);
  return interned;
}

bool SampleGemm(GemmEntry* entry) {
  const uint32_t every = g_every.load(std::memory_order_relaxed);
  if (every == 0) return false;
  const uint32_t n = entry->calls.load(std::memory_order_relaxed);
  entry->calls.store(n + 1, std::memory_order_relaxed);
  return SampledCall(n, every);
}

void SetGemmSampleEvery(uint32_t every) { g_every.store(every, std::memory_order_relaxed); }

}  // namespace perftracker::preload::blas
