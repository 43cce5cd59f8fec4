// Light and detailed recording of Python functions (PERFTRACKER_MODE): the state the writer
// thread's trigger (mode_trigger.h) and the CPython eval hook share.
//
// Light mode folds Python functions that proved cheap into their caller; detailed mode records
// them. A detailed period is a range of blocks [first, end) of PERFTRACKER_WINDOW_ITERS
// iterations (block k: iterations [k*W, (k+1)*W); the "window" arguments below are block
// numbers): the writer decides it (slowdown, trigger file) and publishes it in one atomic word;
// the thread that ends iterations applies it exactly when an iteration that is a multiple of W
// begins, so every rank switches on the same iteration without talking to the others. A period
// begins at a window end and lasts whole windows (mode_trigger.h, window_schedule.h). The hot
// path reads `detailed` only for functions light mode folds: one predictable load.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace perftracker::preload {

struct PyModeState {
  // Read by the eval hook; written at window boundaries (or once, for PERFTRACKER_MODE=detailed).
  alignas(64) std::atomic<bool> detailed{false};
  std::atomic<bool> forced{false};  // PERFTRACKER_MODE=detailed: never switches back
  // Written by the writer: the scheduled period, first window << 32 | end window (0: none).
  alignas(64) std::atomic<uint64_t> schedule{0};
  // Written by the hook: Python step ends so far, and the windows where it last switched on and
  // off (the writer labels windows with them).
  std::atomic<uint64_t> python_iterations{0};
  std::atomic<uint64_t> applied_on{~uint64_t{0}}, applied_off{~uint64_t{0}};
};
inline PyModeState g_py_mode;

// PERFTRACKER_MODE: true for `detailed`; `ok` is false for a value that is neither mode.
inline bool ParseDetailedMode(const char* text, bool* ok) {
  const std::string_view mode = text != nullptr ? text : "";
  *ok = mode.empty() || mode == "light" || mode == "detailed";
  return mode == "detailed";
}

inline uint64_t PackSchedule(uint64_t first_window, uint64_t end_window) {
  return first_window << 32 | (end_window & 0xffffffffu);
}
inline bool ScheduledDetailed(uint64_t schedule, uint64_t window) {
  return window >= (schedule >> 32) && window < (schedule & 0xffffffffu);
}

// An iteration that is a multiple of the window length begins (window `window`): switch to what
// the schedule says. Called by the thread that ends iterations (the Python hook), or by the
// writer when no Python step marks them.
inline void ApplyPyModeAt(uint64_t window) {
  PyModeState& m = g_py_mode;
  if (m.forced.load(std::memory_order_relaxed)) return;
  const bool want = ScheduledDetailed(m.schedule.load(std::memory_order_acquire), window);
  if (want == m.detailed.load(std::memory_order_relaxed)) return;
  // Off before on: a reader that sees the new `on` (acquire) also sees the period still open.
  if (want) m.applied_off.store(~uint64_t{0}, std::memory_order_release);
  (want ? m.applied_on : m.applied_off).store(window, std::memory_order_release);
  m.detailed.store(want, std::memory_order_relaxed);
}

// At the start of block `window`, a detailed period begins or ends (writer thread): the
// aggregator ends a window there, so that a window is recorded in one mode throughout.
inline bool DetailedPeriodBoundary(uint64_t window) {
  const uint64_t schedule = g_py_mode.schedule.load(std::memory_order_acquire);
  return window > 0 &&
         ScheduledDetailed(schedule, window) != ScheduledDetailed(schedule, window - 1);
}

// The mode a window was captured in, from what was applied (writer thread).
inline bool WindowWasDetailed(uint64_t window) {
  const PyModeState& m = g_py_mode;
  if (m.forced.load(std::memory_order_relaxed)) return true;
  const uint64_t on = m.applied_on.load(std::memory_order_acquire);
  const uint64_t off = m.applied_off.load(std::memory_order_acquire);
  return on != ~uint64_t{0} && window >= on && window < off;
}

}  // namespace perftracker::preload
