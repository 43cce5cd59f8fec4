// The samplers in real processes under LD_PRELOAD on simgpu, over a fake sysfs/procfs tree: the
// windows carry the tree's signals, and a process without NVML or InfiniBand warns once per
// missing source -- only when it uses a GPU (NVML) or NCCL (InfiniBand) -- and still records.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "schemas/format/ring_file.h"
#include "schemas/format/window.h"
#include "test/preload/cuda/ring_summary.h"
#include "test/preload/hw/fake_tree.h"

using namespace perftracker::test;  // NOLINT
namespace format = perftracker::format;

namespace {

struct RankRun {
  int status = -1;
  std::string stderr_text;
  std::vector<format::Window> windows;
};

// simgpu's libraries without its libnvidia-ml.so.1: a node whose driver ships no NVML (or a
// container started without the `utility` capability).
std::string SimgpuWithoutNvml() {
  static const std::string dir = [] {
    const std::string d = MakeTempDir();
    for (const auto& e : std::filesystem::directory_iterator(PT_SIMGPU_LIB)) {
      const std::string name = e.path().filename();
      if (name.rfind("libnvidia-ml", 0) != 0)
        std::filesystem::create_symlink(e.path(), d + "/" + name);
    }
    return d;
  }();
  return dir;
}

RankRun RunRank(const std::string& mode, const FakeTree& tree, const Env& extra = {}) {
  const std::string out = MakeTempDir();
  const std::string err = out + "/stderr";
  Env env = {{"LD_PRELOAD", PT_LIBRARY},
             {"LD_LIBRARY_PATH", SimgpuWithoutNvml()},
             {"PERFTRACKER_DIR", out},
             {"PERFTRACKER_JOB_ID", "hw"},
             {"PERFTRACKER_SIGNAL_MS", "50"},
             {"PERFTRACKER_WINDOW_S", "1"},
             {"PERFTRACKER_SYSFS_ROOT", tree.root() + "/sys"},
             {"PERFTRACKER_PROCFS_ROOT", tree.root() + "/proc"},
             {"NCCL_IB_HCA", "\x01"},
             {"NCCL_SOCKET_IFNAME", "\x01"},
             {"NCCL_IB_DISABLE", "\x01"},
             {"RANK", "0"},
             {"LOCAL_RANK", "0"},
             {"WORLD_SIZE", "1"}};
  env.insert(env.end(), extra.begin(), extra.end());
  RankRun run;
  run.status = perftracker::test::Run({PT_SIGNALS_WORKLOAD, mode, "1500", err}, env);
  std::ifstream in(err);
  run.stderr_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  for (const std::string& path : FilesUnder(out)) {
    if (std::filesystem::path(path).filename() != "rank-0.ptr") continue;
    format::RingReader reader;
    std::string error;
    if (reader.OpenFile(path, &error) != format::ReadStatus::kOk) continue;
    reader.ForEachRecord([&](uint64_t, std::span<const uint8_t> bytes) {
      format::Window w;
      if (format::DecodeWindow(bytes, &w)) run.windows.push_back(std::move(w));
      return true;
    });
  }
  return run;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Every signal of the run, by "name@device": samples and sums added over the windows.
std::map<std::string, format::Signal> Signals(const RankRun& run) {
  std::map<std::string, format::Signal> all;
  for (const format::Window& w : run.windows) {
    for (const format::Signal& s : w.signals) {
      format::Signal& a = all[s.name + "@" + s.device];
      a.name = s.name;
      a.device = s.device;
      a.kind = s.kind;
      a.samples += s.samples;
      a.sum += s.sum;
      a.bits |= s.bits;
    }
  }
  return all;
}

constexpr const char* kNvmlWarning = "NVML is not available";
constexpr const char* kIbWarning = "no InfiniBand device";

}  // namespace

TEST_CASE("a GPU and NCCL rank without NVML or InfiniBand warns once per source and records") {
  FakeTree tree;
  WriteHost(tree);
  std::filesystem::remove_all(tree.Path("sys/class/infiniband"));
  const RankRun run = RunRank("nccl", tree);
  INFO(run.stderr_text);
  REQUIRE(run.status == 0);
  REQUIRE(run.windows.size() >= 2);
  CHECK(Count(run.stderr_text, kIbWarning) == 1);
  CHECK(Count(run.stderr_text, kNvmlWarning) == 1);
  const auto signals = Signals(run);
  REQUIRE(signals.count("host.load1@"));
  CHECK(signals.at("host.load1@").sum == Approx(3.5 * signals.at("host.load1@").samples));
  CHECK(signals.at("host.load1@").samples >= 10);  // every 50 ms for 1.5 s
  CHECK(signals.count("nic.rx_bytes@eth0") == 1);
  CHECK(signals.count("nic.up@lo") == 0);
  for (const auto& [key, s] : signals) CHECK(key.substr(0, 4) != "gpu.");
}

TEST_CASE("NVML that fails to initialize is one warning naming NVML's reason") {
  FakeTree tree;
  WriteHost(tree);
  const RankRun run =
      RunRank("gpu", tree, {{"LD_LIBRARY_PATH", PT_SIMGPU_LIB}, {"SIMGPU_NVML", "0"}});
  INFO(run.stderr_text);
  REQUIRE(run.status == 0);
  CHECK(Count(run.stderr_text, kNvmlWarning) == 1);
  CHECK(Count(run.stderr_text, "nvmlInit_v2 failed: ") == 1);
  for (const auto& [key, s] : Signals(run)) CHECK(key.substr(0, 4) != "gpu.");
}

TEST_CASE("simgpu's NVML: the rank's one GPU is sampled") {
  FakeTree tree;
  WriteHost(tree);
  const RankRun run = RunRank("gpu", tree, {{"LD_LIBRARY_PATH", PT_SIMGPU_LIB}});
  INFO(run.stderr_text);
  REQUIRE(run.status == 0);
  CHECK(Count(run.stderr_text, kNvmlWarning) == 0);
  std::set<std::string> gpus;
  for (const auto& [key, s] : Signals(run)) {
    if (key.substr(0, 4) == "gpu.") gpus.insert(s.device);
  }
  CHECK(gpus.size() == 1);
  CHECK(Signals(run).count("gpu.sm_clock_mhz@" + (gpus.empty() ? "" : *gpus.begin())) == 1);
}

TEST_CASE("a CPU-only rank does not warn about NVML or InfiniBand") {
  FakeTree tree;
  WriteHost(tree);
  std::filesystem::remove_all(tree.Path("sys/class/infiniband"));
  const RankRun run = RunRank("cpu", tree);
  INFO(run.stderr_text);
  REQUIRE(run.status == 0);
  CHECK(Count(run.stderr_text, kIbWarning) == 0);
  CHECK(Count(run.stderr_text, kNvmlWarning) == 0);
  const auto signals = Signals(run);
  CHECK(signals.count("host.cpu_pressure_ns@") == 1);
  for (const auto& [key, s] : signals) CHECK(key.substr(0, 4) != "gpu.");
}

TEST_CASE("a GPU rank without NCCL, or with NCCL_IB_DISABLE=1, does not warn about InfiniBand") {
  FakeTree tree;
  WriteHost(tree);
  std::filesystem::remove_all(tree.Path("sys/class/infiniband"));
  RankRun run = RunRank("gpu", tree);
  REQUIRE(run.status == 0);
  CHECK(Count(run.stderr_text, kIbWarning) == 0);
  run = RunRank("nccl", tree, {{"NCCL_IB_DISABLE", "1"}});
  REQUIRE(run.status == 0);
  CHECK(Count(run.stderr_text, kIbWarning) == 0);
}

TEST_CASE("PERFTRACKER_SIGNAL_MS=0 samples nothing") {
  FakeTree tree;
  WriteHost(tree);
  const RankRun run = RunRank("cpu", tree, {{"PERFTRACKER_SIGNAL_MS", "0"}});
  REQUIRE(run.status == 0);
  REQUIRE_FALSE(run.windows.empty());
  for (const format::Window& w : run.windows) CHECK(w.signals.empty());
}

TEST_CASE("NCCL_IB_HCA and NCCL_SOCKET_IFNAME choose the NICs sampled") {
  FakeTree tree;
  WriteHost(tree);
  tree.Write("sys/class/infiniband/mlx5_1/ports/1/rate", "200 Gb/sec (4X HDR)\n");
  const RankRun run =
      RunRank("nccl", tree, {{"NCCL_IB_HCA", "=mlx5_1"}, {"NCCL_SOCKET_IFNAME", "=eth0"}});
  REQUIRE(run.status == 0);
  CHECK(Count(run.stderr_text, kIbWarning) == 0);
  const auto signals = Signals(run);
  CHECK(signals.count("nic.rate_gbps@mlx5_1/1") == 1);
  CHECK(signals.count("nic.rate_gbps@mlx5_0/1") == 0);
  CHECK(signals.count("nic.rate_gbps@eth0") == 1);
}

TEST_CASE("with NVML, the device the rank made current is sampled by CUDA's bus id") {
  FakeTree tree;
  WriteHost(tree);
  const RankRun run = RunRank(
      "gpu", tree, {{"LD_LIBRARY_PATH", std::string(PT_FAKE_NVML_DIR) + ":" + PT_SIMGPU_LIB}});
  INFO(run.stderr_text);
  REQUIRE(run.status == 0);
  CHECK(Count(run.stderr_text, kNvmlWarning) == 0);
  const auto signals = Signals(run);
  const std::string gpu = "@0000:19:00.0";  // simgpu's device 1 (cudaSetDevice(1))
  REQUIRE(signals.count("gpu.sm_clock_mhz" + gpu) == 1);
  const auto mean = [&](const std::string& name) {
    const format::Signal& s = signals.at(name + gpu);
    return s.sum / s.samples;
  };
  CHECK(mean("gpu.sm_clock_mhz") == 1410);
  CHECK(mean("gpu.sm_clock_max_mhz") == 1980);
  CHECK(mean("gpu.mem_clock_mhz") == 1593);
  CHECK(mean("gpu.power_mw") == 300000);
  CHECK(mean("gpu.power_limit_mw") == 400000);
  CHECK(mean("gpu.temperature_c") == 87);
  CHECK(mean("gpu.utilization_pct") == 97);
  CHECK(mean("gpu.mem_utilization_pct") == 40);
  CHECK(mean("gpu.pcie_width") == 8);
  CHECK(mean("gpu.pcie_width_max") == 16);
  CHECK(mean("gpu.pcie_gen") == 4);
  // Throttle reasons through the pre-535 name, as flags: every sample had HW thermal set.
  const format::Signal& reasons = signals.at("gpu.throttle_reasons" + gpu);
  CHECK(reasons.kind == format::SignalKind::kFlags);
  CHECK(reasons.bits == 0x40);
  CHECK(reasons.sum == reasons.samples);
  // Counters by increase: ECC grows by 2 a sample, replays stand still.
  const format::Signal& ecc = signals.at("gpu.ecc_corrected" + gpu);
  CHECK(ecc.kind == format::SignalKind::kCounter);
  CHECK(ecc.sum == 2 * ecc.samples);
  CHECK(signals.at("gpu.pcie_replays" + gpu).sum == 0);
  CHECK(signals.at("gpu.ecc_uncorrected" + gpu).sum == 0);
  // Not supported by this GPU: absent.
  CHECK(signals.count("gpu.nvlink_errors" + gpu) == 0);
  CHECK(signals.count("gpu.remapped_rows" + gpu) == 0);
  CHECK(signals.count("gpu.remap_pending" + gpu) == 0);
}
