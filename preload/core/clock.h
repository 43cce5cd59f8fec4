// The recorder's clock: CLOCK_MONOTONIC nanoseconds, read from the TSC once it is calibrated.
//
// clock_gettime through the vDSO costs ~40 ns on the VMs we measured, and a Python call needs two
// readings. On x86 with an invariant TSC (constant_tsc + nonstop_tsc) the writer thread
// calibrates the TSC against CLOCK_MONOTONIC over its first few hundred milliseconds and then
// publishes a fixed conversion; from then on NowNs is rdtsc, a multiply and a shift. Elsewhere,
// or before calibration, it is clock_gettime. Both give the same time base (the conversion is
// anchored at a CLOCK_MONOTONIC reading), so durations spanning the switch stay right.
#pragma once

#include <cstdint>

namespace perftracker::preload {

uint64_t MonotonicNs();  // clock_gettime(CLOCK_MONOTONIC)

// Writer thread: call periodically; after `calibration_ns` of baseline it switches NowNs to the
// TSC when the CPU's TSC is invariant. Returns true once switched.
// Not thread-safe: only the writer thread calls it.
bool CalibrateTsc(uint64_t calibration_ns);

// True once NowNs reads the TSC. Any thread.
bool TscCalibrated();

}  // namespace perftracker::preload
