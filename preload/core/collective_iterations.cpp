#include "preload/core/collective_iterations.h"

#include <algorithm>

namespace perftracker::preload {

void CollectiveIterations::Synthesize(std::vector<Event>* batch, const Tables& tables) {
  if (python_seen_) return;
  launches_.clear();
  const uint32_t known = tables.collective_count.load(std::memory_order_acquire);
  for (const Event& e : *batch) {
    if (e.type == EventType::kIteration) {
      python_seen_ = true;
      period_.reset();
      std::vector<Launch>().swap(launches_);
      std::vector<IterationBoundary>().swap(boundaries_);
      return;
    }
    if (e.type != EventType::kCollLaunch || e.slot >= known) continue;
    launches_.push_back(Launch{e.t, tables.collectives[e.slot].comm_id, e.a, e.c, e.slot});
  }
  // Program order across threads; each thread's own launches are already in order.
  std::stable_sort(launches_.begin(), launches_.end(),
                   [](const Launch& a, const Launch& b) { return a.t < b.t; });
  boundaries_.clear();
  for (const Launch& l : launches_) period_->Feed(l.comm_id, l.seq, l.slot, l.t, &boundaries_);
  for (const IterationBoundary& b : boundaries_) {
    // The boundary collective's epoch places untimed calls (segment_order.h); a boundary found
    // late, for a launch of an earlier batch, has none (0: those calls go by "now").
    uint64_t epoch = 0;
    for (const Launch& l : launches_) {
      if (l.seq == b.seq && l.t == b.t_ns) epoch = l.epoch;
    }
    batch->push_back(Event{0, EventType::kIteration, {}, b.t_ns, epoch, 0, 0, 0});
  }
  synthesized_ += boundaries_.size();
}

}  // namespace perftracker::preload
