// 16 threads hammer the CUDA runtime and NCCL hooks while the writer drains, aggregates and
// writes windows, everything built with -fsanitize=thread (libperftracker_tsan: the injected
// library's own sources, linked ahead of the do-nothing runtime and NCCL of hook_bench, so its
// hooks interpose as under LD_PRELOAD), the writer draining every millisecond. The run must be
// free of data races (TSan halts on the first) and every call must reach the ring file exactly
// once (a thread's calls fit its event buffer: nothing may be dropped).
//
// The parent stays passive (no RANK when it was loaded) and re-executes itself as rank 0; it
// then reads the child's ring file.
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "test/preload/cuda/ring_summary.h"

namespace {

constexpr int kThreads = 16, kIterations = 3000;
constexpr int kCopyEvery = 4, kCollectiveEvery = 50;
void Kernel() {}

int Hammer() {
  ncclUniqueId id;
  ncclComm_t comm = nullptr;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) {
    return 3;
  }
  static float buffer[64];
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([comm] {
      for (int i = 1; i <= kIterations; ++i) {
        (void)cudaLaunchKernel(reinterpret_cast<const void*>(&Kernel), dim3(1), dim3(1), nullptr, 0,
                               nullptr);
        if (i % kCopyEvery == 0) {
          (void)cudaMemcpyAsync(buffer, buffer, sizeof buffer, cudaMemcpyDeviceToDevice, nullptr);
        }
        if (i % kCollectiveEvery == 0) {
          (void)ncclAllReduce(buffer, buffer, 64, ncclFloat32, ncclSum, comm, nullptr);
          (void)cudaStreamSynchronize(nullptr);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "hammer") == 0) return Hammer();
  namespace pt = perftracker::test;
  const std::string dir = pt::MakeTempDir();
  const int rc = pt::Run({"/proc/self/exe", "hammer"},
                         {{"RANK", "0"},
                          {"PERFTRACKER_DIR", dir},
                          {"PERFTRACKER_JOB_ID", "tsan"},
                          {"PERFTRACKER_DRAIN_MS", "1"}},
                         600);
  if (rc != 0) {
    std::fprintf(stderr, "hooks_tsan_test: the hammering rank exited %d\n", rc);
    return 1;
  }
  const pt::RankSummary s = pt::ReadRank(dir, 0);
  auto count = [&](const char* name) {
    const auto it = s.top.find(name);
    return it == s.top.end() ? uint64_t{0} : it->second.count;
  };
  const uint64_t launches = count("cudaLaunchKernel"), copies = count("cudaMemcpyAsync DtoD");
  const uint64_t syncs = count("cudaStreamSynchronize");
  const uint64_t want = uint64_t{kThreads} * kIterations;
  const uint64_t want_all = want + want / kCopyEvery + want / kCollectiveEvery * 2;
  const uint64_t seen = launches + copies + syncs + s.CollectiveCount("ncclAllReduce");
  std::printf("hooks_tsan_test: %llu of %llu calls recorded, %llu dropped, %llu windows\n",
              static_cast<unsigned long long>(seen), static_cast<unsigned long long>(want_all),
              static_cast<unsigned long long>(s.dropped),
              static_cast<unsigned long long>(s.windows));
  const bool ok =
      s.found && s.records_skipped == 0 && s.dropped == 0 && launches == want && seen == want_all;
  std::printf("%s\n", ok ? "hooks_tsan_test: ok" : "hooks_tsan_test: FAILED");
  return ok ? 0 : 1;
}
