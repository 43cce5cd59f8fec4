#include "analyzer/detect/tally.h"

namespace perftracker::analyzer {

bool Persists(const FlaggedSums& t, const Thresholds& th) {
  return t.flagged > 0 && t.flagged >= NeededWindows(t.present, th);
}

Finding Averaged(const FlaggedSums& t) {
  Finding out;
  const double n = t.flagged;
  out.value_ns = t.value / n;
  out.peer_median_ns = t.median / n;
  out.deviation = t.z / n;
  out.excess_ns = t.excess / n;
  out.iteration_ns = t.iteration / n;
  out.windows_seen = t.flagged;
  out.windows_total = t.present;
  return out;
}

}  // namespace perftracker::analyzer
