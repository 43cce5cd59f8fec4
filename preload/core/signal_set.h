// Hardware and host signals of the open window (FORMAT.md "signals"): the writer thread's.
//
// Who writes, who reads: only the writer thread (its ticks sample, the aggregator builds the
// window), so nothing is locked. A sampler interns its (name, device) once and then adds values
// by index: steady-state sampling allocates nothing. Counters keep their last raw value across
// windows, so a window's increase starts where the previous window's ended.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "schemas/format/window.h"

namespace perftracker::preload {

using SignalId = uint32_t;
inline constexpr SignalId kNoSignal = ~SignalId{0};

class SignalSet {
 public:
  // The index of (name, device); the same arguments give the same index. kNoSignal past
  // kMaxSignals (a tree with thousands of interfaces must not grow the window without bound).
  SignalId Intern(std::string_view name, std::string_view device, format::SignalKind kind);

  // A gauge's value now.
  void AddGauge(SignalId id, double value);
  // A counter's raw value now: its increase since the previous sample counts; the first sample,
  // and one below the previous (a reset, a wrap), only set the baseline.
  void AddCounter(SignalId id, uint64_t value);
  // A bit set now (flags).
  void AddFlags(SignalId id, uint64_t bits);

  // The window's signals (those with a sample; counters with an increase measured), appended to
  // `out` in interning order; the window's accumulators restart, the counters' baselines stay.
  void TakeWindow(std::vector<format::Signal>* out);
  // The same, leaving the window's accumulators as they are.
  void PeekWindow(std::vector<format::Signal>* out) const;

  size_t size() const { return entries_.size(); }
  static constexpr size_t kMaxSignals = 1024;

 private:
  struct Entry {
    format::Signal window;  // name, device, kind; this window's samples
    uint64_t last = 0;      // counters: the previous raw value
    bool has_last = false;
  };
  std::vector<Entry> entries_;
};

}  // namespace perftracker::preload
