// The temporal test: a problem every rank shares is invisible across ranks but visible against
// the same ranks' earlier windows. Per peer group, the median rank's value of a metric in the
// latest third of the slots is compared with the earliest third after start-up (the first
// slot); it must have grown by more than 1% of the iteration and a quarter of its old value, and
// the iteration must have grown with it (the extra time is on the critical path), and the new
// level must lie three standard deviations above the old one, the deviation estimated from the
// earliest third's own spread (above the noise it showed by itself); a change in host time must
// also exceed the loops' wait for a CPU (RecentRunQueue).
// A third's level is its lowest slot: a change of level raises every slot, while a periodic
// cost (a checkpoint every N steps) raises only some, and how many of those fall in each third
// is chance.
#include <algorithm>
#include <iterator>

#include "analyzer/detect/detect.h"
#include "analyzer/base/parallel.h"
#include "analyzer/base/stats.h"

namespace perftracker::analyzer {
namespace {

struct Series {
  std::vector<double> value, iteration;
};

// Each metric's series over a group: per slot where at least half the members ran, the members'
// median value and median iteration time. Values are gathered member by member for all the
// metrics at once (differential.cpp TallyMetrics: one function across thousands of members is a cache
// miss per member). `scratch` is kept from call to call (fresh, its large vectors were mmapped
// each time).
std::vector<Series> GroupSeries(const Frame& f, const PeerGroup& g,
                                const std::vector<Metric>& metrics,
                                std::vector<std::vector<double>>* scratch) {
  std::vector<Series> out(metrics.size());
  std::vector<std::vector<double>>& v = *scratch;
  v.resize(std::max(v.size(), metrics.size()));
  std::vector<double> t;
  for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) {
    t.clear();
    for (auto& values : v) values.clear();
    for (const size_t m : g.members) {
      if (const Slot* slot = SlotAt(f, m, k)) {
        for (size_t j = 0; j < metrics.size(); ++j) {
          v[j].push_back(MetricValue(f, m, k, metrics[j].function, metrics[j].aggregate));
        }
        t.push_back(slot->MeanIterationNs());
      }
    }
    if (t.size() * 2 < g.members.size() || t.empty()) continue;
    const double iteration = Median(t);
    for (size_t j = 0; j < metrics.size(); ++j) {
      out[j].value.push_back(Median(v[j]));
      out[j].iteration.push_back(iteration);
    }
  }
  return out;
}

// A slot without the metric at all (start-up before the first collective, a window without
// device samples) says nothing about its level: the lowest of the others, 0 when none has it.
double Level(const std::vector<double>& v, size_t from, size_t to) {
  double level = 0;
  for (size_t k = from; k < to; ++k) {
    if (v[k] > 0 && (level == 0 || v[k] < level)) level = v[k];
  }
  return level;
}

// The levels of a series' earliest and latest thirds, and where the latest begins; false with
// fewer than 2 slots a third (6 slots with start-up's). A third of one slot has no spread to
// measure a change against: its range is 0, any level above it "clears the noise", and the
// run's last slot (its shutdown: the device drained, the final barrier) was read as a trend on
// clean 4-slot runs (bench/accuracy: 2 of 2 clean sim_pp runs at 20 s windows). So the test
// says nothing about runs shorter than six windows (two minutes at the library's 20 s).
// The earliest third begins after the first slot, which holds
// start-up (compilation, the allocator's and the loader's first fills, NCCL's set-up) and is no
// baseline: per iteration its values can be far below the steady state's (a pipeline's
// collectives had not all begun in its one long iteration), and then every steady slot would
// look like a slowdown.
struct Thirds {
  double base = 0, recent = 0;
  double base_high = 0;  // the earliest third's highest slot: how far it varied by itself
  size_t third = 0;      // the latest third begins at n - third; the earliest at 1
};
bool ThirdsOf(const std::vector<double>& v, Thirds* t) {
  const size_t n = v.size();
  if (n < 6) return false;
  t->third = n / 3;
  t->base = Level(v, 1, 1 + t->third);
  t->recent = Level(v, n - t->third, n);
  t->base_high = *std::max_element(v.begin() + 1, v.begin() + 1 + static_cast<long>(t->third));
  return true;
}

// The level a change must clear: three standard deviations above the earliest third's level,
// the deviation estimated from that third's range (its highest slot less its lowest). A range
// of few slots understates the spread (the range of 2 normal draws averages 1.13 deviations, of
// 10 3.08: the d2 constants of quality control), so fewer slots ask for a wider margin. Two
// slots of a host shared with other work can be a lucky window and an ordinary one; a level
// above both is then no change.
double NoiseBound(const Thirds& t) {
  static constexpr double kD2[] = {1.128, 1.693, 2.059, 2.326, 2.534,
                                   2.704, 2.847, 2.970, 3.078};
  const size_t i = std::clamp<size_t>(t.third, 2, std::size(kD2) + 1) - 2;  // kD2[0]: 2 slots
  const double range = std::max(0.0, t.base_high - t.base);
  return std::max(t.base_high, t.base + 3 * range / kD2[i]);
}

// The loops' run-queue delay per iteration in a group's latest third of slots (each slot the
// members' median, as the series take theirs; the third their median): 0 where the scheduler's
// account is missing. The slots are the series' (those where at least half the members ran).
double RecentRunQueue(const Frame& f, const PeerGroup& g) {
  std::vector<double> by_slot, v;
  for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) {
    v.clear();
    for (const size_t m : g.members) {
      const Slot* slot = SlotAt(f, m, k);
      if (slot == nullptr) continue;
      const double delay = slot->RunDelayPerIteration();
      if (delay < 0) return 0;
      v.push_back(delay);
    }
    if (v.empty() || v.size() * 2 < g.members.size()) continue;
    by_slot.push_back(Median(v));
  }
  if (by_slot.size() < 6) return 0;
  std::vector<double> recent(by_slot.end() - static_cast<long>(by_slot.size() / 3), by_slot.end());
  return Median(recent);
}

// Host time: what a thread spends running Python or calling the CUDA API, its waits for a CPU
// included. Device, copy and collective times are the device's and the fabric's.
bool HostTime(const Frame& f, int32_t fn, Aggregate agg) {
  if (agg != Aggregate::kNone) return agg == Aggregate::kPython || agg == Aggregate::kCudaApi;
  const auto kind = f.ds->catalog.functions()[static_cast<size_t>(fn)].kind;
  return kind == format::FunctionKind::kPython || kind == format::FunctionKind::kPyNative ||
         kind == format::FunctionKind::kCudaApi;
}

void TestMetric(const Frame& f, int gi, int32_t fn, Aggregate agg, const Series& s,
                double run_queue, std::vector<Finding>* out) {
  const PeerGroup& g = (*f.groups)[static_cast<size_t>(gi)];
  Thirds value, step;
  if (!ThirdsOf(s.value, &value) || !ThirdsOf(s.iteration, &step)) return;
  const size_t n = s.value.size(), third = value.third;
  const double base = value.base, recent = value.recent;
  const double base_t = step.base, recent_t = step.recent;
  const double change = recent - base;
  if (change <= std::max(0.01 * recent_t, 0.25 * base)) return;
  // A change of level lifts every recent slot above the whole earliest third, and beyond the
  // noise it showed (a host shared with other work, whose steps swing by a third from window to
  // window): within that, nothing changed but the noise.
  if (recent <= NoiseBound(value)) return;
  // Host time holds its thread's waits for a CPU, and where the loops wait in the run queue a
  // share of every step that wait moves from window to window with no change to the code: the
  // suite's clean 4-rank torch job on 2 CPUs waited 5-17 ms of its 28-37 ms steps there, slot to
  // slot, and its Python time rose 7 ms over the run (a temporal claim in 1 of ~10 runs). A
  // change in host time must exceed the loops' recent run-queue delay to be the code's.
  if (change <= run_queue && HostTime(f, fn, agg)) return;
  if (recent_t - base_t < 0.5 * change) return;
  Finding x;
  x.source = Source::kTemporal;
  x.group = gi;
  x.function = fn;
  x.aggregate = agg;
  for (const size_t m : g.members) x.ranks.push_back(f.ds->ranks[m].rank());
  x.value_ns = recent;
  x.peer_median_ns = base;
  x.deviation = base > 0 ? change / base : change / recent_t;
  x.excess_ns = change;
  x.iteration_ns = recent_t;
  for (size_t k = 1 + third; k < n; ++k) x.windows_seen += s.value[k] > base + 0.5 * change;
  x.windows_total = static_cast<int>(n);
  x.extra["baseline_iteration_s"] = base_t * 1e-9;
  x.extra["recent_iteration_s"] = recent_t * 1e-9;
  out->push_back(std::move(x));
}

}  // namespace

double RankChange(const Frame& f, size_t rank_index, int32_t fn, Aggregate agg) {
  std::vector<double> v;
  for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) {
    if (SlotAt(f, rank_index, k) != nullptr) v.push_back(MetricValue(f, rank_index, k, fn, agg));
  }
  Thirds t;
  return ThirdsOf(v, &t) ? t.recent - t.base : 0;
}

std::vector<Finding> DetectTemporal(const Frame& f) {
  std::vector<Finding> out;
  for (size_t gi = 0; gi < f.groups->size(); ++gi) {
    const int g = static_cast<int>(gi);
    const PeerGroup& group = (*f.groups)[gi];
    const double run_queue = RecentRunQueue(f, group);
    // Blocks share nothing but the frame: tested in parallel, their findings kept in catalog order.
    const std::vector<std::vector<Metric>> blocks = FunctionBlocks(f);
    std::vector<std::vector<Finding>> found(blocks.size());
    std::vector<std::vector<std::vector<double>>> scratch(
        static_cast<size_t>(std::max(1, f.threads)));
    ParallelFor(blocks.size(), f.threads, [&](size_t b, size_t worker) {
      const std::vector<Series> series = GroupSeries(f, group, blocks[b], &scratch[worker]);
      for (size_t j = 0; j < blocks[b].size(); ++j) {
        TestMetric(f, g, blocks[b][j].function, Aggregate::kNone, series[j], run_queue, &found[b]);
      }
    });
    for (std::vector<Finding>& more : found) {
      out.insert(out.end(), std::make_move_iterator(more.begin()),
                 std::make_move_iterator(more.end()));
    }
    std::vector<Metric> aggregates;
    for (const Aggregate agg : {Aggregate::kKernels, Aggregate::kPython, Aggregate::kCudaApi,
                                Aggregate::kMemcpy, Aggregate::kCollectives}) {
      aggregates.push_back({-1, agg});
    }
    const std::vector<Series> series = GroupSeries(f, group, aggregates, &scratch[0]);
    for (size_t j = 0; j < aggregates.size(); ++j) {
      TestMetric(f, g, -1, aggregates[j].aggregate, series[j], run_queue, &out);
    }
  }
  return out;
}

}  // namespace perftracker::analyzer
