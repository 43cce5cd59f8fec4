// The step without each candidate: what removing its cost would give the job.
#include <algorithm>
#include <vector>

#include "analyzer/verdict/verdict.h"

namespace perftracker::analyzer {

namespace {

// A straggler sets the pace of every rank it synchronizes with, and a cost every rank shares is
// paid on each: either way, removing the time it costs a step shortens the job's step by about
// that much. (Overlap with other work makes this an upper bound.) The impact is per iteration of
// the windows it was seen in: one seen in half of them (a periodic checkpoint, a fault that
// began halfway) costs the run half as much.
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

}  // namespace

void AttachWhatIf(double iteration_s, std::vector<Candidate>* cands) {
  for (Candidate& c : *cands) {
    if (c.category == "hang" || c.impact_s_per_iter <= 0) continue;
    // The step where the candidate was seen (its windows), else the job's.
    const double step = c.evidence.value("iteration_s", 0.0) > 0
                            ? c.evidence.value("iteration_s", 0.0)
                            : iteration_s;
    if (step <= 0) continue;
    const int seen = c.evidence.value("windows_seen", 0);
    const int total = c.evidence.value("windows_total", 0);
    const double persistence =
        seen > 0 && total >= seen ? static_cast<double>(seen) / static_cast<double>(total) : 1.0;
    // Another rank's wait bounds what one rank's delay costs the job; CPUs that work beside the
    // loops took from the node slowed every rank's loop, the peers' too.
    const std::string by = c.evidence.value("decided_by", std::string());
    const double waited = by == "workers_cpu" || by == "threads_cpu" ? 0 : PeersWaited(c);
    const double saved = waited > 0 ? std::min(c.impact_s_per_iter, waited) : c.impact_s_per_iter;
    const double without = std::max(0.0, step - saved * persistence);
    c.evidence["what_if"] = {{"step_s", step},
                             {"step_without_s", without},
                             {"faster_pct", 100.0 * (step - without) / step}};
    if (waited > 0 && waited < c.impact_s_per_iter) {
      c.evidence["what_if"]["bounded_by"] = "peers_wait";
    }
  }
}

}  // namespace perftracker::analyzer
