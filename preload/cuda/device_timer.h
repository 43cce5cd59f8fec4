// Device-side timing with pooled CUDA event pairs, and the one poller thread that turns them
// into durations.
//
// Who writes, who reads: a hook thread claims a free entry (CAS kFree -> kClaimed), records the
// start event, later the end event, fills in what the duration belongs to and publishes the
// entry (kClaimed -> kPending, release). Whoever polls (the poller thread, or the flush path at
// exit) takes a pending entry (CAS kPending -> kPolling), queries its end event and either
// reports and frees it or puts it back. When no entry is free the sample is skipped and counted,
// never waited for. Every CUDA call here goes to the real runtime, never to our own hooks.
//
// Stream capture: no event is ever recorded on a capturing stream (it would become a graph node
// and break the user's capture), and the poller runs in relaxed capture mode, so its queries
// never invalidate another thread's capture.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "preload/core/recorder.h"

namespace perftracker::preload {

// What a finished timer reports: RecordDeviceTime(slot) or RecordCollectiveDone(slot, seq);
// kCollectiveProgress: RecordCollectiveDone(slot, seq, 0), completion without a duration (the
// events were recorded after the work, not around it).
struct TimerTarget {
  enum class Kind : uint8_t { kDevice, kCollective, kCollectiveProgress };
  Kind kind = Kind::kDevice;
  Slot slot = kNoSlot;
  uint64_t seq = 0;
};

inline constexpr int32_t kNoTimer = -1;

// Records a start event on `stream` and returns the timer, or kNoTimer (nothing recorded) when
// the stream is capturing, the pool is exhausted or CUDA refused.
int32_t TimerStart(cudaStream_t stream);
// Records the end event on `stream` and hands the timer to the poller.
void TimerEnd(int32_t timer, cudaStream_t stream, const TimerTarget& target);
// Gives back a started timer whose call failed.
void TimerCancel(int32_t timer);

// True if `stream` is being captured into a graph (or its state cannot be read).
bool StreamCapturing(cudaStream_t stream);

// A function the poller thread runs about every 100 ms (CUPTI's periodic flush).
using PollerTick = void (*)();
void SetPollerTick(PollerTick tick);

// Starts the poller thread if it is not running (it also runs the tick).
void EnsurePoller();

// The flush callback: drains pending timers and runs the tick once, while CUDA is alive.
void FlushDevice();

// Polls every pending timer now, waiting at most `budget_ns` for unfinished ones (exit path).
void DrainTimers(uint64_t budget_ns);

// Counters for tests and health: samples skipped because the pool was full / the stream was
// capturing, timers completed.
struct TimerStats {
  uint64_t pool_full = 0;
  uint64_t capturing = 0;
  uint64_t completed = 0;
};
TimerStats GetTimerStats();

}  // namespace perftracker::preload
