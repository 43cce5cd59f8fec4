// The simulated job's physics, shared by the function and collective generators: per-rank time
// budgets, fault effects, and noise that any rank can recompute for any other rank (so a rank
// knows when its peers arrive at a collective without talking to them).
#pragma once

#include <cstdint>
#include <vector>

#include "tools/synthetic/synthetic.h"

namespace perftracker::synthetic {

// Shares of a healthy stage-0 rank's iteration, as fractions of JobShape::iteration_ns.
inline constexpr double kComputeShare = 0.85;  // GPU kernels (critical)
inline constexpr double kPythonShare = 0.45;   // Python self time (overlapped with the GPU)
inline constexpr double kApiShare = 0.04;      // CUDA API calls (overlapped)
inline constexpr double kDataLoaderShare = 0.004;
inline constexpr double kGcShare = 0.001;
inline constexpr double kSyncShare = 0.003;
inline constexpr double kMemcpyShare = 0.02;
inline constexpr int kRingCallsPerIteration = 8;
inline constexpr uint64_t kRingBytes = 32ull << 20;
inline constexpr int kPipelineMicroBatches = 4;

// One rank's expected times per iteration (ns) in one window, faults applied.
struct RankTimes {
  double compute = 0, python = 0, api = 0, dataloader = 0, gc = 0, sync = 0, memcpy = 0;
  double local = 0;  // critical-path time before any waiting on peers
  // Multipliers applied to single durations of each function class.
  double gpu_factor = 1, cpu_factor = 1, dl_factor = 1, gc_factor = 1, sync_factor = 1;
  double pcie_factor = 1;
};

int StageOf(const JobShape& shape, int rank, int world_size);
int StageSize(const JobShape& shape, int world_size);
double StageWork(int stage);
bool FaultActive(const JobShape& shape, uint64_t window_seq);
RankTimes TimesOf(const JobShape& shape, int rank, int world_size, uint64_t window_seq);
std::vector<RankTimes> AllTimes(const JobShape& shape, int world_size, uint64_t window_seq);

// Transfer slowdown of the link between two ranks (1 when healthy).
double LinkFactor(const JobShape& shape, int a, int b, uint64_t window_seq);
// Transfer slowdown of a collective over ranks [first, first + size): its slowest link.
double GroupLinkFactor(const JobShape& shape, int first, int size, uint64_t window_seq);

// Standard normal deviate that depends only on its arguments.
double NormalAt(uint64_t seed, uint64_t a, uint64_t b, uint64_t c, uint64_t d);
// Rank's local time in iteration `it` of the window, jitter included (what peers see).
double LocalAt(const JobShape& shape, const RankTimes& t, int rank, uint64_t window_seq, int it);
// Extra time per iteration a rank spends on slow ring links (both ends are delayed).
double RingExtraNs(const JobShape& shape, int rank, int world_size, uint64_t window_seq);
// Transfer time of the i-th data-parallel collective of a stage, link faults excluded.
double CollectiveBytes(int i, int stage);
double TransferNs(double bytes);

// What one window's physics is on every rank at once: computed once per window and shared by
// every rank's generator, because each rank's collectives depend on every peer's arrival time
// (recomputing it per rank made writing N ranks cost N^2).
struct WindowPhysics {
  uint64_t window_seq = 0;
  std::vector<RankTimes> all;              // by rank
  std::vector<std::vector<double>> local;  // [it][rank]: critical time before waiting on peers
  std::vector<std::vector<double>> stage_slowest;  // [it][stage]: the stage's latest arrival
  std::vector<double> stage_link;  // by stage: slowdown of its data-parallel ring's slowest hop
  // The iteration's duration, equal on every rank up to clock noise: the slowest rank's local
  // time plus the exposed communication.
  std::vector<double> iteration_ns;
};

// `shape` must be Normalized.
WindowPhysics MakeWindowPhysics(const JobShape& shape, int world_size, uint64_t window_seq);

// The fault-normalized job shape: the legacy slow_rank spelling becomes kSlowGpu.
JobShape Normalized(const JobShape& shape);

}  // namespace perftracker::synthetic
