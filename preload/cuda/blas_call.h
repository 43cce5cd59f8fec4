// The shape shared by every cuBLAS / cuBLASLt hook: guard -> pattern -> timestamp -> real call
// -> record. Per call: host time under the GEMM's shape-class pattern (preload/cuda/blas.h),
// and its exact floating-point operations in the pattern's work column (`bytes`), so that the
// analyzer can tell achieved TFLOP/s; 1 in PERFTRACKER_SAMPLE_EVERY calls per class is
// bracketed with the runtime tier's pooled timing events on the call's stream for its device
// time.
//
// Hot path: no locks, no allocation, no syscalls beyond the vDSO clock.
#pragma once

#include <cublas_api.h>

#include "preload/cuda/blas.h"
#include "preload/cuda/cuda_hook.h"

#define PERFTRACKER_BLAS_HOOK extern "C" [[gnu::visibility("default")]]

namespace perftracker::preload::blas {

// True when a cuBLAS call should be recorded: an active rank, not nested in another cuBLAS hook
// (cuBLAS implements some GEMMs with cuBLASLt: one call, one pattern).
inline bool BlasTracing() { return !t_in_blas && Active(); }

class BlasScope {
 public:
  BlasScope() { t_in_blas = true; }
  ~BlasScope() { t_in_blas = false; }
  BlasScope(const BlasScope&) = delete;
  BlasScope& operator=(const BlasScope&) = delete;
};

template <typename Call>
cublasStatus_t RecordGemm(const GemmShape& shape, cudaStream_t stream, Call call) {
  BlasScope scope;
  GemmEntry* entry = FindGemm(shape);
  if (entry == nullptr) return call();
  const Slot slot = GemmSlot(entry, shape);
  if (slot == kNoSlot) return call();
  const bool timed = SampleGemm(entry) && !g_cupti_timing.load(std::memory_order_relaxed);
  const int32_t timer = timed ? TimerStart(stream) : kNoTimer;
  const uint64_t start = NowNs();
  const cublasStatus_t rc = call();
  const uint64_t end = NowNs();
  if (timer != kNoTimer) [[unlikely]] {
    if (rc == CUBLAS_STATUS_SUCCESS) {
      TimerEnd(timer, stream, {TimerTarget::Kind::kDevice, slot, 0});
    } else {
      TimerCancel(timer);
    }
  }
  if (rc == CUBLAS_STATUS_SUCCESS) RecordCall(slot, end, end - start, end - start, 0, Flops(shape));
  return rc;
}

}  // namespace perftracker::preload::blas
