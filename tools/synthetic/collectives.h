// Collective and point-to-point patterns of the simulated job, and its live slots.
#pragma once

#include <random>
#include <vector>

#include "schemas/format/window.h"
#include "tools/synthetic/physics.h"

namespace perftracker::synthetic {

struct CollectiveResult {
  std::vector<format::CollectivePattern> patterns;
  // Device time of the data-parallel collectives over their pure transfer time: how much longer
  // this rank's NCCL kernels run because they wait for late peers.
  double wait_ratio = 1;
};

// `physics` is the window's (MakeWindowPhysics).
CollectiveResult MakeCollectives(const JobShape& shape, const WindowPhysics& physics, int rank,
                                 std::mt19937_64& rng);

}  // namespace perftracker::synthetic
