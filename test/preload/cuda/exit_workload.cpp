// Fork and exit around the library's threads, on a do-nothing runtime (bench_stub_cudart.cpp;
// built once more with cudaEventQuery that never returns, for a hung GPU). Run by
// lifecycle_test.cpp with libperftracker.so preloaded and every launch timed, so the
// device-timer thread runs. Modes:
//   exit_workload poller-exit          launch, then return from main: exit stops the poller
//   exit_workload fork-exit N          launch, then N forked children leave through exit()
//   exit_workload fork-latency N       a thread launches all along; N forks, 50 ms apart,
//                                      each timed; prints "fork_ms median max"
// Exit 0 on success; a child that does not end within 5 s fails the run.
#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

__attribute__((noinline)) void Kernel() {}

int Launch(int n) {
  for (int i = 0; i < n; ++i) {
    if (cudaLaunchKernel(reinterpret_cast<const void*>(&Kernel), dim3(1), dim3(1), nullptr, 0,
                         nullptr) != cudaSuccess) {
      return 1;
    }
  }
  return 0;
}

double NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// Reaps `child`, killing it after 5 s; true when it exited with 0.
bool Reap(pid_t child) {
  const double deadline = NowMs() + 5000;
  int status = 0;
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (NowMs() > deadline) {
      std::fprintf(stderr, "exit_workload: child %d did not exit within 5 s\n", child);
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      return false;
    }
    usleep(1000);
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int ForkExit(int n) {
  if (Launch(16) != 0) return 3;
  usleep(100 * 1000);  // the poller is up and polling
  for (int i = 0; i < n; ++i) {
    const pid_t child = fork();
    if (child < 0) return 4;
    if (child == 0) exit(0);  // atexit handlers and all, the inherited ones included
    if (!Reap(child)) return 5;
  }
  return 0;
}

int ForkLatency(int n) {
  std::atomic<bool> stop{false};
  std::thread launcher([&] {
    while (!stop.load()) {
      Launch(64);
      usleep(2000);
    }
  });
  usleep(1500 * 1000);  // the writer is in its rounds (and, on a slow disk, in a write)
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    const double t0 = NowMs();
    const pid_t child = fork();
    const double t1 = NowMs();
    if (child < 0) return 4;
    if (child == 0) _exit(0);
    ms.push_back(t1 - t0);
    if (!Reap(child)) return 5;
    usleep(50 * 1000);
  }
  stop.store(true);
  launcher.join();
  std::sort(ms.begin(), ms.end());
  std::printf("fork_ms %.3f %.3f\n", ms[ms.size() / 2], ms.back());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const int n = argc > 2 ? std::atoi(argv[2]) : 0;
  if (mode == "poller-exit") return Launch(16) == 0 ? (usleep(100 * 1000), 0) : 3;
  if (mode == "fork-exit") return ForkExit(n);
  if (mode == "fork-latency") return ForkLatency(n);
  std::fprintf(stderr, "usage: exit_workload poller-exit | fork-exit N | fork-latency N\n");
  return 2;
}
