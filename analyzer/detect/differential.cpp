// The differential test (detect.h): each rank against its peer group's median, per metric and
// slot, and persistence judged against the peers' own rate of flagged windows.
#include <algorithm>
#include <cmath>

#include "analyzer/base/parallel.h"
#include "analyzer/base/stats.h"
#include "analyzer/detect/detect.h"
#include "analyzer/detect/tally.h"

namespace perftracker::analyzer {
namespace {

using format::FunctionKind;

// Accumulates one rank's numbers for one metric over the slots of a group.
struct Tally : FlaggedSums {
  double excess_all = 0;                       // over all slots
  double steady_lost = 0;                      // Finding::steady_lost_ns
  std::vector<std::array<uint64_t, 2>> spans;  // iterations of the flagged slots, contiguous merged
};

struct MemberValue {
  size_t member;
  double value;
  double sampling_var;
};

void TallySlot(const Frame& f, const PeerGroup& g, size_t k, const std::vector<MemberValue>& vals,
               double iter, std::vector<Tally>* tallies) {
  std::vector<double> v;
  for (const MemberValue& m : vals) v.push_back(m.value);
  // A pair (two pipeline stages' replicas, a 2-rank job) has no median to stand out from: each
  // is measured against the faster, and its spread is the floors' alone -- the relative floor
  // is 1% of the value, so a rank must be 5% slower at z = 5, slot after slot, where a
  // group of three needs no more than its peers' spread.
  const double med = v.size() == 2 ? std::min(v[0], v[1]) : MedianOf(v);
  const double spread = v.size() == 2 ? 0.0 : RobustSigma(v, med);
  const double sigma =
      std::max({spread, f.th.relative_floor * med, f.th.absolute_floor * iter, 1.0});
  for (const auto& [i, x, var] : vals) {
    Tally& t = (*tallies)[i];
    const double excess = x - med;
    // The peers' spread and this rank's own measurement error (a sampled total) add up.
    const double z = excess / std::sqrt(sigma * sigma + var);
    ++t.present;
    t.excess_all += excess;
    const Slot* slot = SlotAt(f, g.members[i], k);
    if (f.Steady(g.members[i], *slot)) t.steady_lost += excess * slot->iterations;
    if (z > f.th.z && excess > f.th.min_excess_share * iter) {
      ++t.flagged;
      t.value += x, t.median += med, t.z += z, t.excess += excess, t.iteration += iter;
      if (!t.spans.empty() && t.spans.back()[1] >= slot->iter_begin) {
        t.spans.back()[1] = std::max(t.spans.back()[1], slot->iter_end);
      } else {
        t.spans.push_back({slot->iter_begin, slot->iter_end});
      }
    }
  }
}

Finding FromTally(const Tally& t, const Frame& f, size_t member_rank_index) {
  Finding out = Averaged(t);
  out.steady_lost_ns = t.steady_lost;
  out.ranks = {f.ds->ranks[member_rank_index].rank()};
  // When it happened: a fault that began mid-run, or moved from rank to rank, says so.
  out.extra["iterations"] = t.spans;
  return out;
}

// The functions of an aggregate's kind that add most to a rank's excess.
// Achieved TFLOP/s of a GEMM pattern on one rank (index into the dataset): its operations per call
// over its mean device time per sampled call, pooled over every slot. 0 without a device sample or
// an operation count (a library that records no operations, or a pattern that is not a GEMM).
double AchievedTflops(const Frame& f, size_t member, size_t fn) {
  double ops = 0, count = 0, device_ns = 0, samples = 0;
  for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) {
    const Slot* s = SlotAt(f, member, k);
    if (s == nullptr || fn >= s->functions.size()) continue;
    const FunctionSum& x = s->functions[fn];
    ops += x.bytes;
    count += x.count;
    device_ns += x.device_ns;
    samples += x.device_samples;
  }
  if (ops <= 0 || count <= 0 || device_ns <= 0 || samples <= 0) return 0;
  return (ops / count) / (device_ns / samples) * 1e-3;  // ops/ns = GFLOP/s
}

bool IsGemm(const FunctionInfo& info) {
  return info.kind == FunctionKind::kKernel && info.name.rfind("cublas", 0) == 0;
}

// `member`: the rank's index in group `g` (excess is kept per member).
Json TopContributors(const Frame& f, const PeerGroup& g,
                     const std::vector<std::vector<double>>& excess, size_t member, Aggregate agg) {
  const auto& fns = f.ds->catalog.functions();
  std::vector<std::pair<double, size_t>> ranked;
  for (size_t fn = 0; fn < fns.size(); ++fn) {
    if (AggregateOf(fns[fn]) == agg && excess[member][fn] > 0) {
      ranked.push_back({excess[member][fn], fn});
    }
  }
  std::sort(ranked.begin(), ranked.end(), [&](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : fns[a.second].id < fns[b.second].id;
  });
  Json top = Json::array();
  for (size_t i = 0; i < std::min<size_t>(3, ranked.size()); ++i) {
    const size_t fn = ranked[i].second;
    Json entry = {{"function", fns[fn].name}, {"excess_s_per_iter", ranked[i].first * 1e-9}};
    if (IsGemm(fns[fn])) {
      // Like for like: the same shape class on the rank's peers.
      std::vector<double> peers;
      for (size_t peer = 0; peer < g.members.size(); ++peer) {
        if (peer == member) continue;
        if (const double t = AchievedTflops(f, g.members[peer], fn); t > 0) peers.push_back(t);
      }
      if (const double t = AchievedTflops(f, g.members[member], fn); t > 0 && !peers.empty()) {
        entry["achieved_tflops"] = t;
        entry["peer_tflops"] = Median(peers);
      }
    }
    top.push_back(std::move(entry));
  }
  return top;
}

// P(X >= k) for X ~ Binomial(n, p).
double BinomialTail(int n, int k, double p) {
  if (k <= 0) return 1;
  if (p <= 0) return 0;
  if (p >= 1) return 1;
  double tail = 0;
  for (int j = k; j <= n; ++j) {
    tail += std::exp(std::lgamma(n + 1.0) - std::lgamma(j + 1.0) - std::lgamma(n - j + 1.0) +
                     j * std::log(p) + (n - j) * std::log1p(-p));
  }
  return std::min(1.0, tail);
}

// The peers' rate of flagged windows on this metric is what the noise of this host does by
// itself (a loaded scheduler stretches some call on some rank in some window); the chance that
// the same noise flags this rank in as many of its windows is the evidence against it being a
// fault. A peer that is itself a finding -- flagged in enough windows, and more often than the
// others' rate allows by the same `max_chance` -- is a fault of its own, not noise (a straggler
// that moved from this rank to another, two bad GPUs): up to a quarter of the peers, the most
// flagged first, are left out of the rate so. Returns that chance (0 when no peer was ever
// flagged), with the rate.
std::pair<double, double> ChanceOfFlags(const std::vector<Tally>& tallies, size_t i,
                                        double max_chance, const Thresholds& th) {
  std::vector<const Tally*> peers;
  int flagged = 0, present = 0;
  for (size_t j = 0; j < tallies.size(); ++j) {
    if (j == i || tallies[j].present == 0) continue;
    peers.push_back(&tallies[j]);
    flagged += tallies[j].flagged;
    present += tallies[j].present;
  }
  std::sort(peers.begin(), peers.end(), [](const Tally* a, const Tally* b) {
    return a->flagged * b->present > b->flagged * a->present;
  });
  for (size_t skip = 0; skip < peers.size() / 4; ++skip) {
    const Tally& p = *peers[skip];
    const int others_flagged = flagged - p.flagged, others_present = present - p.present;
    if (p.flagged < NeededWindows(p.present, th) || others_present <= 0) break;
    const double others = static_cast<double>(others_flagged) / others_present;
    if (BinomialTail(p.present, p.flagged, others) > max_chance) break;
    flagged = others_flagged;
    present = others_present;
  }
  const double rate = present > 0 ? static_cast<double>(flagged) / present : 0;
  return {BinomialTail(tallies[i].present, tallies[i].flagged, rate), rate};
}

// Each member's tally of each of `metrics` over one group, slot by slot (a slot needs three
// members; a pair, both). Values are gathered member by member for all the metrics at once: a
// member's sums of neighbouring functions lie together in its slot, while one function across
// thousands of members is a cache miss per member (at 4,096 ranks that miss was 43% of the
// analysis).
// `scratch` is kept from call to call: allocated anew, its vectors of thousands of members were
// mmapped and faulted in every time.
std::vector<std::vector<Tally>> TallyMetrics(const Frame& f, const PeerGroup& g,
                                             const std::vector<Metric>& metrics,
                                             const std::vector<double>& iterations,
                                             std::vector<std::vector<MemberValue>>* scratch) {
  std::vector<std::vector<Tally>> tallies(metrics.size(), std::vector<Tally>(g.members.size()));
  std::vector<std::vector<MemberValue>>& vals = *scratch;
  vals.resize(std::max(vals.size(), metrics.size()));
  for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) {
    for (auto& v : vals) v.clear();
    for (size_t i = 0; i < g.members.size(); ++i) {
      const size_t r = g.members[i];
      if (!SlotAt(f, r, k)) continue;
      for (size_t j = 0; j < metrics.size(); ++j) {
        const auto [fn, agg] = metrics[j];
        vals[j].push_back({i, MetricValue(f, r, k, fn, agg), MetricSamplingVar(f, r, k, fn, agg)});
      }
    }
    for (size_t j = 0; j < metrics.size(); ++j) {
      if (vals[j].size() >= std::min<size_t>(3, g.members.size())) {
        TallySlot(f, g, k, vals[j], iterations[k], &tallies[j]);
      }
    }
  }
  return tallies;
}

// Findings for the ranks where a metric persists, each less likely than `max_chance` to be the
// host's noise. Returns the group member index of every finding added.
std::vector<size_t> DetectMetric(const Frame& f, int gi, int32_t fn, Aggregate agg,
                                 const std::vector<Tally>& tallies, double max_chance,
                                 std::vector<Finding>* out) {
  std::vector<size_t> found;
  const PeerGroup& g = (*f.groups)[static_cast<size_t>(gi)];
  for (size_t i = 0; i < g.members.size(); ++i) {
    const Tally& t = tallies[i];
    if (!Persists(t, f.th)) continue;
    const auto [chance, peer_rate] = ChanceOfFlags(tallies, i, max_chance, f.th);
    if (chance > max_chance) continue;
    Finding finding = FromTally(t, f, g.members[i]);
    finding.group = gi;
    finding.function = fn;
    finding.aggregate = agg;
    finding.extra["peers_flagged_share"] = peer_rate;
    finding.extra["chance"] = chance;
    finding.extra["max_chance"] = max_chance;
    out->push_back(std::move(finding));
    found.push_back(i);
  }
  return found;
}

}  // namespace

std::vector<Finding> DetectDifferential(const Frame& f) {
  std::vector<Finding> out;
  const auto& fns = f.ds->catalog.functions();
  for (size_t gi = 0; gi < f.groups->size(); ++gi) {
    const PeerGroup& g = (*f.groups)[gi];
    if (g.members.size() < 2) continue;
    std::vector<std::vector<double>> excess(g.members.size(), std::vector<double>(fns.size()));
    constexpr std::array kAggregates = {Aggregate::kKernels, Aggregate::kPython,
                                        Aggregate::kCudaApi, Aggregate::kMemcpy};
    // Every (metric, rank) that noise flagged in some window is a chance for noise to persist:
    // the more of them, the less likely each finding must be (a noisy host -- more ranks than
    // cores -- flags hundreds; a quiet one a few, and a fault's chance is 1e-6 or less).
    const auto count_live = [](const std::vector<Tally>& tallies) {
      int live = 0;
      for (const Tally& t : tallies) live += t.flagged > 0;
      return live;
    };
    const std::vector<double> iterations = GroupIterations(f, g);
    // Blocks share nothing but the frame (and their own functions' columns of `excess`): tallied
    // in parallel, combined in catalog order. A function's tallies are kept only where some rank
    // persists: at 16,384 ranks, every function's were 2.6 GB.
    const std::vector<std::vector<Metric>> blocks = FunctionBlocks(f);
    std::vector<std::vector<std::vector<Tally>>> block_tallies(blocks.size());
    std::vector<int> block_live(blocks.size());
    std::vector<std::vector<std::vector<MemberValue>>> scratch(
        static_cast<size_t>(std::max(1, f.threads)));
    ParallelFor(blocks.size(), f.threads, [&](size_t b, size_t worker) {
      block_tallies[b] = TallyMetrics(f, g, blocks[b], iterations, &scratch[worker]);
      for (size_t j = 0; j < blocks[b].size(); ++j) {
        std::vector<Tally>& tallies = block_tallies[b][j];
        const auto fn = static_cast<size_t>(blocks[b][j].function);
        for (size_t i = 0; i < tallies.size(); ++i) {
          if (tallies[i].present > 0) excess[i][fn] = tallies[i].excess_all / tallies[i].present;
        }
        block_live[b] += count_live(tallies);
        if (std::none_of(tallies.begin(), tallies.end(),
                         [&](const Tally& t) { return Persists(t, f.th); })) {
          std::vector<Tally>().swap(tallies);
        }
      }
    });
    std::vector<Metric> aggregates;
    for (const Aggregate a : kAggregates) aggregates.push_back({-1, a});
    const auto by_agg = TallyMetrics(f, g, aggregates, iterations, &scratch[0]);
    int live = 0;
    for (const int n : block_live) live += n;
    for (const auto& tallies : by_agg) live += count_live(tallies);
    const double max_chance = f.th.max_chance / std::max(1, live);
    for (size_t b = 0; b < blocks.size(); ++b) {
      for (size_t j = 0; j < blocks[b].size(); ++j) {
        if (block_tallies[b][j].empty()) continue;
        DetectMetric(f, static_cast<int>(gi), blocks[b][j].function, Aggregate::kNone,
                     block_tallies[b][j], max_chance, &out);
      }
    }
    for (size_t a = 0; a < kAggregates.size(); ++a) {
      const Aggregate agg = kAggregates[a];
      const size_t before = out.size();
      const auto members =
          DetectMetric(f, static_cast<int>(gi), -1, agg, by_agg[a], max_chance, &out);
      for (size_t i = 0; i < members.size(); ++i) {
        out[before + i].extra["top_functions"] = TopContributors(f, g, excess, members[i], agg);
      }
    }
  }
  return out;
}

}  // namespace perftracker::analyzer
