// Runs one function in N forked processes ("ranks") with extra environment variables, as a
// launcher would, and collects small per-rank results through shared memory.
//
// Fork happens before the parent has touched the simulator (no device threads, configuration
// not yet read), so each child reads its own SIMGPU_* knobs. A child that outlives the timeout
// is killed (SIGKILL) and reported as timed out: that is how hang tests end their hangs.
#ifndef SIMGPU_TESTS_MP_HARNESS_H_
#define SIMGPU_TESTS_MP_HARNESS_H_

#include <nccl.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace simgpu_test {

struct RankResult {
  bool finished = false;   // the body returned
  bool timed_out = false;  // killed by the harness
  int exit_code = -1;
  int progress = 0;        // free for the body: e.g. collectives completed
  double values[16] = {};  // free for the body
};

struct RankContext {
  int rank = 0;
  int nranks = 0;
  ncclUniqueId id;  // created by the parent, like rank 0 + a store would
  RankResult* result = nullptr;
};

using Env = std::vector<std::pair<std::string, std::string>>;

// Runs `body` in `nranks` processes with SIMGPU_RANK/RANK/WORLD_SIZE and `env` set; waits up to
// `timeout_ms` of wall time.
std::vector<RankResult> RunRanks(int nranks, const Env& env,
                                 const std::function<void(RankContext&)>& body, int timeout_ms);

}  // namespace simgpu_test

#endif  // SIMGPU_TESTS_MP_HARNESS_H_
