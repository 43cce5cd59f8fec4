// The per-slot view every detector reads (frame.cpp): each rank's slots in the aligned order, the
// per-iteration value of any metric in them, and the thresholds the detectors judge by.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "analyzer/detect/peers.h"
#include "analyzer/ingest/model.h"

namespace perftracker::analyzer {

struct Thresholds {
  double z = 5.0;                   // k in median + k MAD
  double min_excess_share = 0.005;  // of the iteration, for a slot to count
  // The least sigma, as a share of the peer median: a spread of nothing is no bar (identical
  // simulated ranks, a deterministic loop), and timers and drains alone differ by ~1% between
  // ranks. On the benchmark (215 cells, bench/accuracy) and the 11 real-GPU and scenario
  // archives (test/data), no clean job makes a claim at any floor from 2% down to none: the
  // measured spread, the absolute floor and the persistence tests hold them. At 2% its quiet
  // GPU slowdown (one rank's device 1.1x, 10% of its device time) sat on the bar (z = 5.0) and
  // was missed on all three sim shapes; at 1% it clears it twice over (z ~ 10).
  double relative_floor = 0.01;
  double absolute_floor = 0.002;    // sigma floor as a share of the iteration
  double blocking_expected = 0.01;  // data loader, GC, syncs: expected share of the iteration
  double memcpy_expected = 0.05;
  double min_score = 0.01;  // candidates below are not reported (the paper's beta gate)
  // The least share of the step a whole-group finding (no peer to stand out from) must cost to
  // be claimed. On the benchmark's 55 clean jobs (bench/accuracy, every shape, two machines)
  // such findings are the loader shapes' wait for their workers on 2 shared CPUs, in all 10 of
  // their clean runs: 2.9-5.1% of the step, mean 3.7%, standard deviation 0.8%; every one a
  // false claim. Mean + 3 sd is 6.2%; the smallest whole-group fault the benchmark names
  // (logging on every rank) costs 7.8-8.7%. A fault every rank shares that costs under 6% is
  // no different, by its cost, from this machine's clean loader.
  double whole_group_material = 0.06;
  // Collectives' expected range (bandwidth.cpp): per-GPU link peaks in GB/s, inside a node and
  // between nodes (0: unknown, not judged), and the least fraction of it a collective should get.
  double intra_link_gbps = 0;
  double inter_link_gbps = 0;
  double bus_expected = 0.5;
  // Largest chance, given the peers' rate of flagged windows, of a rank being flagged in as
  // many windows as it was, for the finding to stand. Strict, because it is asked of every
  // function on every rank: a fault on one rank has a chance of 1e-6 or less, noise 0.01-0.1.
  double max_chance = 0.001;
  // The most windows a finding must be flagged in (half of those present up to this). Three for
  // a report over a run; watch asks two of the newest windows, so that a fault that began in
  // one window is named in the next (20 s windows: within 30 s of its onset), the chance test
  // against the peers' own rate of flagged windows still applying.
  int persist_windows = 3;
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
// thousands of members is a cache miss per member (differential.cpp TallyMetrics).
inline constexpr size_t kFunctionBlock = 64;

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
  // device had nothing queued); -2 where critical time came without a device timeline, -1
  // where the slot has no critical-path data.
  std::vector<std::vector<double>> host_critical;
  // Per catalog function: the training loop itself (LoopFrames), never a candidate.
  std::vector<bool> loop;
  // [rank index]: where its start-up slot begins (RankData::StartupBegin).
  std::vector<uint64_t> startup;

  // Whether rank index m's slot s is past its start-up: what a what-if is a saving of.
  bool Steady(size_t m, const Slot& s) const { return s.iter_begin != startup[m]; }
};

// Python frames that enclose iteration boundaries: a script's module body, `main`, the function
// holding the step loop. They are open across windows (the collector reports them in slices:
// time without a completed call) in most slots they have time in, and they or their callees ran
// on the loop's thread where the ranks recorded critical time (a thread's body that never
// returns is open as long, and is that thread's work). Their time is the loop's; their callees
// are judged, they never are.
std::vector<bool> LoopFrames(const Dataset& ds);
inline bool IsLoopFrame(const Frame& f, int32_t fn) {
  return fn >= 0 && static_cast<size_t>(fn) < f.loop.size() && f.loop[static_cast<size_t>(fn)];
}

Frame MakeFrame(const Dataset& ds, const std::vector<PeerGroup>& groups, const Thresholds& th);

// The catalog's functions compared one by one (not communication: arrival order judges where
// victims wait, arrival.cpp), kFunctionBlock at a time, in catalog order.
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

// Windows a finding must be seen in, out of `present`: half of them, at most
// Thresholds::persist_windows.
int NeededWindows(int present, const Thresholds& th);

// Per-iteration value of a slot's total (ns, or any unit summed per window).
double PerIteration(const Slot& s, double ns);
// Per slot, the median of a group's members' mean iteration time (ns).
std::vector<double> GroupIterations(const Frame& f, const PeerGroup& g);

}  // namespace perftracker::analyzer
