// Stage 4: detection. Each detector turns aligned slots (the Frame, frame.h) into findings:
// numbers that say "this metric on these ranks is not what it should be". Ranking
// (verdict/rank.cpp) turns findings into candidates.
//
//  differential   per (peer group, metric, slot): a rank's excess over the peer median, in units
//                 of max(1.4826 MAD, 1% of the median, 0.2% of the iteration), widened by the
//                 rank's own sampling error; flagged at z > 5 and an excess of at least 0.5% of
//                 the iteration, reported when it persists: in enough windows, and in more of
//                 them than chance allows given how often the peers are flagged on the same
//                 metric (scheduler noise on an oversubscribed host hits every rank now and then;
//                 a fault hits one rank every time). A group of two (a pipeline stage's two
//                 replicas, a 2-rank job) has no median: each is measured against the faster,
//                 with the floors as its spread.
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

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/base/json_window.h"
#include "analyzer/detect/frame.h"

namespace perftracker::analyzer {

enum class Source : uint8_t {
  kDifferential,
  kExpectedRange,
  kTemporal,
  kArrival,
  kLink,
  kHang,
  kBandwidth,
  kWorkers,  // a rank's loader workers' CPU beyond its peers' (verdict/workers.cpp)
  kThreads,  // a rank's side threads' CPU beyond its peers' (verdict/threads.cpp)
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
  // Time lost over every slot after start-up, flagged or not, each slot's excess times its
  // iterations (ns; -1: not counted). excess_ns is a mean over the flagged slots, start-up's
  // among them: a start-up slot of 10 iterations weighs as much there as one of 80, and a
  // steady fault in a window its noise hid counts for nothing.
  double steady_lost_ns = -1;
  double iteration_ns = 0;
  int windows_seen = 0;
  int windows_total = 0;
  Json extra = Json::object();
};

std::vector<Finding> DetectDifferential(const Frame& f);
std::vector<Finding> DetectExpectedRange(const Frame& f);
std::vector<Finding> DetectTemporal(const Frame& f);
// One rank's change of a metric between its earliest and latest thirds of slots, as the
// temporal test measures the median rank's (temporal.cpp).
double RankChange(const Frame& f, size_t rank_index, int32_t function, Aggregate aggregate);
std::vector<Finding> DetectArrival(const Frame& f);  // arrival.cpp
// Python functions whose critical-path share (beta) is above 1% on the median rank of a group
// (critical.cpp).
std::vector<Finding> DetectCriticalPath(const Frame& f);
std::vector<Finding> DetectLinks(const Frame& f);  // links.cpp

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
