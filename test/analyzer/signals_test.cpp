// Hardware and host signals (FORMAT.md "signals") beside the verdicts: a deviating signal on a
// verdict's ranks, in its part of the machine, is its reason; one with no verdict to explain is
// a warning, never a candidate; peers that merely differ a little are nothing.
#include <catch2/catch.hpp>
#include <functional>
#include <string>

#include "test/analyzer/fixture.h"

namespace perftracker::testing {
namespace {

using format::Signal;
using format::SignalKind;

Signal Gauge(const std::string& name, double v, const std::string& device = {}) {
  return Signal{name, device, SignalKind::kGauge, 2, v, v, 2 * v, 0};
}

// A counter that rose by `per_s` a second over the window.
Signal Counter(const std::string& name, const format::Window& w, double per_s,
               const std::string& device = {}) {
  const double s = static_cast<double>(w.end_mono_ns - w.start_mono_ns) * 1e-9;
  return Signal{name, device, SignalKind::kCounter, 2, 0, per_s * s, per_s * s, 0};
}

// Every signal of a healthy node, with a rank's small differences (a degree, a few MHz).
void Healthy(int rank, format::Window* w) {
  const double wobble = (rank * 7 % 5) - 2;  // -2 .. 2
  const std::string gpu = "0000:" + std::to_string(18 + rank % 4) + ":00.0";
  w->signals = {Gauge("gpu.sm_clock_mhz", 1980 - 3 * std::abs(wobble), gpu),
                Gauge("gpu.sm_clock_max_mhz", 1980, gpu),
                Gauge("gpu.temperature_c", 55 + wobble, gpu),
                Gauge("gpu.power_mw", 350'000 + 4'000 * wobble, gpu),
                Gauge("gpu.pcie_width", 16, gpu),
                Gauge("gpu.pcie_width_max", 16, gpu),
                Signal{"gpu.throttle_reasons", gpu, SignalKind::kFlags, 2, 0, 0, 0, 0},
                Counter("nic.rx_bytes", *w, 2e9 + 1e7 * wobble, "mlx5_0/1"),
                Counter("nic.rx_errors", *w, 0, "mlx5_0/1"),
                Gauge("host.cpu_steal_pct", 0.2 + 0.1 * wobble),
                Counter("host.cgroup_throttled_periods", *w, 0),
                Counter("host.involuntary_switches", *w, 20 + 2 * wobble)};
}

void Set(format::Window* w, const std::string& name, double v) {
  for (Signal& s : w->signals) {
    if (s.name == name) s.min = s.max = v, s.sum = v * s.samples;
  }
}

// A small job of `ranks` on hosts of `per_host`, with one fault and every rank's healthy signals
// edited by `edit` (after Healthy).
JobSpec FaultJob(int ranks, int per_host, synthetic::Fault fault, int rank, double factor,
                 std::function<void(int, format::Window*)> edit = {}) {
  JobSpec spec;
  spec.shape = SmallShape();
  spec.ranks = ranks;
  spec.ranks_per_host = per_host;
  spec.shape.fault = fault;
  spec.shape.fault_rank = rank;
  spec.shape.fault_factor = factor;
  spec.edit = [edit](int r, format::Window* w) {
    Healthy(r, w);
    if (edit) edit(r, w);
  };
  return spec;
}

std::string Texts(const Json& signals) {
  std::string out;
  for (const Json& s : signals) out += s.value("text", std::string()) + "\n";
  return out;
}

}  // namespace

TEST_CASE("a slow GPU's verdict says why: its clock and its throttle reason",
          "[analyzer][signals]") {
  const JobSpec spec =
      FaultJob(8, 4, synthetic::Fault::kSlowGpu, 6, 1.3, [](int rank, format::Window* w) {
        if (rank != 6) return;
        Set(w, "gpu.sm_clock_mhz", 1523);
        Set(w, "gpu.temperature_c", 91);
        for (Signal& s : w->signals) {
          if (s.name == "gpu.throttle_reasons") s.bits = 0x40, s.sum = s.samples;
        }
      });
  const Json report = AnalyzeJob(spec);
  REQUIRE(!report["candidates"].empty());
  const Json& top = report["candidates"][0];
  REQUIRE(top["category"] == "gpu_compute");
  REQUIRE(top["rank_set"] == Json::array({6}));
  const std::string why = Texts(top["evidence"]["signals"]);
  INFO(why);
  CHECK(why.find("rank 6: SM clock 1,523 MHz vs peers 1,974 MHz (max 1,980 MHz)") !=
        std::string::npos);
  CHECK(why.find("throttle reasons: HW thermal slowdown (peers: none)") != std::string::npos);
  CHECK(why.find("temperature 91 °C") != std::string::npos);
  CHECK(report["signal_warnings"].empty());
  // Informational signals never deviate: power draw, traffic.
  CHECK(why.find("power") == std::string::npos);

  // The text report says it under the verdict.
  const std::string dir = MakeTempDir();
  WriteJob(dir, spec);
  const CliResult text = Cli({"analyze", dir});
  RemoveTree(dir);
  CHECK(text.out.find("why: rank 6: SM clock 1,523 MHz") != std::string::npos);
}

TEST_CASE("a warm GPU that keeps pace is a warning, not a candidate", "[analyzer][signals]") {
  JobSpec spec;
  spec.shape = SmallShape();
  spec.edit = [](int rank, format::Window* w) {
    Healthy(rank, w);
    if (rank == 3) Set(w, "gpu.temperature_c", 88);
  };
  const Json report = AnalyzeJob(spec);
  CHECK(report["candidates"].empty());
  REQUIRE(report["signal_warnings"].size() == 1);
  const Json& warning = report["signal_warnings"][0];
  CHECK(warning["signal"] == "gpu.temperature_c");
  CHECK(warning["ranks"] == Json::array({3}));
  CHECK(warning["text"] == "rank 3: temperature 88 °C vs peers 55 °C");
}

TEST_CASE("a host's NIC errors: one value per host, and the bad host of two stands out",
          "[analyzer][signals]") {
  const JobSpec spec =
      FaultJob(8, 4, synthetic::Fault::kSlowNodeLinks, 4, 3, [](int rank, format::Window* w) {
        if (rank >= 4) {
          for (Signal& s : w->signals) {
            if (s.name == "nic.rx_errors") s = Counter("nic.rx_errors", *w, 50, "mlx5_0/1");
          }
        }
      });
  const Json report = AnalyzeJob(spec);
  // Whatever the verdict, the errors are either its reason or a warning: never lost, and said
  // once per host, on the port.
  std::string all = Texts(report["signal_warnings"]);
  for (const Json& c : report["candidates"]) all += Texts(c["evidence"].value("signals", Json()));
  INFO(all);
  CHECK(all.find("host node1 (ranks 4-7): receive errors 50/s vs peers 0.00/s on mlx5_0/1") !=
        std::string::npos);
  CHECK(all.find("node0") == std::string::npos);
  bool on_link_verdict = false;
  for (const Json& c : report["candidates"]) {
    if (c["category"].get<std::string>().starts_with("communication_") &&
        c["evidence"].contains("signals")) {
      on_link_verdict = true;
    }
  }
  if (!report["candidates"].empty() &&
      report["candidates"][0]["category"].get<std::string>().starts_with("communication_")) {
    CHECK(on_link_verdict);
  }
}

TEST_CASE("host steal and cgroup throttling are the reason of that host's CPU verdict",
          "[analyzer][signals]") {
  const JobSpec spec =
      FaultJob(4, 1, synthetic::Fault::kCpuContention, 2, 2, [](int rank, format::Window* w) {
        if (rank != 2) return;
        Set(w, "host.cpu_steal_pct", 31);
        for (Signal& s : w->signals) {
          if (s.name == "host.cgroup_throttled_periods") s = Counter(s.name, *w, 5);
        }
      });
  const Json report = AnalyzeJob(spec);
  REQUIRE(!report["candidates"].empty());
  const Json& top = report["candidates"][0];
  REQUIRE(top["rank_set"] == Json::array({2}));
  const std::string why = Texts(top["evidence"]["signals"]);
  INFO(top.dump());
  CHECK(why.find("host node2 (rank 2): CPU steal 31.0 % vs peers") != std::string::npos);
  CHECK(why.find("cgroup CPU-throttled periods 5.00/s vs peers 0.00/s") != std::string::npos);
}

TEST_CASE("healthy peers that differ a little give no warning", "[analyzer][signals]") {
  JobSpec spec;
  spec.shape = SmallShape();
  spec.ranks = 16;
  spec.edit = [](int rank, format::Window* w) { Healthy(rank, w); };
  const Json report = AnalyzeJob(spec);
  CHECK(report["signal_warnings"].empty());
  CHECK(report["candidates"].empty());
}

TEST_CASE("signals survive reduce: the reduced files give the same warnings",
          "[analyzer][signals][reduce]") {
  JobSpec spec;
  spec.shape = SmallShape();
  spec.edit = [](int rank, format::Window* w) {
    Healthy(rank, w);
    if (rank == 5) Set(w, "gpu.pcie_width", 4);
  };
  const std::string dir = MakeTempDir();
  WriteJob(dir + "/raw", spec);
  const CliResult raw = Cli({"analyze", dir + "/raw", "--json", "-"});
  REQUIRE(raw.code == 0);
  const CliResult red = Cli({"reduce", dir + "/raw", "-o", dir + "/node.ptrd"});
  INFO(red.err);
  REQUIRE(red.code == 0);
  const CliResult reduced = Cli({"analyze", dir + "/node.ptrd", "--json", "-"});
  RemoveTree(dir);
  REQUIRE(reduced.code == 0);
  REQUIRE(raw.json["signal_warnings"].size() == 1);
  CHECK(raw.json["signal_warnings"][0]["text"] == "rank 5: PCIe width x4 vs peers x16 (max x16)");
  CHECK(reduced.json["signal_warnings"] == raw.json["signal_warnings"]);
}

}  // namespace perftracker::testing
