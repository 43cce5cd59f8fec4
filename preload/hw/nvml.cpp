#include "preload/hw/nvml.h"

#include <dlfcn.h>

#include "preload/core/symbols.h"

namespace perftracker::preload::hw {
namespace {

// NVML's C ABI as documented (nvml.h, NVML API Reference): return codes and enums are ints,
// a device handle is an opaque pointer.
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr int NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2;
constexpr int NVML_TEMPERATURE_GPU = 0;
constexpr int NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1;
constexpr int NVML_VOLATILE_ECC = 0;
constexpr int NVML_FEATURE_ENABLED = 1;
constexpr unsigned kNvlinkMaxLinks = 18;
// nvmlNvLinkErrorCounter_t: DL_REPLAY, DL_RECOVERY, DL_CRC_FLIT, DL_CRC_DATA.
constexpr int kNvlinkCounters[] = {0, 1, 2, 3};

struct Api {
  nvmlReturn_t (*init)();
  const char* (*error_string)(nvmlReturn_t);
  nvmlReturn_t (*handle_by_bus_id)(const char*, nvmlDevice_t*);
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*);
  nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned*);
  nvmlReturn_t (*event_reasons)(nvmlDevice_t, unsigned long long*);
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*);
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*);
  nvmlReturn_t (*pcie_gen)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*pcie_gen_max)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*pcie_width)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*pcie_width_max)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*pcie_replays)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*ecc)(nvmlDevice_t, int, int, unsigned long long*);
  nvmlReturn_t (*remapped_rows)(nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*);
  nvmlReturn_t (*nvlink_state)(nvmlDevice_t, unsigned, int*);
  nvmlReturn_t (*nvlink_errors)(nvmlDevice_t, unsigned, int, unsigned long long*);
};
Api g_api{};

template <typename Fn>
void Bind(void* library, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(library, name));
}

}  // namespace

bool NvmlSampler::Open(std::string* error) {
  // RealDlopen: a plain dlopen would enter our own dlopen hook (python/).
  library_ = RealDlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    const char* why = dlerror();
    *error = why != nullptr ? why : "libnvidia-ml.so.1: cannot be loaded";
    return false;
  }
  Api& a = g_api;
  Bind(library_, "nvmlInit_v2", &a.init);
  Bind(library_, "nvmlErrorString", &a.error_string);
  Bind(library_, "nvmlDeviceGetHandleByPciBusId_v2", &a.handle_by_bus_id);
  Bind(library_, "nvmlDeviceGetClockInfo", &a.clock);
  Bind(library_, "nvmlDeviceGetMaxClockInfo", &a.max_clock);
  Bind(library_, "nvmlDeviceGetCurrentClocksEventReasons", &a.event_reasons);
  if (a.event_reasons == nullptr) {  // drivers before 535 name it after throttling
    Bind(library_, "nvmlDeviceGetCurrentClocksThrottleReasons", &a.event_reasons);
  }
  Bind(library_, "nvmlDeviceGetPowerUsage", &a.power);
  Bind(library_, "nvmlDeviceGetEnforcedPowerLimit", &a.power_limit);
  Bind(library_, "nvmlDeviceGetTemperature", &a.temperature);
  Bind(library_, "nvmlDeviceGetUtilizationRates", &a.utilization);
  Bind(library_, "nvmlDeviceGetCurrPcieLinkGeneration", &a.pcie_gen);
  Bind(library_, "nvmlDeviceGetMaxPcieLinkGeneration", &a.pcie_gen_max);
  Bind(library_, "nvmlDeviceGetCurrPcieLinkWidth", &a.pcie_width);
  Bind(library_, "nvmlDeviceGetMaxPcieLinkWidth", &a.pcie_width_max);
  Bind(library_, "nvmlDeviceGetPcieReplayCounter", &a.pcie_replays);
  Bind(library_, "nvmlDeviceGetTotalEccErrors", &a.ecc);
  Bind(library_, "nvmlDeviceGetRemappedRows", &a.remapped_rows);
  Bind(library_, "nvmlDeviceGetNvLinkState", &a.nvlink_state);
  Bind(library_, "nvmlDeviceGetNvLinkErrorCounter", &a.nvlink_errors);
  if (a.init == nullptr || a.handle_by_bus_id == nullptr) {
    *error = "libnvidia-ml.so.1 lacks nvmlInit_v2 or nvmlDeviceGetHandleByPciBusId_v2";
    return false;
  }
  if (const nvmlReturn_t rc = a.init(); rc != NVML_SUCCESS) {
    const char* why = a.error_string != nullptr ? a.error_string(rc) : nullptr;
    *error = std::string("nvmlInit_v2 failed: ") + (why != nullptr ? why : "unknown error");
    return false;
  }
  return true;
}

bool NvmlSampler::Attach(const std::string& bus_id) {
  nvmlDevice_t device = nullptr;
  if (g_api.handle_by_bus_id(bus_id.c_str(), &device) != NVML_SUCCESS) return false;
  device_ = device;
  // CUDA writes the bus id in upper case, sysfs and NCCL in lower: the window says it as sysfs
  // does, so a GPU reads the same in every tool.
  bus_id_ = bus_id;
  for (char& c : bus_id_) c = static_cast<char>(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c);
  interned_ = false;
  return true;
}

void NvmlSampler::Intern(SignalSet& s) {
  using K = format::SignalKind;
  static constexpr struct {
    const char* name;
    K kind;
  } kSignals[kIds] = {
      {"gpu.sm_clock_mhz", K::kGauge},      {"gpu.sm_clock_max_mhz", K::kGauge},
      {"gpu.mem_clock_mhz", K::kGauge},     {"gpu.mem_clock_max_mhz", K::kGauge},
      {"gpu.throttle_reasons", K::kFlags},  {"gpu.power_mw", K::kGauge},
      {"gpu.power_limit_mw", K::kGauge},    {"gpu.temperature_c", K::kGauge},
      {"gpu.utilization_pct", K::kGauge},   {"gpu.mem_utilization_pct", K::kGauge},
      {"gpu.pcie_gen", K::kGauge},          {"gpu.pcie_gen_max", K::kGauge},
      {"gpu.pcie_width", K::kGauge},        {"gpu.pcie_width_max", K::kGauge},
      {"gpu.pcie_replays", K::kCounter},    {"gpu.ecc_corrected", K::kCounter},
      {"gpu.ecc_uncorrected", K::kCounter}, {"gpu.remapped_rows", K::kGauge},
      {"gpu.remap_pending", K::kGauge},     {"gpu.nvlink_errors", K::kCounter},
  };
  for (int i = 0; i < kIds; ++i) ids_[i] = s.Intern(kSignals[i].name, bus_id_, kSignals[i].kind);
  interned_ = true;
}

void NvmlSampler::Sample(SignalSet& s) {
  if (device_ == nullptr) return;
  if (!interned_) Intern(s);
  const Api& a = g_api;
  nvmlDevice_t d = device_;
  unsigned u = 0;
  unsigned long long ull = 0;
  // One unsigned reading of `fn` (absent or failing: no sample).
  auto gauge = [&](Id id, auto fn, auto... args) {
    if (fn != nullptr && fn(d, args..., &u) == NVML_SUCCESS) s.AddGauge(ids_[id], u);
  };
  gauge(kSm, a.clock, NVML_CLOCK_SM);
  gauge(kSmMax, a.max_clock, NVML_CLOCK_SM);
  gauge(kMem, a.clock, NVML_CLOCK_MEM);
  gauge(kMemMax, a.max_clock, NVML_CLOCK_MEM);
  if (a.event_reasons != nullptr && a.event_reasons(d, &ull) == NVML_SUCCESS) {
    s.AddFlags(ids_[kThrottle], ull);
  }
  gauge(kPower, a.power);
  gauge(kPowerLimit, a.power_limit);
  gauge(kTemperature, a.temperature, NVML_TEMPERATURE_GPU);
  nvmlUtilization_t util{};
  if (a.utilization != nullptr && a.utilization(d, &util) == NVML_SUCCESS) {
    s.AddGauge(ids_[kUtil], util.gpu);
    s.AddGauge(ids_[kMemUtil], util.memory);
  }
  gauge(kPcieGen, a.pcie_gen);
  gauge(kPcieGenMax, a.pcie_gen_max);
  gauge(kPcieWidth, a.pcie_width);
  gauge(kPcieWidthMax, a.pcie_width_max);
  if (a.pcie_replays != nullptr && a.pcie_replays(d, &u) == NVML_SUCCESS) {
    s.AddCounter(ids_[kReplays], u);
  }
  if (a.ecc != nullptr) {
    if (a.ecc(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &ull) == NVML_SUCCESS) {
      s.AddCounter(ids_[kEccCorrected], ull);
    }
    if (a.ecc(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &ull) == NVML_SUCCESS) {
      s.AddCounter(ids_[kEccUncorrected], ull);
    }
  }
  unsigned corrected = 0, uncorrected = 0, pending = 0, failed = 0;
  if (a.remapped_rows != nullptr &&
      a.remapped_rows(d, &corrected, &uncorrected, &pending, &failed) == NVML_SUCCESS) {
    s.AddGauge(ids_[kRemapped], corrected + uncorrected);
    s.AddGauge(ids_[kRemapPending], pending != 0 ? 1 : 0);
  }
  if (a.nvlink_errors != nullptr) {
    // Summed over the active links; a GPU without NVLink answers NOT_SUPPORTED: no signal.
    uint64_t errors = 0;
    bool any = false;
    for (unsigned link = 0; link < kNvlinkMaxLinks; ++link) {
      int active = 0;
      if (a.nvlink_state != nullptr &&
          (a.nvlink_state(d, link, &active) != NVML_SUCCESS || active != NVML_FEATURE_ENABLED)) {
        continue;
      }
      for (int counter : kNvlinkCounters) {
        if (a.nvlink_errors(d, link, counter, &ull) == NVML_SUCCESS) errors += ull, any = true;
      }
    }
    if (any) s.AddCounter(ids_[kNvlinkErrors], errors);
  }
}

}  // namespace perftracker::preload::hw
