// The expected range of collectives (research/perftracker.md §12.5): a collective should move
// its data at no less than half the link's peak while it runs. Below that on every rank of a
// communicator, window after window, the fabric or its configuration is at fault (NVLink or
// P2P disabled so traffic crosses host memory, a NIC at a lower speed, the wrong NCCL transport
// or algorithm) -- a problem every rank shares, which comparing ranks cannot see.
//
// The achieved bus bandwidth follows nccl-tests' convention, so one number compares with the
// link's peak whatever the communicator's size: busbw = factor x bytes / time, factor 2(n-1)/n
// for all-reduce and 1 for broadcast and reduce (all-gather and reduce-scatter are left out:
// libraries disagree whether their byte count is one rank's share or the whole buffer). The
// time is the rank's median device time per call, and of the communicator's ranks the fastest
// one's: early arrivers wait inside the kernel for the last, which waits least.
//
// The peak is the user's (`perftracker analyze --link-gbps INTRA[,INTER]`: per-GPU link
// bandwidth in GB/s inside a node and between nodes, e.g. 450,50 for H100 NVLink and 400 Gb/s
// NICs): the files do not know the hardware. Without it the detector stays silent. Collectives
// under kMinBytes are latency-bound and never near the peak; they are not judged.
#include <algorithm>
#include <map>
#include <set>

#include "analyzer/detect/detect.h"
#include "analyzer/base/stats.h"

namespace perftracker::analyzer {
namespace {

using format::CollectiveOp;

constexpr uint64_t kMinBytes = 16ull << 20;

double BusFactor(CollectiveOp op, uint32_t n) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return n > 1 ? 2.0 * (n - 1) / n : 0;
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce:
      return n > 1 ? 1.0 : 0;
    default:
      return 0;
  }
}

struct Judged {
  size_t index = 0;  // catalog collective
  double factor = 0;
  double peak_gbps = 0;
  std::vector<size_t> members;  // rank indices that ran it
};

// The collectives to judge, with their communicator's members and the peak of its slowest link.
std::vector<Judged> Judgeable(const Frame& f) {
  std::vector<Judged> out;
  const auto& colls = f.ds->catalog.collectives();
  for (size_t ci = 0; ci < colls.size(); ++ci) {
    const CollectiveInfo& c = colls[ci];
    Judged j;
    j.index = ci;
    j.factor = BusFactor(c.op, c.comm_size);
    if (j.factor <= 0 || c.bytes < kMinBytes) continue;
    std::set<std::string> hosts;
    for (size_t r = 0; r < f.ds->ranks.size(); ++r) {
      for (const Slot* s : f.slots[r]) {
        if (s != nullptr && ci < s->collectives.size() && s->collectives[ci].count > 0) {
          j.members.push_back(r);
          hosts.insert(f.ds->ranks[r].identity.hostname);
          break;
        }
      }
    }
    // A ring is as fast as its slowest link: the network's once it leaves the node.
    j.peak_gbps = hosts.size() > 1 ? f.th.inter_link_gbps : f.th.intra_link_gbps;
    if (j.peak_gbps > 0 && j.members.size() >= 2) out.push_back(std::move(j));
  }
  return out;
}

// The communicator's transfer time per call in slot k: the fastest member's median.
double TransferNs(const Frame& f, const Judged& j, size_t k) {
  double best = 0;
  for (const size_t r : j.members) {
    const Slot* s = SlotAt(f, r, k);
    if (s == nullptr || j.index >= s->collectives.size()) continue;
    const CollectiveSum& c = s->collectives[j.index];
    if (c.count <= 0 || c.device_median_weighted <= 0) continue;
    const double per_call = c.device_median_weighted / c.count;
    if (best == 0 || per_call < best) best = per_call;
  }
  return best;
}

double CallsPerIteration(const Frame& f, const Judged& j, size_t k) {
  std::vector<double> v;
  for (const size_t r : j.members) {
    const Slot* s = SlotAt(f, r, k);
    if (s != nullptr && j.index < s->collectives.size() && s->iterations > 0) {
      v.push_back(s->collectives[j.index].count / s->iterations);
    }
  }
  return Median(v);
}

}  // namespace

std::vector<Finding> DetectBandwidth(const Frame& f) {
  std::vector<Finding> out;
  if (f.th.intra_link_gbps <= 0 && f.th.inter_link_gbps <= 0) return out;  // no peak given
  const auto& colls = f.ds->catalog.collectives();
  // One verdict per communicator: its judged collectives together, bytes-weighted.
  std::map<uint64_t, std::vector<Judged>> by_comm;
  for (Judged& j : Judgeable(f)) by_comm[colls[j.index].comm_id].push_back(std::move(j));
  for (const auto& [comm, judged] : by_comm) {
    const Judged& largest = *std::max_element(
        judged.begin(), judged.end(), [&](const Judged& a, const Judged& b) {
          return colls[a.index].bytes < colls[b.index].bytes;
        });
    const double peak = largest.peak_gbps;
    int present = 0, flagged = 0;
    double excess = 0, iteration = 0, gbps = 0;
    for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) {
      double bytes = 0, ns = 0, expected_ns = 0;  // per iteration
      for (const Judged& j : judged) {
        const double t = TransferNs(f, j, k);
        const double calls = CallsPerIteration(f, j, k);
        if (t <= 0 || calls <= 0) continue;
        const double bus_bytes = j.factor * static_cast<double>(colls[j.index].bytes);
        bytes += calls * bus_bytes;
        ns += calls * t;
        expected_ns += calls * bus_bytes / (f.th.bus_expected * j.peak_gbps);  // GB/s = B/ns
      }
      if (ns <= 0) continue;
      ++present;
      if (ns <= expected_ns) continue;
      std::vector<double> iters;
      for (const size_t r : largest.members) {
        if (const Slot* s = SlotAt(f, r, k)) iters.push_back(s->MeanIterationNs());
      }
      ++flagged;
      excess += ns - expected_ns;
      iteration += Median(iters);
      gbps += bytes / ns;
    }
    if (flagged == 0 || flagged < NeededWindows(present, f.th)) continue;
    const CollectiveInfo& c = colls[largest.index];
    Finding x;
    x.source = Source::kBandwidth;
    x.label = c.name + " on " + std::to_string(c.comm_size) + " ranks (bus bandwidth)";
    for (const size_t r : largest.members) x.ranks.push_back(f.ds->ranks[r].rank());
    std::sort(x.ranks.begin(), x.ranks.end());
    const double n = flagged;
    x.value_ns = gbps / n;
    x.peer_median_ns = f.th.bus_expected * peak;
    x.deviation = 1 - x.value_ns / peak;
    x.excess_ns = excess / n;
    x.iteration_ns = iteration / n;
    x.windows_seen = flagged;
    x.windows_total = present;
    x.extra["bus_gbps"] = x.value_ns;
    x.extra["link_peak_gbps"] = peak;
    x.extra["expected_min_fraction"] = f.th.bus_expected;
    x.extra["fraction_of_peak"] = x.value_ns / peak;
    x.extra["largest_bytes"] = c.bytes;
    x.extra["communicator"] = comm;
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace perftracker::analyzer
