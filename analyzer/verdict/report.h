// The report's model: the analysis result every output format renders (report/report.h).
// Analyze (commands/analyze.h) fills it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/detect/detect.h"
#include "analyzer/detect/hangs.h"
#include "analyzer/detect/peers.h"
#include "analyzer/ingest/model.h"
#include "analyzer/verdict/candidate.h"
#include "analyzer/verdict/signals.h"

namespace perftracker::analyzer {

struct RankIterations {
  int rank = 0;
  uint64_t count = 0;
  double mean_s = 0, p50_s = 0, p99_s = 0, min_s = 0, max_s = 0;
  double steady_s = 0;  // median of the slots' mean step after start-up (analyze.cpp)
};

// Rank x metric deviations for the HTML heat map.
struct HeatMap {
  std::vector<int> ranks;
  std::vector<std::string> rows;           // metric names
  std::vector<std::vector<double>> cells;  // [row][rank]: value / peer median - 1
  // [row]: the metric (catalog function, aggregate), so a candidate's own cells can be found.
  std::vector<std::pair<int32_t, Aggregate>> keys;
};

// The link matrix over the run (detect/links.cpp, LinkRates); empty when no link was measured.
struct LinkMatrix {
  bool net = false;  // network connections (sender, receiver); else point-to-point pairs
  std::vector<LinkRate> cells;
};

struct Report {
  std::unique_ptr<Dataset> dataset;
  std::vector<PeerGroup> groups;
  std::vector<RankIterations> iterations;
  // [rank index][aligned slot]: mean step time outside collectives, in s (NaN without the slot).
  // Every rank's step is the slowest's; the time outside the collectives differs.
  std::vector<std::vector<double>> own_step_s;
  double median_iteration_s = 0;
  SteadyRun steady;  // what a what-if is a saving of
  std::vector<Candidate> candidates;  // best first, above the score threshold
  std::vector<Hang> hangs;
  HeatMap heat;
  LinkMatrix links;
  // Hardware or host signals that deviate where no candidate needs a reason (signals.h).
  std::vector<SignalDeviation> signal_warnings;
  Thresholds thresholds;
};

}  // namespace perftracker::analyzer
