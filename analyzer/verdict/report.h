// The analysis result every output format renders, and the renderers (one file each).
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "analyzer/detect/detect.h"
#include "analyzer/detect/hangs.h"
#include "analyzer/base/json_window.h"
#include "analyzer/ingest/model.h"
#include "analyzer/detect/peers.h"
#include "analyzer/verdict/signals.h"

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

// The link matrix over the run (culprit.cpp, LinkRates); empty when no link was measured.
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
  std::vector<Candidate> candidates;  // best first, above the score threshold
  std::vector<Hang> hangs;
  HeatMap heat;
  LinkMatrix links;
  // Hardware or host signals that deviate where no candidate needs a reason (signals.h).
  std::vector<SignalDeviation> signal_warnings;
  Thresholds thresholds;
};

// A candidate's score: the share of the step it costs, times its persistence (the share of the
// windows where it was seen; 1 when none were counted) (rank.cpp).
double Score(double lost_ns, double step_ns, double windows_seen, double windows_total);

// Stage 5 (rank.cpp): findings and hangs to classified, merged, ordered candidates.
std::vector<Candidate> RankCandidates(const Frame& frame, const std::vector<Finding>& findings,
                                      const std::vector<Hang>& hangs, double iteration_s);

// A Python candidate flagged deep in a library names the first frame of the user's own code
// (else the highest) whose inclusive time explains >= 80% of the deviation (depth.cpp).
void LiftToUserDepth(const Frame& f, std::vector<Candidate>* cands);
// Whether dataset rank `rank_index` is one of the candidate's ranks (rank.cpp).
bool OnCandidateRanks(const Frame& f, const Candidate& c, size_t rank_index);

// Each candidate's own critical-path share (beta: its critical time over the iteration time) on
// its ranks, and its peers' median, where the windows carry critical-path time (critical.cpp).
// An expected-range finding on the critical path already says it for its subtree.
void AttachBeta(const Frame& f, std::vector<Candidate>* cands);

// Host-timed candidates (host_time.cpp): the training loop's run-queue delay on their ranks
// against their peers' (evidence run_queue; most of the excess explained: host_cpu, decided by
// it), and on ranks that drive a device only the time that reached the rank's critical path
// (the host's own time while the device had nothing queued; evidence host_critical_path).
void AttachRunQueue(const Frame& f, std::vector<Candidate>* cands);
void ChargeCriticalPath(const Frame& f, std::vector<Candidate>* cands);

// "Job ~N% faster without this": each candidate's time lost per iteration taken off the step,
// as evidence what_if (analyze.cpp).
void AttachWhatIf(double iteration_s, std::vector<Candidate>* cands);

// The helper processes of a data-loader verdict's ranks, with the functions they spent most on
// beyond the peers' helpers, as the candidate's evidence "helpers" (helpers.cpp).
void AttachHelperEvidence(const Dataset& ds, std::vector<Candidate>* candidates);

// The whole pipeline after ingest (analyze.cpp).
Report Analyze(std::unique_ptr<Dataset> dataset, const Thresholds& thresholds);

void WriteText(const Report& report, size_t top, std::ostream& out);
Json ReportJson(const Report& report, size_t top);
void WriteHtml(const Report& report, size_t top, std::ostream& out);

// Strings from input files may hold any bytes.
std::string JsonText(const Json& j, int indent);
std::string HtmlEscape(std::string_view s);
std::string FormatSeconds(double s);  // "12.3 ms", "1.20 s", "850 us"
std::string FormatNumber(const char* fmt, double v);  // one number, printf-style

}  // namespace perftracker::analyzer
