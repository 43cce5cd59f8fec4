// The expected range (detect.h): what every rank of a group shares, which comparing ranks
// cannot see -- host-blocking functions (data loader, GC, syncs) and copies above their share of
// the step on the median rank.
#include <algorithm>

#include "analyzer/base/stats.h"
#include "analyzer/detect/critical.h"
#include "analyzer/detect/detect.h"

namespace perftracker::analyzer {
namespace {

using format::FunctionKind;

bool Blocking(FunctionKind k) {
  return k == FunctionKind::kDataLoader || k == FunctionKind::kGc || k == FunctionKind::kSync;
}

// Blocking functions judged with everything they call (BlockingValue).
bool Inclusive(FunctionKind k) { return k == FunctionKind::kDataLoader || k == FunctionKind::kGc; }

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

// What a blocking function costs per iteration: for the data loader and the collector everything
// they call (a slow collate or dataset is a slow data loader); for a sync its own wait (the host
// can run no further ahead than it: the paper's measure). On a rank whose device timeline the
// slot measured, the data loader and the collector cost what of their subtree ran while the
// device had nothing queued: a loader that fetches while the GPU works through the queue costs
// nothing, however long it takes. Where the collector charged critical time without a device
// timeline (a library that saw only the training thread's launches), a sync's wait proves the
// device busy and nothing more: it counts for nothing; with one, no more than the host's time
// on the critical path.
double BlockingValue(const Frame& f, size_t r, size_t k, size_t fn,
                     const std::vector<size_t>& subtree) {
  const Slot* s = SlotAt(f, r, k);
  if (!s || fn >= s->functions.size()) return 0;
  const FunctionKind kind = f.ds->catalog.functions()[fn].kind;
  const FunctionSum sum = s->functions[fn];
  const bool inclusive = Inclusive(kind);
  if (inclusive && f.host_critical[r][k] >= 0) {
    return PerIteration(*s, SubtreeCriticalNs(*s, subtree));
  }
  const double value =
      PerIteration(*s, inclusive ? std::max(sum.total_ns, sum.self_ns) : sum.self_ns);
  if (kind != FunctionKind::kSync) return value;
  // A sync's wait is the device's busy time; what it costs is the idle device it leaves while
  // the host prepares the next work, which is no more than the host's own time on the critical
  // path. The benchmark's sim host_sync cells waited 98% of the step in loss.item() and ran no
  // slower than their twins.
  const double critical = f.host_critical[r][k];
  return critical == -2 ? 0 : critical >= 0 ? std::min(value, critical) : value;
}

}  // namespace

std::vector<Finding> DetectExpectedRange(const Frame& f) {
  std::vector<Finding> out;
  const auto& fns = f.ds->catalog.functions();
  std::vector<std::pair<size_t, double>> vals;
  const std::vector<int32_t> parent = ParentIndex(f.ds->catalog);
  std::vector<size_t> subtree;
  for (size_t gi = 0; gi < f.groups->size(); ++gi) {
    const PeerGroup& g = (*f.groups)[gi];
    const std::vector<double> iterations = GroupIterations(f, g);
    for (size_t fn = 0; fn < fns.size(); ++fn) {
      const FunctionKind kind = fns[fn].kind;
      if (!Blocking(kind) && kind != FunctionKind::kMemcpy) continue;
      const double bound = Blocking(kind) ? f.th.blocking_expected : f.th.memcpy_expected;
      subtree = Inclusive(kind) ? SubtreeOf(f, parent, fn) : std::vector<size_t>{};
      Finding x;
      int present = 0;
      std::vector<double> values, iters;  // of the slots above the range
      for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) {
        vals.clear();
        for (const size_t m : g.members) {
          if (SlotAt(f, m, k)) {
            vals.push_back({m, Blocking(kind) ? BlockingValue(f, m, k, fn, subtree)
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
        values.push_back(med), iters.push_back(iter);
        for (const auto& [m, value] : vals) {
          if (value / iter > bound) x.ranks.push_back(f.ds->ranks[m].rank());
        }
      }
      if (x.windows_seen == 0 || x.windows_seen < NeededWindows(present, f.th)) continue;
      x.source = Source::kExpectedRange;
      x.group = static_cast<int>(gi);
      x.function = static_cast<int32_t>(fn);
      // Medians over the slots: the start-up slot (workers spawned, first batches, a first
      // collective's set-up) is no measure of the steady state's cost, and a mean lets it set it.
      x.value_ns = Median(values), x.iteration_ns = Median(iters);
      x.peer_median_ns = bound * x.iteration_ns;
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
