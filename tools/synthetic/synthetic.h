// Synthetic but realistic window summaries: the shape of a data-parallel (optionally pipelined)
// transformer job (Python functions, kernels, CUDA API call sites, data loader, GC, host syncs,
// host-to-device copies, gradient collectives, point-to-point exchanges). Used by the ring-file
// generator, the format benchmark, the analyzer's fault tests. Deterministic for a given seed.
//
// The job is simulated physically, not labelled: every rank's local critical time per iteration
// is the sum of its data loading, GC, host syncs, copies and GPU compute (plus launch starvation
// when its CPU is contended); collectives complete when the last member arrives, so early
// arrivers wait inside them; every rank's iteration takes as long as the slowest rank's. A fault
// changes one physical quantity (a GPU's clock, a link's bandwidth, ...) and everything else
// follows from it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "schemas/format/live.h"
#include "schemas/format/window.h"

namespace perftracker::synthetic {

enum class Fault : uint8_t {
  kNone,
  kSlowGpu,         // fault_rank's kernels take fault_factor times longer (throttled GPU)
  kSlowLink,        // transfers between fault_rank and fault_peer take fault_factor times longer
  kSlowNodeLinks,   // every link leaving fault_rank's node is fault_factor times slower
  kSlowPcie,        // fault_rank's host<->device copies take fault_factor times longer
  kSlowDataLoader,  // data loading takes fault_factor times longer (fault_rank, or all if -1)
  kHostSync,        // host syncs (.item()) take fault_factor times longer (fault_rank or all)
  kGc,              // GC pauses fault_factor times longer (fault_rank or all)
  kCpuContention,   // fault_rank's Python and CUDA API calls take fault_factor times longer
  kHang,            // fault_rank never launches the collective after the last window
  kCommHang,        // every rank launched the collective after the last window, none completed
};

std::string_view FaultName(Fault fault);
std::optional<Fault> ParseFault(std::string_view name);

struct JobShape {
  int functions = 2000;  // distinct functions per window
  int collectives = 50;  // distinct (communicator, op, bytes) patterns per window
  int iterations = 20;   // iterations per window
  uint64_t iteration_ns = 500'000'000;
  uint64_t seed = 1;      // the job's code: function names, calls, collectives
  uint64_t run_seed = 0;  // one run's noise: reruns of the same job differ only in it
  double jitter = 0.03;   // relative standard deviation of every duration
  int ranks_per_node = 8;
  int pipeline_stages = 1;  // contiguous blocks of ranks; stage s does 1 + 0.35 s times the work
  bool p2p_ring = false;    // each rank also sends to rank+1 and receives from rank-1
  bool net_links = false;   // NCCL profiler network cells (net_send/net_recv) of ring hops
                            // that cross nodes: wire time per link, the job's link faults applied
  Fault fault = Fault::kNone;
  int fault_rank = -1;
  int fault_peer = -1;
  double fault_factor = 2.0;
  uint64_t fault_from_window = 0;  // windows before it are healthy
  // A per-rank fault that moves: from window fault_move_window on it is on this rank instead.
  int fault_moves_to = -1;
  uint64_t fault_move_window = 0;
  // Legacy spelling of kSlowGpu: used when fault is kNone and slow_rank >= 0.
  int slow_rank = -1;
  double slow_factor = 1.0;
};

struct WindowPhysics;

// Windows of many ranks of one job. Every rank's window depends on every peer's timing (who
// arrives last at a collective), so what ranks share -- the function table and each window's
// physics -- is computed once here for windows [0, windows), not once per rank: generating N
// ranks costs O(N), not O(N^2). Immutable once built; MakeWindow may run on many threads.
class JobPlan {
 public:
  JobPlan(const JobShape& shape, int world_size, uint64_t windows);
  ~JobPlan();
  // Any window_seq; one outside the planned windows costs O(world size).
  format::Window MakeWindow(int rank, uint64_t window_seq) const;

 private:
  struct Shared;
  static format::Window MakeRankWindow(const Shared& plan, const WindowPhysics& physics, int rank);
  std::shared_ptr<const Shared> shared_;
};

// One window of one rank (a JobPlan of no planned window: for tests and a few windows).
format::Window MakeWindow(const JobShape& shape, int rank, int world_size, uint64_t window_seq);

// The live slot a rank leaves after writing `windows_written` windows (hangs included).
format::LiveState MakeLiveState(const JobShape& shape, int rank, int world_size,
                                uint64_t windows_written);

// Names of the functions every synthetic job has (for tests).
inline constexpr std::string_view kDataLoaderName =
    "torch/utils/data/dataloader.py:628:_MultiProcessingDataLoaderIter.__next__";
inline constexpr std::string_view kGcName = "gc.collect";
inline constexpr std::string_view kSyncName = "torch/_tensor.py:1013:Tensor.item";
inline constexpr std::string_view kMemcpyName = "Memcpy HtoD (Pageable -> Device)";

}  // namespace perftracker::synthetic
