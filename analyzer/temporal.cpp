// The temporal test: a problem every rank shares is invisible across ranks but visible against
// the same ranks' earlier windows. Per peer group, the median rank's value of a metric in the
// latest third of the slots is compared with the earliest third; it must have grown by more than
// 1% of the iteration and a quarter of its old value, and the iteration must have grown with it
// (the extra time is on the critical path). A third's level is its lowest slot: a change of
// level raises every slot, while a periodic cost (a checkpoint every N steps) raises only some,
// and how many of those fall in each third is chance.
#include <algorithm>

#include "analyzer/detect.h"
#include "analyzer/stats.h"

namespace perftracker::analyzer {
namespace {

struct Series {
  std::vector<double> value, iteration;
};

Series GroupSeries(const Frame& f, const PeerGroup& g, int32_t fn, Aggregate agg) {
  Series s;
  for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) {
    std::vector<double> v, t;
    for (const size_t m : g.members) {
      if (const Slot* slot = SlotAt(f, m, k)) {
        v.push_back(MetricValue(f, m, k, fn, agg));
        t.push_back(slot->MeanIterationNs());
      }
    }
    if (v.size() * 2 < g.members.size() || v.empty()) continue;
    s.value.push_back(Median(v));
    s.iteration.push_back(Median(t));
  }
  return s;
}

// GroupSeries of functions [begin, end), the same series, gathered a block of functions at a
// time: one function across thousands of members is a cache miss per member (detect.cpp,
// TallyFunctions). Which slots count depends on the members present only, not the function.
// `v` is scratch kept from block to block (fresh, its large vectors were mmapped each time).
std::vector<Series> FunctionSeries(const Frame& f, const PeerGroup& g, size_t begin, size_t end,
                                   std::vector<std::vector<double>>* scratch) {
  std::vector<Series> out(end - begin);
  std::vector<std::vector<double>>& v = *scratch;
  v.resize(std::max(v.size(), end - begin));
  std::vector<double> t;
  for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) {
    t.clear();
    for (auto& values : v) values.clear();
    for (const size_t m : g.members) {
      if (const Slot* slot = SlotAt(f, m, k)) {
        for (size_t fn = begin; fn < end; ++fn) {
          v[fn - begin].push_back(MetricValue(f, m, k, static_cast<int32_t>(fn), Aggregate::kNone));
        }
        t.push_back(slot->MeanIterationNs());
      }
    }
    if (t.size() * 2 < g.members.size() || t.empty()) continue;
    const double iteration = Median(t);
    for (size_t b = 0; b < out.size(); ++b) {
      out[b].value.push_back(Median(v[b]));
      out[b].iteration.push_back(iteration);
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
// fewer than 3 slots.
struct Thirds {
  double base = 0, recent = 0;
  size_t third = 0;
};
bool ThirdsOf(const std::vector<double>& v, Thirds* t) {
  const size_t n = v.size();
  if (n < 3) return false;
  t->third = std::max<size_t>(1, n / 3);
  t->base = Level(v, 0, t->third);
  t->recent = Level(v, n - t->third, n);
  return true;
}

void TestMetric(const Frame& f, int gi, int32_t fn, Aggregate agg, const Series& s,
                std::vector<Finding>* out) {
  const PeerGroup& g = (*f.groups)[static_cast<size_t>(gi)];
  Thirds value, step;
  if (!ThirdsOf(s.value, &value) || !ThirdsOf(s.iteration, &step)) return;
  const size_t n = s.value.size(), third = value.third;
  const double base = value.base, recent = value.recent;
  const double base_t = step.base, recent_t = step.recent;
  const double change = recent - base;
  if (change <= std::max(0.01 * recent_t, 0.25 * base)) return;
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
  for (size_t k = third; k < n; ++k) x.windows_seen += s.value[k] > base + 0.5 * change;
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
  const auto& fns = f.ds->catalog.functions();
  for (size_t gi = 0; gi < f.groups->size(); ++gi) {
    const int g = static_cast<int>(gi);
    const PeerGroup& group = (*f.groups)[gi];
    constexpr size_t kBlock = 64;
    std::vector<std::vector<double>> scratch;
    for (size_t begin = 0; begin < fns.size(); begin += kBlock) {
      const size_t end = std::min(fns.size(), begin + kBlock);
      const std::vector<Series> block = FunctionSeries(f, group, begin, end, &scratch);
      for (size_t fn = begin; fn < end; ++fn) {
        if (fns[fn].comm || fns[fn].kind == format::FunctionKind::kCollective) continue;
        TestMetric(f, g, static_cast<int32_t>(fn), Aggregate::kNone, block[fn - begin], &out);
      }
    }
    for (const Aggregate agg : {Aggregate::kKernels, Aggregate::kPython, Aggregate::kCudaApi,
                                Aggregate::kMemcpy, Aggregate::kCollectives}) {
      TestMetric(f, g, -1, agg, GroupSeries(f, group, -1, agg), &out);
    }
  }
  return out;
}

}  // namespace perftracker::analyzer
