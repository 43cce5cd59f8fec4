// The writer thread's cost of one sampling round (issue 18: "the writer's added cost per window
// is measured"): host and NIC samplers over a fake tree shaped like an 8-rail node (8 IB ports
// with every counter file, 2 interfaces), and over this machine's real /proc and /sys. One round
// runs every PERFTRACKER_SIGNAL_MS (1 s by default); NVML is not measured here (no GPU).
#include <benchmark/benchmark.h>

#include "preload/hw/host_proc.h"
#include "preload/hw/nic_sysfs.h"
#include "test/preload/hw/fake_tree.h"

namespace {

using namespace perftracker::preload::hw;  // NOLINT
using perftracker::preload::SignalSet;
using perftracker::test::FakeTree;

const FakeTree& EightRailNode() {
  static const FakeTree* tree = [] {
    auto* t = new FakeTree();
    perftracker::test::WriteHost(*t);
    static constexpr const char* kCounters[] = {"counters/port_rcv_data",
                                                "counters/port_xmit_data",
                                                "counters/port_rcv_packets",
                                                "counters/port_xmit_packets",
                                                "counters/port_rcv_errors",
                                                "counters/port_rcv_remote_physical_errors",
                                                "counters/port_rcv_switch_relay_errors",
                                                "counters/excessive_buffer_overrun_errors",
                                                "hw_counters/out_of_buffer",
                                                "counters/port_xmit_discards",
                                                "counters/symbol_error",
                                                "counters/link_error_recovery",
                                                "counters/link_downed",
                                                "counters/local_link_integrity_errors",
                                                "hw_counters/np_ecn_marked_roce_packets",
                                                "hw_counters/np_cnp_sent",
                                                "hw_counters/rp_cnp_handled"};
    for (int i = 0; i < 8; ++i) {
      const std::string port = "sys/class/infiniband/mlx5_" + std::to_string(i) + "/ports/1/";
      t->Write(port + "rate", "400 Gb/sec (4X NDR)\n");
      t->Write(port + "state", "4: ACTIVE\n");
      for (const char* c : kCounters) t->Write(port + c, "123456789\n");
    }
    return t;
  }();
  return *tree;
}

void BM_HostRound(benchmark::State& state, bool real) {
  const FakeTree& t = EightRailNode();
  const std::string proc = real ? "/proc" : t.root() + "/proc";
  const std::string sys = real ? "/sys" : t.root() + "/sys";
  HostSampler host(proc.c_str(), sys.c_str());
  SignalSet set;
  std::vector<perftracker::format::Signal> window;
  for (auto _ : state) {
    host.Sample(set);
    if (set.size() > 0 && state.iterations() % 64 == 0) {  // a window now and then
      window.clear();
      set.TakeWindow(&window);
    }
  }
}

void BM_NicRound(benchmark::State& state, bool real) {
  const FakeTree& t = EightRailNode();
  const std::string sys = real ? "/sys" : t.root() + "/sys";
  NicSampler nics(sys.c_str(), nullptr, nullptr, false);
  SignalSet set;
  for (auto _ : state) nics.Sample(set);
  state.counters["instances"] = static_cast<double>(nics.Devices().size());
}

void BM_FullRound(benchmark::State& state) {
  const FakeTree& t = EightRailNode();
  const std::string proc = t.root() + "/proc", sys = t.root() + "/sys";
  HostSampler host(proc.c_str(), sys.c_str());
  NicSampler nics(sys.c_str(), nullptr, nullptr, false);
  SignalSet set;
  for (auto _ : state) {
    host.Sample(set);
    nics.Sample(set);
  }
  state.counters["signals"] = static_cast<double>(set.size());
}

BENCHMARK_CAPTURE(BM_HostRound, fake_tree, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_HostRound, real_proc, true)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_NicRound, fake_8_rails, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_NicRound, real_sys, true)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FullRound)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
