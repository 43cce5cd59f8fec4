// What the analyzer keeps of the inputs: per rank, a bounded number of iteration-aligned slots,
// each the sum of the windows it covers (per function, per collective, per iteration). Windows
// are folded in as they are decoded and never kept; a rank costs at most kMaxSlots slots of
// (functions x 4 B x the fields each uses + collectives x 24 B), whatever the length of its ring
// file.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analyzer/ingest/diagnostics.h"
#include "analyzer/ingest/function_sums.h"
#include "schemas/format/histogram.h"
#include "schemas/format/live.h"
#include "schemas/format/ring_file.h"
#include "schemas/format/window.h"

namespace perftracker::analyzer {

inline constexpr size_t kMaxSlots = 16;

struct FunctionInfo {
  uint64_t id = 0;
  format::FunctionKind kind = format::FunctionKind::kUnknown;
  std::string name;
  bool comm = false;  // its time is communication (NCCL kernels): early arrivers wait inside it
  uint64_t parent_id = 0;  // the caller's id (Python call paths); 0 at the root
};

// The user's own code: the collector writes site-packages, dist-packages, standard-library and
// compiler-cache files (inductor's generated code) relative to their root, and every other file
// by its absolute path (preload/python/cpython_code.cpp StableFile). Where a module lives
// decides it, not its name: Lightning, DeepSpeed or transformers installed as packages are
// library code, and a checkout on the path (Megatron run from its repository) is the user's.
inline bool UserCode(std::string_view name) { return !name.empty() && name[0] == '/'; }

struct CollectiveInfo {
  uint64_t comm_id = 0;
  uint32_t comm_size = 0;
  format::CollectiveOp op = format::CollectiveOp::kUnknown;
  int32_t peer = -1;
  uint64_t bytes = 0;
  std::string name;
};

// Per-connection network transfers (NCCL profiler proxy events), not calls the job made: they
// feed the link matrix only.
inline bool IsNetOp(format::CollectiveOp op) {
  return op == format::CollectiveOp::kNetSend || op == format::CollectiveOp::kNetRecv;
}

// Functions and collectives of every rank, interned to dense indices. Thread-safe.
class Catalog {
 public:
  // Interns every function of a window; out[i] is function i's index.
  void InternFunctions(const std::vector<format::FunctionPattern>& fns, std::vector<uint32_t>* out);
  void InternCollectives(const std::vector<format::CollectivePattern>& cs,
                         std::vector<uint32_t>* out);
  // Interns every function and collective of `other` in its order; (*fn_map)[i] and
  // (*coll_map)[i] are the indices here of other's function and collective i. Ingest folds each
  // file against a catalog of its own and merges them in file order, so indices do not depend on
  // thread timing. Nothing may intern into `other` meanwhile.
  void Merge(const Catalog& other, std::vector<uint32_t>* fn_map, std::vector<uint32_t>* coll_map);
  // Interns one function or collective (a reduced file's catalog); returns its index.
  uint32_t Intern(const FunctionInfo& f);
  uint32_t Intern(const CollectiveInfo& c);
  // Only once ingest is over (no locking).
  const std::vector<FunctionInfo>& functions() const { return functions_; }
  // Catalog index of a function id, -1 when no window named it.
  int32_t IndexOf(uint64_t id) const {
    const auto it = function_index_.find(id);
    return it == function_index_.end() ? -1 : static_cast<int32_t>(it->second);
  }
  const std::vector<CollectiveInfo>& collectives() const { return collectives_; }

 private:
  std::mutex mu_;
  std::vector<FunctionInfo> functions_;
  std::unordered_map<uint64_t, uint32_t> function_index_;
  std::vector<CollectiveInfo> collectives_;
  std::map<std::tuple<uint64_t, uint8_t, int32_t, uint64_t, std::string>, uint32_t> coll_index_;

  uint32_t InternLocked(const FunctionInfo& f);
  uint32_t InternLocked(const CollectiveInfo& c);
};

struct CollectiveSum {
  float device_ns = 0;
  float device_samples = 0;
  float count = 0;
  float offset_weighted = 0;  // sum of window median launch offset x calls
  float offset_weight = 0;
  float device_median_weighted = 0;  // sum of window median device time x calls
};

struct Slot {
  uint64_t key = 0;  // iter_begin >> shift
  uint64_t iter_begin = 0;
  uint64_t iter_end = 0;
  uint64_t windows = 0;
  uint64_t detailed_windows = 0;  // recorded in detailed mode (every Python function)
  uint64_t critical_windows = 0;  // carrying critical-path time (FORMAT.md critical_path)
  uint64_t device_windows = 0;    // of those, the rank drove a device (device_idle_ns known)
  // Windows with the iteration thread's scheduler account, and its run-queue delay (FORMAT.md).
  uint64_t sched_windows = 0;
  double run_delay_ns = 0;
  double thread_cpu_ns = 0;  // the same thread's time on a CPU (a helper's: its main thread's)
  // The other threads' time on a CPU, on the Python functions they ran (FORMAT.md thread_cpu):
  // catalog index -> ns. Few functions run on threads of their own, so it is kept sparse.
  std::map<uint32_t, double> side_cpu_ns;
  double iterations = 0;
  double iteration_ns = 0;                 // summed iteration durations
  // Its windows' iteration durations: the spread after start-up leaves the start-up slot's out.
  format::Histogram iteration_hist;
  FunctionSums functions;                  // by catalog index
  std::vector<CollectiveSum> collectives;  // by catalog index

  double MeanIterationNs() const { return iterations > 0 ? iteration_ns / iterations : 0; }
  // Every window carried the scheduler's account: run_delay_ns and thread_cpu_ns are whole.
  bool SchedCovered() const { return sched_windows > 0 && sched_windows >= windows; }
  // The loop thread's wait for a CPU per iteration, ns; -1 without the whole account.
  double RunDelayPerIteration() const {
    return SchedCovered() && iterations > 0 ? run_delay_ns / iterations : -1;
  }
  void Merge(const Slot& other);
};

// One hardware or host signal of a rank over the windows read (FORMAT.md "signals"), summed as
// the windows carry it: a gauge's min / max / sum over its samples, a counter's increase, a
// flag set's bits and flagged samples; window_ns is the length of the windows that carried it,
// which turns a counter's increase into a rate.
struct SignalTotal {
  std::string name;
  std::string device;
  format::SignalKind kind = format::SignalKind::kGauge;
  uint64_t samples = 0;
  double min = 0, max = 0, sum = 0;
  uint64_t bits = 0;
  double window_ns = 0;
};

struct RankData {
  // Renumbers every slot's functions and collectives: index i becomes fn_map[i] / coll_map[i].
  void Remap(const std::vector<uint32_t>& fn_map, const std::vector<uint32_t>& coll_map);
  // Packs every slot's function sums under one layout: the fields non-zero on any of them. Done
  // once a rank is read; the layout is the previous rank's (on this thread) when it is the same.
  void PackSums();

  format::Identity identity;
  std::string path;
  uint32_t format_version = 0;
  std::optional<format::LiveState> live;
  format::RingStats stats;
  format::Health health;
  format::Histogram iteration_hist;
  uint64_t windows = 0;
  uint64_t python_unrecorded_windows = 0;  // windows missing Python functions (FORMAT.md)
  int shift = 0;                           // slot key = iter_begin >> shift
  std::vector<Slot> slots;                 // sorted by key
  std::vector<SignalTotal> signals;        // in the order first seen

  // Adds a window's signals (a few dozen: a linear search by name and device is cheapest).
  void AddSignals(const format::Window& w);
  int rank() const { return identity.rank; }
  // The iteration where its start-up slot begins (imports, compilation, the first allocations
  // and autotuning take seconds there), or UINT64_MAX when that is its only slot with
  // iterations: then it is all there is to measure. The one rule analyze, diff and the hang
  // detector share.
  uint64_t StartupBegin() const;
  // Its slots after start-up that hold iterations: what its steady step, and every cost taken
  // off it, is measured over.
  std::vector<const Slot*> SteadySlots() const;
  // Its iteration-time histogram after start-up (the whole run's where its slots kept none: a
  // reduced file from before 2026-11-29, or only a start-up slot).
  format::Histogram SteadyIterationHist() const;
  const Slot* FindSlot(uint64_t key) const;
  Slot* FindSlot(uint64_t key) {
    return const_cast<Slot*>(static_cast<const RankData*>(this)->FindSlot(key));
  }
};

// What reading some files gives before the analysis settles it: every rank read (helpers and
// restarted ranks included), the catalog their slots index, and what reading found. One file's
// worth per reader thread in ingest; a node's in a reduced file (reduced.h).
struct FileSet {
  uint64_t ring_files = 0;  // a reduced file counts the ring files it was made of
  std::vector<RankData> ranks;
  Catalog catalog;
  Diagnostics diagnostics;
};

struct Dataset {
  std::string job_id;
  size_t files = 0;  // ring files found under the input directory
  int expected = 0;  // world size
  std::vector<int> missing;
  std::vector<RankData> ranks;  // sorted by rank, one per rank
  // Processes the ranks started (spawned DataLoader and compile workers, subprocesses), each
  // with its own small file: identity.rank is the rank it belongs to, identity.helper_of that
  // rank's pid. Sorted by rank; not part of any peer comparison.
  std::vector<RankData> helpers;
  Catalog catalog;
  Diagnostics diagnostics;
  std::vector<uint64_t> slot_keys;  // aligned slots, union over ranks (align.cpp)
  int shift = 0;
  int threads = 1;  // what reading used (IngestOptions::threads, resolved); the analysis too
};

}  // namespace perftracker::analyzer
