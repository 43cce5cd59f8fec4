#include "preload/core/iteration_period.h"

#include <algorithm>

namespace perftracker::preload {
namespace {

// How the launch gaps of the periodic part fall: the big ones (at least half the largest) and
// their spacing, when they are clearly apart from the rest (at most a third of the largest).
struct GapShape {
  bool regular = false;  // big gaps clearly apart, equally spaced, at least twice
  uint64_t first = 0;    // launch before the first big gap
  uint64_t last = 0;     // launch before the last big gap
  uint64_t spacing = 0;
  uint64_t count = 0;
};

// Gaps after launches [start, end) of `times` (indexed from `base`).
GapShape ShapeOfGaps(const std::vector<uint64_t>& times, uint64_t base, uint64_t start,
                     uint64_t end) {
  auto gap = [&](uint64_t seq) {
    const uint64_t a = times[seq - base], b = times[seq + 1 - base];
    return b > a ? b - a : 0;
  };
  uint64_t largest = 0;
  for (uint64_t s = start; s < end; ++s) largest = std::max(largest, gap(s));
  GapShape shape;
  if (largest == 0) return shape;
  bool clear = true;
  for (uint64_t s = start; s < end; ++s) {
    const uint64_t g = gap(s);
    if (2 * g < largest) {
      clear = clear && 3 * g <= largest;
      continue;
    }
    if (shape.count == 0) {
      shape.first = s;
    } else if (shape.spacing == 0) {
      shape.spacing = s - shape.last;
    } else if (s - shape.last != shape.spacing) {
      clear = false;
    }
    shape.last = s;
    ++shape.count;
  }
  shape.regular = clear && shape.count >= 2;
  return shape;
}

}  // namespace

void PeriodDetector::Restart(uint64_t seq) {
  length_ = 0;
  pattern_.clear();
  base_ = seq;
  symbols_.clear();
  times_.clear();
  run_.assign(kMaxPeriod + 1, 0);
  next_try_ = 0;
}

void PeriodDetector::Feed(uint64_t seq, uint32_t symbol, uint64_t t_ns,
                          std::vector<IterationBoundary>* out) {
  if (!started_) {
    started_ = true;
    next_seq_ = seq;
    Restart(seq);
  }
  if (seq < next_seq_) return;  // repeated, or overtaken by a later one from another thread
  // A missing launch (dropped event, unrecorded call) leaves the pattern position unknown.
  if (seq > next_seq_) Restart(seq);
  next_seq_ = seq + 1;
  if (locked()) {
    if (symbol == pattern_[(seq - origin_) % length_]) {
      if (seq == next_boundary_) {
        out->push_back({next_iteration_++, seq, t_ns});
        next_boundary_ += length_;
      }
      return;
    }
    Restart(seq);  // the loop changed (evaluation, checkpoint): find its period again
  }
  if (symbols_.size() == kMaxHistory) {
    // Keep the latest half (more than kMaxPeriod, so every run_ comparison stays in range).
    const size_t drop = kMaxHistory / 2;
    symbols_.erase(symbols_.begin(), symbols_.begin() + drop);
    times_.erase(times_.begin(), times_.begin() + drop);
    base_ += drop;
  }
  symbols_.push_back(symbol);
  times_.push_back(t_ns);
  Search(seq, out);
}

void PeriodDetector::Search(uint64_t seq, std::vector<IterationBoundary>* out) {
  const size_t i = seq - base_;
  const uint32_t x = symbols_[i];
  const size_t max_p = std::min<size_t>(kMaxPeriod, i);
  uint32_t found = 0;
  for (size_t p = 1; p <= max_p; ++p) {
    run_[p] = symbols_[i - p] == x ? run_[p] + 1 : 0;
    if (found == 0 && run_[p] >= kConfirmPeriods * p && run_[p] + p >= kMinLaunches) {
      found = static_cast<uint32_t>(p);
    }
  }
  if (found != 0 && seq >= next_try_) TryLock(found, seq, out);
}

bool PeriodDetector::TryLock(uint32_t p, uint64_t seq, std::vector<IterationBoundary>* out) {
  // The periodic part: the run of period p, as far back as the history reaches.
  const uint64_t start = std::max<uint64_t>(seq + 1 - (uint64_t{run_[p]} + p), base_);
  const uint64_t span = seq + 1 - start;
  // Gaps over the whole periodic part first; when one stray gap (the host descheduled between two
  // launches) spoils them, over its recent halves, which that gap leaves sooner or later.
  bool gap_period = false;
  for (uint64_t w = span; w >= std::max<uint64_t>(16, 4 * uint64_t{p} + 1); w /= 2) {
    const uint64_t from = seq + 1 - w;
    const GapShape gaps = ShapeOfGaps(times_, base_, from, seq);
    if (!gaps.regular || gaps.count < kConfirmPeriods + 1 || gaps.spacing % p != 0 ||
        gaps.spacing > kMaxPeriod || gaps.first >= from + gaps.spacing ||
        gaps.last + gaps.spacing < seq) {
      continue;
    }
    // Every gap alike: one launch per iteration, but only if nothing larger exists anywhere.
    if (gaps.spacing == 1 && w != span) continue;
    gap_period = true;
    if (gaps.spacing > p || p == 1) {
      // The boundary collective is the one before the big gap.
      Lock(static_cast<uint32_t>(gaps.spacing), start, gaps.first, seq, out);
      return true;
    }
    break;
  }
  // No gap says otherwise: one symbol period is one iteration, ending with its last launch.
  // Without gaps, wait long enough that an iteration of two periods would have shown its big
  // gaps kConfirmPeriods + 1 times (the gap after the latest launch is not known yet).
  if (p >= 2 && (gap_period || span > 2 * (kConfirmPeriods + 1) * uint64_t{p})) {
    Lock(p, start, start + p - 1, seq, out);
    return true;
  }
  next_try_ = seq + std::max<uint32_t>(p, 8);
  return false;
}

void PeriodDetector::Lock(uint32_t length, uint64_t start, uint64_t boundary, uint64_t last,
                          std::vector<IterationBoundary>* out) {
  length_ = length;
  origin_ = start;
  pattern_.assign(symbols_.begin() + (start - base_), symbols_.begin() + (start - base_) + length);
  uint64_t b = start + (boundary - start) % length;
  for (; b <= last; b += length) out->push_back({next_iteration_++, b, times_[b - base_]});
  next_boundary_ = b;
  ++locks_;
  // Locked, only the pattern is needed.
  std::vector<uint32_t>().swap(symbols_);
  std::vector<uint64_t>().swap(times_);
  std::vector<uint32_t>().swap(run_);
}

void IterationPeriod::Feed(uint64_t comm_id, uint64_t seq, uint32_t symbol, uint64_t t_ns,
                           std::vector<IterationBoundary>* out) {
  if (has_source()) {
    if (comms_[source_].id == comm_id) comms_[source_].detector.Feed(seq, symbol, t_ns, out);
    return;
  }
  auto it =
      std::find_if(comms_.begin(), comms_.end(), [&](const Comm& c) { return c.id == comm_id; });
  if (it == comms_.end()) {
    if (comms_.size() == kMaxComms) return;
    comms_.push_back(Comm{comm_id, {}});
    it = comms_.end() - 1;
  }
  it->detector.Feed(seq, symbol, t_ns, out);
  if (!it->detector.locked()) return;
  // The first to lock numbers the iterations from now on; the others' memory is released.
  Comm source = std::move(*it);
  comms_.clear();
  comms_.push_back(std::move(source));
  source_ = 0;
}

}  // namespace perftracker::preload
