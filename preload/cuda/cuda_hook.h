// The shape shared by every CUDA runtime hook: guard -> (timestamp) -> real call -> record.
//
// Hot path (everything inline here): no locks, no allocation, no syscalls beyond the vDSO
// clock. A call counts under its API function and its call site (a kernel launch also under
// its kernel), with bytes and the Python function that made it. Host time: every blocking call,
// a random 1 in PERFTRACKER_HOST_SAMPLE_EVERY of the others (the clock costs more than the rest
// of the hook: ~22 ns a reading on the VMs we measured). Device time: 1 in
// PERFTRACKER_SAMPLE_EVERY launches per site, bracketed with pooled timing events.
#pragma once

#include <cuda_runtime_api.h>

#include "preload/core/python_context.h"
#include "preload/core/recorder.h"
#include "preload/core/symbols.h"
#include "preload/cuda/cuda_sites.h"
#include "preload/cuda/device_timer.h"

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
  if (state == 1) [[likely]]
    return true;
  return state == 0 && CheckCudaRuntime();
}

// Tracing() for a hook entered through version node kNode (versioned_entry.h), which it notes.
template <int kNode>
inline bool Tracing() {
  if (!Tracing()) return false;
  NoteCudaRuntimeNode(kNode);
  return true;
}

// Capture sequences that may be open (cuda_capture.cpp): while 0, no launch is captured and
// the hooks ask the runtime nothing.
inline std::atomic<uint32_t> g_open_captures{0};

// True when CUPTI times kernels and copies, so no timing events are needed for them.
inline std::atomic<bool> g_cupti_timing{false};

// Set by the constructor when PERFTRACKER_CUPTI=1: the first timed call starts CUPTI (cuda/
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

// How a call's host time is measured.
enum class HostTiming : uint8_t {
  kSampled,   // non-blocking, frequent (launches, async copies): 1 in N calls (SampleHostTime)
  kAlways,    // rare and costly anyway (allocations)
  kBlocking,  // every call, and all of it counts as wait (synchronizations, sync copies)
};

// Host timing of one hooked call, shared by the runtime and driver tiers. An untimed call reads
// no clock; a timed one reads it around the real call, and 1 in 8 timed calls also at hook
// entry and exit for the hook's own cost (health.hook_ns / hook_calls: a sample of calls).
class HostSample {
 public:
  [[gnu::always_inline]] explicit HostSample(HostTiming timing)
      : timed_(timing != HostTiming::kSampled || SampleHostTime()),
        overhead_(timed_ && (t_timed_calls++ & 7) == 0) {
    if (overhead_) entry_ns_ = NowNs();
  }
  void Start() {
    if (timed_) start_ns_ = NowNs();
  }
  void End() {
    if (timed_) end_ns_ = NowNs();
  }
  bool timed() const { return timed_; }
  uint64_t end_ns() const { return end_ns_; }
  uint64_t duration_ns() const { return end_ns_ > start_ns_ ? end_ns_ - start_ns_ : 0; }
  // After the call is recorded.
  void ReportOverhead() const {
    if (overhead_) [[unlikely]] {
      RecordHookOverhead((start_ns_ - entry_ns_) + (NowNs() - end_ns_));
    }
  }

 private:
  bool timed_;
  bool overhead_;
  uint64_t entry_ns_ = 0, start_ns_ = 0, end_ns_ = 0;
};

// One hooked runtime call. Construct right before the real call, Finish right after. The
// untimed path (most launches) is a thread-local countdown, two table lookups and one event.
// Always inlined: out of line, its members live in memory and cost more than the work.
class CudaCall {
 public:
  // `device_timed`: sample device time on `stream` (1 in PERFTRACKER_SAMPLE_EVERY per site).
  // `stream_work`: the call puts work on `stream`, so while a capture is open it may be
  // captured into a graph instead of run, and then counts as captured, never as a call.
  [[gnu::always_inline]] CudaCall(ApiSlot& api, void* return_address, bool device_timed,
                                  cudaStream_t stream = nullptr,
                                  HostTiming timing = HostTiming::kSampled,
                                  bool stream_work = false)
      : host_(timing),
        api_(api),
        return_address_(return_address),
        stream_(stream),
        blocking_(timing == HostTiming::kBlocking) {
    if (g_cupti_pending.load(std::memory_order_relaxed)) [[unlikely]]
      StartCuptiOnce();
    site_ = FindSite(api, return_address);
    if (stream_work && g_open_captures.load(std::memory_order_relaxed) != 0) [[unlikely]]
      captured_ = StreamCapturing(stream);
    if (device_timed && !captured_ && SampleSite(site_)) [[unlikely]]
      timer_ = TimerStart(stream);
    host_.Start();
  }

  // Records the call. `extra`: a second slot charged with the same call (the kernel).
  // `device_slot`: where a device-time sample reports (kNoSlot: the site's slot).
  [[gnu::always_inline]] void Finish(bool ok, Slot extra = kNoSlot, Slot device_slot = kNoSlot,
                                     uint64_t bytes = 0) {
    host_.End();
    const Slot site = SiteSlot(site_, api_, return_address_);
    if (timer_ != kNoTimer) [[unlikely]] {
      if (!ok) {
        TimerCancel(timer_);
      } else {
        TimerTarget target{TimerTarget::Kind::kDevice, device_slot != kNoSlot ? device_slot : site};
        TimerEnd(timer_, stream_, target);
      }
    }
    RecordNativeCall(api_.Get(), site, extra, CurrentPythonSlot(), host_.timed(), blocking_,
                     host_.end_ns(), host_.duration_ns(), bytes, captured_);
    host_.ReportOverhead();
  }

 private:
  HookScope scope_;
  HostSample host_;
  ApiSlot& api_;
  void* return_address_;
  cudaStream_t stream_;
  bool blocking_;
  SiteEntry* site_ = nullptr;
  int32_t timer_ = kNoTimer;
  bool captured_ = false;
};

// One slot per copy direction of API `api` (a string literal), in cudaMemcpyKind order, for
// ByKind: e.g. `ApiSlot g_slots[] = PERFTRACKER_COPY_SLOTS("cudaMemcpy");`.
// clang-format off
#define PERFTRACKER_COPY_SLOTS(api)                     \
  {{api " HtoH", format::FunctionKind::kMemcpy},        \
   {api " HtoD", format::FunctionKind::kMemcpy},        \
   {api " DtoH", format::FunctionKind::kMemcpy},        \
   {api " DtoD", format::FunctionKind::kMemcpy},        \
   {api " Default", format::FunctionKind::kMemcpy}}
// clang-format on

// The slot of a copy in `slots`, one per cudaMemcpyKind (0..4; anything else as Default): the
// analyzer compares HtoD with HtoD.
inline ApiSlot& ByKind(ApiSlot (&slots)[5], cudaMemcpyKind kind) {
  const auto i = static_cast<unsigned>(kind);
  return slots[i < 5 ? i : 4];
}

// Every hook's call: `call` forwarded inside `record` (opened just before, so that its host time
// is the call's), which is finished with the call's outcome and `Finish`'s other arguments.
template <typename Call>
[[gnu::always_inline]] inline cudaError_t Recorded(CudaCall& record, Call call,
                                                   Slot extra = kNoSlot,
                                                   Slot device_slot = kNoSlot,
                                                   uint64_t bytes = 0) {
  const cudaError_t rc = call();
  record.Finish(rc == cudaSuccess, extra, device_slot, bytes);
  return rc;
}

// A call with no device work of its own to time: copies that block, allocations.
template <typename Call>
cudaError_t HostWork(ApiSlot& api, void* ret, uint64_t bytes, bool blocking, Call call) {
  CudaCall record(api, ret, /*device_timed=*/false, nullptr,
                  blocking ? HostTiming::kBlocking : HostTiming::kAlways);
  return Recorded(record, call, kNoSlot, kNoSlot, bytes);
}

// Stream work (async copies, memsets) whose device time is sampled onto the API slot itself.
template <typename Call>
cudaError_t StreamWork(ApiSlot& api, void* ret, cudaStream_t stream, uint64_t bytes, Call call) {
  const bool timed = !g_cupti_timing.load(std::memory_order_relaxed);
  CudaCall record(api, ret, timed, stream, HostTiming::kSampled, /*stream_work=*/true);
  return Recorded(record, call, kNoSlot, api.Get(), bytes);
}

}  // namespace perftracker::preload
