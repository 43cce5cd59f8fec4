#include "preload/core/clock.h"

#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "preload/core/recorder.h"

namespace perftracker::preload {
namespace {

struct TscConversion {
  uint64_t base_tsc;
  uint64_t base_ns;
  uint64_t mult;  // ns per tick, as a 32.32 fixed-point number
};

// x86-64 only: elsewhere NowNs is the vDSO clock.
[[maybe_unused]] TscConversion g_conversion;
std::atomic<bool> g_tsc_ready{false};

[[maybe_unused]] bool InvariantTsc() {
#if defined(__x86_64__)
  FILE* f = std::fopen("/proc/cpuinfo", "r");
  if (f == nullptr) return false;
  char line[4096];
  bool constant = false, nonstop = false;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "flags", 5) != 0) continue;
    constant = std::strstr(line, " constant_tsc") != nullptr;
    nonstop = std::strstr(line, " nonstop_tsc") != nullptr;
    break;
  }
  std::fclose(f);
  return constant && nonstop;
#else
  return false;
#endif
}

}  // namespace

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t NowNs() {
#if defined(__x86_64__)
  if (g_tsc_ready.load(std::memory_order_acquire)) {
    const TscConversion& c = g_conversion;
    const uint64_t ticks = __rdtsc() - c.base_tsc;
    return c.base_ns + static_cast<uint64_t>((static_cast<unsigned __int128>(ticks) * c.mult) >> 32);
  }
#endif
  return MonotonicNs();
}

bool TscCalibrated() { return g_tsc_ready.load(std::memory_order_acquire); }

bool CalibrateTsc(uint64_t calibration_ns) {
#if defined(__x86_64__)
  static bool supported = InvariantTsc();
  static uint64_t start_tsc = 0, start_ns = 0;
  if (!supported || g_tsc_ready.load(std::memory_order_relaxed)) return g_tsc_ready;
  // Read the TSC between two clock readings; the pair closest together anchors best.
  const uint64_t before = MonotonicNs();
  const uint64_t tsc = __rdtsc();
  const uint64_t ns = (before + MonotonicNs()) / 2;
  if (start_tsc == 0) {
    start_tsc = tsc;
    start_ns = ns;
    return false;
  }
  if (ns - start_ns < calibration_ns || tsc <= start_tsc) return false;
  const auto mult = static_cast<uint64_t>((static_cast<unsigned __int128>(ns - start_ns) << 32) /
                                          (tsc - start_tsc));
  g_conversion = TscConversion{tsc, ns, mult};
  g_tsc_ready.store(true, std::memory_order_release);
  return true;
#else
  (void)calibration_ns;
  return false;
#endif
}

}  // namespace perftracker::preload
