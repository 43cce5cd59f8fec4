#include "tests/mp_harness.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace simgpu_test {

std::vector<RankResult> RunRanks(int nranks, const Env& env,
                                 const std::function<void(RankContext&)>& body, int timeout_ms) {
  size_t bytes = sizeof(RankResult) * nranks;
  auto* shared = static_cast<RankResult*>(
      mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  for (int r = 0; r < nranks; ++r) new (&shared[r]) RankResult();
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  std::vector<pid_t> pids(nranks, -1);
  for (int r = 0; r < nranks; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) {
      for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
      setenv("SIMGPU_RANK", std::to_string(r).c_str(), 1);
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(nranks).c_str(), 1);
      RankContext ctx{r, nranks, id, &shared[r]};
      body(ctx);
      shared[r].finished = true;
      _exit(0);  // skip the parent's atexit handlers and Catch2's teardown
    }
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int remaining = nranks;
  while (remaining > 0 && std::chrono::steady_clock::now() < deadline) {
    for (int r = 0; r < nranks; ++r) {
      int status = 0;
      if (pids[r] > 0 && waitpid(pids[r], &status, WNOHANG) == pids[r]) {
        shared[r].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        pids[r] = -1;
        --remaining;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int r = 0; r < nranks; ++r) {
    if (pids[r] <= 0) continue;
    shared[r].timed_out = true;
    kill(pids[r], SIGKILL);
    waitpid(pids[r], nullptr, 0);
  }
  std::vector<RankResult> results(shared, shared + nranks);
  munmap(shared, bytes);
  return results;
}

}  // namespace simgpu_test
