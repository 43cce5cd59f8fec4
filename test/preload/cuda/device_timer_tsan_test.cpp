// The concurrent part of the CUDA hooks -- the timing-event pool and its poller thread
// (preload/cuda/device_timer.cpp) -- built on its own with -fsanitize=thread against a stand-in
// runtime (bench_stub_cudart) and a counting stand-in recorder. Several threads start and end
// timers while the poller completes them; every timer must be reported exactly once.
#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "preload/cuda/device_timer.h"

namespace perftracker::preload {

std::atomic<uint64_t> g_device_reports{0}, g_collective_reports{0};

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}
void RecordDeviceTime(Slot, uint64_t) { g_device_reports.fetch_add(1); }
void RecordCollectiveDone(Slot, uint64_t, uint64_t) { g_collective_reports.fetch_add(1); }

}  // namespace perftracker::preload

int main() {
  using namespace perftracker::preload;  // NOLINT
  constexpr int kThreads = 4, kPerThread = 20000;
  std::atomic<uint64_t> ended{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const int32_t timer = TimerStart(nullptr);
        if (timer == kNoTimer) continue;  // pool momentarily full: skipped, never waited for
        if (i % 7 == 0) {
          TimerCancel(timer);
          continue;
        }
        const auto kind = (i + t) % 2 ? TimerTarget::Kind::kDevice : TimerTarget::Kind::kCollective;
        TimerEnd(timer, nullptr, TimerTarget{kind, 1, uint64_t(i)});
        ended.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  DrainTimers(2'000'000'000);
  const uint64_t reports = g_device_reports.load() + g_collective_reports.load();
  const TimerStats stats = GetTimerStats();
  std::printf("ended %llu reported %llu completed %llu pool_full %llu\n",
              (unsigned long long)ended.load(), (unsigned long long)reports,
              (unsigned long long)stats.completed, (unsigned long long)stats.pool_full);
  return reports == ended.load() && ended.load() > 0 ? 0 : 1;
}
