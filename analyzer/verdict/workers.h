// A rank's loader workers as the helper files record them (workers.cpp): how much of their time
// went to the user's own code that the loader called (a dataset's __getitem__, a collate_fn),
// and how much of it was on a CPU.
#pragma once

#include <cstdint>
#include <map>

#include "analyzer/ingest/model.h"

namespace perftracker::analyzer {

struct WorkerLoad {
  int workers = 0;     // helper processes that ran the user's code
  double wall_ns = 0;  // their windows' lengths, summed
  double work_ns = 0;  // inside the user's code a library called
  std::map<int32_t, double> work_by_function;  // that code's outermost frames: catalog index -> ns
  // Their main threads' time on a CPU, over the windows that carry the scheduler's account
  // (FORMAT.md thread_cpu_ns; none before 2026-11-29), and those windows' lengths.
  double cpu_ns = 0, cpu_wall_ns = 0;

  // The share of its time a worker spent in the user's code, and on a CPU (-1: unknown).
  double Busy() const { return wall_ns > 0 ? work_ns / wall_ns : 0; }
  double Cpu() const { return cpu_wall_ns > 0 ? cpu_ns / cpu_wall_ns : -1; }
  // The function that holds most of the work (-1: none).
  int32_t Top() const;
};

// By rank: the helpers of each rank that ran the user's code.
std::map<int, WorkerLoad> WorkerLoads(const Dataset& ds);

// By rank: cores' worth of CPU its workers used (the share of a worker's time on a CPU, times
// the workers), where their windows carried the scheduler's account.
std::map<int, double> WorkerCores(const std::map<int, WorkerLoad>& loads);

// The outermost frame of the user's code a library called that holds `fn` (itself, or an
// ancestor), -1 when none does.
int32_t WorkEntryOf(const Catalog& catalog, int32_t fn);

}  // namespace perftracker::analyzer
