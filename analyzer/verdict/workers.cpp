// Loader workers (helper files) measured on their own. A worker's work is the user's code the
// loader calls -- a dataset's __getitem__, a collate_fn: a frame of the user's own files whose
// caller is a library's (the collector writes library files relative, the user's absolute;
// model.h UserCode). Its idle loop (the index queue's get, a selector) is the library's, and a
// forked worker's inherited frames (the user's main, which called the loader) have no library
// caller above them: neither counts, nor does a module's body (a spawned worker importing the
// user's script runs it once). A helper's first window is its start-up (align.cpp keys it
// apart) and is left out where later ones exist. The scheduler's account of the worker's main
// thread says whether that work was on a CPU or asleep (storage that answers late).
//
// A rank whose workers burn more CPU than its peers' while its node's training loops wait in the
// run queue has taken its node's CPUs (cpu_share.h): its consumer waits little or not at all for
// a batch, so its loader frame stands out by little or nothing, yet every rank on the node is
// slower. On the benchmark's forked loader_one, 0.68 cores of 2 held, 222 of 660 ms a step,
// against 253 ms measured against the clean twin. (Their CPU time, not their busy time: workers
// spinning in the user's code 94% of the time ran 34% of it, the rest waiting for a CPU as the
// loops did.)
#include "analyzer/verdict/workers.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/base/stats.h"
#include "analyzer/detect/critical.h"
#include "analyzer/verdict/cpu_share.h"
#include "analyzer/verdict/verdict.h"

namespace perftracker::analyzer {
namespace {

// Per catalog function: whether it is an outermost frame of the user's code a library called.
std::vector<bool> WorkEntries(const Catalog& catalog) {
  const auto& fns = catalog.functions();
  const std::vector<int32_t> parent = ParentIndex(catalog);
  // Parents precede their children in the catalog (critical.cpp UnderFramework).
  std::vector<bool> entry(fns.size(), false), under(fns.size(), false);
  for (size_t i = 0; i < fns.size(); ++i) {
    const int32_t p = parent[i];
    if (p < 0 || static_cast<size_t>(p) >= i) continue;
    const size_t pi = static_cast<size_t>(p);
    under[i] = under[pi] || entry[pi];
    entry[i] = !under[i] && fns[i].kind == format::FunctionKind::kPython &&
               UserCode(fns[i].name) && !UserCode(fns[pi].name) &&
               !std::string_view(fns[i].name).ends_with(":<module>");
  }
  return entry;
}

}  // namespace

int32_t WorkEntryOf(const Catalog& catalog, int32_t fn) {
  const std::vector<bool> entry = WorkEntries(catalog);
  const std::vector<int32_t> parent = ParentIndex(catalog);
  for (int depth = 0; fn >= 0 && static_cast<size_t>(fn) < entry.size() && depth < 64; ++depth) {
    if (entry[static_cast<size_t>(fn)]) return fn;
    fn = parent[static_cast<size_t>(fn)];
  }
  return -1;
}

int32_t WorkerLoad::Top() const { return Heaviest(work_by_function); }

std::map<int, WorkerLoad> WorkerLoads(const Dataset& ds) {
  std::map<int, WorkerLoad> out;
  if (ds.helpers.empty()) return out;
  const std::vector<bool> entry = WorkEntries(ds.catalog);
  for (const RankData& h : ds.helpers) {
    WorkerLoad one;
    const bool steady = h.slots.size() > 1;  // keys 0 (start-up) and 1 (the rest)
    for (const Slot& s : h.slots) {
      if (steady && s.key == 0) continue;
      // A helper marks no iterations: each window counts as one, its length as its duration.
      one.wall_ns += s.iteration_ns;
      if (s.SchedCovered()) {
        one.cpu_ns += s.thread_cpu_ns;
        one.cpu_wall_ns += s.iteration_ns;
      }
      for (size_t i = 0; i < s.functions.size() && i < entry.size(); ++i) {
        if (!entry[i] || s.functions[i].total_ns <= 0) continue;
        one.work_ns += s.functions[i].total_ns;
        one.work_by_function[static_cast<int32_t>(i)] += s.functions[i].total_ns;
      }
    }
    if (one.work_ns <= 0) continue;  // a resource tracker, a compiler: not a loader worker
    WorkerLoad& r = out[h.rank()];
    ++r.workers;
    r.wall_ns += one.wall_ns;
    r.work_ns += one.work_ns;
    r.cpu_ns += one.cpu_ns;
    r.cpu_wall_ns += one.cpu_wall_ns;
    for (const auto& [fn, ns] : one.work_by_function) r.work_by_function[fn] += ns;
  }
  return out;
}

namespace {

// The loader candidate of exactly these ranks, if any (their consumers' wait: the differential
// test's on one rank, the expected range's on all).
Candidate* LoaderCandidate(std::vector<Candidate>* cands, const std::vector<int>& ranks) {
  for (Candidate& c : *cands) {
    if (c.category == "dataloader" && c.rank_set == ranks) return &c;
  }
  return nullptr;
}

// Workers busy in the user's code less than this share of their time are idle: on the
// benchmark, idle pools read 0-1% (the spawned logging_all cell's 8 workers 0%), and the least
// busy pool that held the step back 47% (the forked loader_all cell, its workers waiting for a
// CPU the rest of the time).
constexpr double kWorking = 0.2;

// The share of their time the ranks' workers spent in the user's code, together.
double Busy(const std::map<int, WorkerLoad>& loads, const std::vector<int>& ranks) {
  double wall = 0, work = 0;
  for (const int r : ranks) wall += loads.at(r).wall_ns, work += loads.at(r).work_ns;
  return wall > 0 ? work / wall : 0;
}

// The workers' function the ranks agree on (their loads' Top), -1 when they do not.
int32_t AgreedTop(const std::map<int, WorkerLoad>& loads, const std::vector<int>& ranks) {
  int32_t top = -1;
  for (const int r : ranks) {
    const int32_t t = loads.at(r).Top();
    if (t < 0 || (top >= 0 && t != top)) return -1;
    top = t;
  }
  return top;
}

Json WorkersEvidence(const std::map<int, WorkerLoad>& loads, const CpuExcess& e, int32_t top) {
  int processes = 0;
  double wall = 0, work = 0, cpu = 0, cpu_wall = 0, in_top = 0;
  for (const int r : e.ranks) {
    const WorkerLoad& w = loads.at(r);
    processes += w.workers;
    wall += w.wall_ns, work += w.work_ns, cpu += w.cpu_ns, cpu_wall += w.cpu_wall_ns;
    in_top += w.work_by_function.at(top);
  }
  Json out = CpuExcessEvidence(e);
  out["processes"] = processes;
  out["busy"] = wall > 0 ? work / wall : 0;
  out["cpu"] = cpu_wall > 0 ? cpu / cpu_wall : -1;
  out["function_share"] = work > 0 ? in_top / work : 0;
  return out;
}

// A verdict on workers that took `lost_s` of the step on `ranks`. Where their consumers waited
// for them too (a loader candidate on the same ranks) it is one verdict, charged the larger of
// the two, and named by the workers' function where theirs is the larger.
void Add(const Frame& f, const CpuExcess& e, int32_t top, double iteration_s, Json evidence,
         std::vector<Candidate>* cands) {
  const double lost_s = e.lost_s;
  if (Candidate* loader = LoaderCandidate(cands, e.ranks)) {
    if (ChargeLarger(loader, "workers", std::move(evidence), lost_s, iteration_s)) {
      loader->evidence["waits_in"] = loader->function;
      loader->function = f.ds->catalog.functions()[static_cast<size_t>(top)].name;
    }
    return;
  }
  Candidate c = CpuExcessCandidate(f, e, top, lost_s, iteration_s, "dataloader", Source::kWorkers,
                                   "workers", std::move(evidence));
  if (c.score >= f.th.min_score) cands->push_back(std::move(c));
}

}  // namespace

std::map<int, double> WorkerCores(const std::map<int, WorkerLoad>& loads) {
  std::map<int, double> cores;
  for (const auto& [rank, load] : loads) {
    if (load.Cpu() >= 0) cores[rank] = load.Cpu() * load.workers;
  }
  return cores;
}

void AddWorkerCandidates(const Frame& f, const std::map<int, WorkerLoad>& loads,
                         double iteration_s, std::vector<Candidate>* cands) {
  for (const CpuExcess& e : JudgeCores(f, WorkerCores(loads), iteration_s)) {
    const int32_t top = e.ranks.size() == 1 ? loads.at(e.ranks.front()).Top()
                                            : AgreedTop(loads, e.ranks);
    if (top < 0 || e.lost_s <= 0) continue;
    // Every rank's workers alike, and idle: their CPU is the loader's own (its queues, its
    // pickling), held by no function of the user's. The benchmark's spawned logging_all cell's 8
    // idle workers (0% of their time in the user's code, 1.4% on a CPU each) took 5.7% of the
    // node's 2 CPUs, above the material share.
    if (e.ranks.size() > 1 && Busy(loads, e.ranks) < kWorking) continue;
    Add(f, e, top, iteration_s, WorkersEvidence(loads, e, top), cands);
  }
  OrderCandidates(cands);
}

}  // namespace perftracker::analyzer
