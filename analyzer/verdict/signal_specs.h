// What the analyzer knows of each hardware and host signal (FORMAT.md "signals"): how to read
// it, which way is worse, how large a difference matters, and which verdicts it can explain.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace perftracker::analyzer {

enum class SignalUnit : uint8_t {
  kNumber,  // shown as it is
  kMhz,
  kMilliwatt,  // shown in W
  kCelsius,
  kPercent,
  kLanes,       // "x16"
  kGeneration,  // "Gen5"
  kGbps,
  kPerSecond,   // a counter's rate
  kStallShare,  // a counter of stalled ns: the share of the time, in percent
  kBoolean,     // 1 up / 0 down
  kFlags,       // throttle reasons
};

// Which verdicts a deviating signal can explain: its part of the machine.
enum class SignalScope : uint8_t {
  kGpu,      // the GPU's clocks, power, memory: gpu_compute, gpu_memory
  kPcie,     // the GPU's PCIe link: gpu_memory (host<->device copies), communication_link
  kGpuLink,  // NVLink: communication_link, communication_fabric
  kNic,      // the node's NICs: communication_link, communication_fabric
  kHost,     // the node's CPUs, cgroup, memory: host_cpu, python, dataloader, gc
};

struct SignalSpec {
  std::string_view name;
  std::string_view label;  // "SM clock"
  SignalUnit unit = SignalUnit::kNumber;
  int worse = 0;        // +1 higher is worse, -1 lower is worse, 0 informational (not compared)
  double floor = 0;     // a difference (in the shown unit) below this never matters
  double relative = 0;  // nor one below this share of the peers' value
  SignalScope scope = SignalScope::kHost;
  std::string_view max_name;  // the signal holding its maximum (clocks, PCIe), if any
  bool node_wide = false;     // the same for every rank of a host (NICs, host): compared by host
};

// The spec of `name`; a name this analyzer does not know gets a generic one (both directions,
// a doubling or halving matters, the scope read from its prefix), flagged `known = false`.
SignalSpec SpecOf(std::string_view name, bool* known = nullptr);

// A value in the spec's unit for display: "1,523 MHz", "x8", "12.5/s", "31 %".
std::string FormatSignal(const SignalSpec& spec, double value);

// Names of the NVML clock-event reasons set in `bits` that slow a GPU down ("HW thermal
// slowdown, SW power cap"); `kSlowingReasons` masks those that do.
inline constexpr uint64_t kSlowingReasons = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;
std::string ThrottleReasons(uint64_t bits);

// Whether a verdict of `category` can be explained by a signal of `scope`.
bool Explains(SignalScope scope, std::string_view category);

}  // namespace perftracker::analyzer
