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
// run queue has taken its node's CPUs: its consumer waits little or not at all for a batch, so
// its loader frame stands out by little or nothing, yet every rank on the node is slower. Given
// back the share of the node's CPUs the workers held beyond their peers', the ranks' CPU-bound
// step shrinks by that share, by no more than their loops waited for a CPU: on the benchmark's
// forked loader_one, 0.68 cores of 2 held, 222 of 660 ms a step, against 253 ms measured
// against the clean twin. (Their CPU time, not their busy time: workers spinning in the user's
// code 94% of the time ran 34% of it, the rest waiting for a CPU as the loops did.)
#include "analyzer/verdict/workers.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/base/stats.h"
#include "analyzer/detect/critical.h"
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

int32_t WorkerLoad::Top() const {
  int32_t top = -1;
  double most = 0;
  for (const auto& [fn, ns] : work_by_function) {
    if (ns > most) most = ns, top = fn;
  }
  return top;
}

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

// The CPUs a rank's node offers (host.cpus, the process's affinity), 0 when not recorded.
double NodeCpus(const RankData& r) {
  for (const SignalTotal& s : r.signals) {
    if (s.name == "host.cpus" && s.samples > 0) return s.sum / static_cast<double>(s.samples);
  }
  return 0;
}

// A rank's training loop's run-queue delay per iteration: the median over its slots that carry
// the scheduler's account (the start-up slot is one of several). -1: not recorded.
double LoopRunDelay(const RankData& r) {
  std::vector<double> v;
  for (const Slot& s : r.slots) {
    if (s.iterations > 0 && s.SchedCovered()) {
      v.push_back(s.run_delay_ns / s.iterations);
    }
  }
  return v.empty() ? -1 : Median(v);
}

// The loader candidate of exactly these ranks, if any (their consumers' wait: the differential
// test's on one rank, the expected range's on all).
Candidate* LoaderCandidate(std::vector<Candidate>* cands, const std::vector<int>& ranks) {
  for (Candidate& c : *cands) {
    if (c.category == "dataloader" && c.rank_set == ranks) return &c;
  }
  return nullptr;
}

// A node's CPUs and its training loops' wait for them, per iteration.
struct NodeCpu {
  double cpus = 0;
  double waited_s = 0;
};

bool NodeCpuOf(const Dataset& ds, const std::string& host, NodeCpu* out) {
  std::vector<double> delays, cpus;
  for (const RankData& r : ds.ranks) {
    if (r.identity.hostname != host) continue;
    if (const double d = LoopRunDelay(r); d >= 0) delays.push_back(d);
    if (const double n = NodeCpus(r); n > 0) cpus.push_back(n);
  }
  if (delays.empty() || cpus.empty()) return false;
  *out = {Median(cpus), Median(delays) * 1e-9};
  return true;
}

int GroupOf(const Frame& f, size_t rank_index) {
  for (size_t g = 0; g < f.groups->size(); ++g) {
    const auto& members = (*f.groups)[g].members;
    if (std::find(members.begin(), members.end(), rank_index) != members.end()) {
      return static_cast<int>(g);
    }
  }
  return -1;
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

Json WorkersEvidence(const std::map<int, WorkerLoad>& loads, const std::vector<int>& ranks,
                     int32_t top, double cores, double peers_cores, const NodeCpu& node,
                     double held) {
  int processes = 0;
  double wall = 0, work = 0, cpu = 0, cpu_wall = 0, in_top = 0;
  for (const int r : ranks) {
    const WorkerLoad& w = loads.at(r);
    processes += w.workers;
    wall += w.wall_ns, work += w.work_ns, cpu += w.cpu_ns, cpu_wall += w.cpu_wall_ns;
    in_top += w.work_by_function.at(top);
  }
  return {{"processes", processes},
          {"busy", wall > 0 ? work / wall : 0},
          {"cpu", cpu_wall > 0 ? cpu / cpu_wall : -1},
          {"cores", cores},
          {"peers_cores", peers_cores},
          {"function_share", work > 0 ? in_top / work : 0},
          {"node_cpus", node.cpus},
          {"node_cpus_held", held},
          {"loops_run_queue_s_per_iter", node.waited_s}};
}

Candidate WorkerCandidate(const Frame& f, std::vector<int> ranks, int32_t top, double lost_s,
                          double iteration_s, Json workers) {
  Candidate c;
  c.rank_set = std::move(ranks);
  c.function = f.ds->catalog.functions()[static_cast<size_t>(top)].name;
  c.kind = "dataloader";
  c.category = "dataloader";
  c.impact_s_per_iter = lost_s;
  c.score = Score(lost_s * 1e9, iteration_s * 1e9, 1, 1);
  c.source = Source::kWorkers;
  c.catalog_function = top;
  for (size_t m = 0; m < f.ds->ranks.size() && c.group < 0; ++m) {
    if (f.ds->ranks[m].rank() == c.rank_set.front()) c.group = GroupOf(f, m);
  }
  c.evidence = {{"source", "workers"},
                {"decided_by", "workers_cpu"},
                {"value", workers["cores"]},
                {"peer_median", workers["peers_cores"]},
                {"deviation", workers["cores"].get<double>() - workers["peers_cores"].get<double>()},
                {"unit", "cores"},
                {"windows_seen", 0},
                {"windows_total", 0},
                {"iteration_s", iteration_s},
                {"workers", std::move(workers)}};
  if (c.group >= 0) c.evidence["peer_group"] = (*f.groups)[static_cast<size_t>(c.group)].label;
  return c;
}

// A verdict on workers that took `lost_s` of the step on `ranks`. Where their consumers waited
// for them too (a loader candidate on the same ranks) it is one verdict, charged the larger of
// the two, and named by the workers' function where theirs is the larger.
void Add(const Frame& f, const std::vector<int>& ranks, int32_t top, double lost_s,
         double iteration_s, Json evidence, std::vector<Candidate>* cands) {
  if (Candidate* loader = LoaderCandidate(cands, ranks)) {
    loader->evidence["workers"] = std::move(evidence);
    if (lost_s > loader->impact_s_per_iter) {
      loader->impact_s_per_iter = lost_s;
      loader->score = Score(lost_s * 1e9, iteration_s * 1e9, 1, 1);
      loader->evidence["iteration_s"] = iteration_s;
      loader->evidence["decided_by"] = "workers_cpu";
      loader->evidence["waits_in"] = loader->function;
      loader->function = f.ds->catalog.functions()[static_cast<size_t>(top)].name;
    }
    return;
  }
  Candidate c = WorkerCandidate(f, ranks, top, lost_s, iteration_s, std::move(evidence));
  if (c.score >= f.th.min_score) cands->push_back(std::move(c));
}

}  // namespace

void AddWorkerCandidates(const Frame& f, const std::map<int, WorkerLoad>& loads,
                         double iteration_s, std::vector<Candidate>* cands) {
  const Dataset& ds = *f.ds;
  if (loads.empty() || iteration_s <= 0) return;
  // Cores' worth of CPU each rank's workers used, by node: the share of a worker's time on a
  // CPU, times the workers.
  std::map<std::string, std::map<int, double>> by_node;
  for (const RankData& r : ds.ranks) {
    const auto it = loads.find(r.rank());
    if (it != loads.end() && it->second.Cpu() >= 0) {
      by_node[r.identity.hostname][r.rank()] = it->second.Cpu() * it->second.workers;
    }
  }
  // Nodes where every rank's workers are alike: their ranks, the share of the step they cost,
  // and of the node's CPUs they held.
  std::vector<int> alike_ranks;
  std::vector<double> alike_lost, alike_held, alike_cpus, alike_waited;
  double alike_cores = 0;
  for (const auto& [host, cores] : by_node) {
    NodeCpu node;
    if (!NodeCpuOf(ds, host, &node)) continue;
    bool one_rank = false;
    // One rank's workers against the node's others': the differential test's bar (median + z
    // robust sigmas), with a floor of a twentieth of a core (workers that idle alike read 0.0x
    // cores each, and a spread of nothing is no bar).
    for (const auto& [rank, used] : cores) {
      std::vector<double> peers;
      for (const auto& [other, c] : cores) {
        if (other != rank) peers.push_back(c);
      }
      if (peers.empty()) continue;
      const double med = Median(peers);
      const double excess = used - med;
      if (excess <= f.th.z * std::max(RobustSigma(peers, med), 0.05)) continue;
      const double held = std::min(1.0, excess / node.cpus);
      const double lost_s = std::min(node.waited_s, iteration_s * held);
      const int32_t top = loads.at(rank).Top();
      if (top < 0 || lost_s <= 0) continue;
      one_rank = true;
      Add(f, {rank}, top, lost_s, iteration_s,
          WorkersEvidence(loads, {rank}, top, used, med, node, held), cands);
    }
    if (one_rank) continue;
    // Every rank's workers alike: no peer to stand out from, so the whole node's workers are
    // measured by the CPUs they held.
    double total = 0;
    for (const auto& [rank, used] : cores) alike_ranks.push_back(rank), total += used;
    const double held = std::min(1.0, total / node.cpus);
    alike_cores += total;
    alike_held.push_back(held);
    alike_lost.push_back(std::min(node.waited_s, iteration_s * held));
    alike_cpus.push_back(node.cpus);
    alike_waited.push_back(node.waited_s);
  }
  // One verdict over those nodes' ranks (the median node's cost), claimed where that is a
  // material share of the step (Thresholds::whole_group_material, as an expected range is). A
  // node with CPUs to spare keeps its loops out of the run queue: its workers' work costs
  // nothing.
  if (!alike_ranks.empty()) {
    std::sort(alike_ranks.begin(), alike_ranks.end());
    const double lost_s = Median(alike_lost);
    const int32_t top = AgreedTop(loads, alike_ranks);
    if (top >= 0 && lost_s >= f.th.whole_group_material * iteration_s) {
      const NodeCpu node{Median(alike_cpus), Median(alike_waited)};
      Add(f, alike_ranks, top, lost_s, iteration_s,
          WorkersEvidence(loads, alike_ranks, top, alike_cores, 0, node, Median(alike_held)),
          cands);
    }
  }
  OrderCandidates(cands);
}

}  // namespace perftracker::analyzer
