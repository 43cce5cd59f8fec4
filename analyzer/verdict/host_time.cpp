// What a rank's extra host time cost the job, and why it was spent. Host time (Python, CUDA API
// calls, allocations) is measured on the host: a rank can spend more of it without slowing
// anyone (its device still had work queued: the host only ran less far ahead), and a rank can be
// slower without its code doing more (its scheduler held the training loop back). Two signals
// the collector records per window decide which:
//   - the critical path (FORMAT.md critical_ns): of the rank's host time, only what ran while
//     its device had nothing queued cost the job;
//   - the run-queue delay of the training loop's thread (FORMAT.md run_delay_ns): time it was
//     runnable but waited for a CPU. When that explains most of the excess, the verdict is the
//     host's CPU (host_cpu), never the code, a GPU or PCIe.
#include <algorithm>

#include "analyzer/detect/detect.h"
#include "analyzer/verdict/verdict.h"
#include "analyzer/base/stats.h"

namespace perftracker::analyzer {
namespace {

// Share of a host-time excess the rank's extra run-queue delay must explain for the verdict to
// be its scheduler's.
constexpr double kDescheduled = 0.5;

bool HostTimedKind(const Candidate& c) {
  return c.kind == "python" || c.kind == "py_native" || c.kind == "cuda_api" || c.kind == "alloc" ||
         c.kind == "unknown";
}

bool Applies(const Candidate& c) {
  return c.source == Source::kDifferential && c.group >= 0 && HostTimedKind(c);
}

struct Compared {
  double culprit_ns = 0, peer_ns = 0;  // per iteration
  double iteration_ns = 0;             // the group's step over the same slots
};

// A per-slot number (ns per iteration; < 0 where unknown) on the candidate's ranks (mean) and
// its peers (median), slot by slot, then the median over slots of each: one odd slot (start-up,
// a checkpoint) does not decide. False when no slot has both sides.
template <class PerSlot>
bool CulpritsAndPeers(const Frame& f, const Candidate& c, PerSlot per_slot, Compared* out) {
  const auto& members = (*f.groups)[static_cast<size_t>(c.group)].members;
  std::vector<double> culprit_by_slot, peer_by_slot, step_by_slot, culprits, peers, steps;
  for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) {
    culprits.clear();
    peers.clear();
    steps.clear();
    for (const size_t m : members) {
      const Slot* s = SlotAt(f, m, k);
      if (s == nullptr || s->windows == 0 || s->iterations <= 0) continue;
      const double v = per_slot(*s);
      if (v < 0) continue;
      steps.push_back(s->MeanIterationNs());
      (OnCandidateRanks(f, c, m) ? culprits : peers).push_back(v / s->iterations);
    }
    if (culprits.empty() || peers.empty()) continue;
    double sum = 0;
    for (const double v : culprits) sum += v;
    culprit_by_slot.push_back(sum / static_cast<double>(culprits.size()));
    peer_by_slot.push_back(Median(peers));
    step_by_slot.push_back(Median(steps));
  }
  if (culprit_by_slot.empty()) return false;
  *out = {Median(culprit_by_slot), Median(peer_by_slot), Median(step_by_slot)};
  return true;
}

// The rank's host time on its critical path in a slot (every function's critical time: the
// iteration thread's own time while the device had nothing queued), where every window carried
// it and the rank drove a device.
double HostCritical(const Slot& s) {
  if (s.critical_windows < s.windows || s.device_windows == 0) return -1;
  double critical = 0;
  for (size_t i = 0; i < s.functions.size(); ++i) critical += s.functions[i].critical_ns;
  return critical;
}

double RunDelay(const Slot& s) { return s.sched_windows >= s.windows ? s.run_delay_ns : -1; }

// A Python function that never ran on the training loop's thread (no critical time in any of
// its ranks' windows, all of which carried it) while it took host time: another thread's (a
// queue's feeder, a loader's helper thread), mostly waiting. On a CPU rank that time is not the
// step's; what another thread takes from the loop (the GIL, a core) shows in the loop's own
// functions.
bool OffTheLoop(const Frame& f, const Candidate& c) {
  if (c.kind != "python" || c.catalog_function < 0) return false;
  const auto fn = static_cast<size_t>(c.catalog_function);
  double self = 0, critical = 0;
  for (const size_t m : (*f.groups)[static_cast<size_t>(c.group)].members) {
    if (std::find(c.rank_set.begin(), c.rank_set.end(), f.ds->ranks[m].rank()) ==
        c.rank_set.end()) {
      continue;
    }
    for (size_t k = 0; k < f.slots[m].size(); ++k) {
      const Slot* s = SlotAt(f, m, k);
      if (s == nullptr || s->windows == 0) continue;
      if (s->critical_windows < s->windows || s->device_windows > 0) return false;
      if (fn < s->functions.size()) {
        self += s->functions[fn].self_ns;
        critical += s->functions[fn].critical_ns;
      }
    }
  }
  return self > 0 && critical == 0;
}

}  // namespace

void AttachRunQueue(const Frame& f, std::vector<Candidate>* cands) {
  for (Candidate& c : *cands) {
    if (!Applies(c)) continue;
    Compared x;
    if (!CulpritsAndPeers(f, c, RunDelay, &x)) continue;
    const double excess_s = std::max(0.0, x.culprit_ns - x.peer_ns) * 1e-9;
    const double explains =
        c.impact_s_per_iter > 0 ? std::min(1.0, excess_s / c.impact_s_per_iter) : 0;
    c.evidence["run_queue"] = {{"rank_s_per_iter", x.culprit_ns * 1e-9},
                               {"peers_s_per_iter", x.peer_ns * 1e-9},
                               {"explains_share", explains}};
    if (explains >= kDescheduled) {
      c.category = "host_cpu";
      c.evidence["decided_by"] = "run_queue_delay";
    }
  }
}

void ChargeCriticalPath(const Frame& f, std::vector<Candidate>* cands) {
  for (Candidate& c : *cands) {
    if (!Applies(c)) continue;
    if (OffTheLoop(f, c)) {
      c.evidence["host_critical_path"] = {{"host_excess_s_per_iter", c.impact_s_per_iter},
                                          {"reached_s_per_iter", 0.0},
                                          {"off_the_training_loop", true}};
      c.evidence["decided_by"] = "host_critical_path";
      c.score = 0;
      c.impact_s_per_iter = 0;
      continue;
    }
    Compared x;
    if (!CulpritsAndPeers(f, c, HostCritical, &x) || x.iteration_ns <= 0) {
      continue;  // no device, or no peers: host time decides
    }
    const double reached_s =
        std::clamp((x.culprit_ns - x.peer_ns) * 1e-9, 0.0, c.impact_s_per_iter);
    c.evidence["host_critical_path"] = {{"rank_s_per_iter", x.culprit_ns * 1e-9},
                                        {"peers_s_per_iter", x.peer_ns * 1e-9},
                                        {"host_excess_s_per_iter", c.impact_s_per_iter},
                                        {"reached_s_per_iter", reached_s}};
    if (c.evidence.value("decided_by", std::string()) != "run_queue_delay") {
      c.evidence["decided_by"] = "host_critical_path";
    }
    // Scored like any candidate, on the steady step of the slots compared: the flagged windows'
    // mean step may hold the start-up.
    c.score = Score(reached_s * 1e9, x.iteration_ns, c.evidence.value("windows_seen", 0.0),
                    c.evidence.value("windows_total", 0.0));
    c.impact_s_per_iter = reached_s;
    c.evidence["iteration_s"] = x.iteration_ns * 1e-9;
  }
}

}  // namespace perftracker::analyzer
