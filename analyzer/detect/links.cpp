// C4's link matrix: slow links from the wire time of network connections (NCCL profiler
// plugin), else from point-to-point transfers that are slow at both ends. An isolated slow pair
// is a slow link; slow pairs that share one node are a slow node.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "analyzer/base/stats.h"
#include "analyzer/detect/detect.h"
#include "analyzer/detect/tally.h"

namespace perftracker::analyzer {
namespace {

using Cell = std::pair<int, int>;

struct EndSum {
  double device_ns = 0, byte_samples = 0, per_iter_ns = 0;
};

// value: ns per byte of the cell's slowest end (or direction).
using CellTally = FlaggedSums;

// Global rank of every (communicator, rank in it), from the live slots: a send's peer is a rank
// of its communicator (a pipeline communicator made by ncclCommSplit has ranks 0..n-1).
std::map<std::pair<uint64_t, int>, int> GlobalRanks(const Frame& f) {
  std::map<std::pair<uint64_t, int>, int> out;
  for (const RankData& r : f.ds->ranks) {
    if (!r.live) continue;
    for (const format::CommProgress& p : r.live->comms) {
      out[{p.comm_id, static_cast<int>(p.comm_rank)}] = r.rank();
    }
  }
  return out;
}

using GlobalRankMap = std::map<std::pair<uint64_t, int>, int>;

// Each transfer of slot k that moved bytes and had its device time sampled, as `add(rank, peer,
// placed, sums)`: network sends (`net`, op net_send), else point-to-point sends and receives.
// peer is the other end's global rank when `placed`, else its rank in the communicator.
template <typename Add>
void Transfers(const Frame& f, size_t k, const GlobalRankMap& global, bool net, Add add) {
  const auto& colls = f.ds->catalog.collectives();
  for (size_t ri = 0; ri < f.ds->ranks.size(); ++ri) {
    const Slot* s = SlotAt(f, ri, k);
    if (!s) continue;
    const int rank = f.ds->ranks[ri].rank();
    for (size_t c = 0; c < s->collectives.size(); ++c) {
      const CollectiveSum& cs = s->collectives[c];
      const bool kind = net ? colls[c].op == format::CollectiveOp::kNetSend
                            : colls[c].peer >= 0 && !IsNetOp(colls[c].op);
      if (!kind || colls[c].bytes == 0 || cs.device_samples <= 0) continue;
      const auto g = global.find({colls[c].comm_id, colls[c].peer});
      const bool placed = g != global.end();
      EndSum e;
      e.device_ns = cs.device_ns;
      e.byte_samples = static_cast<double>(colls[c].bytes) * cs.device_samples;
      e.per_iter_ns = cs.device_ns * cs.count / cs.device_samples / std::max(1.0, s->iterations);
      add(rank, placed ? g->second : colls[c].peer, placed, e);
    }
  }
}

void Accumulate(const EndSum& e, EndSum* to) {
  to->device_ns += e.device_ns;
  to->byte_samples += e.byte_samples;
  to->per_iter_ns += e.per_iter_ns;
}

// Point-to-point ends of slot k: (cell, rank) -> sums.
std::map<std::pair<Cell, int>, EndSum> Ends(const Frame& f, size_t k, const GlobalRankMap& global) {
  std::map<std::pair<Cell, int>, EndSum> ends;
  Transfers(f, k, global, /*net=*/false, [&](int rank, int peer, bool, const EndSum& e) {
    Accumulate(e, &ends[{{std::min(rank, peer), std::max(rank, peer)}, rank}]);
  });
  return ends;
}

// The slowest iteration of slot k among the ranks, ns.
double SlowestIteration(const Frame& f, size_t k) {
  double iter = 0;
  for (size_t ri = 0; ri < f.ds->ranks.size(); ++ri) {
    if (const Slot* s = SlotAt(f, ri, k)) iter = std::max(iter, s->MeanIterationNs());
  }
  return iter;
}

void TallyLinks(const Frame& f, size_t k, const GlobalRankMap& global,
                std::map<Cell, CellTally>* cells) {
  const auto ends = Ends(f, k, global);
  if (ends.size() < 3) return;
  std::vector<double> v;
  for (const auto& [key, e] : ends) v.push_back(e.device_ns / e.byte_samples);
  const double med = MedianOf(v);
  const double sigma = std::max(RobustSigma(v, med), 0.1 * med);
  std::map<Cell, std::pair<bool, double>> verdict;  // all ends slow, worst excess
  std::map<Cell, double> worst_per_byte;
  for (const auto& [key, e] : ends) {
    const double pb = e.device_ns / e.byte_samples;
    const bool slow = (pb - med) / sigma > f.th.z && pb > 1.5 * med;
    auto [it, fresh] = verdict.try_emplace(key.first, slow, 0.0);
    it->second.first = it->second.first && slow;
    it->second.second = std::max(it->second.second, e.per_iter_ns * (1 - med / pb));
    worst_per_byte[key.first] = std::max(worst_per_byte[key.first], pb);
  }
  const double iter = SlowestIteration(f, k);
  for (const auto& [cell, v2] : verdict) {
    CellTally& t = (*cells)[cell];
    ++t.present;
    if (!v2.first) continue;
    ++t.flagged;
    t.value += worst_per_byte[cell], t.median += med, t.excess += v2.second;
    t.z += (worst_per_byte[cell] - med) / sigma, t.iteration += iter;
  }
}

// C4's slow-detection matrix over network connections (NCCL profiler proxy events, op
// net_send): per directed cell (sender, receiver), time on the wire per byte, measured by the
// sender after its peer gave credit and its GPU filled the buffer, so a fast link fed by a slow
// hop upstream does not look slow. Links only get slower when they fail, and a bad node makes
// up to half the cells slow (in a ring each node has one hop in, one out), so the healthy level
// is the lower quartile, not the median.
bool HasNetCells(const Frame& f) {
  for (const CollectiveInfo& c : f.ds->catalog.collectives()) {
    if (c.op == format::CollectiveOp::kNetSend) return true;
  }
  return false;
}

std::map<Cell, EndSum> NetCells(const Frame& f, size_t k, const GlobalRankMap& global) {
  std::map<Cell, EndSum> cells;  // directed: (sender, receiver)
  Transfers(f, k, global, /*net=*/true, [&](int rank, int peer, bool placed, const EndSum& e) {
    if (placed && peer != rank) Accumulate(e, &cells[{rank, peer}]);  // peer not placed: no cell
  });
  return cells;
}

void TallyNetLinks(const Frame& f, size_t k, const GlobalRankMap& global,
                   std::map<Cell, CellTally>* pairs) {
  const auto cells = NetCells(f, k, global);
  if (cells.size() < 3) return;
  std::vector<double> v;
  for (const auto& [cell, e] : cells) v.push_back(e.device_ns / e.byte_samples);
  std::sort(v.begin(), v.end());
  const double base = v[(v.size() - 1) / 4];
  const double mid = v[(v.size() - 1) / 2];
  std::vector<double> dev;
  for (const double x : v) {
    if (x <= mid) dev.push_back(std::abs(x - base));
  }
  const double sigma = std::max(1.4826 * MedianOf(dev), 0.1 * base);
  struct Verdict {
    bool slow = true;
    double worst = 0, excess = 0;
  };
  std::map<Cell, Verdict> verdict;  // undirected pair: every measured direction slow
  for (const auto& [cell, e] : cells) {
    const double pb = e.device_ns / e.byte_samples;
    const bool slow = (pb - base) / sigma > f.th.z && pb > 1.5 * base;
    Verdict& x = verdict[{std::min(cell.first, cell.second), std::max(cell.first, cell.second)}];
    x.slow = x.slow && slow;
    x.worst = std::max(x.worst, pb);
    x.excess += e.per_iter_ns * std::max(0.0, 1 - base / pb);
  }
  const double iter = SlowestIteration(f, k);
  for (const auto& [pair, x] : verdict) {
    CellTally& t = (*pairs)[pair];
    ++t.present;
    if (!x.slow) continue;
    ++t.flagged;
    t.value += x.worst, t.median += base, t.excess += x.excess;
    t.z += (x.worst - base) / sigma, t.iteration += iter;
  }
}

std::string HostOf(const Frame& f, int rank) {
  for (const RankData& r : f.ds->ranks) {
    if (r.rank() == rank) return r.identity.hostname;
  }
  return "?";
}

// The host every flagged cell touches from outside, if there is exactly one.
std::string CommonHost(const Frame& f, const std::vector<Cell>& cells) {
  if (cells.size() < 2) return "";
  for (const int end : {cells[0].first, cells[0].second}) {
    const std::string host = HostOf(f, end);
    const bool all = std::all_of(cells.begin(), cells.end(), [&](const Cell& c) {
      return (HostOf(f, c.first) == host) != (HostOf(f, c.second) == host);
    });
    if (all) return host;
  }
  return "";
}

Finding LinkFinding(const CellTally& t, bool net) {
  Finding x = Averaged(t);
  x.source = Source::kLink;
  if (net) {
    // ns per byte -> GB/s (bytes per ns).
    x.extra["basis"] = "network wire time per byte (NCCL profiler proxy events, sender side)";
    x.extra["throughput_gbps"] = x.value_ns > 0 ? 1 / x.value_ns : 0;
    x.extra["peers_throughput_gbps"] = x.peer_median_ns > 0 ? 1 / x.peer_median_ns : 0;
  }
  return x;
}

}  // namespace

std::vector<LinkRate> LinkRates(const Frame& f, bool* net) {
  const GlobalRankMap global = GlobalRanks(f);
  *net = HasNetCells(f);
  std::map<Cell, EndSum> sums;
  for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) {
    if (*net) {
      for (const auto& [cell, e] : NetCells(f, k, global)) {
        sums[cell].device_ns += e.device_ns, sums[cell].byte_samples += e.byte_samples;
      }
      continue;
    }
    for (const auto& [key, e] : Ends(f, k, global)) {
      sums[key.first].device_ns += e.device_ns, sums[key.first].byte_samples += e.byte_samples;
    }
  }
  std::vector<LinkRate> out;
  for (const auto& [cell, e] : sums) {
    if (e.device_ns > 0) out.push_back({cell.first, cell.second, e.byte_samples / e.device_ns});
  }
  return out;
}

std::vector<Finding> DetectLinks(const Frame& f) {
  std::map<Cell, CellTally> cells;
  const GlobalRankMap global = GlobalRanks(f);
  // Network cells, when the NCCL profiler plugin recorded them, measure the wire alone; the
  // point-to-point fallback (device time of sends and receives) also counts waiting.
  const bool net = HasNetCells(f);
  for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) {
    if (net) {
      TallyNetLinks(f, k, global, &cells);
    } else {
      TallyLinks(f, k, global, &cells);
    }
  }
  std::vector<Cell> slow;
  for (const auto& [cell, t] : cells) {
    if (Persists(t, f.th)) slow.push_back(cell);
  }
  std::vector<Finding> out;
  const std::string host = CommonHost(f, slow);
  if (!host.empty()) {
    Finding worst;
    Json pairs = Json::array();
    for (const Cell& c : slow) {
      Finding x = LinkFinding(cells[c], net);
      if (x.excess_ns > worst.excess_ns) worst = x;
      pairs.push_back({c.first, c.second});
    }
    for (const RankData& r : f.ds->ranks) {
      if (r.identity.hostname == host) worst.ranks.push_back(r.rank());
    }
    worst.label = "links of node " + host;
    worst.extra["slow_pairs"] = pairs;
    out.push_back(std::move(worst));
    return out;
  }
  for (const Cell& c : slow) {
    Finding x = LinkFinding(cells[c], net);
    x.ranks = {c.first, c.second};
    x.label = "link rank " + std::to_string(c.first) + " <-> rank " + std::to_string(c.second);
    x.extra["slow_pairs"] = Json::array({Json::array({c.first, c.second})});
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace perftracker::analyzer
