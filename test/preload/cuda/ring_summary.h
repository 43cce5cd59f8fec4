// Test helpers: run a program under LD_PRELOAD, and sum a rank's ring file over all windows.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "schemas/format/histogram.h"
#include "schemas/format/live.h"

namespace perftracker::test {

struct Totals {
  uint64_t count = 0;
  uint64_t device_samples = 0;
  uint64_t device_ns = 0;
  uint64_t wait_ns = 0;
  uint64_t bytes = 0;
  uint64_t captured = 0;  // calls captured into a CUDA graph (not in count)
  format::Histogram device;  // sampled device durations, merged over windows
  double DeviceMean() const { return device_samples ? double(device_ns) / device_samples : 0; }
  // Robust where one sample was stretched by a preempted launching thread (loaded hosts).
  double DeviceMedian() const { return device.empty() ? 0 : double(device.Quantile(0.5)); }
};

struct CollectiveTotals : Totals {
  uint64_t comm_id = 0;
  uint32_t comm_size = 0;
  uint32_t comm_rank = 0;
  uint64_t first_seq = ~0ull;
  uint64_t last_seq_launched = 0;
  uint64_t last_seq_completed = 0;
};

struct RankSummary {
  bool found = false;
  std::map<std::string, Totals> top;        // functions without a parent, by name
  std::map<std::string, Totals> children;   // call sites, by name
  std::map<std::string, Totals> kernels;    // kind kernel, by name
  std::map<std::string, Totals> py_native;  // kind PyNative: "python function > native target"
  std::map<std::pair<uint64_t, std::string>, CollectiveTotals> collectives;  // (comm, name)
  std::optional<format::LiveState> live;
  uint64_t windows = 0;
  uint32_t cuda_runtimes = 0;    // the windows' cuda_runtimes, or-ed
  uint64_t dropped = 0;          // events dropped by full per-thread buffers (health)
  uint64_t records_skipped = 0;  // damaged or undecodable records
  // Sum of `top` counts over names starting with `prefix`.
  uint64_t CountPrefix(const std::string& prefix) const;
  uint64_t CollectiveCount(const std::string& name) const;
};

// Finds rank-<rank>.ptr anywhere under `dir` and sums it. found=false when there is none.
RankSummary ReadRank(const std::string& dir, int rank);
// Every regular file under `dir` (`dir` itself if it is a file).
std::vector<std::string> FilesUnder(const std::string& dir);

using Env = std::vector<std::pair<std::string, std::string>>;
// Runs argv with the current environment plus `env` (a value of "\x01" unsets the variable);
// returns the exit status (128+signal if killed), stdout into *out when given. Thread-safe.
int Run(const std::vector<std::string>& argv, const Env& env, int timeout_s = 120,
        std::string* out = nullptr);
// Starts argv in the background (its stdout into `stdout_path` when given); returns its pid.
// Safe to call from several threads at once.
int Spawn(const std::vector<std::string>& argv, const Env& env,
          const std::string& stdout_path = {});
// A process that ran out of time leaves evidence: the native stacks of every thread of it and
// of its descendants (gdb, when installed) go to stderr, the test log; then all are SIGKILLed.
void DumpStacksAndKill(int pid);
// Waits for `pid` until `deadline`, then dumps its stacks and kills it; its wait status.
int WaitOrDump(int pid, std::chrono::steady_clock::time_point deadline);
// Reads "name count" lines written by call_counter (summed over the files under `dir`).
std::map<std::string, long> ReadCounters(const std::string& dir);
std::string MakeTempDir();

}  // namespace perftracker::test
