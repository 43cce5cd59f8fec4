// CPU time a rank spends outside its training loop (its loader workers, its side threads) held
// against the CPUs of its node (cpu_share.cpp). Where the node's training loops wait in the run
// queue, every core that other work holds is a core a loop waits for: the loops' step is
// CPU-bound, so giving back that share of the node's CPUs shrinks it by the same share, by no
// more than the loops waited.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "analyzer/detect/detect.h"
#include "analyzer/ingest/model.h"
#include "analyzer/verdict/candidate.h"

namespace perftracker::analyzer {

// A node's CPUs (host.cpus, the processes' affinity) and its training loops' wait for them
// (median run-queue delay per iteration, seconds).
struct NodeCpu {
  double cpus = 0;
  double waited_s = 0;
};

// Cores held beyond a rank's peers (one rank), or by every rank of the nodes where they are
// alike (no peer to stand out from), and what giving them back saves a step.
struct CpuExcess {
  std::vector<int> ranks;   // one rank, or every rank of the alike nodes
  double cores = 0;         // the rank's cores, or all of the alike ranks'
  double peers_cores = 0;   // the node's other ranks' median (alike: 0)
  double held = 0;          // the share of the node's CPUs that is the excess
  double lost_s = 0;        // per iteration
  NodeCpu node;
};

// `cores`: by rank, the cores its other work used (ranks without a measure left out). One rank
// stands out from its node's others by the differential test's bar (median + z robust sigmas,
// and at least a tenth of a core), whatever it costs (its lost_s may be 0: CPUs to spare); a
// node where none does is judged whole, its ranks with at least half its median rank's work,
// and the alike nodes give one verdict (the median node's cost) where it is a material share
// of the step (Thresholds::whole_group_material). Unknown CPUs or no scheduler account:
// nothing.
std::vector<CpuExcess> JudgeCores(const Frame& f, const std::map<int, double>& cores,
                                  double iteration_s);

// What the CPUs of a candidate's node ask of a step, seconds: its ranks' CPU time a step (their
// training loops', side threads' and loader workers', `worker_cores` by rank over `step_s`)
// over the node's CPUs, as recorded (`with_s`) and with the candidate's ranks counted at the
// other ranks' median, as if the fault were gone (`without_s`): the node steps no faster than
// that. Where the loops waited for CPUs, a rank that slept or read gave its cores to its peers,
// who ran faster meanwhile, and removing the fault takes them back. Over several nodes, the one
// that asks most without it. 0: not known; a candidate on every rank has no rank to stand in
// for it.
struct CpuBound {
  double with_s = 0, without_s = 0;
};
std::vector<CpuBound> CpuBounds(const Frame& f, const std::map<int, double>& worker_cores,
                                double step_s, const std::vector<Candidate>& cands);

// The function (catalog index) holding the most of a rank's other work, -1 when none does.
int32_t Heaviest(const std::map<int32_t, double>& by_function);

// The peer group of dataset rank `rank_index`, -1 when none.
int GroupOf(const Frame& f, size_t rank_index);

// The evidence every CPU-share verdict carries (its source's own details added by the caller).
Json CpuExcessEvidence(const CpuExcess& e);

// A candidate already on the same ranks (a consumer's wait, a function's own time against its
// peers') is the same verdict: it takes `details` as evidence under `key` and the larger of the
// two costs, decided then by `key`_cpu. True where the CPU share was the larger.
bool ChargeLarger(Candidate* c, const std::string& key, Json details, double lost_s,
                  double iteration_s);

// A verdict of its own on `e`, named by catalog function `fn`, charged `lost_s` a step: its
// evidence compares the cores (unit "cores", decided by `key`_cpu) and holds `details` (from
// CpuExcessEvidence) under `key` ("workers", "threads").
Candidate CpuExcessCandidate(const Frame& f, const CpuExcess& e, int32_t fn, double lost_s,
                             double iteration_s, const std::string& category, Source source,
                             const std::string& key, Json details);

}  // namespace perftracker::analyzer
