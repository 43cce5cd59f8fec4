// Culprit, not victim (C4, arXiv 2406.04594): a slow rank makes its peers wait inside the next
// collective, so their collective time grows while its own does not. Who holds the others back
// is read from arrival order: each rank's launch offsets within the iteration against its peers'.
#include <algorithm>
#include <vector>

#include "analyzer/base/stats.h"
#include "analyzer/detect/detect.h"
#include "analyzer/detect/tally.h"

namespace perftracker::analyzer {
namespace {

// value: the delay behind the peers' median launch; excess is not summed (the time lost is the
// peers' wait).
struct ArrivalTally : FlaggedSums {
  double last_share = 0, peers_wait = 0;
};

double LaunchOffset(const CollectiveSum& c) {
  return c.offset_weight > 0 ? c.offset_weighted / c.offset_weight : -1;
}

// Per member: median delay of its launches behind the peers' median, and the share of
// collectives it was the last to launch.
void Delays(const Frame& f, const PeerGroup& g, size_t k, std::vector<double>* delay,
            std::vector<double>* last_share) {
  std::vector<std::vector<double>> per(g.members.size());
  std::vector<int> last(g.members.size());
  int collectives = 0;
  const auto& colls = f.ds->catalog.collectives();
  for (size_t c = 0; c < colls.size(); ++c) {
    if (colls[c].peer >= 0) continue;
    std::vector<std::pair<size_t, double>> offs;
    for (size_t i = 0; i < g.members.size(); ++i) {
      const Slot* s = SlotAt(f, g.members[i], k);
      if (s && c < s->collectives.size() && LaunchOffset(s->collectives[c]) >= 0) {
        offs.push_back({i, LaunchOffset(s->collectives[c])});
      }
    }
    if (offs.size() < 3) continue;
    std::vector<double> v;
    for (const auto& [i, o] : offs) v.push_back(o);
    const double med = MedianOf(v);
    for (const auto& [i, o] : offs) per[i].push_back(o - med);
    ++collectives;
    ++last[std::max_element(offs.begin(), offs.end(), [](auto& a, auto& b) {
             return a.second < b.second;
           })->first];
  }
  delay->assign(g.members.size(), 0);
  last_share->assign(g.members.size(), 0);
  for (size_t i = 0; i < g.members.size(); ++i) {
    (*delay)[i] = per[i].empty() ? 0 : Median(per[i]);
    (*last_share)[i] = collectives ? static_cast<double>(last[i]) / collectives : 0;
  }
}

void TallyArrival(const Frame& f, const PeerGroup& g, size_t k, std::vector<ArrivalTally>* t) {
  std::vector<double> delay, last_share, iters, comm;
  Delays(f, g, k, &delay, &last_share);
  std::vector<size_t> present;
  for (size_t i = 0; i < g.members.size(); ++i) {
    if (const Slot* s = SlotAt(f, g.members[i], k)) {
      present.push_back(i);
      iters.push_back(s->MeanIterationNs());
      comm.push_back(MetricValue(f, g.members[i], k, -1, Aggregate::kCollectives));
    }
  }
  if (present.size() < 3) return;
  const double iter = MedianOf(iters), comm_median = MedianOf(comm);
  std::vector<double> d;
  for (const size_t i : present) d.push_back(delay[i]);
  const double med = MedianOf(d);
  const double sigma = std::max({RobustSigma(d, med), f.th.absolute_floor * iter, 1.0});
  for (const size_t i : present) {
    ArrivalTally& a = (*t)[i];
    ++a.present;
    const double z = (delay[i] - med) / sigma;
    if (z <= f.th.z || delay[i] - med <= f.th.min_excess_share * iter) continue;
    ++a.flagged;
    a.value += delay[i] - med, a.z += z, a.iteration += iter, a.last_share += last_share[i];
    a.peers_wait += comm_median - MetricValue(f, g.members[i], k, -1, Aggregate::kCollectives);
  }
}

}  // namespace

std::vector<Finding> DetectArrival(const Frame& f) {
  std::vector<Finding> out;
  for (size_t gi = 0; gi < f.groups->size(); ++gi) {
    const PeerGroup& g = (*f.groups)[gi];
    if (g.members.size() < 3) continue;
    std::vector<ArrivalTally> t(g.members.size());
    for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) TallyArrival(f, g, k, &t);
    for (size_t i = 0; i < g.members.size(); ++i) {
      const ArrivalTally& a = t[i];
      if (!Persists(a, f.th)) continue;
      const double n = a.flagged;
      Finding x = Averaged(a);
      x.source = Source::kArrival;
      x.group = static_cast<int>(gi);
      x.ranks = {f.ds->ranks[g.members[i]].rank()};
      x.label = "late arrival at collectives";
      x.excess_ns = std::max(0.0, a.peers_wait / n);
      x.extra["arrival_delay_s"] = a.value / n * 1e-9;
      x.extra["last_to_arrive_share"] = a.last_share / n;
      x.extra["peers_wait_s_per_iter"] = a.peers_wait / n * 1e-9;
      out.push_back(std::move(x));
    }
  }
  return out;
}

}  // namespace perftracker::analyzer
