// A candidate: what the reports call a verdict. Ranking (rank.cpp) makes them from findings;
// the rest of verdict/ adds their evidence.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/base/json_window.h"
#include "analyzer/detect/detect.h"

namespace perftracker::analyzer {

struct Candidate {
  std::vector<int> rank_set;
  std::string function;
  std::string kind;
  std::string category;
  double score = 0;
  double impact_s_per_iter = 0;
  Json evidence = Json::object();
  // For merging and the heat map (not printed).
  Source source = Source::kDifferential;
  int32_t catalog_function = -1;
  Aggregate aggregate = Aggregate::kNone;
  int group = -1;
  // The iterations' worth of its impact it cost the run after start-up (Finding::steady_lost_ns
  // over its excess_ns; -1: not counted): what_if.cpp's share of the run.
  double steady_iterations = -1;
};

// The job's run after start-up, which a what-if is a saving of: its mean step (a periodic
// checkpoint's cost is in the mean; the median leaves it out) and the iterations it spans.
struct SteadyRun {
  double mean_step_s = 0;
  uint64_t begin = 0, end = 0;  // iterations [begin, end); end == begin: not known
};

}  // namespace perftracker::analyzer
