// diff's causes: the candidates the analysis of CUR finds that are new against BASE, or grew.
//
// Per-function regressions name victims as readily as culprits (ranks waiting longer for a
// straggler show up as slower collectives or a slower backward pass); the cross-rank analysis
// names the straggler. Both runs are analyzed as `analyze` would, and each CUR candidate is
// matched to BASE's by what it is: category, rank set and function (its display name, which
// stays the same from run to run where catalog indices do not). BASE is analyzed without the
// score bar, so a candidate just under it there is a match, not "new" here.
#pragma once

#include <ostream>
#include <vector>

#include "analyzer/verdict/report.h"

namespace perftracker::analyzer {

struct Cause {
  Candidate current;
  bool is_new = true;
  double base_score = 0, base_impact_s_per_iter = 0;  // of the match in BASE, when there is one
};

// CUR's candidates (above the score bar) without a match in `base_all`, or whose score grew by at
// least `min_score` -- what it takes to be a candidate at all, the analysis's own noise bar --
// and by more than `threshold_pct` percent of the match's; largest growth first.
std::vector<Cause> NewOrGrownCauses(const std::vector<Candidate>& base_all,
                                    const std::vector<Candidate>& current, double threshold_pct,
                                    double min_score);

Json CausesJson(const std::vector<Cause>& causes);
void PrintCauses(const std::vector<Cause>& causes, std::ostream& out);

}  // namespace perftracker::analyzer
