// Where windows end: on iteration boundaries every rank computes alike, without talking.
//
// A window is PERFTRACKER_WINDOW_ITERS (a block) times a power of two iterations long, and ends
// on a multiple of its length. Its length is re-decided only when a window ends, from the mean
// iteration time of the window that just ended (its iterations' time over their number: what a
// window of a given length lasts, a long checkpoint step included; a median would take the
// iterations a collective period marks at once, nearly 0 ns each, for the step): the shortest
// length that lasts at least PERFTRACKER_WINDOW_S. Ranks of a synchronous job run the same
// iterations in the same time, so they decide alike; near a threshold one rank may decide
// otherwise, and because every length is a block times a power of two, its boundaries are then
// a subset or a superset of its peers' (the analyzer compares ranks over the boundaries they
// share, align.cpp). A window lasting up to four
// times the minimum keeps its length (a shorter one lasts twice the minimum), so a step time
// hovering at a threshold does not flip it.
//
// A detailed period (py_mode.h) begins at a window end and lasts whole windows; the windows end
// where it begins and ends, whatever the length (a rank may decide one alone).
//
// Without a minimum duration (PERFTRACKER_WINDOW_S=0) every window is one block: the rule before
// 2026-11-27. The first window is always one block: it holds start-up, whose length says nothing
// about the step time (its mean, start-up included, may size the next window short of the
// minimum; the one after is sized from steady steps).
#pragma once

#include <cstdint>

namespace perftracker::preload {

class WindowSchedule {
 public:
  static constexpr int kMaxDoublings = 16;

  WindowSchedule(uint64_t block_iters, uint64_t min_window_ns);

  uint64_t block() const { return block_; }
  // Iterations in a window now (block x 2^doublings).
  uint64_t length() const { return block_ << doublings_; }
  // The open window ends once this many iterations have ended.
  uint64_t end() const { return end_; }
  // The first window end after `iteration` iterations, as the length stands now.
  uint64_t NextEnd(uint64_t iteration) const {
    return iteration < end_ ? end_ : (iteration / length() + 1) * length();
  }

  // The open window ended after `iterations` iterations (a multiple of the block: at end(), or
  // earlier for a detailed period), whose iterations took `mean_iteration_ns` on average; sets
  // the next end.
  void Closed(uint64_t iterations, uint64_t mean_iteration_ns);

 private:
  uint64_t block_;
  uint64_t min_ns_;
  int doublings_ = 0;
  uint64_t end_;
};

}  // namespace perftracker::preload
