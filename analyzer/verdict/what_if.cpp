// The step without each candidate: what removing its cost would give the job.
#include <algorithm>
#include <vector>

#include "analyzer/verdict/verdict.h"

namespace perftracker::analyzer {

// A straggler sets the pace of every rank it synchronizes with, and a cost every rank shares is
// paid on each: either way, removing the time it costs a step shortens the job's step by about
// that much. (Overlap with other work makes this an upper bound.) The impact is per iteration of
// the windows it was seen in: one seen in half of them (a periodic checkpoint, a fault that
// began halfway) costs the run half as much.
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
    const double without = std::max(0.0, step - c.impact_s_per_iter * persistence);
    c.evidence["what_if"] = {{"step_s", step},
                             {"step_without_s", without},
                             {"faster_pct", 100.0 * (step - without) / step}};
  }
}

}  // namespace perftracker::analyzer
