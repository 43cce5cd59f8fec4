#include "preload/core/segment_order.h"

#include <algorithm>

namespace perftracker::preload {

void OrderBySegment(std::vector<Event>* batch, SegmentScratch* scratch) {
  std::vector<uint64_t>& bounds = scratch->bounds;
  std::vector<uint64_t>& epochs = scratch->epochs;
  bounds.clear();
  epochs.clear();
  bool epochs_known = true;
  for (const Event& e : *batch) {
    if (e.type != EventType::kIteration) continue;
    bounds.push_back(e.t);
    epochs.push_back(e.a);
    epochs_known = epochs_known && e.a != 0;
  }
  if (bounds.empty()) return;
  std::sort(bounds.begin(), bounds.end());
  std::sort(epochs.begin(), epochs.end());
  const size_t segments = bounds.size() + 1;
  auto segment_of = [&](const Event& e) -> size_t {
    if (e.t == 0) return segments - 1;
    if ((e.t & kEpochTag) != 0) {  // an untimed call: placed by the epoch it ran in
      if (!epochs_known) return segments - 1;
      const uint64_t epoch = e.t & ~kEpochTag;
      return static_cast<size_t>(std::upper_bound(epochs.begin(), epochs.end(), epoch) -
                                 epochs.begin());
    }
    const auto it = std::lower_bound(bounds.begin(), bounds.end(), e.t);
    size_t seg = static_cast<size_t>(it - bounds.begin());
    // A boundary closes its own segment: it comes after the events at or before its time.
    if (e.type == EventType::kIteration) seg = std::min(seg, segments - 1);
    return seg;
  };
  scratch->segment_start.assign(segments + 1, 0);
  for (const Event& e : *batch) ++scratch->segment_start[segment_of(e) + 1];
  for (size_t i = 1; i <= segments; ++i) scratch->segment_start[i] += scratch->segment_start[i - 1];
  scratch->ordered.resize(batch->size());
  // Within a segment, an iteration event is placed last so its window closes after its events.
  std::vector<size_t>& next = scratch->segment_start;
  for (const Event& e : *batch) {
    if (e.type == EventType::kIteration) continue;
    scratch->ordered[next[segment_of(e)]++] = e;
  }
  for (const Event& e : *batch) {
    if (e.type == EventType::kIteration) scratch->ordered[next[segment_of(e)]++] = e;
  }
  batch->swap(scratch->ordered);
}

}  // namespace perftracker::preload
