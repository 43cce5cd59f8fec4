// The shape shared by every CUDA runtime hook: guard -> timestamp -> real call -> record.
//
// Hot path (everything inline here): no locks, no allocation, no syscalls beyond the vDSO
// clock. A call records its API function (count, host time, wait time of blocking calls,
// bytes) and its call site; a kernel launch also records its kernel; 1 in N launches per site
// (PERFTRACKER_SAMPLE_EVERY) is bracketed with pooled timing events for its device time.
#pragma once

#include <cuda_runtime_api.h>

#include "preload/cuda_sites.h"
#include "preload/device_timer.h"
#include "preload/recorder.h"
#include "preload/symbols.h"

// Exported hooks: the version script decides what leaves the library; this lifts
// -fvisibility=hidden for them.
#define PERFTRACKER_HOOK extern "C" [[gnu::visibility("default")]]

namespace perftracker::preload {

// The runtime's version, checked once through cudaRuntimeGetVersion (cuda_runtime.cpp): 0 not
// yet, 1 a version these hooks know (CUDA 11-13), 2 unknown (one warning, pass-through).
inline std::atomic<uint8_t> g_cuda_runtime_state{0};
[[gnu::cold, gnu::noinline]] bool CheckCudaRuntime();

// True when this call should be recorded: an active rank, a known runtime, not already inside
// one of our hooks.
inline bool Tracing() {
  if (t_in_hook || !Active()) return false;
  const uint8_t state = g_cuda_runtime_state.load(std::memory_order_relaxed);
  if (state == 1) [[likely]] return true;
  return state == 0 && CheckCudaRuntime();
}

// True when CUPTI times kernels and copies, so no timing events are needed for them.
inline std::atomic<bool> g_cupti_timing{false};

// Set by the constructor when PERFTRACKER_CUPTI=1: the first timed call starts CUPTI (hooks/
// cupti.cpp), late enough for the application to have claimed CUPTI itself if it wanted to.
inline std::atomic<bool> g_cupti_pending{false};
void StartCupti();
[[gnu::cold, gnu::noinline]] inline void StartCuptiOnce() {
  if (g_cupti_pending.exchange(false)) StartCupti();
}

// The stream a call really runs on: the legacy handle 0 means the per-thread default stream in
// the _ptsz/_ptds entry points.
inline cudaStream_t PerThread(cudaStream_t stream) {
  return stream == nullptr ? cudaStreamPerThread : stream;
}

// One hooked runtime call. Construct right before the real call, Finish right after.
class CudaCall {
 public:
  // `timed_stream`: sample device time on it (nullptr: a call without device work to time).
  // `device_slot`: where a sample reports (kernel or copy slot; kNoSlot: the site's slot).
  CudaCall(ApiSlot& api, void* return_address, bool timed, cudaStream_t stream = nullptr)
      : api_(api), return_address_(return_address), stream_(stream) {
    if (g_cupti_pending.load(std::memory_order_relaxed)) [[unlikely]] StartCuptiOnce();
    site_ = FindSite(api, return_address);
    if (timed && SampleSite(site_)) [[unlikely]] timer_ = TimerStart(stream);
    start_ns_ = NowNs();
  }

  // Records the call. `extra`: a second slot charged with the same call (the kernel).
  void Finish(bool ok, Slot extra = kNoSlot, Slot device_slot = kNoSlot, uint64_t bytes = 0,
              bool blocking = false) {
    const uint64_t end = NowNs();
    const uint64_t ns = end > start_ns_ ? end - start_ns_ : 0;
    const uint64_t wait = blocking ? ns : 0;
    const Slot site = SiteSlot(site_, api_, return_address_);
    if (timer_ != kNoTimer) [[unlikely]] {
      if (!ok) {
        TimerCancel(timer_);
      } else {
        TimerTarget target{TimerTarget::Kind::kDevice, device_slot != kNoSlot ? device_slot : site};
        TimerEnd(timer_, stream_, target);
      }
    }
    RecordCall(api_.Get(), end, ns, ns, wait, bytes);
    if (site != kNoSlot) RecordCall(site, end, ns, ns, wait, bytes);
    if (extra != kNoSlot) RecordCall(extra, end, ns, ns, wait, bytes);
  }

 private:
  HookScope scope_;
  ApiSlot& api_;
  void* return_address_;
  cudaStream_t stream_;
  SiteEntry* site_ = nullptr;
  int32_t timer_ = kNoTimer;
  uint64_t start_ns_ = 0;
};

}  // namespace perftracker::preload
