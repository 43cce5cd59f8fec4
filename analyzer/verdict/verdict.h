// Stage 5: verdicts. RankCandidates (rank.cpp) turns findings and hangs into candidates in this
// order: classify; culprit over victims (arrival order, then victims and passed-on trends
// demoted); a kind's parts folded into its sum or one function into its kind; lifted to the
// user's frame (depth.cpp); the host's run queue (host_time.cpp); duplicates merged; charged
// what reached the critical path or the peers' wait (host_time.cpp); one cost at several depths
// folded, callees and siblings into their caller (depth.cpp); a cost paid only in start-up
// scored 0; victims folded into their culprit's evidence; cut at the threshold (a whole-group
// finding also below a material share of the step) and ordered. Analyze (commands/analyze.cpp)
// then
// adds the ranks whose loader workers took their node's CPUs (workers.cpp), attaches the helper
// processes (helpers.cpp), adds the ranks whose side threads took their node's CPUs or their
// loop's interpreter (threads.cpp), then the critical-path share (beta.cpp), the step
// without each (what_if.cpp) and the hardware signals that explain it (signals.h).
#pragma once

#include <map>
#include <vector>

#include "analyzer/detect/detect.h"
#include "analyzer/detect/hangs.h"
#include "analyzer/ingest/model.h"
#include "analyzer/verdict/candidate.h"
#include "analyzer/verdict/cpu_share.h"
#include "analyzer/verdict/threads.h"
#include "analyzer/verdict/workers.h"

namespace perftracker::analyzer {

// A candidate's score: the share of the step it costs, times its persistence (the share of the
// windows where it was seen; 1 when none were counted) (rank.cpp).
double Score(double lost_ns, double step_ns, double windows_seen, double windows_total);

// Stage 5 (rank.cpp): findings and hangs to classified, merged, ordered candidates.
std::vector<Candidate> RankCandidates(const Frame& frame, const std::vector<Finding>& findings,
                                      const std::vector<Hang>& hangs, double iteration_s);

// Highest score first; ties by function, then ranks (rank.cpp).
void OrderCandidates(std::vector<Candidate>* cands);

// A rank whose loader workers burn more CPU than its peers' while its node's training loops
// wait in the run queue: a candidate of its own, named by the workers' function (workers.cpp).
// `loads`: WorkerLoads of the dataset, which AttachHelperEvidence reads too.
void AddWorkerCandidates(const Frame& f, const std::map<int, WorkerLoad>& loads,
                         double iteration_s, std::vector<Candidate>* cands);

// A Python candidate flagged deep in a library names the first frame of the user's own code
// (else the highest) whose inclusive time explains >= 80% of the deviation (depth.cpp).
void LiftToUserDepth(const Frame& f, std::vector<Candidate>* cands);
// One cost, one candidate: a frame's candidate and its callee's on the same ranks are the same
// time counted at two depths. One stays (the callee where it is the user's code and explains
// >= 80% of the caller's impact, else the caller), with the other in evidence.same_cost and the
// higher score of the two (depth.cpp).
void FoldCallees(const Frame& f, std::vector<Candidate>* cands);
// One cost, one candidate: two frames' candidates on the same ranks whose nearest common caller
// deviates >= 80% as much as the two together are parts of that caller's cost (a rank's longer
// sequences slow its attention and its MLP alike). One candidate stays, at the caller (lifted
// to the user's depth), charged the caller's excess, with the other in evidence.same_cost
// (depth.cpp).
void FoldSiblings(const Frame& f, std::vector<Candidate>* cands);
// Whether dataset rank `rank_index` is one of the candidate's ranks (rank.cpp).
bool OnCandidateRanks(const Frame& f, const Candidate& c, size_t rank_index);
// Iterations in a list of spans ([[begin, end), ...], evidence.iterations) (rank.cpp).
uint64_t SpansLength(const Json& spans);

// Each candidate's own critical-path share (beta: its critical time over the iteration time) on
// its ranks, and its peers' median, where the windows carry critical-path time (beta.cpp).
// An expected-range finding on the critical path already says it for its subtree.
void AttachBeta(const Frame& f, std::vector<Candidate>* cands);

// Host-timed candidates (host_time.cpp): the training loop's run-queue delay on their ranks
// against their peers' (evidence run_queue; most of the excess explained: host_cpu, decided by
// it), and on ranks that drive a device only the time that reached the rank's critical path
// (the host's own time while the device had nothing queued; evidence host_critical_path).
void AttachRunQueue(const Frame& f, std::vector<Candidate>* cands);
void ChargeCriticalPath(const Frame& f, std::vector<Candidate>* cands);

// "Job ~N% faster without this": each candidate's time lost per iteration, over the share of
// the steady run it was seen in, taken off the run's mean step, as evidence what_if
// (what_if.cpp).
// `cpu`: by candidate, what its node's CPUs ask of a step with and without it (CpuBounds;
// empty or 0: not known).
void AttachWhatIf(const SteadyRun& run, const std::vector<CpuBound>& cpu,
                  std::vector<Candidate>* cands);

// The helper processes of a data-loader verdict's ranks, with the functions they spent most on
// beyond the peers' helpers, as the candidate's evidence "helpers" (helpers.cpp).
void AttachHelperEvidence(const Dataset& ds, const std::map<int, WorkerLoad>& loads,
                          std::vector<Candidate>* candidates);

}  // namespace perftracker::analyzer
