#include "preload/core/mode_trigger.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "preload/core/py_mode.h"

namespace perftracker::preload {

ModeTrigger::ModeTrigger(const Config& config, std::string trigger_path)
    : window_iters_(std::max<uint64_t>(config.window_iters, 1)),
      detailed_windows_(std::clamp<uint64_t>(config.detailed_windows, 1, 0xffff)),
      blocks_(window_iters_, 0),
      path_(std::move(trigger_path)) {
  bool ok = true;
  const bool detailed = ParseDetailedMode(config.mode, &ok);  // the Python hook warns
  g_py_mode.forced.store(detailed);
  g_py_mode.detailed.store(detailed);
}

void ModeTrigger::OnIteration(uint64_t end_ns) {
  const bool first = iterations_++ == 0;
  const uint64_t previous = last_end_ns_;
  last_end_ns_ = end_ns;
  if (first || end_ns < previous) return;  // the first one includes the job's start-up
  const uint64_t d = end_ns - previous;
  uint64_t& slot = recent_[durations_ % kMeanIterations];
  recent_sum_ += d - slot;
  slot = d;
  if (++durations_ < kMeanIterations) return;
  means_[means_seen_++ % kLowIterations] = recent_sum_ / kMeanIterations;
  if (iterations_ % window_iters_ == 0) EvaluateSlowdown();
}

void ModeTrigger::EvaluateSlowdown() {
  if (g_py_mode.forced.load(std::memory_order_relaxed)) return;
  const uint64_t mean = recent_sum_ / kMeanIterations;
  const uint64_t n = std::min<uint64_t>(means_seen_, kLowIterations);
  const uint64_t low = *std::min_element(means_.begin(), means_.begin() + n);
  if (iterations_ <= period_end_) {  // scheduled or running: what it saw is the new normal
    rearm_above_ = std::max(rearm_above_, mean + mean / 20);
    return;
  }
  if (mean * 100 <= low * 105) return;
  if (iterations_ < quiet_until_ && mean <= rearm_above_) return;
  Schedule(0);
  rearm_above_ = mean + mean / 20;
}

void ModeTrigger::Schedule(uint64_t earliest_block) {
  // The hook's count runs ahead of the drained one: the next window end neither has reached,
  // and not before the earliest block.
  // Block numbers travel in 32 bits (py_mode.h): beyond, the period never comes.
  constexpr uint64_t kLastBlock = 0xffff0000u;
  const uint64_t now = std::max(iterations_, g_py_mode.python_iterations.load());
  const uint64_t earliest = std::min(earliest_block, kLastBlock) * window_iters_;
  const uint64_t after = std::max(now, earliest > 0 ? earliest - 1 : 0);
  const WindowSchedule& windows = windows_ != nullptr ? *windows_ : blocks_;
  const uint64_t first_iteration = windows.NextEnd(after);
  const uint64_t per_window = windows.length() / window_iters_;
  const uint64_t first = std::min(first_iteration / window_iters_, kLastBlock);
  const uint64_t end = std::min(first + detailed_windows_ * per_window, uint64_t{0xffffffffu});
  g_py_mode.schedule.store(PackSchedule(first, end), std::memory_order_release);
  period_end_ = end * window_iters_;
  quiet_until_ = period_end_ + kLowIterations;
}

void ModeTrigger::CheckFile() {
  struct stat st;
  if (stat(path_.c_str(), &st) != 0) return;
  if (file_seen_ && st.st_ino == file_ino_ && st.st_size == file_size_ &&
      st.st_mtim.tv_sec == file_mtime_.tv_sec && st.st_mtim.tv_nsec == file_mtime_.tv_nsec) {
    return;
  }
  file_seen_ = true;
  file_ino_ = st.st_ino;
  file_size_ = st.st_size;
  file_mtime_ = st.st_mtim;
  char text[32] = {};
  const int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    (void)!read(fd, text, sizeof text - 1);
    close(fd);
  }
  char* end = nullptr;
  const uint64_t iteration = std::strtoull(text, &end, 10);
  // Window numbers travel in 32 bits (py_mode.h): an absurd iteration means "never", not a wrap.
  const uint64_t earliest =
      end != text && text[0] != '-'
          ? std::min<uint64_t>(iteration / window_iters_ + (iteration % window_iters_ != 0),
                               0xffff0000u)
          : uint64_t{0};
  if (!g_py_mode.forced.load(std::memory_order_relaxed)) Schedule(earliest);
}

void ModeTrigger::Poll(uint64_t now_ns) {
  if (!checked_ || now_ns - last_check_ns_ >= 1'000'000'000ull) {
    checked_ = true;
    last_check_ns_ = now_ns;
    CheckFile();
  }
  if (g_py_mode.python_iterations.load(std::memory_order_relaxed) == 0) {
    ApplyPyModeAt(iterations_ / window_iters_);
  }
}

bool ModeTrigger::Detailed(uint64_t iter_begin) const {
  return WindowWasDetailed(iter_begin / window_iters_);
}

}  // namespace perftracker::preload
