// Synthetic but realistic window summaries: the shape of a data-parallel transformer job (Python
// functions, kernels, CUDA API call sites, gradient all-reduces). Used by the ring-file generator,
// the format benchmark and tests. Deterministic for a given seed.
#pragma once

#include <cstdint>
#include <string>

#include "schemas/format/window.h"

namespace perftracker::synthetic {

struct JobShape {
  int functions = 2000;    // distinct functions per window
  int collectives = 50;    // distinct (communicator, op, bytes) patterns per window
  int iterations = 20;     // iterations per window
  uint64_t iteration_ns = 500'000'000;
  uint64_t seed = 1;
  // Fault injection: kernels on `slow_rank` take `slow_factor` times longer (a throttled GPU);
  // its peers wait for it inside the gradient all-reduces.
  int slow_rank = -1;
  double slow_factor = 1.0;
};

format::Window MakeWindow(const JobShape& shape, int rank, int world_size, uint64_t window_seq);

}  // namespace perftracker::synthetic
