// Iteration boundaries for a process without Python step markers, from the period of its
// collective sequence (preload/core/iteration_period.h). The writer thread hands it every drained
// batch before ordering it; nothing here runs on a hook's thread.
//
// Python step markers win: once one is seen in a batch, the detector is dropped for good (its
// memory released) and batches pass through untouched. Iterations synthesized before that stay
// counted, so a marker that first shows up late continues their numbering.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "preload/core/event_ring.h"
#include "preload/core/iteration_period.h"
#include "preload/core/recorder_state.h"

namespace perftracker::preload {

class CollectiveIterations {
 public:
  // Appends a kIteration event (t = the boundary collective's launch) per boundary that the
  // batch's collective launches reveal, unless the batch or an earlier one had a step marker.
  void Synthesize(std::vector<Event>* batch, const Tables& tables);

  bool python_markers_seen() const { return python_seen_; }
  uint64_t synthesized() const { return synthesized_; }

 private:
  struct Launch {
    uint64_t t, comm_id, seq, epoch;
    uint32_t slot;
  };
  bool python_seen_ = false;
  uint64_t synthesized_ = 0;
  std::unique_ptr<IterationPeriod> period_ = std::make_unique<IterationPeriod>();
  std::vector<Launch> launches_;
  std::vector<IterationBoundary> boundaries_;
};

}  // namespace perftracker::preload
