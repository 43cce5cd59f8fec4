// The step without each candidate: what removing its cost would give the job.
#include <algorithm>
#include <vector>

#include "analyzer/verdict/verdict.h"

namespace perftracker::analyzer {

namespace {

// A straggler sets the pace of every rank it synchronizes with, and a cost every rank shares is
// paid on each: either way, removing the time it costs a step shortens the job's step by about
// that much. (Overlap with other work makes this an upper bound.)
//
// A rank the others were measured to wait for (arrival order at visible collectives, or the
// frame that holds an invisible one) saves the job what they waited, where that is less than
// its own excess: the rest was absorbed before it reached them (a device's queue the host had
// filled ahead, the CPUs the other ranks used meanwhile). On the benchmark's sim_dp slow reads,
// 5.5% against 5.2% measured, where the rank's excess on its own critical path said 35%.
double PeersWaited(const Candidate& c) {
  const Json& e = c.evidence;
  if (e.contains("peers_wait_in")) {
    const Json& w = e["peers_wait_in"];
    return std::max(0.0, w.value("peers_s_per_iter", 0.0) - w.value("rank_s_per_iter", 0.0));
  }
  // Arrival order counts for the rank the others waited for (ApplyArrival's culprit).
  return e.value("culprit", false) && e.contains("arrival")
             ? std::max(0.0, e["arrival"].value("peers_wait_s_per_iter", 0.0))
             : 0;
}

// The share of the steady run's iterations the candidate's impact (per iteration of the windows
// it was seen in) applies to: one seen in half of them, a fault that began halfway, costs the
// run half as much. Best from its excess in every slot after start-up, flagged or not, weighed
// by their iterations (a mean over the flagged slots counts start-up's as one of them, and a
// window its noise hid as nothing: the benchmark's sim_tp gc pauses, 0.41 s a step by that
// mean, cost 0.20); else from the iterations of the windows it was flagged in (a start-up
// window of 10 iterations and four of 60 are not five equal parts: sim_dp's slow GPU, seen in
// every window after start-up, was charged four fifths); else from its windows.
double Persistence(const Candidate& c, const SteadyRun& run) {
  if (run.end > run.begin && c.steady_iterations >= 0) {
    return c.steady_iterations / static_cast<double>(run.end - run.begin);
  }
  const Json& e = c.evidence;
  if (run.end > run.begin && e.contains("iterations")) {
    uint64_t seen = 0;
    for (const Json& x : e["iterations"]) {
      if (!x.is_array() || x.size() != 2) continue;
      const uint64_t lo = std::max(x[0].get<uint64_t>(), run.begin);
      const uint64_t hi = std::min(x[1].get<uint64_t>(), run.end);
      if (hi > lo) seen += hi - lo;
    }
    // Seen only in start-up: its whole cost is the windows it was seen in, as below.
    if (seen > 0) {
      return std::min(1.0, static_cast<double>(seen) / static_cast<double>(run.end - run.begin));
    }
  }
  const int seen = e.value("windows_seen", 0);
  const int total = e.value("windows_total", 0);
  return seen > 0 && total >= seen ? static_cast<double>(seen) / static_cast<double>(total) : 1.0;
}

// The node's CPUs are a step's limit where its ranks' CPU work a step fills them for 80% of
// the step or more: the benchmark's 4 ranks on 2 CPUs ask 88-98% of theirs (the low end where
// the peers idle waiting for a straggler), its simulated-GPU jobs under 50%.
constexpr double kCpuLimited = 0.8;

}  // namespace

void AttachWhatIf(const SteadyRun& run, const std::vector<CpuBound>& cpu,
                  std::vector<Candidate>* cands) {
  for (size_t i = 0; i < cands->size(); ++i) {
    Candidate& c = (*cands)[i];
    if (c.category == "hang" || c.impact_s_per_iter <= 0) continue;
    // The run's mean step: what the job's wall time is made of. A periodic fault's windows are
    // slower than the run (their own step would overstate the share), and the median leaves the
    // periodic cost out. The candidate's own windows' step where the run's is not known.
    const double step =
        run.mean_step_s > 0 ? run.mean_step_s : c.evidence.value("iteration_s", 0.0);
    if (step <= 0) continue;
    // Another rank's wait bounds what one rank's delay costs the job; CPUs that work beside the
    // loops took from the node slowed every rank's loop, the peers' too. A CPU share is the
    // whole run's (cores over every window), whatever windows the consumer was seen waiting in.
    const std::string by = c.evidence.value("decided_by", std::string());
    const bool cpus_taken = by == "workers_cpu" || by == "threads_cpu";
    const double waited = cpus_taken ? 0 : PeersWaited(c);
    double saved = waited > 0 ? std::min(c.impact_s_per_iter, waited) : c.impact_s_per_iter;
    const CpuBound node = i < cpu.size() ? cpu[i] : CpuBound{};
    // A share of the node's CPU work is the whole run's (CPU time over every slot after
    // start-up), whatever windows the candidate was seen in.
    bool whole_run = cpus_taken;
    if (!cpus_taken && node.with_s >= kCpuLimited * step && node.with_s > node.without_s) {
      // The node's CPUs are the step's limit and the candidate's ranks ask more of them than
      // their peers: the step shrinks by that share of the node's work. Its own excess misses
      // what its CPU time took from the other ranks, and a part named at the user's depth
      // (one module's forward) misses the rest of the rank's extra work (the benchmark's
      // torch_lm sequence imbalance: 6% by the part, 17% by the node's work, 22% measured).
      const double share = step * (1 - node.without_s / node.with_s);
      if (share > saved * Persistence(c, run)) {
        saved = share;
        whole_run = true;
      }
    }
    if (cpus_taken && node.without_s > 0 && node.with_s > node.without_s) {
      // Where the loops waited for CPUs the step is the node's CPU work over its CPUs, in the
      // proportion the run measured: the work taken away shortens it by its share of the
      // node's, by no more than the loops waited. The cores held over all the CPUs undercount
      // it (the benchmark's torch_model GIL thread: 0.31 of 2 cores, 15%, where its job ran
      // 23% slower than its twin; its share of the node's work 18%).
      const Json& held = c.evidence.contains("threads") ? c.evidence["threads"]
                                                        : c.evidence.value("workers", Json());
      const double waited_s = held.is_object() ? held.value("loops_run_queue_s_per_iter", 0.0) : 0;
      saved = std::max(saved, std::min(waited_s, step * (1 - node.without_s / node.with_s)));
    }
    double without = std::max(0.0, step - saved * (whole_run ? 1.0 : Persistence(c, run)));
    // The node's CPUs bound it where they were the step's limit. A floor at or above the step
    // is no floor: the loops' CPU time then holds their waiting (a spinning sync).
    const double floor = node.without_s;
    const bool cpu_bound = floor > without && floor < step;
    if (cpu_bound) without = floor;
    c.evidence["what_if"] = {{"step_s", step},
                             {"step_without_s", without},
                             {"faster_pct", 100.0 * (step - without) / step}};
    if (cpu_bound) {
      c.evidence["what_if"]["bounded_by"] = "node_cpus";
    } else if (waited > 0 && waited < c.impact_s_per_iter) {
      c.evidence["what_if"]["bounded_by"] = "peers_wait";
    }
  }
}

}  // namespace perftracker::analyzer
