#include "analyzer/verdict/device_floor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace perftracker::analyzer {
namespace {

bool DeviceWork(format::FunctionKind k) {
  using K = format::FunctionKind;
  return k == K::kKernel || k == K::kMemcpy || k == K::kMemset;
}

}  // namespace

double DeviceFloor(const Dataset& ds) {
  const auto& fns = ds.catalog.functions();
  const size_t colls = ds.catalog.collectives().size();
  // Each collective's device time a call at its fastest member, after start-up.
  std::vector<double> fastest(colls, std::numeric_limits<double>::infinity());
  for (const RankData& r : ds.ranks) {
    std::vector<double> ns(colls, 0), samples(colls, 0);
    for (const Slot* s : r.SteadySlots()) {
      for (size_t c = 0; c < s->collectives.size() && c < colls; ++c) {
        ns[c] += s->collectives[c].device_ns;
        samples[c] += s->collectives[c].device_samples;
      }
    }
    for (size_t c = 0; c < colls; ++c) {
      if (samples[c] > 0) fastest[c] = std::min(fastest[c], ns[c] / samples[c]);
    }
  }
  double floor_s = 0;
  for (const RankData& r : ds.ranks) {
    double busy_ns = 0, iterations = 0;
    for (const Slot* s : r.SteadySlots()) {
      iterations += s->iterations;
      for (size_t i = 0; i < s->functions.size() && i < fns.size(); ++i) {
        // A call site's row (`name @ library+offset`) is a part of its call's, counted there.
        if (DeviceWork(fns[i].kind) && fns[i].parent_id == 0) {
          busy_ns += s->functions[i].device_est_ns;
        }
      }
      for (size_t c = 0; c < s->collectives.size() && c < colls; ++c) {
        if (std::isfinite(fastest[c])) busy_ns += s->collectives[c].count * fastest[c];
      }
    }
    if (iterations > 0) floor_s = std::max(floor_s, busy_ns * 1e-9 / iterations);
  }
  return floor_s;
}

}  // namespace perftracker::analyzer
