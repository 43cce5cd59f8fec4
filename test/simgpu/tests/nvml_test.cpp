// The NVML stand-in as a sampler uses it: dlopen("libnvidia-ml.so.1"), dlsym every entry point,
// find the rank's device through CUDA's PCI bus id. Each case runs in forked processes
// (RunRanks) because the knobs are read once per process; the children report values through
// RankResult and the parent checks them.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "core/config.h"
#include "nvml/nvml_abi.h"
#include "tests/mp_harness.h"

namespace {

using simgpu_test::RankContext;
using simgpu_test::RankResult;
using simgpu_test::RunRanks;

// The entry points, resolved by name as a consumer without a link-time dependency does.
struct Nvml {
  void* lib = nullptr;
  decltype(&nvmlInit_v2) init = nullptr;
  decltype(&nvmlShutdown) shutdown = nullptr;
  decltype(&nvmlDeviceGetCount_v2) count = nullptr;
  decltype(&nvmlDeviceGetHandleByIndex_v2) by_index = nullptr;
  decltype(&nvmlDeviceGetHandleByPciBusId_v2) by_bus = nullptr;
  decltype(&nvmlDeviceGetClockInfo) clock = nullptr;
  decltype(&nvmlDeviceGetMaxClockInfo) max_clock = nullptr;
  decltype(&nvmlDeviceGetCurrentClocksEventReasons) reasons = nullptr;
  decltype(&nvmlDeviceGetCurrentClocksThrottleReasons) throttle_reasons = nullptr;
  decltype(&nvmlDeviceGetTemperature) temperature = nullptr;
  decltype(&nvmlDeviceGetPowerUsage) power = nullptr;
  decltype(&nvmlDeviceGetCurrPcieLinkWidth) width = nullptr;
  decltype(&nvmlDeviceGetMaxPcieLinkWidth) max_width = nullptr;
  decltype(&nvmlDeviceGetPcieReplayCounter) replays = nullptr;
  decltype(&nvmlDeviceGetTotalEccErrors) ecc = nullptr;
  decltype(&nvmlDeviceGetNvLinkErrorCounter) nvlink_errors = nullptr;
  int resolved = 0;  // entry points found

  Nvml() {
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    Resolve(&init, "nvmlInit_v2");
    Resolve(&shutdown, "nvmlShutdown");
    Resolve(&count, "nvmlDeviceGetCount_v2");
    Resolve(&by_index, "nvmlDeviceGetHandleByIndex_v2");
    Resolve(&by_bus, "nvmlDeviceGetHandleByPciBusId_v2");
    Resolve(&clock, "nvmlDeviceGetClockInfo");
    Resolve(&max_clock, "nvmlDeviceGetMaxClockInfo");
    Resolve(&reasons, "nvmlDeviceGetCurrentClocksEventReasons");
    Resolve(&throttle_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
    Resolve(&temperature, "nvmlDeviceGetTemperature");
    Resolve(&power, "nvmlDeviceGetPowerUsage");
    Resolve(&width, "nvmlDeviceGetCurrPcieLinkWidth");
    Resolve(&max_width, "nvmlDeviceGetMaxPcieLinkWidth");
    Resolve(&replays, "nvmlDeviceGetPcieReplayCounter");
    Resolve(&ecc, "nvmlDeviceGetTotalEccErrors");
    Resolve(&nvlink_errors, "nvmlDeviceGetNvLinkErrorCounter");
  }
  static constexpr int kEntryPoints = 16;

  template <typename F>
  void Resolve(F* f, const char* name) {
    *f = reinterpret_cast<F>(dlsym(lib, name));
    resolved += *f != nullptr;
  }

  // The device of CUDA ordinal `ordinal`, found as the sampler does: through its bus id.
  nvmlDevice_t DeviceOfCuda(int ordinal) const {
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), ordinal) != cudaSuccess) return nullptr;
    nvmlDevice_t device = nullptr;
    return by_bus(bus, &device) == NVML_SUCCESS ? device : nullptr;
  }
};

void RequireAllFinished(const std::vector<RankResult>& results) {
  for (size_t r = 0; r < results.size(); ++r) {
    INFO("rank " << r << " exit " << results[r].exit_code);
    REQUIRE(results[r].finished);
    REQUIRE(results[r].exit_code == 0);
  }
}

unsigned Clock(const Nvml& nvml, nvmlDevice_t device, nvmlClockType_t type) {
  unsigned mhz = 0;
  return nvml.clock(device, type, &mhz) == NVML_SUCCESS ? mhz : 0;
}

}  // namespace

TEST_CASE("the bus id CUDA gives finds the same device in NVML, in CUDA's and NVML's forms") {
  auto results = RunRanks(
      1, {{"SIMGPU_DEVICE_COUNT", "4"}},
      [](RankContext& ctx) {
        Nvml nvml;
        ctx.result->values[0] = nvml.resolved;
        if (nvml.resolved != Nvml::kEntryPoints || nvml.init() != NVML_SUCCESS) return;
        unsigned count = 0;
        nvml.count(&count);
        ctx.result->values[1] = count;
        int matches = 0;
        for (int i = 0; i < 4; ++i) {
          nvmlDevice_t by_index = nullptr;
          nvml.by_index(static_cast<unsigned>(i), &by_index);
          matches += by_index != nullptr && nvml.DeviceOfCuda(i) == by_index;
        }
        ctx.result->values[2] = matches;
        nvmlDevice_t d = nullptr;
        ctx.result->values[3] = nvml.by_bus("00000000:1a:00.0", &d) == NVML_SUCCESS;
        nvmlDevice_t two = nullptr;
        nvml.by_index(2, &two);
        ctx.result->values[4] = d == two;
        ctx.result->values[5] = nvml.by_bus("1A:00.0", &d) == NVML_SUCCESS && d == two;
        ctx.result->values[6] = nvml.by_bus("0000:1a:00", &d) == NVML_SUCCESS && d == two;
        ctx.result->values[7] = nvml.by_bus("0000:3b:00.0", &d);  // no such device
        ctx.result->values[8] = nvml.by_bus("0001:18:00.0", &d);  // another domain
        ctx.result->values[9] = nvml.by_bus("not a bus id", &d);
        char bus[32] = {};
        cudaDeviceGetPCIBusId(bus, sizeof(bus), 2);
        ctx.result->progress = std::string(bus) == "0000:1A:00.0";
        nvml.shutdown();
      },
      20000);
  RequireAllFinished(results);
  const RankResult& r = results[0];
  CHECK(r.values[0] == Nvml::kEntryPoints);
  CHECK(r.values[1] == 4);
  CHECK(r.values[2] == 4);
  CHECK(r.values[3] == 1);
  CHECK(r.values[4] == 1);
  CHECK(r.values[5] == 1);
  CHECK(r.values[6] == 1);
  CHECK(static_cast<int>(r.values[7]) == NVML_ERROR_NOT_FOUND);
  CHECK(static_cast<int>(r.values[8]) == NVML_ERROR_NOT_FOUND);
  CHECK(static_cast<int>(r.values[9]) == NVML_ERROR_INVALID_ARGUMENT);
  CHECK(r.progress == 1);
}

TEST_CASE("a slowed rank's GPU runs a slower SM clock and reports its throttle reason") {
  // Node 1 of 4-rank nodes: rank 6's process sees ranks 4-7's devices; rank 5 is throttled, from
  // its 2nd NCCL op on, and its reason is only reported while it is slow.
  auto results = RunRanks(
      7,
      {{"SIMGPU_RANKS_PER_NODE", "4"},
       {"SIMGPU_DEVICE_COUNT", "4"},
       {"SIMGPU_COMPUTE_SLOWDOWN", "5=1.5@2"},
       {"SIMGPU_NVML_THROTTLE", "5=hw_thermal+sw_power,6=0x40"}},
      [](RankContext& ctx) {
        if (ctx.rank != 6) return;
        Nvml nvml;
        if (nvml.resolved != Nvml::kEntryPoints || nvml.init() != NVML_SUCCESS) return;
        nvmlDevice_t slow = nvml.DeviceOfCuda(1);  // rank 5 = node 1's ordinal 1
        nvmlDevice_t normal = nvml.DeviceOfCuda(0);
        unsigned long long bits = 99;
        nvml.reasons(slow, &bits);
        ctx.result->values[0] = Clock(nvml, slow, NVML_CLOCK_SM);  // before op 2: at speed
        ctx.result->values[1] = static_cast<double>(bits);
        simgpu::NextOpNumber();
        simgpu::NextOpNumber();
        ctx.result->values[2] = Clock(nvml, slow, NVML_CLOCK_SM);
        nvml.reasons(slow, &bits);
        ctx.result->values[3] = static_cast<double>(bits);
        nvml.throttle_reasons(slow, &bits);
        ctx.result->values[4] = static_cast<double>(bits);
        ctx.result->values[5] = Clock(nvml, normal, NVML_CLOCK_SM);
        nvml.reasons(normal, &bits);
        ctx.result->values[6] = static_cast<double>(bits);
        unsigned max = 0;
        nvml.max_clock(slow, NVML_CLOCK_SM, &max);
        ctx.result->values[7] = max;
        ctx.result->values[8] = Clock(nvml, slow, NVML_CLOCK_MEM);
        unsigned mw = 0;
        nvml.power(slow, &mw);
        ctx.result->values[9] = mw;
        // Rank 6 has a reason configured but is not slower: no reason reported.
        nvml.reasons(nvml.DeviceOfCuda(2), &bits);
        ctx.result->values[10] = static_cast<double>(bits);
        ctx.result->progress = 1;
      },
      30000);
  RequireAllFinished(results);
  const RankResult& r = results[6];
  REQUIRE(r.progress == 1);
  CHECK(r.values[0] == 1980);
  CHECK(r.values[1] == 0);
  CHECK(r.values[2] == 1320);  // 1980 / 1.5
  CHECK(r.values[3] == 0x44);
  CHECK(r.values[4] == 0x44);
  CHECK(r.values[5] == 1980);
  CHECK(r.values[6] == 0);
  CHECK(r.values[7] == 1980);
  CHECK(r.values[8] == 2619);
  CHECK(r.values[9] == Approx(350000 / 1.5).margin(1));
  CHECK(r.values[10] == 0);
}

TEST_CASE("SIMGPU_PCIE_SLOWDOWN trains the rank's link narrower") {
  auto results = RunRanks(
      1, {{"SIMGPU_DEVICE_COUNT", "4"}, {"SIMGPU_PCIE_SLOWDOWN", "1=4,2=3,3=0.5"}},
      [](RankContext& ctx) {
        Nvml nvml;
        if (nvml.resolved != Nvml::kEntryPoints || nvml.init() != NVML_SUCCESS) return;
        for (int i = 0; i < 4; ++i) {
          unsigned width = 0;
          nvml.width(nvml.DeviceOfCuda(i), &width);
          ctx.result->values[i] = width;
        }
        unsigned max = 0;
        nvml.max_width(nvml.DeviceOfCuda(1), &max);
        ctx.result->values[4] = max;
        ctx.result->progress = 1;
      },
      20000);
  RequireAllFinished(results);
  const RankResult& r = results[0];
  REQUIRE(r.progress == 1);
  CHECK(r.values[0] == 16);
  CHECK(r.values[1] == 4);   // 16 / 4
  CHECK(r.values[2] == 4);   // 16 / 3 = 5.3, trained at the next power of two below
  CHECK(r.values[3] == 16);  // a faster factor cannot widen past x16
  CHECK(r.values[4] == 16);
}

TEST_CASE("temperature follows SIMGPU_NVML_TEMP and nothing else") {
  auto results = RunRanks(
      1,
      {{"SIMGPU_DEVICE_COUNT", "4"},
       {"SIMGPU_NVML_TEMP", "3=88"},
       {"SIMGPU_COMPUTE_SLOWDOWN", "2=2"}},
      [](RankContext& ctx) {
        Nvml nvml;
        if (nvml.resolved != Nvml::kEntryPoints || nvml.init() != NVML_SUCCESS) return;
        for (int i = 0; i < 4; ++i) {
          unsigned c = 0;
          nvml.temperature(nvml.DeviceOfCuda(i), NVML_TEMPERATURE_GPU, &c);
          ctx.result->values[i] = c;
        }
        ctx.result->values[4] = Clock(nvml, nvml.DeviceOfCuda(3), NVML_CLOCK_SM);
        ctx.result->progress = 1;
      },
      20000);
  RequireAllFinished(results);
  const RankResult& r = results[0];
  REQUIRE(r.progress == 1);
  CHECK(r.values[0] == 55);
  CHECK(r.values[2] == 55);  // slower, not warmer
  CHECK(r.values[3] == 88);  // warmer, not slower
  CHECK(r.values[4] == 1980);
}

TEST_CASE("error counters grow at their knob's rate per simulated second") {
  auto results = RunRanks(
      1,
      {{"SIMGPU_DEVICE_COUNT", "2"},
       {"SIMGPU_TIME_SCALE", "0.05"},
       {"SIMGPU_NVML_PCIE_REPLAYS", "1=1000"},
       {"SIMGPU_NVML_ECC", "1=200"},
       {"SIMGPU_NVML_NVLINK_ERRORS", "1=50"}},
      [](RankContext& ctx) {
        Nvml nvml;
        if (nvml.resolved != Nvml::kEntryPoints || nvml.init() != NVML_SUCCESS) return;
        nvmlDevice_t bad = nvml.DeviceOfCuda(1);
        nvmlDevice_t good = nvml.DeviceOfCuda(0);
        unsigned r0 = 0, r1 = 0, g = 0;
        unsigned long long e0 = 0, e1 = 0, n0 = 0, n1 = 0, other_link = 9, outer0 = 0, outer1 = 0;
        // Counters read at different instants grow by different amounts, by however long the
        // machine took between the reads. Nested reads bound them instead: the ECC reads inside
        // the replay reads, the replay reads inside a second pair of ECC reads, all inside two
        // clock readings.
        const auto wall0 = std::chrono::steady_clock::now();
        nvml.ecc(bad, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &outer0);
        nvml.replays(bad, &r0);
        nvml.ecc(bad, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &e0);
        nvml.nvlink_errors(bad, 0, NVML_NVLINK_ERROR_DL_REPLAY, &n0);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // 2 simulated seconds
        nvml.nvlink_errors(bad, 0, NVML_NVLINK_ERROR_DL_REPLAY, &n1);
        nvml.ecc(bad, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &e1);
        nvml.replays(bad, &r1);
        nvml.ecc(bad, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &outer1);
        const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - wall0;
        ctx.result->values[6] = static_cast<double>(outer1 - outer0);
        ctx.result->values[7] = wall.count() / 0.05;  // simulated seconds, at most
        nvml.nvlink_errors(bad, 1, NVML_NVLINK_ERROR_DL_REPLAY, &other_link);
        nvml.replays(good, &g);
        ctx.result->values[0] = r1 - r0;
        ctx.result->values[1] = static_cast<double>(e1 - e0);
        ctx.result->values[2] = static_cast<double>(n1 - n0);
        ctx.result->values[3] = static_cast<double>(other_link);
        ctx.result->values[4] = g;
        unsigned long long unc = 9;
        nvml.ecc(bad, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &unc);
        ctx.result->values[5] = static_cast<double>(unc);
        ctx.result->progress = 1;
      },
      20000);
  RequireAllFinished(results);
  const RankResult& r = results[0];
  REQUIRE(r.progress == 1);
  // At least the 2 s slept (host sleeps only overshoot), at most the simulated time between the
  // clock readings; a counter's whole increments (+1) at its rate.
  CHECK(r.values[0] >= 2000 - 1);
  CHECK(r.values[0] <= 1000 * r.values[7] + 1);
  CHECK(r.values[1] >= 400 - 1);
  CHECK(r.values[2] >= 100 - 1);
  // 200 ECC errors a second against 1,000 replays: the inner ECC reads saw at most the replays'
  // time, the outer ones at least.
  CHECK(r.values[1] <= r.values[0] / 5 + 1);
  CHECK(r.values[6] >= r.values[0] / 5 - 1);
  CHECK(r.values[3] == 0);
  CHECK(r.values[4] == 0);
  CHECK(r.values[5] == 0);
}

TEST_CASE("SIMGPU_NVML=0 is a node without the driver: init fails, queries are uninitialized") {
  auto results = RunRanks(
      1, {{"SIMGPU_NVML", "0"}},
      [](RankContext& ctx) {
        Nvml nvml;
        if (nvml.resolved != Nvml::kEntryPoints) return;
        ctx.result->values[0] = nvml.init();
        unsigned count = 0;
        ctx.result->values[1] = nvml.count(&count);
        ctx.result->values[2] = nvml.shutdown();
        ctx.result->progress = 1;
      },
      20000);
  RequireAllFinished(results);
  REQUIRE(results[0].progress == 1);
  CHECK(static_cast<int>(results[0].values[0]) == NVML_ERROR_DRIVER_NOT_LOADED);
  CHECK(static_cast<int>(results[0].values[1]) == NVML_ERROR_UNINITIALIZED);
  CHECK(static_cast<int>(results[0].values[2]) == NVML_ERROR_UNINITIALIZED);
}

TEST_CASE("NVML throttle specs: names, numbers and ranges, a malformed one ignored") {
  // Parsed in a child too: the parser lives in the stand-in, reached through its knob.
  auto results = RunRanks(
      1,
      {{"SIMGPU_DEVICE_COUNT", "3"},
       {"SIMGPU_COMPUTE_SLOWDOWN", "*=1.1"},
       {"SIMGPU_NVML_THROTTLE", "0-1=hw_slowdown+hw_power_brake,2=sync_boost+0x100"}},
      [](RankContext& ctx) {
        Nvml nvml;
        if (nvml.resolved != Nvml::kEntryPoints || nvml.init() != NVML_SUCCESS) return;
        for (int i = 0; i < 3; ++i) {
          unsigned long long bits = 0;
          nvml.reasons(nvml.DeviceOfCuda(i), &bits);
          ctx.result->values[i] = static_cast<double>(bits);
        }
        ctx.result->progress = 1;
      },
      20000);
  RequireAllFinished(results);
  REQUIRE(results[0].progress == 1);
  CHECK(results[0].values[0] == 0x88);
  CHECK(results[0].values[1] == 0x88);
  CHECK(results[0].values[2] == 0x110);

  auto malformed = RunRanks(
      1, {{"SIMGPU_COMPUTE_SLOWDOWN", "0=2"}, {"SIMGPU_NVML_THROTTLE", "0=too_hot"}},
      [](RankContext& ctx) {
        Nvml nvml;
        if (nvml.resolved != Nvml::kEntryPoints || nvml.init() != NVML_SUCCESS) return;
        unsigned long long bits = 9;
        nvml.reasons(nvml.DeviceOfCuda(0), &bits);
        ctx.result->values[0] = static_cast<double>(bits);
        ctx.result->progress = 1;
      },
      20000);
  RequireAllFinished(malformed);
  REQUIRE(malformed[0].progress == 1);
  CHECK(malformed[0].values[0] == 0);  // ignored with a warning: no reason
}
