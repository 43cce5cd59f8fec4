// Side threads: a metrics exporter serializing records, a sidecar compressing checkpoints, a
// watchdog. Their time on a CPU is taken from the node's CPUs as a loader worker's is
// (cpu_share.h), and where it is Python it also holds the GIL the training loop needs: the loop
// then waits off a CPU and out of the run queue, which only its account against its peers'
// shows (the scheduler does not say what a thread waits for).
#include "analyzer/verdict/threads.h"

#include <algorithm>
#include <string_view>

#include "analyzer/base/stats.h"
#include "analyzer/detect/critical.h"
#include "analyzer/verdict/cpu_share.h"
#include "analyzer/verdict/verdict.h"
#include "analyzer/verdict/workers.h"

namespace perftracker::analyzer {
namespace {

bool DeviceKind(format::FunctionKind k) {
  using K = format::FunctionKind;
  return k == K::kCudaApi || k == K::kKernel || k == K::kMemcpy || k == K::kMemset ||
         k == K::kCollective || k == K::kSync || k == K::kPyNative;
}

// Per catalog function: its thread's body (the outermost frame below threading's bootstrap,
// else its root) drives a device or collectives somewhere beneath it.
std::vector<bool> DrivesDevice(const Catalog& catalog) {
  const auto& fns = catalog.functions();
  const std::vector<int32_t> parent = ParentIndex(catalog);
  std::vector<bool> under(fns.size(), false);
  for (size_t i = 0; i < fns.size(); ++i) {
    if (!DeviceKind(fns[i].kind)) continue;
    for (int32_t p = parent[i], depth = 0; p >= 0 && depth < 256; p = parent[p], ++depth) {
      if (under[static_cast<size_t>(p)]) break;
      under[static_cast<size_t>(p)] = true;
    }
  }
  std::vector<bool> out(fns.size(), false);
  for (size_t i = 0; i < fns.size(); ++i) {
    int32_t body = static_cast<int32_t>(i);
    for (int depth = 0; depth < 256; ++depth) {
      const int32_t p = parent[static_cast<size_t>(body)];
      if (p < 0 || std::string_view(fns[static_cast<size_t>(p)].name).starts_with("threading.py:"))
        break;
      body = p;
    }
    out[i] = under[static_cast<size_t>(body)];
  }
  return out;
}

// The loop's time neither on a CPU nor in the run queue, seconds per iteration: the median over
// its steady slots with the scheduler's account (-1: none).
double LoopOffCpu(const RankData& r) {
  std::vector<double> v;
  for (const Slot* s : r.SteadySlots()) {
    if (!s->SchedCovered()) continue;
    v.push_back(std::max(0.0, s->iteration_ns - s->thread_cpu_ns - s->run_delay_ns) /
                s->iterations);
  }
  return v.empty() ? -1 : Median(v) * 1e-9;
}

Json ThreadsEvidence(const std::map<int, ThreadLoad>& loads, const CpuExcess& e, int32_t top,
                     double gil_s) {
  double cpu = 0, in_top = 0;
  for (const int r : e.ranks) {
    for (const auto& [fn, ns] : loads.at(r).cpu_by_function) {
      cpu += ns;
      if (fn == top) in_top += ns;
    }
  }
  Json out = CpuExcessEvidence(e);
  out["function_share"] = cpu > 0 ? in_top / cpu : 0;
  out["loop_off_cpu_excess_s_per_iter"] = gil_s;
  return out;
}

}  // namespace

double ThreadLoad::Cores() const {
  double cpu = 0;
  for (const auto& [fn, ns] : cpu_by_function) cpu += ns;
  return wall_ns > 0 ? cpu / wall_ns : 0;
}

int32_t ThreadLoad::Top() const { return Heaviest(cpu_by_function); }

std::map<int, ThreadLoad> ThreadLoads(const Dataset& ds) {
  std::map<int, ThreadLoad> out;
  std::vector<bool> device;
  std::map<uint32_t, int32_t> named;  // a function -> the frame of the user's code it is in
  for (const RankData& r : ds.ranks) {
    ThreadLoad load;
    for (const Slot* s : r.SteadySlots()) {
      load.wall_ns += s->iteration_ns;
      for (const auto& [fn, ns] : s->side_cpu_ns) {
        if (device.empty()) device = DrivesDevice(ds.catalog);
        if (fn >= device.size() || device[fn]) continue;
        auto it = named.find(fn);
        if (it == named.end()) {
          const int32_t entry = WorkEntryOf(ds.catalog, static_cast<int32_t>(fn));
          it = named.emplace(fn, entry >= 0 ? entry : static_cast<int32_t>(fn)).first;
        }
        load.cpu_by_function[it->second] += ns;
      }
    }
    out[r.rank()] = std::move(load);
  }
  return out;
}

void AddThreadCandidates(const Frame& f, const std::map<int, ThreadLoad>& loads,
                         double iteration_s, std::vector<Candidate>* cands) {
  std::map<int, double> cores;
  bool any = false;
  for (const auto& [rank, load] : loads) {
    cores[rank] = load.Cores();
    any |= !load.cpu_by_function.empty();
  }
  if (!any) return;  // no side thread ran, or the collector did not say
  std::map<int, double> off_cpu;
  for (const RankData& r : f.ds->ranks) {
    if (const double o = LoopOffCpu(r); o >= 0) off_cpu[r.rank()] = o;
  }
  for (const CpuExcess& e : JudgeCores(f, cores, iteration_s)) {
    int32_t top = -1;
    double gil_s = 0;
    if (e.ranks.size() == 1) {
      const int rank = e.ranks.front();
      top = loads.at(rank).Top();
      // Its loop's wait off a CPU beyond its peers' (the GIL), by no more than the cores its
      // threads held beyond theirs could take of the step.
      std::vector<double> peers;
      for (const auto& [other, o] : off_cpu) {
        if (other != rank) peers.push_back(o);
      }
      if (off_cpu.contains(rank) && !peers.empty()) {
        gil_s = std::clamp(off_cpu.at(rank) - Median(peers), 0.0,
                           std::min(1.0, e.cores - e.peers_cores) * iteration_s);
      }
    } else {
      // The function the most of the ranks' cores are in, at each rank's top.
      std::map<int32_t, double> by_top;
      for (const int r : e.ranks) {
        const ThreadLoad& t = loads.at(r);
        by_top[t.Top()] += t.Cores();
      }
      by_top.erase(-1);
      top = Heaviest(by_top);
    }
    const double lost_s = std::max(e.lost_s, gil_s);
    if (top < 0 || lost_s <= 0) continue;
    Json details = ThreadsEvidence(loads, e, top, gil_s);
    // The same function on the same ranks already flagged (its time against its peers'): one
    // verdict, charged the larger.
    auto same = std::find_if(cands->begin(), cands->end(), [&](const Candidate& c) {
      return c.rank_set == e.ranks && c.catalog_function == top;
    });
    if (same != cands->end()) {
      ChargeLarger(&*same, "threads", std::move(details), lost_s, iteration_s);
      continue;
    }
    Candidate c = CpuExcessCandidate(f, e, top, lost_s, iteration_s, "host_cpu", Source::kThreads,
                                     "threads", std::move(details));
    if (c.score >= f.th.min_score) cands->push_back(std::move(c));
  }
  OrderCandidates(cands);
}

}  // namespace perftracker::analyzer
