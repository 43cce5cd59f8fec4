// Orders one drained batch of events for the aggregator (writer thread only).
//
// Each thread's events are already in time order; only iteration boundaries need a global
// order. Events are grouped by the boundary they precede (a stable counting sort over the few
// boundaries of one batch), each boundary after the events it closes:
//   - timed events by their time;
//   - untimed native calls (kEpochTag) by their epoch: a boundary carrying epoch b closes the
//     events tagged below b (when a boundary's epoch is unknown, they go last, as "now");
//   - events without a time (device results) go last, as "now".
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "preload/core/event_ring.h"

namespace perftracker::preload {

// Reused between batches so that ordering allocates only when a batch outgrows the last one.
struct SegmentScratch {
  std::vector<uint64_t> bounds;
  std::vector<uint64_t> epochs;
  std::vector<size_t> segment_start;
  std::vector<Event> ordered;
};

void OrderBySegment(std::vector<Event>* batch, SegmentScratch* scratch);

}  // namespace perftracker::preload
