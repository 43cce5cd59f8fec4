#include "analyzer/detect/detect.h"

#include <algorithm>
#include <cmath>

#include "analyzer/base/parallel.h"
#include "analyzer/base/stats.h"

namespace perftracker::analyzer {
namespace {

using format::FunctionKind;

double PerIteration(const Slot& s, double ns) { return s.iterations > 0 ? ns / s.iterations : 0; }

// The time a function costs per iteration, by what its kind spends.
double FunctionNs(const FunctionInfo& info, const FunctionSum& sum) {
  switch (info.kind) {
    case FunctionKind::kKernel:
    case FunctionKind::kMemcpy:
    case FunctionKind::kMemset:
      return sum.device_est_ns;
    case FunctionKind::kCudaApi:
    case FunctionKind::kPyNative:                        // the same calls, by call site
      return std::max(0.0f, sum.self_ns - sum.wait_ns);  // waiting is someone else's time
    default:
      return sum.self_ns;
  }
}

double PerIteration2(const Slot& s, double v) {
  return s.iterations > 0 ? v / (s.iterations * s.iterations) : 0;
}

std::vector<Aggregate> SummedIn(const Catalog& catalog) {
  const auto& fns = catalog.functions();
  std::vector<Aggregate> out;
  for (const FunctionInfo& info : fns) {
    Aggregate g = AggregateOf(info);
    const int32_t parent = info.parent_id != 0 ? catalog.IndexOf(info.parent_id) : -1;
    if (g == Aggregate::kCudaApi && parent >= 0 &&
        fns[static_cast<size_t>(parent)].kind == FunctionKind::kCudaApi) {
      g = Aggregate::kNone;  // a call site: its calls are already its API function's
    }
    out.push_back(g);
  }
  return out;
}

std::array<double, 6> Aggregates(const Dataset& ds, const std::vector<Aggregate>& summed_in,
                                 const Slot& s, std::array<double, 6>* vars,
                                 double* host_critical) {
  std::array<double, 6> a{};
  *vars = {};
  double critical = 0;
  const auto& fns = ds.catalog.functions();
  for (size_t i = 0; i < s.functions.size(); ++i) {
    critical += s.functions[i].critical_ns;
    const Aggregate g = summed_in[i];
    if (g == Aggregate::kNone) continue;
    a[static_cast<size_t>(g)] += FunctionNs(fns[i], s.functions[i]);
    (*vars)[static_cast<size_t>(g)] += s.functions[i].sampling_var;
  }
  for (double& v : *vars) v = PerIteration2(s, v);
  const auto& colls = ds.catalog.collectives();
  for (size_t i = 0; i < s.collectives.size(); ++i) {
    const CollectiveSum& c = s.collectives[i];
    if (colls[i].peer >= 0 || c.device_samples <= 0) continue;
    a[static_cast<size_t>(Aggregate::kCollectives)] += c.device_ns * c.count / c.device_samples;
  }
  for (double& v : a) v = PerIteration(s, v);
  const bool known = s.windows > 0 && s.critical_windows >= s.windows && s.device_windows > 0;
  *host_critical = known ? PerIteration(s, critical) : -1;
  return a;
}

// Accumulates one rank's numbers for one metric over the slots of a group.
struct Tally {
  int present = 0, flagged = 0;
  double value = 0, median = 0, z = 0, excess = 0, iteration = 0;  // over flagged slots
  double excess_all = 0;                                           // over all slots
  std::vector<std::array<uint64_t, 2>> spans;  // iterations of the flagged slots, contiguous merged
};

struct MemberValue {
  size_t member;
  double value;
  double sampling_var;
};

// Per slot, the median of the members' mean iteration time: once per group, not per metric.
std::vector<double> GroupIterations(const Frame& f, const PeerGroup& g) {
  std::vector<double> out, t;
  for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) {
    t.clear();
    for (const size_t m : g.members) {
      if (const Slot* s = SlotAt(f, m, k)) t.push_back(s->MeanIterationNs());
    }
    out.push_back(Median(t));
  }
  return out;
}

void TallySlot(const Frame& f, const PeerGroup& g, size_t k, const std::vector<MemberValue>& vals,
               double iter, std::vector<Tally>* tallies) {
  std::vector<double> v;
  for (const MemberValue& m : vals) v.push_back(m.value);
  const double med = MedianOf(v);
  const double sigma =
      std::max({RobustSigma(v, med), f.th.relative_floor * med, f.th.absolute_floor * iter, 1.0});
  for (const auto& [i, x, var] : vals) {
    Tally& t = (*tallies)[i];
    const double excess = x - med;
    // The peers' spread and this rank's own measurement error (a sampled total) add up.
    const double z = excess / std::sqrt(sigma * sigma + var);
    ++t.present;
    t.excess_all += excess;
    if (z > f.th.z && excess > f.th.min_excess_share * iter) {
      ++t.flagged;
      t.value += x, t.median += med, t.z += z, t.excess += excess, t.iteration += iter;
      const Slot* s = SlotAt(f, g.members[i], k);
      if (!t.spans.empty() && t.spans.back()[1] >= s->iter_begin) {
        t.spans.back()[1] = std::max(t.spans.back()[1], s->iter_end);
      } else {
        t.spans.push_back({s->iter_begin, s->iter_end});
      }
    }
  }
}

Finding FromTally(const Tally& t, const Frame& f, size_t member_rank_index) {
  Finding out;
  const double n = t.flagged;
  out.ranks = {f.ds->ranks[member_rank_index].rank()};
  out.value_ns = t.value / n;
  out.peer_median_ns = t.median / n;
  out.deviation = t.z / n;
  out.excess_ns = t.excess / n;
  out.iteration_ns = t.iteration / n;
  out.windows_seen = t.flagged;
  out.windows_total = t.present;
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
                                        double max_chance) {
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
    if (p.flagged < NeededWindows(p.present) || others_present <= 0) break;
    const double others = static_cast<double>(others_flagged) / others_present;
    if (BinomialTail(p.present, p.flagged, others) > max_chance) break;
    flagged = others_flagged;
    present = others_present;
  }
  const double rate = present > 0 ? static_cast<double>(flagged) / present : 0;
  return {BinomialTail(tallies[i].present, tallies[i].flagged, rate), rate};
}

// Each member's tally of each of `metrics` over one group, slot by slot (a slot needs three
// members). Values are gathered member by member for all the metrics at once: a member's sums of
// neighbouring functions lie together in its slot, while one function across thousands of
// members is a cache miss per member (at 4,096 ranks that miss was 43% of the analysis).
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
      if (vals[j].size() >= 3) TallySlot(f, g, k, vals[j], iterations[k], &tallies[j]);
    }
  }
  return tallies;
}

bool Persists(const Tally& t) { return t.flagged > 0 && t.flagged >= NeededWindows(t.present); }

// Findings for the ranks where a metric persists, each less likely than `max_chance` to be the
// host's noise. Returns the group member index of every finding added.
std::vector<size_t> DetectMetric(const Frame& f, int gi, int32_t fn, Aggregate agg,
                                 const std::vector<Tally>& tallies, double max_chance,
                                 std::vector<Finding>* out) {
  std::vector<size_t> found;
  const PeerGroup& g = (*f.groups)[static_cast<size_t>(gi)];
  for (size_t i = 0; i < g.members.size(); ++i) {
    const Tally& t = tallies[i];
    if (!Persists(t)) continue;
    const auto [chance, peer_rate] = ChanceOfFlags(tallies, i, max_chance);
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

bool Blocking(FunctionKind k) {
  return k == FunctionKind::kDataLoader || k == FunctionKind::kGc || k == FunctionKind::kSync;
}

// A host sync every few steps (loss logging) absorbs the device time the host ran ahead by:
// it waits long but costs nothing, because the device was busy all along. Only a sync on every
// iteration puts the host on the critical path (the device idles while the host prepares the
// next step), so only those are held to the expected range.
bool SyncOnEveryIteration(const Frame& f, const PeerGroup& g, size_t k, size_t fn) {
  std::vector<double> calls;
  for (const size_t m : g.members) {
    const Slot* s = SlotAt(f, m, k);
    if (s && s->iterations > 0) {
      calls.push_back(fn < s->functions.size() ? s->functions[fn].count / s->iterations : 0);
    }
  }
  return !calls.empty() && Median(calls) >= 0.9;
}

// What a blocking function costs the host per iteration: for the data loader and the collector
// everything they call (a slow collate or dataset is a slow data loader). A sync waits for the
// device, which was busy all the while: it costs only the idle it leaves behind, while the host
// prepares what comes next -- at most the host's time on the critical path (the device had
// nothing queued). Where the rank's device timeline is unknown, its wait proves nothing lost.
double BlockingValue(const Frame& f, size_t r, size_t k, size_t fn) {
  const Slot* s = SlotAt(f, r, k);
  if (!s || fn >= s->functions.size()) return 0;
  const FunctionKind kind = f.ds->catalog.functions()[fn].kind;
  const FunctionSum sum = s->functions[fn];
  const bool inclusive = kind == FunctionKind::kDataLoader || kind == FunctionKind::kGc;
  const double value =
      PerIteration(*s, inclusive ? std::max(sum.total_ns, sum.self_ns) : sum.self_ns);
  if (kind != FunctionKind::kSync) return value;
  return std::min(value, std::max(0.0, f.host_critical[r][k]));
}

}  // namespace

Aggregate AggregateOf(const FunctionInfo& info) {
  if (info.comm) return Aggregate::kNone;
  switch (info.kind) {
    case FunctionKind::kKernel:
      return Aggregate::kKernels;
    case FunctionKind::kPython:
      return Aggregate::kPython;
    case FunctionKind::kCudaApi:
      return Aggregate::kCudaApi;
    case FunctionKind::kMemcpy:
    case FunctionKind::kMemset:
      return Aggregate::kMemcpy;
    default:
      return Aggregate::kNone;
  }
}

std::string_view AggregateName(Aggregate a) {
  switch (a) {
    case Aggregate::kKernels:
      return "all compute kernels";
    case Aggregate::kPython:
      return "all Python functions";
    case Aggregate::kCudaApi:
      return "all CUDA API calls";
    case Aggregate::kMemcpy:
      return "all host<->device copies";
    case Aggregate::kCollectives:
      return "all collectives";
    case Aggregate::kNone:
      break;
  }
  return "";
}

int NeededWindows(int present) { return std::min(3, std::max(1, (present + 1) / 2)); }

const Slot* SlotAt(const Frame& f, size_t rank_index, size_t slot_index) {
  return f.slots[rank_index][slot_index];
}

std::vector<bool> SlotsWhereRan(const Frame& f, const std::vector<size_t>& rank_indices,
                                int32_t function) {
  const size_t n = f.ds->slot_keys.size();
  std::vector<bool> ran(n, false);
  size_t count = 0;
  for (size_t k = 0; k < n && function >= 0; ++k) {
    for (const size_t r : rank_indices) {
      const Slot* s = SlotAt(f, r, k);
      if (s != nullptr && static_cast<size_t>(function) < s->functions.size() &&
          s->functions[static_cast<size_t>(function)].count > 0) {
        ran[k] = true;
        ++count;
        break;
      }
    }
  }
  if (count == 0 || count == n) ran.assign(n, true);
  return ran;
}

double MetricSamplingVar(const Frame& f, size_t r, size_t k, int32_t fn, Aggregate agg) {
  if (agg != Aggregate::kNone) return f.aggregate_vars[r][k][static_cast<size_t>(agg)];
  const Slot* s = SlotAt(f, r, k);
  if (!s || fn < 0 || static_cast<size_t>(fn) >= s->functions.size()) return 0;
  const auto i = static_cast<size_t>(fn);
  // Host time: of timing a sample of the calls; device time: of pricing calls from other
  // slots' samples (align.cpp EstimateDevice).
  return PerIteration2(*s, s->functions[i].sampling_var);
}

double MetricValue(const Frame& f, size_t r, size_t k, int32_t fn, Aggregate agg) {
  if (agg != Aggregate::kNone) return f.aggregates[r][k][static_cast<size_t>(agg)];
  const Slot* s = SlotAt(f, r, k);
  if (!s || fn < 0 || static_cast<size_t>(fn) >= s->functions.size()) return 0;
  const auto i = static_cast<size_t>(fn);
  return PerIteration(*s, FunctionNs(f.ds->catalog.functions()[i], s->functions[i]));
}

std::vector<bool> LoopFrames(const Dataset& ds) {
  const auto& fns = ds.catalog.functions();
  std::vector<int> open(fns.size(), 0), returned(fns.size(), 0);
  // The loop is the program's, the same on every rank: a spread of ranks is enough, and keeps
  // this off the cost of 16,384-rank jobs.
  constexpr size_t kRanksLooked = 64;
  const size_t step = std::max<size_t>(1, ds.ranks.size() / kRanksLooked);
  for (size_t ri = 0; ri < ds.ranks.size(); ri += step) {
    for (const Slot& s : ds.ranks[ri].slots) {
      if (s.iterations <= 0) continue;
      for (size_t i = 0; i < fns.size() && i < s.functions.size(); ++i) {
        if (fns[i].kind != FunctionKind::kPython) continue;
        const FunctionSum sum = s.functions[i];
        if (sum.total_ns <= 0) continue;
        ++(sum.count > 0 ? returned : open)[i];
      }
    }
  }
  std::vector<bool> loop(fns.size(), false);
  for (size_t i = 0; i < fns.size(); ++i) loop[i] = open[i] > returned[i];
  return loop;
}

Frame MakeFrame(const Dataset& ds, const std::vector<PeerGroup>& groups, const Thresholds& th) {
  Frame f{&ds, &groups, th, {}, {}, {}, SummedIn(ds.catalog), ds.threads, {}, LoopFrames(ds)};
  const size_t n = ds.ranks.size();
  f.slots.resize(n), f.aggregates.resize(n), f.aggregate_vars.resize(n);
  f.host_critical.resize(n);
  ParallelFor(n, ds.threads, [&](size_t i, size_t) {
    const RankData& r = ds.ranks[i];
    std::vector<const Slot*>& slots = f.slots[i];
    std::vector<std::array<double, 6>>& aggs = f.aggregates[i];
    std::vector<std::array<double, 6>>& vars = f.aggregate_vars[i];
    for (const uint64_t key : ds.slot_keys) {
      // A slot that covers no iteration has no per-iteration values to compare: absent.
      const Slot* s = r.FindSlot(key);
      if (s != nullptr && s->iterations <= 0) s = nullptr;
      slots.push_back(s);
      std::array<double, 6> var{};
      double critical = -1;
      aggs.push_back(s ? Aggregates(ds, f.summed_in, *s, &var, &critical)
                       : std::array<double, 6>{});
      vars.push_back(var);
      f.host_critical[i].push_back(critical);
    }
  });
  return f;
}

std::vector<std::vector<Metric>> FunctionBlocks(const Frame& f) {
  std::vector<std::vector<Metric>> blocks;
  const auto& fns = f.ds->catalog.functions();
  for (size_t fn = 0; fn < fns.size(); ++fn) {
    if (fns[fn].comm || fns[fn].kind == FunctionKind::kCollective) continue;
    if (blocks.empty() || blocks.back().size() == kFunctionBlock) blocks.emplace_back();
    blocks.back().push_back({static_cast<int32_t>(fn), Aggregate::kNone});
  }
  return blocks;
}

std::vector<Finding> DetectDifferential(const Frame& f) {
  std::vector<Finding> out;
  const auto& fns = f.ds->catalog.functions();
  for (size_t gi = 0; gi < f.groups->size(); ++gi) {
    const PeerGroup& g = (*f.groups)[gi];
    if (g.members.size() < 3) continue;
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
        if (std::none_of(tallies.begin(), tallies.end(), Persists)) {
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

std::vector<Finding> DetectExpectedRange(const Frame& f) {
  std::vector<Finding> out;
  const auto& fns = f.ds->catalog.functions();
  std::vector<std::pair<size_t, double>> vals;
  for (size_t gi = 0; gi < f.groups->size(); ++gi) {
    const PeerGroup& g = (*f.groups)[gi];
    const std::vector<double> iterations = GroupIterations(f, g);
    for (size_t fn = 0; fn < fns.size(); ++fn) {
      const FunctionKind kind = fns[fn].kind;
      if (!Blocking(kind) && kind != FunctionKind::kMemcpy) continue;
      const double bound = Blocking(kind) ? f.th.blocking_expected : f.th.memcpy_expected;
      Finding x;
      int present = 0;
      for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) {
        vals.clear();
        for (const size_t m : g.members) {
          if (SlotAt(f, m, k)) {
            vals.push_back({m, Blocking(kind) ? BlockingValue(f, m, k, fn)
                                              : MetricValue(f, m, k, static_cast<int32_t>(fn),
                                                            Aggregate::kNone)});
          }
        }
        if (vals.empty()) continue;
        ++present;
        std::vector<double> v;
        for (const auto& [m, value] : vals) v.push_back(value);
        const double med = MedianOf(v), iter = iterations[k];
        if (iter <= 0 || med / iter <= bound) continue;
        if (kind == FunctionKind::kSync && !SyncOnEveryIteration(f, g, k, fn)) continue;
        ++x.windows_seen;
        x.value_ns += med, x.iteration_ns += iter, x.peer_median_ns += bound * iter;
        for (const auto& [m, value] : vals) {
          if (value / iter > bound) x.ranks.push_back(f.ds->ranks[m].rank());
        }
      }
      if (x.windows_seen == 0 || x.windows_seen < NeededWindows(present)) continue;
      const double n = x.windows_seen;
      x.source = Source::kExpectedRange;
      x.group = static_cast<int>(gi);
      x.function = static_cast<int32_t>(fn);
      x.value_ns /= n, x.iteration_ns /= n, x.peer_median_ns /= n;
      x.deviation = (x.value_ns - x.peer_median_ns) / x.iteration_ns;
      x.excess_ns = x.value_ns - x.peer_median_ns;
      x.windows_total = present;
      std::sort(x.ranks.begin(), x.ranks.end());
      x.ranks.erase(std::unique(x.ranks.begin(), x.ranks.end()), x.ranks.end());
      x.extra["expected_max_share"] = bound;
      out.push_back(std::move(x));
    }
  }
  return out;
}

}  // namespace perftracker::analyzer
