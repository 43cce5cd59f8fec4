// The simulated device clock.
//
// Device time (ns) = CLOCK_MONOTONIC (ns) / SIMGPU_TIME_SCALE. Every process on the machine
// computes the same device time for the same instant without any shared state, which is what
// lets collectives compare arrival times across ranks. Integer arithmetic (the scale is kept in
// millionths) keeps the clock exact for any uptime.
#ifndef SIMGPU_CORE_CLOCK_H_
#define SIMGPU_CORE_CLOCK_H_

#include <cstdint>

namespace simgpu {

// Host CLOCK_MONOTONIC in ns.
int64_t WallNowNs();

// Simulated device time in ns.
int64_t DeviceNowNs();

// Conversions between the two time bases.
int64_t DeviceToWallNs(int64_t device_ns);
int64_t WallToDeviceNs(int64_t wall_ns);

// Sleeps (never spins) until the device clock reaches `device_ns`.
void SleepUntilDeviceNs(int64_t device_ns);

// A device time so far away that it means "never".
inline constexpr int64_t kNeverNs = INT64_MAX / 4;

}  // namespace simgpu

#endif  // SIMGPU_CORE_CLOCK_H_
