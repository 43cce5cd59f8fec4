// A rank's threads other than its training loop, as the collector's scheduler account of them
// says (FORMAT.md thread_cpu): the cores their Python functions kept busy. A thread body that
// never returns reads as running the whole window whether it computes or sleeps; its CPU time
// tells the two apart (threads.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "analyzer/detect/detect.h"
#include "analyzer/ingest/model.h"
#include "analyzer/verdict/candidate.h"

namespace perftracker::analyzer {

struct ThreadLoad {
  double wall_ns = 0;                         // its steady slots' iterations, summed
  // CPU ns by the frame of the user's code it ran in (the outermost user frame a library
  // called, as a loader worker's work is named: workers.h WorkEntryOf), else by the function.
  std::map<int32_t, double> cpu_by_function;
  double Cores() const;
  int32_t Top() const;  // the function that holds most of it (-1: none)
};

// By rank: CPU time of its side threads after start-up. Threads that drive a device (a
// backward thread launching kernels, as autograd's does) are the step's own work and are left
// out; ranks whose collector predates thread_cpu read as none.
std::map<int, ThreadLoad> ThreadLoads(const Dataset& ds);

// A rank whose side threads use more cores than its peers' while its node's loops wait for a
// CPU, or every rank's alike where that costs a material share of the step: a host_cpu verdict
// named by the threads' function (evidence.threads, source threads, decided by threads_cpu).
// One rank's threads are also charged what its loop lost off a CPU beyond its peers' (a thread
// that holds the GIL), by no more than those cores' share of the step.
void AddThreadCandidates(const Frame& f, const std::map<int, ThreadLoad>& loads,
                         double iteration_s, std::vector<Candidate>* cands);

}  // namespace perftracker::analyzer
