// NCCL hooks across ranks (separate processes on simgpu): exact counts, sequence numbers and
// communicator ids that match across ranks, arrival order from device durations, the live slot
// of a hang after SIGKILL, and examples/sim_train with 8 ranks under torchrun.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "test/preload/cuda/ring_summary.h"

using namespace perftracker::test;  // NOLINT

namespace {

Env RankEnv(int rank, int n, const std::string& out, const std::string& counters) {
  const std::string r = std::to_string(rank);
  return {{"LD_PRELOAD", std::string(PT_LIBRARY) + ":" + PT_COUNTER},
          {"LD_LIBRARY_PATH", PT_SIMGPU_LIB},
          {"PERFTRACKER_DIR", out},
          {"PERFTRACKER_JOB_ID", "nccltest"},
          {"PERFTRACKER_SAMPLE_EVERY", "1"},
          {"CALL_COUNTER_DIR", counters},
          {"SIMGPU_TIME_SCALE", "0.05"},
          {"RANK", r},
          {"LOCAL_RANK", r},
          {"SIMGPU_RANK", r},
          {"WORLD_SIZE", std::to_string(n)},
          {"LOCAL_WORLD_SIZE", std::to_string(n)}};
}

// Starts `n` workload ranks; returns their pids.
std::vector<int> StartRanks(int n, int iters, const std::string& out, const std::string& counters,
                            const Env& extra) {
  const std::string id_file = counters + "/nccl.id";
  std::vector<int> pids;
  for (int r = 0; r < n; ++r) {
    Env env = RankEnv(r, n, out, counters);
    env.insert(env.end(), extra.begin(), extra.end());
    pids.push_back(Spawn({PT_WORKLOAD, "nccl", std::to_string(iters), id_file}, env));
  }
  return pids;
}

bool WaitAll(const std::vector<int>& pids, int timeout_s) {
  bool ok = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (int pid : pids) {
    const int status = WaitOrDump(pid, deadline);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  return ok;
}

const CollectiveTotals* Find(const RankSummary& s, const std::string& name) {
  for (const auto& [key, c] : s.collectives) {
    if (key.second == name) return &c;
  }
  return nullptr;
}

// A TCP port nobody listens on right now.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

TEST_CASE("collectives are counted and numbered alike on every rank and show who arrived last",
          "[preload][nccl]") {
  constexpr int kRanks = 4, kIters = 30;
  const std::string out = MakeTempDir(), counters = MakeTempDir();
  // Rank 1's kernels take 3x longer: it reaches every all-reduce last (8 ms later per
  // iteration). Real time scale: host scheduling noise on a loaded machine must stay small
  // against that gap.
  REQUIRE(WaitAll(StartRanks(kRanks, kIters, out, counters,
                             {{"SIMGPU_COMPUTE_SLOWDOWN", "1=3.0"}, {"SIMGPU_TIME_SCALE", "1"}}),
                  120));
  std::vector<RankSummary> ranks;
  for (int r = 0; r < kRanks; ++r) ranks.push_back(ReadRank(out, r));
  const auto truth = ReadCounters(counters);  // summed over ranks
  uint64_t all_reduces = 0, sends = 0, recvs = 0, gathers = 0;
  for (int r = 0; r < kRanks; ++r) {
    const RankSummary& s = ranks[r];
    REQUIRE(s.found);
    all_reduces += s.CollectiveCount("ncclAllReduce");
    sends += s.CollectiveCount("ncclSend");
    recvs += s.CollectiveCount("ncclRecv");
    gathers += s.CollectiveCount("ncclAllGather");
    const CollectiveTotals* ar = Find(s, "ncclAllReduce");
    REQUIRE(ar != nullptr);
    CHECK(ar->comm_size == kRanks);
    CHECK(ar->comm_rank == uint32_t(r));
    CHECK(ar->bytes == 4u << 20);
    CHECK(ar->comm_id == Find(ranks[0], "ncclAllReduce")->comm_id);
    // Per iteration: all-reduce, send, recv share the communicator's sequence.
    CHECK(ar->first_seq == 0);
    CHECK(ar->last_seq_launched == 3 * (kIters - 1));
    CHECK(ar->last_seq_completed == 3 * (kIters - 1));
    CHECK(ar->device_samples == kIters);
    // Split children: same color, same id; the two colors differ.
    const CollectiveTotals* ag = Find(s, "ncclAllGather");
    REQUIRE(ag != nullptr);
    CHECK(ag->comm_size == 2);
    CHECK(ag->comm_id == Find(ranks[r % 2], "ncclAllGather")->comm_id);
    CHECK(ag->comm_id != Find(ranks[1 - r % 2], "ncclAllGather")->comm_id);
  }
  CHECK(all_reduces == uint64_t(truth.at("ncclAllReduce")));
  CHECK(all_reduces == kRanks * kIters);
  CHECK(sends == uint64_t(truth.at("ncclSend")));
  CHECK(recvs == uint64_t(truth.at("ncclRecv")));
  CHECK(gathers == uint64_t(truth.at("ncclAllGather")));
  // The slow rank's kernels: ~3x, compared as a ratio within the run.
  const double ratio = ranks[1].kernels.at("gemm_kernel").DeviceMean() /
                       ranks[0].kernels.at("gemm_kernel").DeviceMean();
  CHECK(ratio == Approx(3.0).epsilon(0.1));
  // It arrives last, so its all-reduces are the shortest, by far.
  const double slow = Find(ranks[1], "ncclAllReduce")->DeviceMean();
  for (int r : {0, 2, 3}) CHECK(Find(ranks[r], "ncclAllReduce")->DeviceMean() > 2 * slow);
}

// Runs `n` ranks of `workload nccl-nonblocking` at once (the library preloaded when `hooked`);
// their stdout, by rank.
std::vector<std::string> RunNonBlocking(int n, int iters, bool hooked, const std::string& out,
                                        const std::string& counters) {
  std::vector<std::string> stdouts(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    Env env = RankEnv(r, n, out, counters);
    if (!hooked) env[0].second = "\x01";  // LD_PRELOAD unset
    threads.emplace_back([&, r, env] {
      const int rc = Run({PT_WORKLOAD, "nccl-nonblocking", std::to_string(iters),
                          counters + "/nccl.id"},
                         env, 120, &stdouts[r]);
      if (rc != 0) stdouts[r] = "exit " + std::to_string(rc);
    });
  }
  for (auto& t : threads) t.join();
  return stdouts;
}

TEST_CASE("a non-blocking communicator's collectives are counted, never timed before their work",
          "[preload][nccl]") {
  constexpr int kRanks = 2, kIters = 10;
  // Without the library: the return codes the application must see through it too.
  const std::vector<std::string> plain =
      RunNonBlocking(kRanks, kIters, false, MakeTempDir(), MakeTempDir());
  const std::string out = MakeTempDir(), counters = MakeTempDir();
  const std::vector<std::string> hooked = RunNonBlocking(kRanks, kIters, true, out, counters);
  const auto truth = ReadCounters(counters);
  for (int r = 0; r < kRanks; ++r) {
    INFO("rank " << r << ": " << hooked[r]);
    // simgpu's non-blocking launches always return ncclInProgress (its launch thread waits).
    CHECK(plain[r].find("init=7 init_done=0 allreduce=7 allreduce_done=0 group=0 send=0 recv=0 "
                        "group_end=7 group_done=0") != std::string::npos);
    CHECK(hooked[r] == plain[r]);
    const RankSummary s = ReadRank(out, r);
    REQUIRE(s.found);
    const CollectiveTotals* ar = Find(s, "ncclAllReduce");
    const CollectiveTotals* send = Find(s, "ncclSend");
    REQUIRE(ar != nullptr);
    REQUIRE(send != nullptr);
    CHECK(ar->count == kIters);
    CHECK(send->count == kIters);
    CHECK(s.CollectiveCount("ncclRecv") == kIters);
    CHECK(ar->comm_size == kRanks);
    CHECK(ar->comm_rank == uint32_t(r));
    // Their work reached the stream after the call returned: an end event recorded then would
    // measure next to nothing. No device time, but every op's completion is known (the marker
    // recorded once ncclCommGetAsyncError reported the launch done).
    CHECK(ar->device_samples == 0);
    CHECK(send->device_samples == 0);
    CHECK(ar->last_seq_launched == 3 * (kIters - 1));
    CHECK(ar->last_seq_completed == 3 * (kIters - 1));
    const CollectiveTotals* recv = Find(s, "ncclRecv");
    REQUIRE(recv != nullptr);
    CHECK(recv->last_seq_completed == 3 * (kIters - 1) + 2);
  }
  CHECK(truth.at("ncclAllReduce") == kRanks * kIters);
  CHECK(truth.at("ncclSend") == kRanks * kIters);
}

TEST_CASE("a call site's first launch in each window is timed besides 1 in N",
          "[preload][nccl][sampling]") {
  constexpr int kRanks = 2, kIters = 80;
  const std::string out = MakeTempDir(), counters = MakeTempDir();
  // 4 GEMM launches an iteration through one call site (320), windows of 8 iterations (about
  // 35 ms at real time scale, so the writer closes each in a drain of its own): 1 in 64 times
  // 5 of them, and each window's first launch adds one.
  REQUIRE(WaitAll(StartRanks(kRanks, kIters, out, counters,
                             {{"PERFTRACKER_SAMPLE_EVERY", "64"},
                              {"PERFTRACKER_WINDOW_ITERS", "8"},
                              {"PERFTRACKER_WINDOW_S", "0"},
                              {"SIMGPU_TIME_SCALE", "1"},
                              {"WORKLOAD_NO_P2P", "1"}}),
                  120));
  const RankSummary s = ReadRank(out, 0);
  REQUIRE(s.found);
  REQUIRE(s.windows >= 8);
  const Totals& gemm = s.kernels.at("gemm_kernel");
  CHECK(gemm.count == 4u * kIters);
  INFO("windows " << s.windows << ", samples " << gemm.device_samples);
  CHECK(gemm.device_samples >= 5 + s.windows / 2);
  CHECK(gemm.device_samples <= 5 + s.windows + 1);
}

TEST_CASE("a hang leaves the stuck sequence number in the live slot after SIGKILL",
          "[preload][nccl]") {
  constexpr int kRanks = 4;
  const std::string out = MakeTempDir(), counters = MakeTempDir();
  // Rank 2 stops before its 6th NCCL op (seq 5): the others launch seq 5 and wait in it.
  const auto pids =
      StartRanks(kRanks, 40, out, counters, {{"SIMGPU_HANG", "2:5"}, {"WORKLOAD_NO_P2P", "1"}});
  std::this_thread::sleep_for(std::chrono::seconds(5));  // the live slot refreshes every second
  for (int pid : pids) kill(pid, SIGKILL);
  CHECK_FALSE(WaitAll(pids, 10));
  for (int r = 0; r < kRanks; ++r) {
    const RankSummary s = ReadRank(out, r);
    REQUIRE(s.found);
    REQUIRE(s.live.has_value());
    REQUIRE(s.live->comms.size() == 1);
    const auto& comm = s.live->comms[0];
    INFO("rank " << r);
    CHECK(comm.last_seq_launched == (r == 2 ? 4u : 5u));
    CHECK(comm.last_seq_completed == 4u);
  }
}

TEST_CASE("sim_train on 8 ranks counts every launch and copy and sync and collective",
          "[preload][nccl][sim_train]") {
  constexpr int kRanks = 8;
  const std::string out = MakeTempDir(), counters = MakeTempDir();
  // run.sh's environment and torchrun command, but on a free rendezvous port: --standalone's
  // fixed 29400 would meet any other job on this machine.
  const std::string sim_dir = std::string(PT_SOURCE_DIR) + "/examples/sim_train";
  const Env env = {{"LD_PRELOAD", std::string(PT_LIBRARY) + ":" + PT_COUNTER},
                   {"LD_LIBRARY_PATH", PT_SIMGPU_LIB},
                   {"PYTHONPATH", sim_dir + ":" + PT_BUILD_DIR + "/examples/sim_train"},
                   {"SIMGPU_TIME_SCALE", "0.1"},
                   {"OMP_NUM_THREADS", "1"},
                   {"PYTHONDONTWRITEBYTECODE", "1"},
                   {"PERFTRACKER_DIR", out},
                   {"PERFTRACKER_JOB_ID", "simtrain"},
                   {"CALL_COUNTER_DIR", counters},
                   {"SIM_TRAIN_ID_EXCHANGE", "file"},
                   {"SIM_TRAIN_ID_DIR", counters}};
  REQUIRE(Run({"/usr/bin/python3", "-m", "torch.distributed.run", "--nnodes", "1", "--rdzv_backend",
               "c10d", "--rdzv_endpoint", "localhost:" + std::to_string(FreePort()),
               "--nproc_per_node", std::to_string(kRanks), "--redirects", "1", "--tee", "1",
               sim_dir + "/sim_train.py", "--iters", "20"},
              env, 300) == 0);
  uint64_t all_reduce_last = 0;
  for (int r = 0; r < kRanks; ++r) {
    INFO("rank " << r);
    const RankSummary s = ReadRank(out, r);
    REQUIRE(s.found);
    auto truth = ReadCounters(counters + "/rank-" + std::to_string(r) + ".txt");
    CHECK(truth.at("cudaLaunchKernel") > 0);
    CHECK(s.top.at("cudaLaunchKernel").count == uint64_t(truth.at("cudaLaunchKernel")));
    uint64_t kernels = 0, sampled = 0;
    for (const auto& [name, t] : s.kernels) kernels += t.count, sampled += t.device_samples;
    // Kernel patterns also hold launches the driver tier sees (cuBLAS, cuLaunchKernel).
    CHECK(kernels >= uint64_t(truth.at("cudaLaunchKernel")));
    CHECK(sampled > 0);
    CHECK(s.CountPrefix("cudaMemcpyAsync") == uint64_t(truth.at("cudaMemcpyAsync")));
    CHECK(s.CountPrefix("cudaMemcpy ") == uint64_t(truth.at("cudaMemcpy")));
    CHECK(s.CountPrefix("cudaMemsetAsync") == uint64_t(truth.at("cudaMemsetAsync")));
    CHECK(s.CountPrefix("cudaStreamSynchronize") == uint64_t(truth.at("cudaStreamSynchronize")));
    CHECK(s.CountPrefix("cudaDeviceSynchronize") == uint64_t(truth.at("cudaDeviceSynchronize")));
    CHECK(s.CountPrefix("cudaStreamWaitEvent") == uint64_t(truth.at("cudaStreamWaitEvent")));
    CHECK(s.CollectiveCount("ncclAllReduce") == uint64_t(truth.at("ncclAllReduce")));
    const CollectiveTotals* ar = Find(s, "ncclAllReduce");
    REQUIRE(ar != nullptr);
    if (r == 0) all_reduce_last = ar->last_seq_launched;
    CHECK(ar->last_seq_launched == all_reduce_last);
    CHECK(ar->comm_size == kRanks);
    // The Python context of native calls: launches made under sim_train's Python code are
    // attributed to the Python function that made them.
    uint64_t from_python = 0;
    bool train_code = false;
    for (const auto& [name, t] : s.py_native) {
      if (!s.kernels.contains(name.substr(name.rfind(" > ") + 3))) continue;
      from_python += t.count;
      train_code |= name.find("sim_train") != std::string::npos;
    }
    CHECK(from_python * 10 >= uint64_t(truth.at("cudaLaunchKernel")) * 9);
    CHECK(train_code);
  }
}
