// Stage 4: detection. Each detector turns aligned slots into findings: numbers that say "this
// metric on these ranks is not what it should be". Ranking (rank.h) turns findings into
// candidates.
//
//  differential   per (peer group, metric, slot): a rank's excess over the peer median, in units
//                 of max(1.4826 MAD, 2% of the median, 0.2% of the iteration), widened by the
//                 rank's own sampling error; flagged at z > 5 and an excess of at least 0.5% of
//                 the iteration, reported when it persists: in enough windows, and in more of
//                 them than chance allows given how often the peers are flagged on the same
//                 metric (scheduler noise on an oversubscribed host hits every rank now and then;
//                 a fault hits one rank every time).
//  expected range per group: the median rank's share of the iteration of functions that block
//                 the host (data loader, GC, host syncs: <= 1%; copies: <= 5%), for problems
//                 every rank shares, which comparing ranks cannot see; and of every Python
//                 function's subtree on the critical path (beta <= 1%, critical.cpp).
//  temporal       per group: the median rank's value in the latest slots against the earliest.
//  arrival        per group (C4): each rank's launch offset at every collective against the
//                 peers'; the rank that arrives late is the one the others wait for.
//  bandwidth      per communicator: collectives' bus bandwidth against the link's peak (given
//                 by the user), below half of it on every rank = fabric or configuration.
//  links          C4's matrix. With network cells (net_send, NCCL profiler plugin): wire time
//                 per byte of every (sender, receiver) cell against the lower quartile of all
//                 cells; else point-to-point device times, a cell slow at both ends. An
//                 isolated slow pair is a slow link, slow pairs sharing one node a slow node.
//
// Thresholds follow ../shared/research/perftracker.md §12.5/§12.6/§12.8.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "analyzer/base/json_window.h"
#include "analyzer/ingest/model.h"
#include "analyzer/detect/peers.h"

namespace perftracker::analyzer {

struct Thresholds {
  double z = 5.0;                   // k in median + k MAD
  double min_excess_share = 0.005;  // of the iteration, for a slot to count
  double relative_floor = 0.02;     // sigma floor as a share of the peer median
  double absolute_floor = 0.002;    // sigma floor as a share of the iteration
  double blocking_expected = 0.01;  // data loader, GC, syncs: expected share of the iteration
  double memcpy_expected = 0.05;
  double min_score = 0.01;  // candidates below are not reported (the paper's beta gate)
  // Collectives' expected range (bandwidth.cpp): per-GPU link peaks in GB/s, inside a node and
  // between nodes (0: unknown, not judged), and the least fraction of it a collective should get.
  double intra_link_gbps = 0;
  double inter_link_gbps = 0;
  double bus_expected = 0.5;
  // Largest chance, given the peers' rate of flagged windows, of a rank being flagged in as
  // many windows as it was, for the finding to stand. Strict, because it is asked of every
  // function on every rank: a fault on one rank has a chance of 1e-6 or less, noise 0.01-0.1.
  double max_chance = 0.001;
};

// Sums over all functions of a kind: a fault that slows every kernel (or every Python function)
// a little is invisible per function and obvious in the sum.
enum class Aggregate : uint8_t { kNone, kKernels, kPython, kCudaApi, kMemcpy, kCollectives };

// One catalog function (aggregate kNone) or one kind's sum (function -1).
struct Metric {
  int32_t function = -1;
  Aggregate aggregate = Aggregate::kNone;
};
// Detectors gather this many functions' values member by member, at once: one function across
// thousands of members is a cache miss per member (detect.cpp TallyMetrics).
inline constexpr size_t kFunctionBlock = 64;

enum class Source : uint8_t {
  kDifferential,
  kExpectedRange,
  kTemporal,
  kArrival,
  kLink,
  kHang,
  kBandwidth,
};

struct Finding {
  Source source = Source::kDifferential;
  int group = -1;
  int32_t function = -1;  // catalog index
  Aggregate aggregate = Aggregate::kNone;
  std::vector<int> ranks;
  std::string label;  // display name when not a function (links, arrival, hangs)
  double value_ns = 0;
  double peer_median_ns = 0;
  double deviation = 0;  // z for differential/arrival/link; share above range or growth otherwise
  double excess_ns = 0;  // time lost per iteration
  double iteration_ns = 0;
  int windows_seen = 0;
  int windows_total = 0;
  Json extra = Json::object();
};

// Per-slot view shared by the detectors.
struct Frame {
  const Dataset* ds;
  const std::vector<PeerGroup>* groups;
  Thresholds th;
  std::vector<std::vector<const Slot*>> slots;  // [rank index][slot index], null when absent
  // aggregates[rank index][slot index][Aggregate]: per-iteration ns.
  std::vector<std::vector<std::array<double, 6>>> aggregates;
  // The same for the sampling variance of those sums (ns^2 per iteration^2).
  std::vector<std::vector<std::array<double, 6>>> aggregate_vars;
  // Per catalog function: the kind sum it is counted in. A CUDA API call is recorded under its
  // API function and again under its call site (a child of it): only the API function counts.
  std::vector<Aggregate> summed_in;
  int threads = 1;  // for the per-function work (Dataset::threads)
  // [rank index][slot index]: the host's time on the critical path, ns per iteration (the
  // device had nothing queued); < 0 where the slot has no device timeline.
  std::vector<std::vector<double>> host_critical;
  // Per catalog function: the training loop itself (LoopFrames), never a candidate.
  std::vector<bool> loop;
};

// Python frames that enclose iteration boundaries: a script's module body, `main`, the function
// holding the step loop. They are open across windows (the collector reports them in slices:
// time without a completed call) in most slots they have time in. Their time is the loop's; their
// callees are judged, they never are.
std::vector<bool> LoopFrames(const Dataset& ds);
inline bool IsLoopFrame(const Frame& f, int32_t fn) {
  return fn >= 0 && static_cast<size_t>(fn) < f.loop.size() && f.loop[static_cast<size_t>(fn)];
}

Frame MakeFrame(const Dataset& ds, const std::vector<PeerGroup>& groups, const Thresholds& th);

// The catalog's functions compared one by one (not communication: arrival order judges where
// victims wait, culprit.cpp), kFunctionBlock at a time, in catalog order.
std::vector<std::vector<Metric>> FunctionBlocks(const Frame& f);

// Per-iteration value of a metric in a slot.
double MetricValue(const Frame& f, size_t rank_index, size_t slot_index, int32_t function,
                   Aggregate aggregate);
// Its variance from timing only a sample of the calls (0 when every call was timed).
double MetricSamplingVar(const Frame& f, size_t rank_index, size_t slot_index, int32_t function,
                         Aggregate aggregate);
const Slot* SlotAt(const Frame& f, size_t rank_index, size_t slot_index);
// The slots in which `function` ran on any of `rank_indices`; every slot when it ran in all of
// them or in none. An intermittent cause (a checkpoint every N steps) is then measured where it
// happened, on the same basis as the windows its finding was seen in.
std::vector<bool> SlotsWhereRan(const Frame& f, const std::vector<size_t>& rank_indices,
                                int32_t function);
std::string_view AggregateName(Aggregate a);
// The kind sum a function belongs to (kNone for collectives and kinds without a sum).
Aggregate AggregateOf(const FunctionInfo& info);

// Windows a finding must be seen in, out of `present`.
int NeededWindows(int present);

std::vector<Finding> DetectDifferential(const Frame& f);
std::vector<Finding> DetectExpectedRange(const Frame& f);
std::vector<Finding> DetectTemporal(const Frame& f);
// One rank's change of a metric between its earliest and latest thirds of slots, as the
// temporal test measures the median rank's (temporal.cpp).
double RankChange(const Frame& f, size_t rank_index, int32_t function, Aggregate aggregate);
std::vector<Finding> DetectArrival(const Frame& f);  // culprit.cpp
// Python functions whose critical-path share (beta) is above 1% on the median rank of a group
// (critical.cpp).
std::vector<Finding> DetectCriticalPath(const Frame& f);
std::vector<Finding> DetectLinks(const Frame& f);  // culprit.cpp

// One cell of the link matrix over the whole run: bytes moved per ns of transfer (= GB/s).
struct LinkRate {
  int from = 0, to = 0;  // global ranks; (sender, receiver) for network cells, else from < to
  double gbps = 0;
};
// The matrix DetectLinks judges, for the report: network cells when the NCCL profiler plugin
// recorded them (*net = true), else point-to-point transfers, both ends' time together.
std::vector<LinkRate> LinkRates(const Frame& f, bool* net);
// Communicators whose collectives move data under the expected fraction of the link's peak on
// every rank (bandwidth.cpp).
std::vector<Finding> DetectBandwidth(const Frame& f);

}  // namespace perftracker::analyzer
