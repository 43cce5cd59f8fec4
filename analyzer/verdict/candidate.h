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
};

}  // namespace perftracker::analyzer
