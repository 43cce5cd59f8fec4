// NCCL stand-in across real processes: collectives wait for the last rank, the fault knobs do
// what README.md says, and hangs hang. Each case forks its ranks (tests/mp_harness.h); the parent
// only asserts. Device timings are exact model values (the device clock is shared through
// CLOCK_MONOTONIC); only host-side skew is noisy, so checks use margins or take the minimum over
// ranks (the last rank to arrive measures the pure modelled duration).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <tuple>

#include "tests/mp_harness.h"
#include "tests/test_kernels.h"

namespace {

using simgpu_test::Env;
using simgpu_test::RankContext;
using simgpu_test::RankResult;
using simgpu_test::RunRanks;

constexpr size_t kMiB = 1 << 20;

double WallMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Per-rank setup shared by the bodies below.
struct Rank {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  void* buffer = nullptr;

  explicit Rank(RankContext& ctx, size_t bytes = 4 * kMiB) {
    cudaSetDevice(0);
    ncclCommInitRank(&comm, ctx.nranks, ctx.id, ctx.rank);
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaMalloc(&buffer, bytes);
  }
  // Times the work `enqueue` puts on the stream and returns elapsed ms. The gate makes the work
  // start exactly when the start event completes.
  template <class Enqueue>
  double Timed(Enqueue enqueue) {
    simgpu_test::Gate gate(stream);
    cudaEventRecord(start, stream);
    enqueue();
    cudaEventRecord(stop, stream);
    gate.Open();
    cudaStreamSynchronize(stream);
    float ms = -1;
    cudaEventElapsedTime(&ms, start, stop);
    return ms;
  }
  // Times one all-reduce of `bytes` on `c` (default: the world).
  double TimedAllReduce(size_t bytes, ncclComm_t c = nullptr) {
    return Timed([&] {
      ncclAllReduce(buffer, buffer, bytes / 4, ncclFloat32, ncclSum, c ? c : comm, stream);
    });
  }
  // Times one GEMM modelled at `ns` (before any slowdown).
  double TimedGemm(int64_t ns) { return TimedKernel(simgpu_test::GemmKernel(), ns); }
  double TimedKernel(const void* kernel, int64_t ns) {
    return Timed([&] {
      cudaLaunchKernel(kernel, simgpu_test::GridForNs(ns), dim3(simgpu_test::kThreads), nullptr, 0,
                       stream);
    });
  }
  void Barrier() {
    ncclAllReduce(buffer, buffer, 1, ncclFloat32, ncclSum, comm, stream);
    cudaStreamSynchronize(stream);
  }
};

double MinOver(const std::vector<RankResult>& results, int index, std::vector<int> ranks) {
  double m = 1e300;
  for (int r : ranks) m = std::min(m, results[r].values[index]);
  return m;
}

void RequireAllFinished(const std::vector<RankResult>& results) {
  for (size_t r = 0; r < results.size(); ++r) {
    INFO("rank " << r);
    REQUIRE(results[r].finished);
    REQUIRE(results[r].exit_code == 0);
  }
}

// Ring all-reduce model: latency + 2(n-1)/n * bytes / bandwidth (GB/s == bytes/ns), in ms.
double RingMs(size_t bytes, int n, double gbps) {
  return (10000.0 + 2.0 * (n - 1) / n * static_cast<double>(bytes) / gbps) / 1e6;
}

}  // namespace

TEST_CASE("an all-reduce across 4 processes waits for the last rank", "[simgpu][nccl]") {
  auto results = RunRanks(
      4, {{"SIMGPU_TIME_SCALE", "0.05"}},
      [](RankContext& ctx) {
        Rank r(ctx, 64 * kMiB);
        r.Barrier();
        if (ctx.rank == 3) std::this_thread::sleep_for(std::chrono::milliseconds(300));
        ctx.result->values[0] = WallMs();  // when this rank issued
        ctx.result->values[1] = r.TimedAllReduce(64 * kMiB);
        ctx.result->values[2] = WallMs();  // when its synchronize returned
        int n = 0;
        ncclCommCount(r.comm, &n);
        int me = -1;
        ncclCommUserRank(r.comm, &me);
        int version = 0;
        ncclGetVersion(&version);
        ctx.result->progress = (n == 4) + (me == ctx.rank) + (version == NCCL_VERSION_CODE);
      },
      20000);
  RequireAllFinished(results);
  for (int rank = 0; rank < 3; ++rank) {
    INFO("rank " << rank);
    CHECK(results[rank].progress == 3);
    CHECK(results[rank].values[2] >= results[3].values[0]);  // returned after rank 3 issued
    CHECK(results[rank].values[1] >= 0.9 * 300 / 0.05);      // and the device waited (sim ms)
  }
  // The last rank measures the modelled duration alone.
  CHECK(results[3].values[1] == Approx(RingMs(64 * kMiB, 4, 150)).margin(0.5));
}

TEST_CASE("a compute slowdown slows one rank and its peers wait in the collective",
          "[simgpu][nccl]") {
  auto results = RunRanks(
      4, {{"SIMGPU_COMPUTE_SLOWDOWN", "2=3"}},
      [](RankContext& ctx) {
        Rank r(ctx);
        simgpu_test::RegisterTestKernels();
        r.Barrier();
        ctx.result->values[0] = r.TimedGemm(20000000 + 2000);
        ctx.result->values[1] = r.TimedAllReduce(4 * kMiB);
      },
      20000);
  RequireAllFinished(results);
  CHECK(results[2].values[0] == Approx(60.006).margin(0.01));
  for (int rank : {0, 1, 3}) {
    INFO("rank " << rank);
    CHECK(results[rank].values[0] == Approx(20.002).margin(0.01));
    CHECK(results[rank].values[1] > 25.0);  // waited ~40 ms for rank 2
  }
  CHECK(results[2].values[1] < 15.0);  // rank 2 arrived last
}

TEST_CASE("a kernel slowdown slows the kernels of that name on every rank, and no other",
          "[simgpu][nccl]") {
  auto results = RunRanks(
      2, {{"SIMGPU_KERNEL_SLOWDOWN", "gemm=1.5"}},
      [](RankContext& ctx) {
        Rank r(ctx);
        simgpu_test::RegisterTestKernels();
        r.Barrier();
        ctx.result->values[0] = r.TimedGemm(10000000 + 2000);
        ctx.result->values[1] = r.TimedKernel(simgpu_test::ElementwiseKernel(), 10000000 + 2000);
      },
      20000);
  RequireAllFinished(results);
  for (int rank : {0, 1}) {
    INFO("rank " << rank);
    CHECK(results[rank].values[0] == Approx(15.003).margin(0.01));  // "gemm_kernel"
    CHECK(results[rank].values[1] == Approx(10.002).margin(0.01));  // "elementwise_kernel"
  }
}

TEST_CASE("a kernel slowdown by tile slows the wide cuBLAS GEMMs and not the square ones",
          "[simgpu][nccl]") {
  auto body = [](RankContext& ctx) {
    Rank r(ctx);
    cublasHandle_t h = nullptr;
    cublasCreate(&h);
    cublasSetStream(h, r.stream);
    void* buffer = nullptr;
    cudaMalloc(&buffer, 64 * kMiB);
    const float one = 1;
    auto timed = [&](int m, int n, int k) {
      return r.Timed([&] {
        cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, buffer, CUDA_R_16BF, k, buffer,
                     CUDA_R_16BF, k, &one, buffer, CUDA_R_16BF, m, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT);
      });
    };
    ctx.result->values[0] = timed(4096, 4096, 4096);  // square: tile 128x128
    ctx.result->values[1] = timed(2048, 8192, 4096);  // wide: tile 128x256
    cublasDestroy(h);
  };
  auto plain = RunRanks(2, {}, body, 20000);
  auto slowed = RunRanks(2, {{"SIMGPU_KERNEL_SLOWDOWN", "tilesize128x256=1.5"}}, body, 20000);
  RequireAllFinished(plain);
  RequireAllFinished(slowed);
  for (int rank : {0, 1}) {
    INFO("rank " << rank);
    REQUIRE(plain[rank].values[1] > 0);
    CHECK(slowed[rank].values[0] == Approx(plain[rank].values[0]).epsilon(0.001));
    CHECK(slowed[rank].values[1] == Approx(1.5 * plain[rank].values[1]).epsilon(0.001));
  }
}

TEST_CASE("a compute slowdown confined to a span of NCCL ops begins and ends there",
          "[simgpu][nccl]") {
  // Rank 1 is slow once it has issued 2 NCCL ops and until it has issued 4: of the GEMMs timed
  // after the barrier and each of 4 all-reduces (2..5 ops issued), the first two take 3x.
  auto results = RunRanks(
      2, {{"SIMGPU_COMPUTE_SLOWDOWN", "1=3@2-4"}},
      [](RankContext& ctx) {
        Rank r(ctx);
        simgpu_test::RegisterTestKernels();
        r.Barrier();  // op 0
        for (int i = 0; i < 4; ++i) {
          r.TimedAllReduce(kMiB);
          ctx.result->values[i] = r.TimedGemm(10000000 + 2000);
        }
      },
      20000);
  RequireAllFinished(results);
  for (int i = 0; i < 4; ++i) {
    INFO("GEMM with " << i + 2 << " ops issued");
    CHECK(results[0].values[i] == Approx(10.002).margin(0.01));
    const double factor = i < 2 ? 3 : 1;
    CHECK(results[1].values[i] == Approx(10.002 * factor).margin(0.01));
  }
}

TEST_CASE("a link factor slows exactly the collectives that cross that link", "[simgpu][nccl]") {
  constexpr size_t kBytes = 256 * kMiB;
  auto body = [](RankContext& ctx) {
    Rank r(ctx, kBytes);
    ncclComm_t pair = nullptr;  // {0,1} and {2,3}
    ncclCommSplit(r.comm, ctx.rank / 2, ctx.rank, &pair, nullptr);
    r.Barrier();
    ctx.result->values[0] = r.TimedAllReduce(kBytes);
    ctx.result->values[1] = r.TimedAllReduce(kBytes, pair);
    int pair_size = 0;
    ncclCommCount(pair, &pair_size);
    ctx.result->progress = pair_size;
    ncclCommDestroy(pair);
  };
  SECTION("one bad link between ranks 2 and 3") {
    auto results = RunRanks(4, {{"SIMGPU_RANKS_PER_NODE", "4"}, {"SIMGPU_LINK_FACTOR", "2-3=0.1"}},
                            body, 30000);
    RequireAllFinished(results);
    CHECK(results[0].progress == 2);
    CHECK(MinOver(results, 0, {0, 1, 2, 3}) == Approx(RingMs(kBytes, 4, 15)).epsilon(0.03));
    CHECK(MinOver(results, 1, {0, 1}) == Approx(RingMs(kBytes, 2, 150)).epsilon(0.03));
    CHECK(MinOver(results, 1, {2, 3}) == Approx(RingMs(kBytes, 2, 15)).epsilon(0.03));
  }
  SECTION("every link of node 1 at half speed, two nodes") {
    auto results = RunRanks(4, {{"SIMGPU_RANKS_PER_NODE", "2"}, {"SIMGPU_LINK_FACTOR", "n1=0.5"}},
                            body, 30000);
    RequireAllFinished(results);
    // The world ring crosses the NIC (25 GB/s) on links that touch node 1.
    CHECK(MinOver(results, 0, {0, 1, 2, 3}) == Approx(RingMs(kBytes, 4, 12.5)).epsilon(0.03));
    CHECK(MinOver(results, 1, {0, 1}) == Approx(RingMs(kBytes, 2, 150)).epsilon(0.03));
    CHECK(MinOver(results, 1, {2, 3}) == Approx(RingMs(kBytes, 2, 75)).epsilon(0.03));
  }
}

TEST_CASE("send and receive pair up inside a group", "[simgpu][nccl]") {
  constexpr size_t kBytes = 64 * kMiB;
  auto results = RunRanks(
      4, {{"SIMGPU_RANKS_PER_NODE", "4"}},
      [](RankContext& ctx) {
        Rank r(ctx, kBytes);
        r.Barrier();
        simgpu_test::Gate gate(r.stream);
        cudaEventRecord(r.start, r.stream);
        ncclGroupStart();
        ncclSend(r.buffer, kBytes, ncclUint8, (ctx.rank + 1) % 4, r.comm, r.stream);
        ncclRecv(r.buffer, kBytes, ncclUint8, (ctx.rank + 3) % 4, r.comm, r.stream);
        ncclGroupEnd();
        cudaEventRecord(r.stop, r.stream);
        gate.Open();
        cudaStreamSynchronize(r.stream);
        float ms = 0;
        cudaEventElapsedTime(&ms, r.start, r.stop);
        ctx.result->values[0] = ms;
      },
      20000);
  RequireAllFinished(results);
  CHECK(MinOver(results, 0, {0, 1, 2, 3}) ==
        Approx((10000.0 + kBytes / 150.0) / 1e6).epsilon(0.05));
}

TEST_CASE("the hang knob stops a rank and its peers hang in the collective",
          "[simgpu][nccl][hang]") {
  auto results = RunRanks(
      4, {{"SIMGPU_TIME_SCALE", "0.05"}, {"SIMGPU_HANG", "3:2"}},
      [](RankContext& ctx) {
        Rank r(ctx);
        for (int i = 0; i < 4; ++i) {
          r.Barrier();
          ctx.result->progress = i + 1;
        }
      },
      2500);
  for (int rank = 0; rank < 4; ++rank) {
    INFO("rank " << rank);
    CHECK(results[rank].timed_out);
    CHECK(results[rank].progress == 2);  // ops 0 and 1 completed, op 2 never does
  }
}

TEST_CASE("the stall knob delays one collective for everybody", "[simgpu][nccl][hang]") {
  auto body = [](RankContext& ctx) {
    Rank r(ctx);
    r.Barrier();                   // op 0
    for (int i = 0; i < 2; ++i) {  // ops 1 and 2
      ctx.result->values[i] = r.TimedAllReduce(4 * kMiB);
      ctx.result->progress = i + 1;
    }
  };
  SECTION("for a while") {
    auto results =
        RunRanks(4, {{"SIMGPU_TIME_SCALE", "0.05"}, {"SIMGPU_STALL", "1:1:500"}}, body, 20000);
    RequireAllFinished(results);
    CHECK(MinOver(results, 0, {0, 1, 2, 3}) >= 500.0);
    CHECK(MinOver(results, 1, {0, 1, 2, 3}) < 50.0);
  }
  SECTION("forever") {
    auto results =
        RunRanks(4, {{"SIMGPU_TIME_SCALE", "0.05"}, {"SIMGPU_STALL", "1:1"}}, body, 2500);
    for (const RankResult& r : results) {
      CHECK(r.timed_out);
      CHECK(r.progress == 0);
    }
  }
}

TEST_CASE("a dead peer is reported and abort releases the waiters", "[simgpu][nccl]") {
  auto results = RunRanks(
      2, {{"SIMGPU_TIME_SCALE", "0.05"}},
      [](RankContext& ctx) {
        Rank r(ctx);
        if (ctx.rank == 1) _exit(0);  // dies without reaching the collective
        ncclAllReduce(r.buffer, r.buffer, 1, ncclFloat32, ncclSum, r.comm, r.stream);
        ncclResult_t error = ncclSuccess;
        for (int i = 0; i < 100 && error == ncclSuccess; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          ncclCommGetAsyncError(r.comm, &error);
        }
        ctx.result->progress = error == ncclRemoteError;
        ncclCommAbort(r.comm);
        cudaStreamSynchronize(r.stream);
        ctx.result->progress += 1;
      },
      10000);
  REQUIRE(results[0].finished);
  CHECK(results[0].progress == 2);
}

TEST_CASE("jitter is deterministic under a seed", "[simgpu][nccl]") {
  auto body = [](RankContext& ctx) {
    simgpu_test::RegisterTestKernels();
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int i = 0; i < 8; ++i) {
      simgpu_test::Gate gate(s);
      cudaEventRecord(a, s);
      cudaLaunchKernel(simgpu_test::GemmKernel(), simgpu_test::GridForNs(1000000 + 2000),
                       dim3(simgpu_test::kThreads), nullptr, 0, s);
      cudaEventRecord(b, s);
      gate.Open();
      cudaStreamSynchronize(s);
      float ms = 0;
      cudaEventElapsedTime(&ms, a, b);
      ctx.result->values[i] = ms;
    }
  };
  Env seven = {{"SIMGPU_TIME_SCALE", "0.05"}, {"SIMGPU_JITTER", "0.2"}, {"SIMGPU_SEED", "7"}};
  Env eight = {{"SIMGPU_TIME_SCALE", "0.05"}, {"SIMGPU_JITTER", "0.2"}, {"SIMGPU_SEED", "8"}};
  auto first = RunRanks(1, seven, body, 10000);
  auto again = RunRanks(1, seven, body, 10000);
  auto other = RunRanks(1, eight, body, 10000);
  RequireAllFinished(first);
  bool all_same = true;
  bool any_differs = false;
  for (int i = 0; i < 8; ++i) {
    all_same = all_same && first[0].values[i] == again[0].values[i];
    any_differs = any_differs || first[0].values[i] != other[0].values[i];
    CHECK(first[0].values[i] >= 0.8 * 1.002 - 1e-3);
    CHECK(first[0].values[i] <= 1.2 * 1.002 + 1e-3);
  }
  CHECK(all_same);
  CHECK(any_differs);
}

TEST_CASE("16 ranks share 2 cores without spinning", "[simgpu][nccl]") {
  auto results = RunRanks(
      16, {{"SIMGPU_TIME_SCALE", "0.05"}},
      [](RankContext& ctx) {
        Rank r(ctx);
        double wall0 = WallMs();
        timespec cpu0;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu0);
        for (int i = 0; i < 10; ++i) {
          if (ctx.rank == 15) std::this_thread::sleep_for(std::chrono::milliseconds(20));
          r.TimedAllReduce(64 * kMiB);
        }
        timespec cpu1;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu1);
        double wall1 = WallMs();
        ctx.result->values[0] = wall1 - wall0;
        ctx.result->values[1] =
            (cpu1.tv_sec - cpu0.tv_sec) * 1e3 + (cpu1.tv_nsec - cpu0.tv_nsec) / 1e6;
        ctx.result->values[2] = wall0;
        ctx.result->values[3] = wall1;
      },
      60000);
  RequireAllFinished(results);
  // Rank 15 sleeps 200 ms after its own start, so nobody's last all-reduce can end sooner
  // than that. Measured from each rank's own start it could: with 16 processes on 2 cores a
  // rank may leave communicator init a few ms after rank 15 did.
  double sleeper_start = results[15].values[2];
  for (int rank = 0; rank < 15; ++rank) {
    INFO("rank " << rank);
    CHECK(results[rank].values[3] - sleeper_start >= 200.0);
    // It waited out most of that, burning a small fraction of its wall time.
    CHECK(results[rank].values[1] < 0.25 * results[rank].values[0]);
  }
}

namespace {

struct PluginCell {
  int rank = -1, peer = -1, is_send = 0;
  unsigned long long bytes = 0, ops = 0;
  long long wire_ns = 0;
};

// Reads what tests/test_profiler.cpp wrote at finalize, one file per (process, communicator).
std::vector<PluginCell> ReadCells(const std::string& dir, int* nodes) {
  std::vector<PluginCell> out;
  for (int attempt = 0; attempt < 100 && out.empty(); ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const std::string cmd = "cat " + dir + "/*.txt 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) continue;
    char line[256];
    int rank = -1;
    while (std::fgets(line, sizeof line, p)) {
      int nranks = 0, n = 0, r = 0;
      PluginCell c;
      if (std::sscanf(line, "comm %d %d %d", &nranks, &n, &r) == 3) {
        rank = r, *nodes = n;
      } else if (std::sscanf(line, "cell %d %d %llu %lld %llu", &c.peer, &c.is_send, &c.bytes,
                             &c.wire_ns, &c.ops) == 5) {
        c.rank = rank;
        out.push_back(c);
      }
    }
    pclose(p);
  }
  return out;
}

}  // namespace

TEST_CASE("the profiler plugin sees network links only, and the slow link's sender transmits",
          "[simgpu][nccl][profiler]") {
  constexpr size_t kBytes = 64 * kMiB;
  constexpr int kReps = 4;
  char dir_template[] = "/tmp/simgpu-prof-XXXXXX";
  REQUIRE(mkdtemp(dir_template) != nullptr);
  const std::string dir = dir_template;
  auto body = [](RankContext& ctx) {
    Rank r(ctx, kBytes);
    r.Barrier();
    for (int i = 0; i < kReps; ++i) r.TimedAllReduce(kBytes);
    // Point-to-point: 0 -> 2 crosses the network, 0 -> 1 stays on the node.
    if (ctx.rank == 0) {
      ncclSend(r.buffer, 8 * kMiB, ncclInt8, 2, r.comm, r.stream);
      ncclSend(r.buffer, 8 * kMiB, ncclInt8, 1, r.comm, r.stream);
    } else if (ctx.rank == 1 || ctx.rank == 2) {
      ncclRecv(r.buffer, 8 * kMiB, ncclInt8, 0, r.comm, r.stream);
    }
    cudaStreamSynchronize(r.stream);
    r.Barrier();
    ncclCommDestroy(r.comm);
  };
  // Two nodes of two: the world ring 0-1-2-3 crosses the network at 1->2 and 3->0.
  auto results = RunRanks(4,
                          {{"SIMGPU_RANKS_PER_NODE", "2"},
                           {"SIMGPU_LINK_FACTOR", "1-2=0.3"},
                           {"NCCL_PROFILER_PLUGIN", SIMGPU_TEST_PROFILER},
                           {"SIMGPU_TEST_PROFILER_OUT", dir}},
                          body, 60000);
  RequireAllFinished(results);
  int nodes = 0;
  const std::vector<PluginCell> cells = ReadCells(dir, &nodes);
  std::filesystem::remove_all(dir);
  CHECK(nodes == 2);
  std::map<std::tuple<int, int, int>, PluginCell> by;
  for (const PluginCell& c : cells) by[{c.rank, c.peer, c.is_send}] = c;
  INFO("cells: " << cells.size());
  // Ring hops across nodes (send and receive ends) and the one cross-node send: nothing else.
  REQUIRE(by.size() == 6);
  const auto wire_bytes = static_cast<unsigned long long>(2.0 * 3 / 4 * kBytes);
  for (const auto& key : {std::tuple{1, 2, 1}, {3, 0, 1}, {2, 1, 0}, {0, 3, 0}}) {
    INFO("rank " << std::get<0>(key) << " peer " << std::get<1>(key));
    REQUIRE(by.count(key) == 1);
    CHECK(by[key].ops == kReps + 2);  // the two barriers cross the same hops
    CHECK(by[key].bytes >= kReps * wire_bytes);
  }
  REQUIRE(by.count({0, 2, 1}) == 1);
  CHECK(by[{0, 2, 1}].bytes == 8 * kMiB);
  REQUIRE(by.count({2, 0, 0}) == 1);
  // Time on the wire: the slow hop's sender transmits ~1/0.3 times longer than the fast hop's,
  // which spends the rest of the collective waiting for data from upstream.
  const double slow = static_cast<double>(by[{1, 2, 1}].wire_ns);
  const double fast = static_cast<double>(by[{3, 0, 1}].wire_ns);
  const double expected_fast_ns = kReps * static_cast<double>(wire_bytes) / 25.0;
  CHECK(fast == Approx(expected_fast_ns).epsilon(0.25));
  CHECK(slow / fast > 2.5);
  CHECK(slow / fast < 4.5);
}
