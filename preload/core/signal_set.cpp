#include "preload/core/signal_set.h"

#include <algorithm>

namespace perftracker::preload {

SignalId SignalSet::Intern(std::string_view name, std::string_view device,
                           format::SignalKind kind) {
  // Linear: a process has tens of signals, interned once each by a sampler that keeps the index.
  for (size_t i = 0; i < entries_.size(); ++i) {
    const format::Signal& s = entries_[i].window;
    if (s.name == name && s.device == device) return static_cast<SignalId>(i);
  }
  if (entries_.size() >= kMaxSignals) return kNoSignal;
  Entry e;
  e.window.name = name;
  e.window.device = device;
  e.window.kind = kind;
  entries_.push_back(std::move(e));
  return static_cast<SignalId>(entries_.size() - 1);
}

namespace {

void Sample(format::Signal& s, double value) {
  s.min = s.samples == 0 ? value : std::min(s.min, value);
  s.max = s.samples == 0 ? value : std::max(s.max, value);
  s.sum += value;
  ++s.samples;
}

}  // namespace

void SignalSet::AddGauge(SignalId id, double value) {
  if (id >= entries_.size()) return;
  Sample(entries_[id].window, value);
}

void SignalSet::AddCounter(SignalId id, uint64_t value) {
  if (id >= entries_.size()) return;
  Entry& e = entries_[id];
  const bool counts = e.has_last && value >= e.last;
  const uint64_t increase = counts ? value - e.last : 0;
  e.last = value;
  e.has_last = true;
  if (counts) Sample(e.window, static_cast<double>(increase));
}

void SignalSet::AddFlags(SignalId id, uint64_t bits) {
  if (id >= entries_.size()) return;
  format::Signal& s = entries_[id].window;
  s.bits |= bits;
  s.sum += bits != 0 ? 1 : 0;
  ++s.samples;
}

void SignalSet::PeekWindow(std::vector<format::Signal>* out) const {
  for (const Entry& e : entries_) {
    if (e.window.samples > 0) out->push_back(e.window);
  }
}

void SignalSet::TakeWindow(std::vector<format::Signal>* out) {
  for (Entry& e : entries_) {
    format::Signal& s = e.window;
    if (s.samples == 0) continue;
    out->push_back(s);
    s.samples = 0;
    s.min = s.max = s.sum = 0;
    s.bits = 0;
  }
}

}  // namespace perftracker::preload
