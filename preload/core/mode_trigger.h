// When light recording turns detailed (py_mode.h): the paper's slowdown trigger and the trigger
// file, evaluated by the writer thread only (never on a hot path).
//
// Boundaries here are those of blocks of PERFTRACKER_WINDOW_ITERS iterations (py_mode.h), where
// windows may end (window_schedule.h). Slowdown: at each block boundary, the mean of the last 50
// iteration times is compared with the lowest such mean of the last 500 iterations; above 1.05 x
// that low, a detailed period of PERFTRACKER_DETAILED_WINDOWS windows starts at the next window
// end (whole windows: a window per block where they are one block long). The low is a windowed
// minimum of 50-iteration means, not of single iterations: one lucky step neither arms the
// trigger forever nor makes ordinary jitter fire it.
// After a period, it fires again only when the mean grows a further 5% beyond what the period
// saw, or once 500 iterations have refreshed the low. Ranks of a synchronous job see the same
// iteration times, so they decide alike at the same boundary; a rank that decides alone still
// switches only at a boundary.
//
// Trigger file: $PERFTRACKER_DIR/<job>/trigger, looked at once a second. Its appearance (or any
// change of it) starts a period at the next window end; a number in it is the earliest iteration
// to start at (rounded up to a window end), which lets an operator name one iteration for every
// rank.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <ctime>
#include <string>

#include "preload/core/config.h"
#include "preload/core/window_schedule.h"

namespace perftracker::preload {

class ModeTrigger {
 public:
  static constexpr int kMeanIterations = 50;
  static constexpr int kLowIterations = 500;

  ModeTrigger(const Config& config, std::string trigger_path);

  // Every iteration end, in order (the writer's kIteration events).
  void OnIteration(uint64_t end_ns);
  // Once per writer round: the trigger file, and the switch itself when no Python step marks
  // iterations (the writer's count is then the only one).
  void Poll(uint64_t now_ns);
  // The window beginning at `iter_begin` (block iter_begin / PERFTRACKER_WINDOW_ITERS) was
  // captured in detailed mode.
  bool Detailed(uint64_t iter_begin) const;
  // Where windows end (the aggregator's): periods begin at a window end and last whole windows.
  // Without it, windows are one block each.
  void SetWindows(const WindowSchedule* windows) { windows_ = windows; }

  uint64_t iterations() const { return iterations_; }

 private:
  void EvaluateSlowdown();
  void Schedule(uint64_t earliest_block);
  void CheckFile();

  uint64_t window_iters_;
  uint64_t detailed_windows_;
  const WindowSchedule* windows_ = nullptr;
  WindowSchedule blocks_;  // without SetWindows: windows of one block
  std::string path_;
  uint64_t iterations_ = 0;
  uint64_t last_end_ns_ = 0;
  uint64_t durations_ = 0;  // iteration times seen (the first iteration has none)
  std::array<uint64_t, kMeanIterations> recent_{};
  uint64_t recent_sum_ = 0;
  std::array<uint64_t, kLowIterations> means_{};  // rolling means of the last 500 iterations
  uint64_t means_seen_ = 0;
  uint64_t period_end_ = 0;   // iteration at which the scheduled period ends
  uint64_t rearm_above_ = 0;  // mean that fires again before the low is refreshed
  uint64_t quiet_until_ = 0;  // iteration from which the low alone may fire again
  uint64_t last_check_ns_ = 0;
  bool checked_ = false;
  bool file_seen_ = false;
  ino_t file_ino_ = 0;
  timespec file_mtime_{};
  off_t file_size_ = -1;
};

}  // namespace perftracker::preload
