// The frame every detector reads: each rank's slots in one aligned order, with per-iteration
// values and the kind sums computed once.
#include "analyzer/detect/frame.h"

#include <algorithm>

#include "analyzer/base/parallel.h"
#include "analyzer/base/stats.h"

namespace perftracker::analyzer {
namespace {

using format::FunctionKind;

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
  // -2: the collector recorded critical time without a device timeline (it is no measure);
  // -1: no critical-path data at all (a library before it, a generator without it).
  *host_critical = known ? PerIteration(s, critical) : critical > 0 ? -2 : -1;
  return a;
}

}  // namespace

double PerIteration(const Slot& s, double ns) { return s.iterations > 0 ? ns / s.iterations : 0; }

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

int NeededWindows(int present, const Thresholds& th) {
  return std::min(th.persist_windows, std::max(1, (present + 1) / 2));
}

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
      // Time, not completed calls: a thread's body that never returns (a metrics exporter, a
      // side task) completes no call in any window but the last, and runs in all of them.
      if (s != nullptr && static_cast<size_t>(function) < s->functions.size() &&
          (s->functions[static_cast<size_t>(function)].count > 0 ||
           s->functions[static_cast<size_t>(function)].total_ns > 0 ||
           s->functions[static_cast<size_t>(function)].self_ns > 0)) {
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
  // Whether a function ever ran on the thread that ends iterations (FORMAT.md critical_ns: other
  // threads' time is never critical), and whether the ranks said so of any function.
  std::vector<bool> on_loop(fns.size(), false);
  bool critical_seen = false;
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
        if (sum.critical_ns > 0) on_loop[i] = critical_seen = true;
        if (sum.total_ns <= 0) continue;
        ++(sum.count > 0 ? returned : open)[i];
      }
    }
  }
  // A frame is on the loop's thread when it or a callee ever was there.
  std::vector<bool> encloses_loop(fns.size(), false);
  for (size_t i = 0; i < fns.size(); ++i) {
    if (!on_loop[i]) continue;
    for (int32_t x = static_cast<int32_t>(i), depth = 0; x >= 0 && depth < 256; ++depth) {
      const auto xi = static_cast<size_t>(x);
      if (encloses_loop[xi]) break;  // and its callers with it
      encloses_loop[xi] = true;
      x = fns[xi].parent_id != 0 ? ds.catalog.IndexOf(fns[xi].parent_id) : -1;
    }
  }
  // Open across windows is the loop's shape, and a thread's body that never returns (a logger,
  // a metrics exporter) has it too. Where the ranks recorded critical time, the body of a thread
  // whose frames never ran on the loop's thread is that thread's work, and judged as any.
  std::vector<bool> loop(fns.size(), false);
  for (size_t i = 0; i < fns.size(); ++i) {
    loop[i] = open[i] > returned[i] && (encloses_loop[i] || !critical_seen);
  }
  return loop;
}

Frame MakeFrame(const Dataset& ds, const std::vector<PeerGroup>& groups, const Thresholds& th) {
  Frame f{&ds, &groups, th, {}, {}, {}, SummedIn(ds.catalog), ds.threads, {}, LoopFrames(ds), {}};
  const size_t n = ds.ranks.size();
  f.slots.resize(n), f.aggregates.resize(n), f.aggregate_vars.resize(n);
  f.host_critical.resize(n);
  f.startup.resize(n);
  ParallelFor(n, ds.threads, [&](size_t i, size_t) {
    const RankData& r = ds.ranks[i];
    f.startup[i] = r.StartupBegin();
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

}  // namespace perftracker::analyzer
