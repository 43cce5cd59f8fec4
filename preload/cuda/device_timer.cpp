#include "preload/cuda/device_timer.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "preload/core/config.h"
#include "preload/core/log.h"
#include "preload/core/symbols.h"

namespace perftracker::preload {
namespace {

// Our own CUDA calls: always the real runtime, never our exported wrappers.
RealSymbol g_get_device{"cudaGetDevice", Library::kCudart};
RealSymbol g_event_create{"cudaEventCreateWithFlags", Library::kCudart};
RealSymbol g_event_destroy{"cudaEventDestroy", Library::kCudart};
RealSymbol g_event_record{"cudaEventRecord", Library::kCudart};
RealSymbol g_event_query{"cudaEventQuery", Library::kCudart};
RealSymbol g_event_elapsed{"cudaEventElapsedTime", Library::kCudart};
RealSymbol g_is_capturing{"cudaStreamIsCapturing", Library::kCudart};
RealSymbol g_capture_mode{"cudaThreadExchangeStreamCaptureMode", Library::kCudart};
RealSymbol g_peek_error{"cudaPeekAtLastError", Library::kCudart};
RealSymbol g_get_error{"cudaGetLastError", Library::kCudart};

enum State : uint8_t { kFree, kClaimed, kPending, kPolling };

struct Entry {
  std::atomic<uint8_t> state{kFree};
  int device = -1;  // device the events belong to; -1: not created yet
  cudaEvent_t start = nullptr;
  cudaEvent_t end = nullptr;
  TimerTarget target;
};

// Enough for every collective of a deep group plus the sampled kernels in flight. Timing events
// cost a few microseconds each to record, so the pool never needs to cover every launch.
constexpr int32_t kPoolSize = 4096;
constexpr int32_t kClaimProbes = 64;
Entry g_pool[kPoolSize];
std::atomic<int32_t> g_high_water{0};  // entries below this may be pending: the poll range
thread_local uint32_t t_claim_hint [[gnu::tls_model("initial-exec")]] = 0;

std::atomic<uint64_t> g_pool_full{0}, g_capturing{0}, g_completed{0};
std::atomic<PollerTick> g_tick{nullptr};
std::atomic<bool> g_poller_started{false};
std::atomic<bool> g_stop{false};
std::atomic<bool> g_cuda_gone{false};  // set at exit once the poller stopped: no more CUDA calls
pthread_t g_poller;
pid_t g_poller_pid = 0;  // the process whose thread g_poller is

// An error left by our own call must not reach the application's cudaGetLastError.
void ClearOurError() { g_get_error.Get<decltype(&cudaGetLastError)>()(); }

int32_t Claim() {
  const uint32_t first = t_claim_hint;
  for (int32_t probe = 0; probe < kClaimProbes; ++probe) {
    const int32_t i = static_cast<int32_t>((first + static_cast<uint32_t>(probe)) % kPoolSize);
    uint8_t expected = kFree;
    if (g_pool[i].state.compare_exchange_strong(expected, kClaimed, std::memory_order_acquire)) {
      t_claim_hint = static_cast<uint32_t>(i + 1);
      int32_t high = g_high_water.load(std::memory_order_relaxed);
      while (high <= i && !g_high_water.compare_exchange_weak(high, i + 1)) {
      }
      return i;
    }
  }
  t_claim_hint = first + kClaimProbes;
  return kNoTimer;
}

void Release(Entry& e) { e.state.store(kFree, std::memory_order_release); }

bool EnsureEvents(Entry& e, int device) {
  if (e.device == device) return true;
  const auto destroy = g_event_destroy.Get<decltype(&cudaEventDestroy)>();
  const auto create = g_event_create.Get<decltype(&cudaEventCreateWithFlags)>();
  if (e.device != -1 && destroy != nullptr) {
    destroy(e.start);
    destroy(e.end);
  }
  e.device = -1;
  if (create == nullptr) return false;
  if (create(&e.start, cudaEventDefault) != cudaSuccess) return false;
  if (create(&e.end, cudaEventDefault) != cudaSuccess) {
    destroy(e.start);
    return false;
  }
  e.device = device;
  return true;
}

void Report(const TimerTarget& t, uint64_t ns) {
  if (t.kind == TimerTarget::Kind::kCollectiveProgress) {
    RecordCollectiveDone(t.slot, t.seq, 0);
  } else if (t.kind == TimerTarget::Kind::kCollective) {
    RecordCollectiveDone(t.slot, t.seq, ns);
  } else {
    RecordDeviceTime(t.slot, ns);
  }
}

// Polls `e` if it is pending. True when it is still outstanding afterwards.
bool PollOne(Entry& e) {
  uint8_t expected = kPending;
  if (!e.state.compare_exchange_strong(expected, kPolling, std::memory_order_acquire)) {
    return expected == kPolling;  // another poller has it: still outstanding
  }
  const cudaError_t q = g_event_query.Get<decltype(&cudaEventQuery)>()(e.end);
  if (q == cudaErrorNotReady) {
    e.state.store(kPending, std::memory_order_release);
    return true;
  }
  float ms = 0;
  const cudaError_t elapsed =
      q == cudaSuccess ? g_event_elapsed.Get<decltype(&cudaEventElapsedTime)>()(&ms, e.start, e.end)
                       : q;
  if (elapsed == cudaErrorNotReady) {  // the start event not observed complete yet
    e.state.store(kPending, std::memory_order_release);
    return true;
  }
  if (elapsed == cudaSuccess) {
    Report(e.target, ms <= 0 ? 0 : static_cast<uint64_t>(static_cast<double>(ms) * 1e6));
    g_completed.fetch_add(1, std::memory_order_relaxed);
  }
  Release(e);  // an error (event destroyed, context gone): the sample is dropped
  return false;
}

// Polls every pending entry once; returns how many are still pending.
int PollAll() {
  int pending = 0;
  const int32_t high = g_high_water.load(std::memory_order_acquire);
  for (int32_t i = 0; i < high; ++i) pending += PollOne(g_pool[i]) ? 1 : 0;
  return pending;
}

void SleepNs(uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  nanosleep(&ts, nullptr);
}

void* PollerMain(void*) {
  // Relaxed capture mode: our queries never count against another thread's capture sequence.
  HookScope scope;  // anything this thread calls passes through our hooks
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  if (auto exchange = g_capture_mode.Get<decltype(&cudaThreadExchangeStreamCaptureMode)>()) {
    exchange(&mode);
  }
  uint64_t last_tick = NowNs();
  uint64_t fast_until = 0;  // a busy pool is polled every millisecond until then
  while (!g_stop.load(std::memory_order_acquire)) {
    const uint64_t completed_before = g_completed.load(std::memory_order_relaxed);
    const int pending = PollAll();
    // What this pass found to do, done or not: demand, not what is left of it.
    const uint64_t busy =
        uint64_t(pending) + g_completed.load(std::memory_order_relaxed) - completed_before;
    const uint64_t now = NowNs();
    if (busy > kPoolSize / 8) fast_until = now + 100'000'000;
    if (now - last_tick >= 100'000'000) {
      last_tick = now;
      if (PollerTick tick = g_tick.load(std::memory_order_acquire)) tick();
    }
    // Device times come from the events themselves, so polling late loses no precision; only the
    // live slot waits for completions (refreshed once a second). Every rank of a node polls:
    // at 1 ms, 8 ranks woke 8,000 times a second and slowed a host-bound job by ~2%. But a pool
    // filling up must be emptied before it runs out (a claim that fails loses its timing), and
    // demand comes in bursts: once busy, stay fast for a while though a pass found nothing.
    const uint64_t sleep_ns = now < fast_until ? 1'000'000 : busy == 0 ? 50'000'000 : 10'000'000;
    SleepNs(sleep_ns);
  }
  // The last results are reported from this thread: at exit the main thread's own buffer is
  // already gone (its thread_local destructors run before atexit handlers).
  DrainTimers(200'000'000);
  if (PollerTick tick = g_tick.load(std::memory_order_acquire)) tick();
  return nullptr;
}

// Runs before the runtime's own exit handlers (registered before ours): CUDA is still alive
// while the poller drains and exits. A forked child inherits the handler but not the thread;
// a poller stuck in a CUDA call (a hung GPU) must not keep the process from exiting.
void StopPoller() {
  if (getpid() != g_poller_pid) return;
  g_stop.store(true, std::memory_order_release);
  timespec deadline{};
  clock_gettime(CLOCK_REALTIME, &deadline);
  const uint64_t wait_ms = ProcessConfig().exit_wait_ms;
  deadline.tv_sec += static_cast<time_t>(wait_ms / 1000);
  deadline.tv_nsec += static_cast<long>(wait_ms % 1000) * 1'000'000;
  if (deadline.tv_nsec >= 1'000'000'000) {
    deadline.tv_sec += 1;
    deadline.tv_nsec -= 1'000'000'000;
  }
  if (pthread_timedjoin_np(g_poller, nullptr, &deadline) != 0) {
    Warn(
        "the device-timer thread did not stop within %llu ms (a CUDA call that does not "
        "return?); exiting without it",
        static_cast<unsigned long long>(wait_ms));
  }
  g_cuda_gone.store(true, std::memory_order_release);
}

// Started on first use, when CUDA is initialized: registered with atexit after the runtime's
// own exit handlers, it stops (and drains) before they run.
[[gnu::cold, gnu::noinline]] void StartPoller() {
  bool expected = false;
  if (!g_poller_started.compare_exchange_strong(expected, true)) return;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // signals stay with the application's threads
  const bool ok = pthread_create(&g_poller, nullptr, &PollerMain, nullptr) == 0;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (ok) {
    g_poller_pid = getpid();
    pthread_setname_np(g_poller, "perftracker-gpu");
    std::atexit(&StopPoller);
  }
}

}  // namespace

bool StreamCapturing(cudaStream_t stream) {
  const auto is_capturing = g_is_capturing.Get<decltype(&cudaStreamIsCapturing)>();
  if (is_capturing == nullptr) return true;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (is_capturing(stream, &status) != cudaSuccess) {
    ClearOurError();
    return true;
  }
  return status != cudaStreamCaptureStatusNone;
}

int32_t TimerStart(cudaStream_t stream) {
  if (g_cuda_gone.load(std::memory_order_relaxed)) return kNoTimer;
  // An error the application has not collected yet would be lost by our own calls: skip.
  const auto peek = g_peek_error.Get<decltype(&cudaPeekAtLastError)>();
  if (peek == nullptr || peek() != cudaSuccess) return kNoTimer;
  if (StreamCapturing(stream)) {
    g_capturing.fetch_add(1, std::memory_order_relaxed);
    return kNoTimer;
  }
  int device = 0;
  if (g_get_device.Get<decltype(&cudaGetDevice)>()(&device) != cudaSuccess) {
    ClearOurError();
    return kNoTimer;
  }
  const int32_t i = Claim();
  if (i == kNoTimer) {
    g_pool_full.fetch_add(1, std::memory_order_relaxed);
    return kNoTimer;
  }
  Entry& e = g_pool[i];
  if (!EnsureEvents(e, device) ||
      g_event_record.Get<decltype(&cudaEventRecord)>()(e.start, stream) != cudaSuccess) {
    ClearOurError();
    Release(e);
    return kNoTimer;
  }
  return i;
}

void TimerEnd(int32_t timer, cudaStream_t stream, const TimerTarget& target) {
  if (timer == kNoTimer) return;
  Entry& e = g_pool[timer];
  if (g_event_record.Get<decltype(&cudaEventRecord)>()(e.end, stream) != cudaSuccess) {
    ClearOurError();
    Release(e);
    return;
  }
  e.target = target;
  e.state.store(kPending, std::memory_order_release);
  if (!g_poller_started.load(std::memory_order_relaxed)) [[unlikely]]
    StartPoller();
}

void TimerCancel(int32_t timer) {
  if (timer != kNoTimer) Release(g_pool[timer]);
}

void EnsurePoller() {
  if (!g_poller_started.load(std::memory_order_relaxed)) StartPoller();
}

void FlushDevice() {
  if (g_cuda_gone.load(std::memory_order_acquire)) return;
  // A forked child (recorded as a helper): the pending timers are its parent's events, in a
  // CUDA context the child cannot use.
  if (g_poller_started.load(std::memory_order_acquire) && getpid() != g_poller_pid) return;
  DrainTimers(200'000'000);
  if (PollerTick tick = g_tick.load(std::memory_order_acquire)) tick();
}

void SetPollerTick(PollerTick tick) { g_tick.store(tick, std::memory_order_release); }

void DrainTimers(uint64_t budget_ns) {
  if (g_cuda_gone.load(std::memory_order_acquire)) return;
  const uint64_t deadline = NowNs() + budget_ns;
  while (PollAll() > 0 && NowNs() < deadline) SleepNs(1'000'000);
}

TimerStats GetTimerStats() { return {g_pool_full.load(), g_capturing.load(), g_completed.load()}; }

}  // namespace perftracker::preload
