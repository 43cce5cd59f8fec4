// What NVML reports about the simulated GPUs of this node, derived from the simgpu knobs so that
// the hardware view agrees with the performance model: a rank slowed by SIMGPU_COMPUTE_SLOWDOWN
// runs its SM clock slower by the same factor, a rank slowed by SIMGPU_PCIE_SLOWDOWN trained its
// PCIe link narrower.
//
// NVML sees the whole node, like nvidia-smi: the process of global rank r on node n = NodeOf(r)
// sees SIMGPU_DEVICE_COUNT devices, and device ordinal i belongs to global rank
// n * ranks_per_node + i. Per-rank knobs therefore address global ranks, as the compute knobs do.
#ifndef SIMGPU_NVML_NVML_MODEL_H_
#define SIMGPU_NVML_NVML_MODEL_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "nvml/nvml_abi.h"

// The object behind an nvmlDevice_t. Declared (incomplete) by nvml.h; ours lives for the process.
struct nvmlDevice_st {
  unsigned ordinal = 0;
  int64_t rank = 0;  // global rank that owns the device

  // Error counters, integrated from their per-second rates whenever one is read (the rates may
  // change mid-run with an @A-B op window, so the count is an integral, not rate x time).
  std::mutex mu;
  int64_t counted_to_ns = 0;  // device time the counters are integrated to
  double pcie_replays = 0;
  double ecc_corrected = 0;
  double nvlink_errors = 0;
};

namespace simgpu::nvml {

inline constexpr unsigned kSmClockMaxMhz = 1980;
inline constexpr unsigned kMemClockMaxMhz = 2619;
inline constexpr unsigned kVideoClockMaxMhz = 1710;
inline constexpr unsigned kPowerLimitMw = 700000;
inline constexpr unsigned kPowerDrawMw = 350000;
inline constexpr unsigned kDefaultTemperatureC = 55;
inline constexpr unsigned kUtilizationGpuPct = 90;
inline constexpr unsigned kUtilizationMemPct = 40;
inline constexpr unsigned kPcieGen = 5;
inline constexpr unsigned kPcieWidthMax = 16;

// "Ranks first..last get these clock event reasons" (SIMGPU_NVML_THROTTLE).
struct RankBits {
  int64_t first = 0;
  int64_t last = 0;
  unsigned long long bits = 0;
};

// SIMGPU_NVML_THROTTLE: "R=REASON[+REASON...][,R=...]", R a rank, A-B or *; a reason is a name
// (idle, app_clocks, sw_power, hw_slowdown, sync_boost, sw_thermal, hw_thermal, hw_power_brake,
// display) or a number (0x40). False on malformed input.
bool ParseThrottle(const std::string& spec, std::vector<RankBits>* out);

// Parses the bus id forms NVML accepts (hex, case-insensitive): domain:bus:device.function,
// domain:bus:device, bus:device.function. The domain may have any number of digits ("0000" as
// CUDA writes it, "00000000" as NVML does).
bool ParsePciBusId(const char* text, unsigned* domain, unsigned* bus, unsigned* device,
                   unsigned* function);

// Every device of this node (created on first call; never freed: handles stay valid after
// nvmlShutdown, as callers that cached them expect of a re-initialized library).
const std::vector<nvmlDevice_st*>& Devices();
bool IsDevice(nvmlDevice_t device);

// The compute slowdown of the device's rank at this process's current NCCL op count.
double ComputeFactor(const nvmlDevice_st& device);

unsigned SmClockMhz(const nvmlDevice_st& device);
unsigned long long ClockEventReasons(const nvmlDevice_st& device);
unsigned TemperatureC(const nvmlDevice_st& device);
unsigned PowerDrawMw(const nvmlDevice_st& device);
unsigned PcieWidth(const nvmlDevice_st& device);

// Brings the device's error counters up to now and returns them through the pointers.
void ReadCounters(nvmlDevice_st* device, double* pcie_replays, double* ecc_corrected,
                  double* nvlink_errors);

}  // namespace simgpu::nvml

#endif  // SIMGPU_NVML_NVML_MODEL_H_
