// NIC signals (preload/hw/nic_sysfs.cpp): rate and state strings, NCCL's device lists, which
// NICs are chosen, and a sampler over a fake tree whose counters change between two samples.
#include "preload/hw/nic_sysfs.h"

#include <catch2/catch.hpp>
#include <map>

#include "test/preload/hw/fake_tree.h"

using namespace perftracker::preload::hw;  // NOLINT
using perftracker::format::Signal;
using perftracker::preload::SignalSet;
using perftracker::test::FakeTree;
using perftracker::test::TakeSignals;

namespace {

using Devices = std::vector<std::string>;

}  // namespace

TEST_CASE("InfiniBand rate and state strings", "[hw]") {
  double gbps = 0;
  REQUIRE(ParseIbRate("100 Gb/sec (4X EDR)\n", &gbps));
  CHECK(gbps == 100);
  REQUIRE(ParseIbRate("2.5 Gb/sec (1X SDR)", &gbps));
  CHECK(gbps == 2.5);
  REQUIRE(ParseIbRate("400 Gb/sec (4X NDR)", &gbps));
  CHECK(gbps == 400);
  CHECK_FALSE(ParseIbRate("", &gbps));
  CHECK_FALSE(ParseIbRate("fast", &gbps));
  uint64_t state = 0;
  REQUIRE(ParseIbState("4: ACTIVE\n", &state));
  CHECK(state == 4);
  REQUIRE(ParseIbState("1: DOWN", &state));
  CHECK(state == 1);
  CHECK_FALSE(ParseIbState("ACTIVE", &state));
}

TEST_CASE("NCCL device lists: prefixes, exact names, ports and exclusion", "[hw]") {
  CHECK_FALSE(ParseNcclDeviceFilter(nullptr).set);
  CHECK(ParseNcclDeviceFilter("").Matches("anything"));

  const auto hca = ParseNcclDeviceFilter("mlx5_0,mlx5_1:1");
  CHECK(hca.Matches("mlx5_0", 1));
  CHECK(hca.Matches("mlx5_0", 2));
  CHECK(hca.Matches("mlx5_1", 1));
  CHECK_FALSE(hca.Matches("mlx5_1", 2));
  CHECK_FALSE(hca.Matches("mlx5_2", 1));
  CHECK(hca.Matches("mlx5_10", 1));  // a prefix, as NCCL matches it

  const auto exact = ParseNcclDeviceFilter("=mlx5_1");
  CHECK(exact.Matches("mlx5_1", 1));
  CHECK_FALSE(exact.Matches("mlx5_10", 1));

  const auto excluded = ParseNcclDeviceFilter("^mlx5_2");
  CHECK(excluded.Matches("mlx5_0", 1));
  CHECK_FALSE(excluded.Matches("mlx5_2", 1));

  const auto both = ParseNcclDeviceFilter("^=eth1");
  CHECK(both.Matches("eth10"));
  CHECK_FALSE(both.Matches("eth1"));

  const auto ifname = ParseNcclDeviceFilter("^docker,lo");
  CHECK(ifname.Matches("eth0"));
  CHECK_FALSE(ifname.Matches("docker0"));
  CHECK_FALSE(ifname.Matches("lo"));
  CHECK(ParseNcclDeviceFilter("eth").Matches("eth0"));
}

TEST_CASE("which NICs are sampled", "[hw]") {
  FakeTree t;
  perftracker::test::WriteHost(t);
  t.Write("sys/class/infiniband/mlx5_0/ports/2/rate", "100 Gb/sec (4X EDR)\n");
  t.Write("sys/class/infiniband/mlx5_1/ports/1/rate", "100 Gb/sec (4X EDR)\n");
  t.Write("sys/class/net/ib0/operstate", "up\n");
  t.Dir("sys/class/net/ib0/device");
  const std::string sys = t.root() + "/sys";

  SECTION("by default every IB port and every physical interface") {
    NicSampler nics(sys.c_str(), nullptr, nullptr, false);
    CHECK(nics.has_infiniband());
    CHECK(nics.Devices() == Devices{"mlx5_0/1", "mlx5_0/2", "mlx5_1/1", "eth0", "ib0"});
  }
  SECTION("NCCL_IB_HCA and NCCL_SOCKET_IFNAME choose") {
    NicSampler nics(sys.c_str(), "=mlx5_0:2", "=eth0", false);
    CHECK(nics.Devices() == Devices{"mlx5_0/2", "eth0"});
    NicSampler excluded(sys.c_str(), "^mlx5_0", "^docker,lo", false);
    CHECK(excluded.Devices() == Devices{"mlx5_1/1", "eth0", "ib0", "veth1"});
  }
  SECTION("NCCL_IB_DISABLE=1: no IB port") {
    NicSampler nics(sys.c_str(), nullptr, nullptr, true);
    CHECK(nics.Devices() == Devices{"eth0", "ib0"});
  }
  SECTION("at most 16 instances") {
    for (int i = 0; i < 20; ++i)
      t.Dir("sys/class/infiniband/mlx5_9/ports/" + std::to_string(i + 1));
    NicSampler nics(sys.c_str(), nullptr, nullptr, false);
    CHECK(nics.Devices().size() == NicSampler::kMaxInstances);
  }
  SECTION("no InfiniBand") {
    FakeTree bare;
    bare.Write("sys/class/net/lo/operstate", "unknown\n");
    NicSampler nics((bare.root() + "/sys").c_str(), nullptr, nullptr, false);
    CHECK_FALSE(nics.has_infiniband());
    CHECK(nics.Devices().empty());
  }
}

TEST_CASE("the NIC sampler over a fake tree: bytes from IB words, rates, counter deltas", "[hw]") {
  FakeTree t;
  perftracker::test::WriteHost(t);
  NicSampler nics((t.root() + "/sys").c_str(), nullptr, nullptr, false);
  REQUIRE(nics.Devices() == Devices{"mlx5_0/1", "eth0"});
  SignalSet set;
  nics.Sample(set);
  auto w = TakeSignals(set);
  CHECK(w["nic.rate_gbps@mlx5_0/1"].sum == 100);
  CHECK(w["nic.up@mlx5_0/1"].sum == 1);
  CHECK(w["nic.rate_gbps@eth0"].sum == 25);
  CHECK(w["nic.up@eth0"].sum == 1);
  CHECK(w.count("nic.rx_bytes@mlx5_0/1") == 0);  // a baseline only

  const std::string ib = "sys/class/infiniband/mlx5_0/ports/1/";
  t.Write(ib + "counters/port_rcv_data", "1250\n");  // 250 words
  t.Write(ib + "counters/symbol_error", "3\n");
  t.Write(ib + "hw_counters/np_cnp_sent", "9\n");
  t.Write(ib + "state", "1: DOWN\n");
  t.Write("sys/class/net/eth0/statistics/rx_bytes", "4196\n");
  t.Write("sys/class/net/eth0/operstate", "down\n");
  t.Write("sys/class/net/eth0/speed", "-1\n");  // unknown while down: no sample
  nics.Sample(set);
  w = TakeSignals(set);
  CHECK(w["nic.rx_bytes@mlx5_0/1"].sum == 1000);
  CHECK(w["nic.tx_bytes@mlx5_0/1"].sum == 0);
  CHECK(w["nic.link_errors@mlx5_0/1"].sum == 3);
  CHECK(w["nic.cnp_sent@mlx5_0/1"].sum == 4);
  CHECK(w["nic.up@mlx5_0/1"].sum == 0);
  CHECK(w.count("nic.ecn_marked@mlx5_0/1") == 0);  // no such file: no signal
  CHECK(w["nic.rx_bytes@eth0"].sum == 4096);
  CHECK(w["nic.rx_discards@eth0"].sum == 0);
  CHECK(w.count("nic.tx_bytes@eth0") == 0);
  CHECK(w["nic.up@eth0"].sum == 0);
  CHECK(w.count("nic.rate_gbps@eth0") == 0);

  // The port's counters were cleared (perfquery -R): a new baseline.
  t.Write(ib + "counters/port_rcv_data", "8\n");
  nics.Sample(set);
  w = TakeSignals(set);
  CHECK(w.count("nic.rx_bytes@mlx5_0/1") == 0);
}
