#include "analyzer/verdict/cpu_share.h"

#include <algorithm>

#include "analyzer/base/stats.h"
#include "analyzer/verdict/verdict.h"

namespace perftracker::analyzer {
namespace {

// The least excess one rank's other work must show: a tenth of a core, 5% of the smallest
// node's 2 CPUs. Work that idles alike reads 0.0x cores on every rank, and a spread of nothing
// is no bar: the benchmark's clean jobs' idle loader workers and sleeping threads differ by at
// most 0.03 core.
constexpr double kMaterialCores = 0.1;

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
    if (const double d = s.RunDelayPerIteration(); d >= 0) v.push_back(d);
  }
  return v.empty() ? -1 : Median(v);
}

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

// Cores' worth of CPU a rank's process used (host.process_cpu_ns: every thread, gloo's and the
// intra-op pools' too), -1 where not recorded (before 2026-11-29).
double ProcessCores(const RankData& r) {
  for (const SignalTotal& s : r.signals) {
    if (s.name == "host.process_cpu_ns" && s.window_ns > 0) return s.sum / s.window_ns;
  }
  return -1;
}

// A rank's CPU time a step after start-up, seconds: its process's (else its training loop's and
// side threads' over the windows with the scheduler's account), and its loader workers' cores
// over the step. -1: not recorded.
double CpuPerStep(const RankData& r, double worker_cores, double step_s) {
  const double workers_s = std::max(0.0, worker_cores) * step_s;
  if (const double cores = ProcessCores(r); cores >= 0) return cores * step_s + workers_s;
  double cpu_ns = 0, iterations = 0;
  for (const Slot* s : r.SteadySlots()) {
    if (!s->SchedCovered()) continue;
    cpu_ns += s->thread_cpu_ns;
    for (const auto& [fn, ns] : s->side_cpu_ns) cpu_ns += ns;
    iterations += s->iterations;
  }
  if (iterations <= 0) return -1;
  return cpu_ns * 1e-9 / iterations + workers_s;
}

}  // namespace

std::vector<CpuBound> CpuBounds(const Frame& f, const std::map<int, double>& worker_cores,
                                double step_s, const std::vector<Candidate>& cands) {
  std::vector<CpuBound> floors(cands.size());
  const std::vector<RankData>& ranks = f.ds->ranks;
  std::vector<double> need(ranks.size());
  for (size_t m = 0; m < ranks.size(); ++m) {
    const auto it = worker_cores.find(ranks[m].rank());
    need[m] = CpuPerStep(ranks[m], it == worker_cores.end() ? 0 : it->second, step_s);
    if (need[m] < 0) return floors;  // a rank without the account: no node's total is known
  }
  std::map<std::string, NodeCpu> nodes;
  for (const RankData& r : ranks) {
    const std::string& host = r.identity.hostname;
    if (!nodes.count(host) && !NodeCpuOf(*f.ds, host, &nodes[host])) return floors;
  }
  for (size_t i = 0; i < cands.size(); ++i) {
    const std::vector<int>& on = cands[i].rank_set;
    std::vector<double> others;
    for (size_t m = 0; m < ranks.size(); ++m) {
      if (std::find(on.begin(), on.end(), ranks[m].rank()) == on.end()) others.push_back(need[m]);
    }
    if (on.empty() || others.empty()) continue;
    const double stand_in = Median(others);
    std::map<std::string, CpuBound> total;
    for (size_t m = 0; m < ranks.size(); ++m) {
      const bool candidate = std::find(on.begin(), on.end(), ranks[m].rank()) != on.end();
      CpuBound& node = total[ranks[m].identity.hostname];
      node.with_s += need[m];
      node.without_s += candidate ? stand_in : need[m];
    }
    for (const auto& [host, cpu_s] : total) {
      if (cpu_s.without_s / nodes[host].cpus > floors[i].without_s) {
        floors[i] = {cpu_s.with_s / nodes[host].cpus, cpu_s.without_s / nodes[host].cpus};
      }
    }
  }
  return floors;
}

int32_t Heaviest(const std::map<int32_t, double>& by_function) {
  int32_t top = -1;
  double most = 0;
  for (const auto& [fn, ns] : by_function) {
    if (ns > most) most = ns, top = fn;
  }
  return top;
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

std::vector<CpuExcess> JudgeCores(const Frame& f, const std::map<int, double>& cores,
                                  double iteration_s) {
  std::vector<CpuExcess> out;
  if (cores.empty() || iteration_s <= 0) return out;
  std::map<std::string, std::map<int, double>> by_node;
  for (const RankData& r : f.ds->ranks) {
    if (const auto it = cores.find(r.rank()); it != cores.end()) {
      by_node[r.identity.hostname][r.rank()] = it->second;
    }
  }
  CpuExcess alike;
  std::vector<double> alike_lost, alike_held, alike_cpus, alike_waited;
  for (const auto& [host, used_by_rank] : by_node) {
    NodeCpu node;
    if (!NodeCpuOf(*f.ds, host, &node)) continue;
    bool one_rank = false;
    for (const auto& [rank, used] : used_by_rank) {
      std::vector<double> peers;
      for (const auto& [other, c] : used_by_rank) {
        if (other != rank) peers.push_back(c);
      }
      if (peers.empty()) continue;
      const double med = Median(peers);
      const double excess = used - med;
      if (excess <= std::max(f.th.z * RobustSigma(peers, med), kMaterialCores)) continue;
      const double held = std::min(1.0, excess / node.cpus);
      one_rank = true;
      out.push_back({{rank}, used, med, held, std::min(node.waited_s, iteration_s * held), node});
    }
    if (one_rank) continue;
    // Alike where most ranks have such work: a node where one rank has some and the others
    // none, below the bar, is no node-wide verdict.
    std::vector<double> all;
    for (const auto& [rank, used] : used_by_rank) all.push_back(used);
    const double typical = Median(all);
    if (typical <= 0) continue;
    double total = 0;
    for (const auto& [rank, used] : used_by_rank) {
      if (used >= 0.5 * typical) alike.ranks.push_back(rank);
      total += used;
    }
    const double held = std::min(1.0, total / node.cpus);
    alike.cores += total;
    alike_held.push_back(held);
    alike_lost.push_back(std::min(node.waited_s, iteration_s * held));
    alike_cpus.push_back(node.cpus);
    alike_waited.push_back(node.waited_s);
  }
  // A node with CPUs to spare keeps its loops out of the run queue: its other work costs
  // nothing, and the median node's cost is what the alike nodes' verdict claims.
  if (!alike.ranks.empty()) {
    std::sort(alike.ranks.begin(), alike.ranks.end());
    alike.lost_s = Median(alike_lost);
    alike.held = Median(alike_held);
    alike.node = {Median(alike_cpus), Median(alike_waited)};
    if (alike.lost_s > 0 && alike.lost_s >= f.th.whole_group_material * iteration_s) {
      out.push_back(std::move(alike));
    }
  }
  return out;
}

Json CpuExcessEvidence(const CpuExcess& e) {
  return {{"cores", e.cores},
          {"peers_cores", e.peers_cores},
          {"node_cpus", e.node.cpus},
          {"node_cpus_held", e.held},
          {"loops_run_queue_s_per_iter", e.node.waited_s}};
}

bool ChargeLarger(Candidate* c, const std::string& key, Json details, double lost_s,
                  double iteration_s) {
  c->evidence[key] = std::move(details);
  if (lost_s <= c->impact_s_per_iter) return false;
  c->impact_s_per_iter = lost_s;
  c->score = Score(lost_s * 1e9, iteration_s * 1e9, 1, 1);
  c->evidence["iteration_s"] = iteration_s;
  c->evidence["decided_by"] = key + "_cpu";
  return true;
}

Candidate CpuExcessCandidate(const Frame& f, const CpuExcess& e, int32_t fn, double lost_s,
                             double iteration_s, const std::string& category, Source source,
                             const std::string& key, Json details) {
  Candidate c;
  c.rank_set = e.ranks;
  c.function = f.ds->catalog.functions()[static_cast<size_t>(fn)].name;
  c.kind = category;
  c.category = category;
  c.impact_s_per_iter = lost_s;
  c.score = Score(lost_s * 1e9, iteration_s * 1e9, 1, 1);
  c.source = source;
  c.catalog_function = fn;
  for (size_t m = 0; m < f.ds->ranks.size() && c.group < 0; ++m) {
    if (f.ds->ranks[m].rank() == c.rank_set.front()) c.group = GroupOf(f, m);
  }
  c.evidence = {{"source", key},
                {"decided_by", key + "_cpu"},
                {"value", e.cores},
                {"peer_median", e.peers_cores},
                {"deviation", e.cores - e.peers_cores},
                {"unit", "cores"},
                {"windows_seen", 0},
                {"windows_total", 0},
                {"iteration_s", iteration_s},
                {key, std::move(details)}};
  if (c.group >= 0) c.evidence["peer_group"] = (*f.groups)[static_cast<size_t>(c.group)].label;
  return c;
}

}  // namespace perftracker::analyzer
