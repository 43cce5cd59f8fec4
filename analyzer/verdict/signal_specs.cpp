#include "analyzer/verdict/signal_specs.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "analyzer/base/format_text.h"

namespace perftracker::analyzer {
namespace {

using U = SignalUnit;
using S = SignalScope;

constexpr SignalSpec Sp(std::string_view name, std::string_view label, U unit, int worse,
                        double floor, double relative, S scope, std::string_view max_name = {},
                        bool node_wide = false) {
  return SignalSpec{name, label, unit, worse, floor, relative, scope, max_name, node_wide};
}

// Floors and shares are what an operator would call a difference, not noise: a GPU 5% below
// its peers' clock, 10 °C warmer, a lane fewer; any sustained error rate above twice the peers'.
// Traffic is informational: a busier rank is not a broken one.
constexpr std::array kSpecs = {
    Sp("gpu.sm_clock_mhz", "SM clock", U::kMhz, -1, 30, 0.05, S::kGpu, "gpu.sm_clock_max_mhz"),
    Sp("gpu.sm_clock_max_mhz", "SM clock maximum", U::kMhz, 0, 0, 0, S::kGpu),
    Sp("gpu.mem_clock_mhz", "memory clock", U::kMhz, -1, 30, 0.05, S::kGpu,
       "gpu.mem_clock_max_mhz"),
    Sp("gpu.mem_clock_max_mhz", "memory clock maximum", U::kMhz, 0, 0, 0, S::kGpu),
    Sp("gpu.throttle_reasons", "throttle reasons", U::kFlags, +1, 0, 0, S::kGpu),
    Sp("gpu.power_mw", "power draw", U::kMilliwatt, 0, 0, 0, S::kGpu),
    Sp("gpu.power_limit_mw", "power limit", U::kMilliwatt, -1, 10'000, 0.05, S::kGpu),
    Sp("gpu.temperature_c", "temperature", U::kCelsius, +1, 10, 0, S::kGpu),
    Sp("gpu.utilization_pct", "utilization", U::kPercent, 0, 0, 0, S::kGpu),
    Sp("gpu.mem_utilization_pct", "memory utilization", U::kPercent, 0, 0, 0, S::kGpu),
    Sp("gpu.pcie_gen", "PCIe generation", U::kGeneration, -1, 1, 0, S::kPcie, "gpu.pcie_gen_max"),
    Sp("gpu.pcie_gen_max", "PCIe generation maximum", U::kGeneration, 0, 0, 0, S::kPcie),
    Sp("gpu.pcie_width", "PCIe width", U::kLanes, -1, 1, 0, S::kPcie, "gpu.pcie_width_max"),
    Sp("gpu.pcie_width_max", "PCIe width maximum", U::kLanes, 0, 0, 0, S::kPcie),
    Sp("gpu.pcie_replays", "PCIe replays", U::kPerSecond, +1, 0.01, 1, S::kPcie),
    Sp("gpu.ecc_corrected", "corrected ECC errors", U::kPerSecond, +1, 0.01, 1, S::kGpu),
    Sp("gpu.ecc_uncorrected", "uncorrected ECC errors", U::kPerSecond, +1, 0.001, 1, S::kGpu),
    Sp("gpu.remapped_rows", "remapped rows", U::kNumber, +1, 1, 0, S::kGpu),
    Sp("gpu.remap_pending", "row remap pending", U::kBoolean, +1, 0.5, 0, S::kGpu),
    Sp("gpu.nvlink_errors", "NVLink errors", U::kPerSecond, +1, 0.01, 1, S::kGpuLink),
    Sp("nic.rx_bytes", "received", U::kPerSecond, 0, 0, 0, S::kNic, {}, true),
    Sp("nic.tx_bytes", "sent", U::kPerSecond, 0, 0, 0, S::kNic, {}, true),
    Sp("nic.rx_packets", "packets received", U::kPerSecond, 0, 0, 0, S::kNic, {}, true),
    Sp("nic.tx_packets", "packets sent", U::kPerSecond, 0, 0, 0, S::kNic, {}, true),
    Sp("nic.rx_errors", "receive errors", U::kPerSecond, +1, 0.01, 1, S::kNic, {}, true),
    Sp("nic.tx_errors", "send errors", U::kPerSecond, +1, 0.01, 1, S::kNic, {}, true),
    Sp("nic.rx_discards", "receive discards", U::kPerSecond, +1, 0.01, 1, S::kNic, {}, true),
    Sp("nic.tx_discards", "send discards", U::kPerSecond, +1, 0.01, 1, S::kNic, {}, true),
    Sp("nic.link_errors", "link errors", U::kPerSecond, +1, 0.01, 1, S::kNic, {}, true),
    Sp("nic.ecn_marked", "ECN-marked packets", U::kPerSecond, +1, 10, 1, S::kNic, {}, true),
    Sp("nic.cnp_sent", "CNPs sent", U::kPerSecond, +1, 10, 1, S::kNic, {}, true),
    Sp("nic.cnp_handled", "CNPs handled", U::kPerSecond, +1, 10, 1, S::kNic, {}, true),
    Sp("nic.rate_gbps", "port rate", U::kGbps, -1, 1, 0.1, S::kNic, {}, true),
    Sp("nic.up", "link up", U::kBoolean, -1, 0.5, 0, S::kNic, {}, true),
    Sp("host.cpu_steal_pct", "CPU steal", U::kPercent, +1, 2, 1, S::kHost, {}, true),
    Sp("host.cpu_iowait_pct", "CPU iowait", U::kPercent, +1, 5, 1, S::kHost, {}, true),
    Sp("host.load1", "load average", U::kNumber, +1, 1, 0.5, S::kHost, {}, true),
    Sp("host.runnable", "runnable tasks", U::kNumber, +1, 1, 0.5, S::kHost, {}, true),
    Sp("host.cgroup_periods", "cgroup CPU periods", U::kPerSecond, 0, 0, 0, S::kHost, {}, true),
    Sp("host.cgroup_throttled_periods", "cgroup CPU-throttled periods", U::kPerSecond, +1, 0.5, 1,
       S::kHost, {}, true),
    Sp("host.cgroup_throttled_ns", "cgroup CPU throttling, share of time", U::kStallShare, +1, 1, 1,
       S::kHost, {}, true),
    Sp("host.cpu_pressure_ns", "CPU pressure stalls, share of time", U::kStallShare, +1, 2, 1,
       S::kHost, {}, true),
    Sp("host.mem_pressure_ns", "memory pressure stalls, share of time", U::kStallShare, +1, 2, 1,
       S::kHost, {}, true),
    Sp("host.io_pressure_ns", "I/O pressure stalls, share of time", U::kStallShare, +1, 2, 1,
       S::kHost, {}, true),
    // Per process, so compared by rank: a rank whose own threads are preempted.
    Sp("host.involuntary_switches", "involuntary context switches", U::kPerSecond, +1, 50, 2,
       S::kHost),
    // Not judged: ranks' roles use different CPU. What the node's CPUs allow (CpuBounds).
    Sp("host.process_cpu_ns", "the process's CPU time, share of time", U::kStallShare, 0, 0, 0,
       S::kHost),
};

// printf's number with thousands separated: "1,523".
std::string Grouped(double v, const char* fmt) {
  const std::string text = FormatNumber(fmt, v);
  const size_t digits_begin = text.starts_with('-') ? 1 : 0;
  const size_t digits_end = std::min(text.find('.'), text.size());
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (i > digits_begin && i < digits_end && (digits_end - i) % 3 == 0) out += ',';
    out += text[i];
  }
  return out;
}

}  // namespace

SignalSpec SpecOf(std::string_view name, bool* known) {
  for (const SignalSpec& s : kSpecs) {
    if (s.name == name) {
      if (known != nullptr) *known = true;
      return s;
    }
  }
  if (known != nullptr) *known = false;
  SignalSpec generic = Sp(name, name, U::kNumber, 0, 0, 1.0, S::kHost);
  if (name.starts_with("gpu.")) generic.scope = S::kGpu;
  if (name.starts_with("nic.")) generic.scope = S::kNic, generic.node_wide = true;
  if (name.starts_with("host.")) generic.node_wide = true;
  return generic;
}

std::string FormatSignal(const SignalSpec& spec, double v) {
  switch (spec.unit) {
    case U::kMhz:
      return Grouped(v, "%.0f") + " MHz";
    case U::kMilliwatt:
      return Grouped(v / 1000, "%.0f") + " W";
    case U::kCelsius:
      return Grouped(v, "%.0f") + " °C";
    case U::kPercent:
      return Grouped(v, "%.1f") + " %";
    case U::kLanes:
      return std::string("x").append(Grouped(v, "%.0f"));  // not "x" + ...: GCC bug 105329
    case U::kGeneration:
      return "Gen" + Grouped(v, "%.0f");
    case U::kGbps:
      return Grouped(v, "%.0f") + " Gb/s";
    case U::kPerSecond:
      return Grouped(v, v < 10 ? "%.2f" : "%.0f") + "/s";
    case U::kStallShare:
      return Grouped(v, "%.1f") + " %";
    case U::kBoolean:
      return v >= 0.5 ? "yes" : "no";
    case U::kFlags:
      return ThrottleReasons(static_cast<uint64_t>(v));
    case U::kNumber:
      break;
  }
  return Grouped(v, v < 10 ? "%.2f" : "%.0f");
}

std::string ThrottleReasons(uint64_t bits) {
  static constexpr std::pair<uint64_t, const char*> kNames[] = {
      {0x40, "HW thermal slowdown"}, {0x20, "SW thermal slowdown"},
      {0x80, "HW power brake"},      {0x8, "HW slowdown"},
      {0x4, "SW power cap"},         {0x2, "application clocks"},
      {0x10, "sync boost"},          {0x1, "idle"},
      {0x100, "display clocks"}};
  std::string out;
  for (const auto& [bit, text] : kNames) {
    if ((bits & bit) == 0) continue;
    if (!out.empty()) out += ", ";
    out += text;
  }
  if (const uint64_t rest = bits & ~uint64_t{0x1ff}) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(rest));
    out += out.empty() ? hex : std::string(", ") + hex;
  }
  return out.empty() ? "none" : out;
}

bool Explains(SignalScope scope, std::string_view category) {
  switch (scope) {
    case S::kGpu:
      return category.starts_with("gpu_");
    case S::kPcie:
      return category == "gpu_memory" || category == "communication_link";
    case S::kGpuLink:
    case S::kNic:
      return category.starts_with("communication_");
    case S::kHost:
      return category == "host_cpu" || category == "python" || category == "dataloader" ||
             category == "gc";
  }
  return false;
}

}  // namespace perftracker::analyzer
