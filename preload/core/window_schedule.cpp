#include "preload/core/window_schedule.h"

#include <algorithm>

namespace perftracker::preload {

WindowSchedule::WindowSchedule(uint64_t block_iters, uint64_t min_window_ns)
    : block_(std::max<uint64_t>(block_iters, 1)), min_ns_(min_window_ns), end_(block_) {}

void WindowSchedule::Closed(uint64_t iterations, uint64_t mean_iteration_ns) {
  if (min_ns_ > 0 && mean_iteration_ns > 0) {
    // The fewest doublings whose window lasts `ns` at this step time.
    const auto fewest = [&](double ns) {
      int k = 0;
      while (k < kMaxDoublings &&
             static_cast<double>(block_ << k) * static_cast<double>(mean_iteration_ns) < ns) {
        ++k;
      }
      return k;
    };
    const auto min = static_cast<double>(min_ns_);
    // Longer: at once. Shorter: once the window lasts four times the minimum, to the fewest
    // doublings that last twice the minimum.
    if (const int want = fewest(min); want > doublings_) {
      doublings_ = want;
    } else if (fewest(4 * min) <= doublings_) {
      doublings_ = fewest(2 * min);
    }
  }
  const uint64_t n = length();
  end_ = (iterations / n + 1) * n;
}

}  // namespace perftracker::preload
