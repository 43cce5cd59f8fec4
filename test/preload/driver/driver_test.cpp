// The driver tier and the cuBLAS hooks, on simgpu (label `preload`):
//  - dlsym keeps glibc's caller-relative semantics with the library preloaded, tier off and on;
//  - a cuBLAS-style driver client prints the same transcript with and without the tier, and
//    with it every driver launch, kernel and GEMM is counted, with device time;
//  - an unknown driver version turns the tier off with one warning, nothing else changes;
//  - sim_train: every GEMM and every NCCL kernel counted exactly; a slowed GPU shows in its GEMMs.
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "test/preload/cuda/ring_summary.h"

namespace pt = perftracker::test;

namespace {

// Drops the "info" lines (where pointers live: the tier changes that, by design).
std::string Transcript(const std::string& out) {
  std::istringstream in(out);
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.rfind("info ", 0) != 0) kept += line + "\n";
  }
  return kept;
}

pt::Env TierEnv(const std::string& dir, const char* driver) {
  return {{"LD_PRELOAD", PERFTRACKER_LIB},
          {"LD_LIBRARY_PATH", SIMGPU_LIB_DIR},
          {"RANK", "0"},
          {"WORLD_SIZE", "1"},
          {"PERFTRACKER_DIR", dir},
          {"PERFTRACKER_JOB_ID", "driver-test"},
          {"PERFTRACKER_DRIVER", driver},
          {"PERFTRACKER_SAMPLE_EVERY", "1"},
          {"SIMGPU_TIME_SCALE", "0.02"}};
}

uint64_t SumPrefix(const std::map<std::string, pt::Totals>& m, const std::string& prefix,
                   uint64_t pt::Totals::*field) {
  uint64_t sum = 0;
  for (const auto& [name, t] : m) {
    if (name.rfind(prefix, 0) == 0) sum += t.*field;
  }
  return sum;
}

// 2*m*n*k*batch of a GEMM pattern's name ("cublasGemmEx ... m=2048 n=8192 k=2048 [batch=4]").
// The name holds the shape class; for power-of-two dimensions that is the exact shape.
uint64_t FlopsOfName(const std::string& name) {
  auto dim = [&](const char* key) -> uint64_t {
    const size_t at = name.find(key);
    return at == std::string::npos ? 1 : std::stoull(name.substr(at + std::strlen(key)));
  };
  return 2 * dim(" m=") * dim(" n=") * dim(" k=") * dim(" batch=");
}

}  // namespace

TEST_CASE("dlsym answers as glibc's for RTLD_NEXT and RTLD_DEFAULT callers", "[driver][dlsym]") {
  const pt::Env base = {{"LD_LIBRARY_PATH", PROBE_DIR}};
  std::string plain, off, on;
  REQUIRE(pt::Run({DLSYM_PROBE, PROBE_LOCAL_LIB}, base, 30, &plain) == 0);
  CHECK(plain.find("exe RTLD_NEXT probe_target 3") != std::string::npos);
  CHECK(plain.find("lib RTLD_NEXT probe_target 2") != std::string::npos);
  CHECK(plain.find("local loaded 1") != std::string::npos);
  pt::Env env = TierEnv(pt::MakeTempDir(), "0");
  env.push_back({"LD_LIBRARY_PATH", PROBE_DIR});
  REQUIRE(pt::Run({DLSYM_PROBE, PROBE_LOCAL_LIB}, env, 30, &off) == 0);
  CHECK(off == plain);
  env = TierEnv(pt::MakeTempDir(), "1");
  env.push_back({"LD_LIBRARY_PATH", PROBE_DIR});
  REQUIRE(pt::Run({DLSYM_PROBE, PROBE_LOCAL_LIB}, env, 30, &on) == 0);
  CHECK(on == plain);
}

TEST_CASE("a driver client gets the same results with and without the tier", "[driver]") {
  std::string plain, off, on;
  pt::Env plain_env = {{"LD_LIBRARY_PATH", SIMGPU_LIB_DIR}, {"SIMGPU_TIME_SCALE", "0.02"}};
  REQUIRE(pt::Run({DRIVER_CLIENT}, plain_env, 60, &plain) == 0);
  const std::string off_dir = pt::MakeTempDir();
  REQUIRE(pt::Run({DRIVER_CLIENT}, TierEnv(off_dir, "0"), 60, &off) == 0);
  const std::string on_dir = pt::MakeTempDir();
  REQUIRE(pt::Run({DRIVER_CLIENT}, TierEnv(on_dir, "1"), 60, &on) == 0);
  REQUIRE(Transcript(plain).find("cuLaunchKernel rc=0 x100") != std::string::npos);
  CHECK(Transcript(off) == Transcript(plain));
  CHECK(Transcript(on) == Transcript(plain));
  // The tier hands out our wrappers for the launch entry points only.
  CHECK(on.find("info cuLaunchKernel -> " PERFTRACKER_LIB) != std::string::npos);
  CHECK(on.find("info cuGetExportTable -> " PERFTRACKER_LIB) == std::string::npos);
  CHECK(off.find("info cuLaunchKernel -> " PERFTRACKER_LIB) == std::string::npos);

  const pt::RankSummary tier = pt::ReadRank(on_dir, 0);
  REQUIRE(tier.found);
  // Successful launches count under their kernel; every call under its API function.
  CHECK(tier.kernels.at("client_kernel_gemm_like").count == 100);
  // Captured launches count as captured (as in the runtime tier), never when replayed.
  CHECK(tier.kernels.at("client_kernel_small").count == 20 + 10 + 5);
  CHECK(tier.kernels.at("client_kernel_small").captured == 2);
  CHECK(tier.kernels.at("client_kernel_gemm_like").device_samples == 100);
  CHECK(tier.kernels.at("client_kernel_gemm_like").DeviceMean() > 0);
  // + 2 refused and cuBLAS's own launches (one per GEMM, through the driver); 2 captured.
  CHECK(tier.top.at("cuLaunchKernel").count == 100 + 20 + 2 + 59);
  CHECK(tier.top.at("cuLaunchKernel").captured == 2);
  CHECK(tier.top.at("cuLaunchKernelEx").count == 10);
  CHECK(tier.top.at("cuLaunchCooperativeKernel").count == 5);
  CHECK(tier.top.at("cuGraphLaunch").count == 3);
  // GEMMs: the API pattern (shape class) and the kernel cuBLAS launched through the driver.
  const auto gemm = tier.kernels.at("cublasGemmEx bf16,bf16->bf16 f32 tn m=4096 n=4096 k=4096");
  CHECK(gemm.count == 30);
  CHECK(gemm.device_samples == 30);
  CHECK(gemm.DeviceMean() > 0);
  CHECK(tier.kernels.at("cublasSgemm f32,f32->f32 f32 nn m=1024 n=1024 k=1024").count == 10);
  CHECK(tier.kernels.count(
            "cublasGemmStridedBatchedEx f16,f16->f16 f32 nt m=128 n=4096 k=128 batch=64") == 1);
  CHECK(tier.kernels.at("cublasLtMatmul f16,f16->f16 f32 tn m=1024 n=8192 k=2048").count == 7);
  const uint64_t gemm_calls = 30 + 10 + 5 + 3 + 2 + 2 + 7;
  CHECK(SumPrefix(tier.kernels, "cublas", &pt::Totals::count) == gemm_calls);
  CHECK(SumPrefix(tier.kernels, "sm90_xmma_gemm_", &pt::Totals::count) == gemm_calls);
  // Without the tier the GEMMs are still seen (cuBLAS hooks), their kernels are not.
  const pt::RankSummary plain_tier = pt::ReadRank(off_dir, 0);
  REQUIRE(plain_tier.found);
  CHECK(SumPrefix(plain_tier.kernels, "cublas", &pt::Totals::count) == gemm_calls);
  CHECK(SumPrefix(plain_tier.kernels, "sm90_xmma_gemm_", &pt::Totals::count) == 0);
  CHECK(plain_tier.top.count("cuLaunchKernel") == 0);
}

namespace {

// The driver-only client's stdout and stderr, with the writer's checks every 20 ms. Where a
// warning is expected the client lives until it is said (at most 30 s), not a fixed 300 ms that
// a loaded machine may pass without the writer's check running; where none is, 300 ms.
std::string DriverOnly(const std::string& dir, const char* driver,
                       const std::string& expected = "") {
  pt::Env env = TierEnv(dir, driver);
  env.push_back({"PERFTRACKER_TEST_WATCH_MS", "20"});
  std::string out;
  const std::string err = dir + "/client.stderr";
  // exec: the client is the rank, not the shell's helper.
  const char* script = "exec \"$0\" \"$1\" \"$2\" \"$3\" 2>\"$2\"";
  const std::string run_ms = expected.empty() ? "300" : "30000";
  REQUIRE(pt::Run({"/bin/sh", "-c", script, DRIVER_ONLY_CLIENT, run_ms, err, expected}, env, 60,
                  &out) == 0);
  std::ifstream is(err);
  return out + std::string(std::istreambuf_iterator<char>(is), std::istreambuf_iterator<char>());
}

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("a process the runtime hooks cannot see is told about the driver tier once",
          "[driver][static]") {
  const std::string warning = "PERFTRACKER_DRIVER=1 records them";
  const std::string off = DriverOnly(pt::MakeTempDir(), "0", warning);
  CHECK(off.find("launched 100") != std::string::npos);
  CHECK(Occurrences(off, warning) == 1);
  // With the tier on its launches are recorded, and there is nothing to say.
  const std::string dir = pt::MakeTempDir();
  const std::string on = DriverOnly(dir, "1");
  CHECK(on.find("launched 100") != std::string::npos);
  CHECK(Occurrences(on, warning) == 0);
  const pt::RankSummary tier = pt::ReadRank(dir, 0);
  REQUIRE(tier.found);
  CHECK(tier.kernels.at("static_kernel").count == 100);
  // A process with a shared runtime beside the driver (driver_client) is never told.
  std::string shared;
  REQUIRE(pt::Run({"/bin/sh", "-c", "exec \"$0\" 2>&1", DRIVER_CLIENT},
                  [&] {
                    pt::Env env = TierEnv(pt::MakeTempDir(), "0");
                    env.push_back({"PERFTRACKER_TEST_WATCH_MS", "20"});
                    return env;
                  }(),
                  60, &shared) == 0);
  CHECK(shared.find("cuLaunchKernel rc=0") != std::string::npos);
  CHECK(Occurrences(shared, warning) == 0);
}

TEST_CASE("an unknown driver version turns the tier off with one warning", "[driver]") {
  const std::string dir = pt::MakeTempDir();
  pt::Env env = TierEnv(dir, "1");
  env.push_back({"SIMGPU_DRIVER_VERSION", "11080"});
  std::string plain, out;
  REQUIRE(pt::Run({DRIVER_CLIENT}, {{"LD_LIBRARY_PATH", SIMGPU_LIB_DIR}}, 60, &plain) == 0);
  REQUIRE(pt::Run({DRIVER_CLIENT}, env, 60, &out) == 0);
  CHECK(Transcript(out) == Transcript(plain));
  CHECK(out.find("info cuLaunchKernel -> " PERFTRACKER_LIB) == std::string::npos);
  const pt::RankSummary s = pt::ReadRank(dir, 0);
  REQUIRE(s.found);
  CHECK(s.top.count("cuLaunchKernel") == 0);
  CHECK(SumPrefix(s.kernels, "cublas", &pt::Totals::count) > 0);  // cuBLAS hooks still on
}

TEST_CASE("sim_train: every GEMM and NCCL kernel counted, a slow GPU shows", "[driver][sim]") {
  const std::string dir = pt::MakeTempDir();
  constexpr int kIters = 8, kLayers = 2;
  const pt::Env env = {{"LD_PRELOAD", PERFTRACKER_LIB},
                       {"PERFTRACKER_DIR", dir},
                       {"PERFTRACKER_JOB_ID", "sim"},
                       {"PERFTRACKER_DRIVER", "1"},
                       {"PERFTRACKER_SAMPLE_EVERY", "1"},
                       {"SIMGPU_COMPUTE_SLOWDOWN", "1=2.0"},
                       // The kernels' device histograms (medians below) are detail columns,
                       // which the library writes in detailed windows only.
                       {"PERFTRACKER_MODE", "detailed"},
                       // Unscaled, so host gaps between an event and its kernel stay small
                       // next to GEMMs of hundreds of microseconds (a scale of 0.05 would
                       // stretch 10 us of Python into 200 us of device time).
                       {"SIMGPU_TIME_SCALE", "1"}};
  std::string out;
  REQUIRE(pt::Run({SIM_TRAIN_RUN, BUILD_DIR, "2", "--iters", std::to_string(kIters), "--layers",
                   std::to_string(kLayers), "--hidden", "2048", "--seq", "2048", "--vocab",
                   "8192", "--bucket-mb", "16", "--log-every", "4"},
                  env, 240, &out) == 0);
  const pt::RankSummary r0 = pt::ReadRank(dir, 0), r1 = pt::ReadRank(dir, 1);
  REQUIRE(r0.found);
  REQUIRE(r1.found);
  // Per step: 4 forward + 8 backward GEMMs per layer, the LM head's 1 + 2.
  const uint64_t gemms = kIters * (12 * kLayers + 3);
  for (const pt::RankSummary* r : {&r0, &r1}) {
    CHECK(SumPrefix(r->kernels, "cublasGemmEx ", &pt::Totals::count) == gemms);
    CHECK(SumPrefix(r->kernels, "sm90_xmma_gemm_", &pt::Totals::count) == gemms);
    CHECK(SumPrefix(r->kernels, "cublasGemmEx ", &pt::Totals::device_samples) >= gemms / 2);
    // Every call's floating-point operations, exactly (the analyzer's achieved TFLOP/s).
    for (const auto& [name, t] : r->kernels) {
      if (name.rfind("cublasGemmEx ", 0) != 0) continue;
      INFO(name);
      CHECK(t.bytes == t.count * FlopsOfName(name));
    }
    uint64_t collectives = 0;
    for (const auto& [key, c] : r->collectives) collectives += c.count;
    REQUIRE(collectives > 0);
    const uint64_t nccl_kernels = SumPrefix(r->kernels, "ncclDevKernel_", &pt::Totals::count);
    CHECK(nccl_kernels == collectives);
    CHECK(SumPrefix(r->kernels, "ncclDevKernel_", &pt::Totals::device_samples) > 0);
  }
  // The same GEMM shape class, compared like for like: rank 1's GPU is twice as slow. Medians:
  // a launching thread preempted between its start event and its kernel stretches that one
  // sample by however long the host kept it (milliseconds on a loaded 2-core host, with
  // autograd's device thread and NCCL's beside it); a lost slowdown reads as 1.
  int compared = 0;
  for (const auto& [name, t0] : r0.kernels) {
    if (name.rfind("cublasGemmEx ", 0) != 0 || t0.device_samples == 0) continue;
    const auto it = r1.kernels.find(name);
    REQUIRE(it != r1.kernels.end());
    const double ratio = it->second.DeviceMedian() / t0.DeviceMedian();
    INFO(name << " ratio " << ratio);
    CHECK(ratio > 1.6);
    CHECK(ratio < 2.4);
    ++compared;
  }
  CHECK(compared >= 4);
}
