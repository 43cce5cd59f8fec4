// What a detector adds up over the slots where a rank (or a link) was flagged, and the averages
// a Finding reports: every detector judges slot by slot and reports the mean of the slots that
// persisted.
#pragma once

#include "analyzer/detect/detect.h"

namespace perftracker::analyzer {

struct FlaggedSums {
  int present = 0, flagged = 0;  // slots judged, slots flagged
  // Over the flagged slots: the measured value, the healthy level it was judged against, the
  // deviation, the time lost per iteration and the iteration time.
  double value = 0, median = 0, z = 0, excess = 0, iteration = 0;
};

// Flagged in enough of the slots it was judged in (NeededWindows).
bool Persists(const FlaggedSums& t, const Thresholds& th);

// A finding with the flagged slots' means: value_ns, peer_median_ns, deviation, excess_ns,
// iteration_ns, and the windows seen out of the windows judged.
Finding Averaged(const FlaggedSums& t);

}  // namespace perftracker::analyzer
