#include "core/clock.h"

#include <cerrno>
#include <ctime>

#include "core/config.h"

namespace simgpu {

int64_t WallNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t WallToDeviceNs(int64_t wall_ns) {
  return static_cast<int64_t>(static_cast<__int128>(wall_ns) * 1000000 /
                              GetConfig().time_scale_ppm);
}

int64_t DeviceToWallNs(int64_t device_ns) {
  return static_cast<int64_t>(static_cast<__int128>(device_ns) * GetConfig().time_scale_ppm /
                              1000000);
}

int64_t DeviceNowNs() { return WallToDeviceNs(WallNowNs()); }

void SleepUntilDeviceNs(int64_t device_ns) {
  if (device_ns >= kNeverNs) {
    // A stalled device never finishes; sleep in long chunks so a signal can still end us.
    for (;;) {
      timespec ts{3600, 0};
      nanosleep(&ts, nullptr);
    }
  }
  // Round up so that after waking, DeviceNowNs() >= device_ns holds.
  int64_t wall = DeviceToWallNs(device_ns) + 1;
  while (WallToDeviceNs(wall) < device_ns) ++wall;
  timespec ts{static_cast<time_t>(wall / 1000000000), static_cast<long>(wall % 1000000000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

}  // namespace simgpu
