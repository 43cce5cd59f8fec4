// libperftracker.so's CUDA runtime, NCCL and CUPTI hooks inside real processes: the workload
// programs of this folder and examples/sim_train on simgpu, the real CUDA libraries for
// transparency. Ground truth for counts comes from call_counter.so, preloaded after us.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "test/preload/cuda/ring_summary.h"

using namespace perftracker::test;  // NOLINT

namespace {

// Environment shared by every simgpu run: our library first, then the counter.
Env BaseEnv(const std::string& out, const std::string& counters) {
  return {{"LD_PRELOAD", std::string(PT_LIBRARY) + ":" + PT_COUNTER},
          {"LD_LIBRARY_PATH", PT_SIMGPU_LIB},
          {"PERFTRACKER_DIR", out},
          {"PERFTRACKER_JOB_ID", "cudatest"},
          {"CALL_COUNTER_DIR", counters},
          {"SIMGPU_TIME_SCALE", "0.05"},
          {"RANK", "0"},
          {"WORLD_SIZE", "1"}};
}

Env With(Env env, const Env& more) {
  for (const auto& kv : more) env.push_back(kv);
  return env;
}

}  // namespace

TEST_CASE("every runtime call of a program is counted exactly", "[preload][cuda]") {
  const std::string out = MakeTempDir(), counters = MakeTempDir();
  REQUIRE(Run({PT_WORKLOAD, "runtime"},
              With(BaseEnv(out, counters), {{"PERFTRACKER_SAMPLE_EVERY", "1"}})) == 0);
  const RankSummary s = ReadRank(out, 0);
  REQUIRE(s.found);
  auto truth = ReadCounters(counters);
  CHECK(truth["cudaLaunchKernel"] == 170);
  // 150 launches ran; 20 were captured into a graph (run by its 2 launches, not by them).
  CHECK(s.top.at("cudaLaunchKernel").count == 150);
  CHECK(s.top.at("cudaLaunchKernel").captured == 20);
  CHECK(s.kernels.at("gemm_kernel").count == 100);
  CHECK(s.kernels.at("gemm_kernel").captured == 20);
  CHECK(s.kernels.at("elementwise_kernel").count == 50);
  CHECK(s.top.at("cudaMemcpyAsync HtoD").count == 10);
  CHECK(s.top.at("cudaMemcpyAsync DtoH").count == 5);
  CHECK(s.CountPrefix("cudaMemcpyAsync") == uint64_t(truth["cudaMemcpyAsync"]));
  CHECK(s.top.at("cudaMemcpy HtoD").count == uint64_t(truth["cudaMemcpy"]));
  CHECK(s.top.at("cudaMemcpy HtoD").wait_ns > 0);
  CHECK(s.top.at("cudaMemcpyAsync HtoD").bytes == 10 * 4096);
  CHECK(s.top.at("cudaMemsetAsync").count == uint64_t(truth["cudaMemsetAsync"]));
  CHECK(s.top.at("cudaStreamSynchronize").count == uint64_t(truth["cudaStreamSynchronize"]));
  CHECK(s.top.at("cudaDeviceSynchronize").count == uint64_t(truth["cudaDeviceSynchronize"]));
  CHECK(s.top.at("cudaEventSynchronize").count == uint64_t(truth["cudaEventSynchronize"]));
  CHECK(s.top.at("cudaStreamWaitEvent").count == uint64_t(truth["cudaStreamWaitEvent"]));
  CHECK(s.top.at("cudaGraphLaunch").count == uint64_t(truth["cudaGraphLaunch"]));
  CHECK(s.top.at("cudaMalloc").count == 1);
  CHECK(s.top.at("cudaFree").count == 1);
  CHECK(s.top.at("cudaStreamSynchronize").wait_ns > 0);
  CHECK(s.top.at("cudaEventRecord").count == 6);
  CHECK(s.top.at("cudaMemcpy2DAsync HtoD").count == 3);
  CHECK(s.top.at("cudaMemcpy2DAsync HtoD").bytes == 3 * 64 * 32);
  CHECK(s.top.at("cudaMemcpy2D HtoD").count == 2);
  CHECK(s.top.at("cudaMemcpy2D HtoD").wait_ns > 0);
  CHECK(s.top.at("cudaMemcpy3DAsync DtoD").count == 2);
  CHECK(s.top.at("cudaMemcpy3DAsync DtoD").bytes == 2 * 64 * 16 * 2);
  // Call sites: children of the API function, named after the calling module and function.
  uint64_t site_launches = 0;
  bool named = false;
  for (const auto& [name, t] : s.children) {
    if (name.rfind("cudaLaunchKernel @ ", 0) != 0) continue;
    site_launches += t.count + t.captured;
    named |= name.find("pt_cuda_workload") != std::string::npos;
  }
  CHECK(site_launches == 170);
  CHECK(named);

  SECTION("sampled device time follows the model; captured launches are never timed") {
    // SAMPLE_EVERY=1 times every launch that is not being captured: 100 gemm, 50 elementwise.
    CHECK(s.kernels.at("gemm_kernel").device_samples == 100);
    CHECK(s.kernels.at("elementwise_kernel").device_samples == 50);
    CHECK(s.kernels.at("gemm_kernel").DeviceMean() == Approx(2002000).epsilon(0.02));
    CHECK(s.kernels.at("elementwise_kernel").DeviceMean() == Approx(402000).epsilon(0.02));
    CHECK(s.top.at("cudaMemcpyAsync HtoD").device_samples == 10);
    CHECK(truth["event_record_on_capturing_stream"] == 0);
  }
}

TEST_CASE("device time is sampled 1 in N launches per call site", "[preload][cuda]") {
  const std::string out = MakeTempDir(), counters = MakeTempDir();
  REQUIRE(Run({PT_WORKLOAD, "runtime"},
              With(BaseEnv(out, counters), {{"PERFTRACKER_SAMPLE_EVERY", "16"}})) == 0);
  const RankSummary s = ReadRank(out, 0);
  REQUIRE(s.found);
  // One call site, 1 in 16 (SampledCall: calls 0, 13, 34, 47, 68, 81 and 89 are gemm launches,
  // 102, 123 and 136 elementwise); captured launches are not counted and never timed.
  CHECK(s.kernels.at("gemm_kernel").device_samples == 7);
  CHECK(s.kernels.at("elementwise_kernel").device_samples == 3);
  CHECK(s.kernels.at("gemm_kernel").count == 100);
  CHECK(s.kernels.at("gemm_kernel").captured == 20);
  CHECK(ReadCounters(counters)["event_record_on_capturing_stream"] == 0);
}

TEST_CASE("graphs captured under the library are the graphs captured without it",
          "[preload][cuda]") {
  std::string plain, hooked;
  REQUIRE(Run({PT_WORKLOAD, "graphs"},
              {{"LD_LIBRARY_PATH", PT_SIMGPU_LIB}, {"SIMGPU_TIME_SCALE", "0.05"}}, 60, &plain) == 0);
  const std::string out = MakeTempDir(), counters = MakeTempDir();
  REQUIRE(Run({PT_WORKLOAD, "graphs"},
              With(BaseEnv(out, counters), {{"PERFTRACKER_SAMPLE_EVERY", "1"}}), 60, &hooked) == 0);
  INFO(plain);
  // 20 kernels and a memset per graph (node types 0 kernel, 2 memset), every call succeeded.
  const std::string graph = "begin=0 memset=0 end=0 | 21: 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 2";
  CHECK(plain == "here: " + graph + "\nthere: " + graph + "\n");
  CHECK(hooked == plain);
  const RankSummary s = ReadRank(out, 0);
  REQUIRE(s.found);
  // Launches: 1 ran, 40 were captured; the graphs ran 4 times.
  CHECK(s.top.at("cudaLaunchKernel").count == 1);
  CHECK(s.top.at("cudaLaunchKernel").captured == 40);
  CHECK(s.kernels.at("gemm_kernel").captured == 40);
  CHECK(s.top.at("cudaMemsetAsync").captured == 2);
  CHECK(s.top.count("cudaMemsetAsync") == 1);
  CHECK(s.top.at("cudaMemsetAsync").count == 0);
  CHECK(s.top.at("cudaGraphLaunch").count == 4);
  CHECK(s.top.at("cudaGraphLaunch").captured == 0);
  CHECK(ReadCounters(counters)["event_record_on_capturing_stream"] == 0);
}

TEST_CASE("disabled and non-rank processes pass through and write nothing", "[preload][cuda]") {
  for (const Env& extra : {Env{{"PERFTRACKER_ENABLE", "0"}}, Env{{"RANK", "\x01"}}}) {
    const std::string out = MakeTempDir(), counters = MakeTempDir();
    REQUIRE(Run({PT_WORKLOAD, "runtime"}, With(BaseEnv(out, counters), extra)) == 0);
    CHECK(FilesUnder(out).empty());
    CHECK(ReadCounters(counters)["cudaLaunchKernel"] == 170);  // every call still forwarded
  }
}

TEST_CASE("the real CUDA libraries see the same return codes through the hooks",
          "[preload][cuda]") {
  const std::string out = MakeTempDir();
  std::string plain, hooked;
  REQUIRE(Run({PT_REAL_WORKLOAD}, {{"RANK", "\x01"}}, 60, &plain) == 0);
  REQUIRE(Run({PT_REAL_WORKLOAD},
              {{"LD_PRELOAD", PT_LIBRARY},
               {"RANK", "0"},
               {"PERFTRACKER_DIR", out},
               {"PERFTRACKER_SAMPLE_EVERY", "1"}},
              60, &hooked) == 0);
  INFO(plain);
  CHECK(!plain.empty());
  CHECK(hooked == plain);
  // ... and the calls were really hooked and recorded, failures included.
  const RankSummary s = ReadRank(out, 0);
  REQUIRE(s.found);
  CHECK(s.top.count("cudaMalloc") == 1);
  CHECK(s.top.count("cudaLaunchKernel") == 1);
}

TEST_CASE("CUPTI mode times every kernel from activity records", "[preload][cuda][cupti]") {
  const std::string out = MakeTempDir(), counters = MakeTempDir();
  REQUIRE(Run({PT_WORKLOAD, "runtime"},
              With(BaseEnv(out, counters), {{"PERFTRACKER_CUPTI", "1"}})) == 0);
  const RankSummary s = ReadRank(out, 0);
  REQUIRE(s.found);
  // 100 direct launches and 2 replays of the 20 captured ones ran on the device.
  CHECK(s.kernels.at("gemm_kernel").device_samples == 140);
  CHECK(s.kernels.at("elementwise_kernel").device_samples == 50);
  CHECK(s.kernels.at("gemm_kernel").DeviceMean() == Approx(2002000).epsilon(0.02));
  CHECK(s.top.at("device memcpy HtoD").device_samples >= 10);
}

TEST_CASE("CUPTI mode backs off when the application already subscribed",
          "[preload][cuda][cupti]") {
  const std::string out = MakeTempDir(), counters = MakeTempDir();
  REQUIRE(Run({PT_WORKLOAD, "cupti-first"},
              With(BaseEnv(out, counters),
                   {{"PERFTRACKER_CUPTI", "1"}, {"PERFTRACKER_SAMPLE_EVERY", "1"}})) == 0);
  const RankSummary s = ReadRank(out, 0);
  REQUIRE(s.found);
  CHECK(s.kernels.at("gemm_kernel").device_samples == 100);  // timing events instead
}
