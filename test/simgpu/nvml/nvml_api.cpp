// The exported NVML entry points: argument checks and return codes as NVML documents them, values
// from nvml_model.cpp.
#include <mutex>

#include "core/config.h"
#include "core/pci.h"
#include "nvml/nvml_abi.h"
#include "nvml/nvml_model.h"

namespace simgpu::nvml {
namespace {

// nvmlInit/nvmlShutdown nest: the library stays initialized until every init is matched.
std::mutex g_init_mu;
int g_init_count = 0;

bool Initialized() {
  std::lock_guard<std::mutex> lock(g_init_mu);
  return g_init_count > 0;
}

nvmlReturn_t Init() {
  // SIMGPU_NVML=0: a node without the NVIDIA driver (the library loads, init fails).
  if (GetConfig().nvml == 0) return NVML_ERROR_DRIVER_NOT_LOADED;
  Devices();
  std::lock_guard<std::mutex> lock(g_init_mu);
  ++g_init_count;
  return NVML_SUCCESS;
}

// The checks every per-device query starts with, in NVML's order.
nvmlReturn_t Check(nvmlDevice_t device, const void* out) {
  if (!Initialized()) return NVML_ERROR_UNINITIALIZED;
  if (!IsDevice(device) || !out) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_SUCCESS;
}

// Counters NVML returns as unsigned int wrap like the hardware's do.
unsigned Wrap32(double value) {
  return static_cast<unsigned>(static_cast<unsigned long long>(value) & 0xffffffffULL);
}

}  // namespace
}  // namespace simgpu::nvml

using namespace simgpu::nvml;  // NOLINT: exported C functions only forward

extern "C" {

nvmlReturn_t nvmlInit_v2(void) { return Init(); }
nvmlReturn_t nvmlInit(void) { return Init(); }

nvmlReturn_t nvmlShutdown(void) {
  std::lock_guard<std::mutex> lock(g_init_mu);
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  --g_init_count;
  return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_IRQ_ISSUE:
      return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM:
      return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "The operating system has blocked the request";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "RM has detected an NVML/RM version mismatch";
    default:
      return "Unknown Error";
  }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (!Initialized()) return NVML_ERROR_UNINITIALIZED;
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  *count = static_cast<unsigned>(Devices().size());
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (!Initialized()) return NVML_ERROR_UNINITIALIZED;
  if (!device || index >= Devices().size()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = Devices()[index];
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pci_bus_id, nvmlDevice_t* device) {
  if (!Initialized()) return NVML_ERROR_UNINITIALIZED;
  unsigned domain = 0, bus = 0, dev = 0, function = 0;
  if (!device || !ParsePciBusId(pci_bus_id, &domain, &bus, &dev, &function)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const int ordinal = simgpu::OrdinalOfPciBus(static_cast<int>(bus));
  if (domain != simgpu::kPciDomain || dev != simgpu::kPciDevice ||
      function != simgpu::kPciFunction || ordinal < 0 ||
      static_cast<size_t>(ordinal) >= Devices().size()) {
    return NVML_ERROR_NOT_FOUND;
  }
  *device = Devices()[ordinal];
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int* mhz) {
  if (nvmlReturn_t rc = Check(device, mhz); rc != NVML_SUCCESS) return rc;
  switch (type) {
    case NVML_CLOCK_GRAPHICS:
    case NVML_CLOCK_SM:  // one clock domain on Hopper: graphics = SM
      *mhz = SmClockMhz(*device);
      return NVML_SUCCESS;
    case NVML_CLOCK_MEM:
      *mhz = kMemClockMaxMhz;
      return NVML_SUCCESS;
    case NVML_CLOCK_VIDEO:
      *mhz = kVideoClockMaxMhz;
      return NVML_SUCCESS;
  }
  return NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                       unsigned int* mhz) {
  if (nvmlReturn_t rc = Check(device, mhz); rc != NVML_SUCCESS) return rc;
  switch (type) {
    case NVML_CLOCK_GRAPHICS:
    case NVML_CLOCK_SM:
      *mhz = kSmClockMaxMhz;
      return NVML_SUCCESS;
    case NVML_CLOCK_MEM:
      *mhz = kMemClockMaxMhz;
      return NVML_SUCCESS;
    case NVML_CLOCK_VIDEO:
      *mhz = kVideoClockMaxMhz;
      return NVML_SUCCESS;
  }
  return NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                    unsigned long long* reasons) {
  if (nvmlReturn_t rc = Check(device, reasons); rc != NVML_SUCCESS) return rc;
  *reasons = ClockEventReasons(*device);
  return NVML_SUCCESS;
}

// The name before NVML 12.2 renamed "throttle" to "clock event"; same bits.
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                       unsigned long long* reasons) {
  if (nvmlReturn_t rc = Check(device, reasons); rc != NVML_SUCCESS) return rc;
  *reasons = ClockEventReasons(*device);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* milliwatts) {
  if (nvmlReturn_t rc = Check(device, milliwatts); rc != NVML_SUCCESS) return rc;
  *milliwatts = PowerDrawMw(*device);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* milliwatts) {
  if (nvmlReturn_t rc = Check(device, milliwatts); rc != NVML_SUCCESS) return rc;
  *milliwatts = kPowerLimitMw;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor,
                                      unsigned int* celsius) {
  if (nvmlReturn_t rc = Check(device, celsius); rc != NVML_SUCCESS) return rc;
  if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  *celsius = TemperatureC(*device);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  if (nvmlReturn_t rc = Check(device, utilization); rc != NVML_SUCCESS) return rc;
  utilization->gpu = kUtilizationGpuPct;
  utilization->memory = kUtilizationMemPct;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int* gen) {
  if (nvmlReturn_t rc = Check(device, gen); rc != NVML_SUCCESS) return rc;
  *gen = kPcieGen;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int* gen) {
  if (nvmlReturn_t rc = Check(device, gen); rc != NVML_SUCCESS) return rc;
  *gen = kPcieGen;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int* width) {
  if (nvmlReturn_t rc = Check(device, width); rc != NVML_SUCCESS) return rc;
  *width = PcieWidth(*device);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int* width) {
  if (nvmlReturn_t rc = Check(device, width); rc != NVML_SUCCESS) return rc;
  *width = kPcieWidthMax;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int* value) {
  if (nvmlReturn_t rc = Check(device, value); rc != NVML_SUCCESS) return rc;
  double replays = 0, ecc = 0, nvlink = 0;
  ReadCounters(device, &replays, &ecc, &nvlink);
  *value = Wrap32(replays);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t error_type,
                                         nvmlEccCounterType_t counter_type,
                                         unsigned long long* count) {
  if (nvmlReturn_t rc = Check(device, count); rc != NVML_SUCCESS) return rc;
  const bool type_ok = error_type == NVML_MEMORY_ERROR_TYPE_CORRECTED ||
                       error_type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED;
  if (!type_ok || (counter_type != NVML_VOLATILE_ECC && counter_type != NVML_AGGREGATE_ECC)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  double replays = 0, ecc = 0, nvlink = 0;
  ReadCounters(device, &replays, &ecc, &nvlink);
  // No history before this process: the aggregate count equals the volatile one. Only
  // corrected errors are modelled (an uncorrected one would end the job, not slow it).
  *count =
      error_type == NVML_MEMORY_ERROR_TYPE_CORRECTED ? static_cast<unsigned long long>(ecc) : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corr_rows,
                                       unsigned int* unc_rows, unsigned int* is_pending,
                                       unsigned int* failure_occurred) {
  if (nvmlReturn_t rc = Check(device, corr_rows); rc != NVML_SUCCESS) return rc;
  if (!unc_rows || !is_pending || !failure_occurred) return NVML_ERROR_INVALID_ARGUMENT;
  *corr_rows = *unc_rows = *is_pending = *failure_occurred = 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t* is_active) {
  if (nvmlReturn_t rc = Check(device, is_active); rc != NVML_SUCCESS) return rc;
  if (link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  *is_active = NVML_FEATURE_ENABLED;  // all 18 links of an H100 SXM are up
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link,
                                             nvmlNvLinkErrorCounter_t counter,
                                             unsigned long long* value) {
  if (nvmlReturn_t rc = Check(device, value); rc != NVML_SUCCESS) return rc;
  if (link >= NVML_NVLINK_MAX_LINKS || counter < NVML_NVLINK_ERROR_DL_REPLAY ||
      counter >= NVML_NVLINK_ERROR_COUNT) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  double replays = 0, ecc = 0, nvlink = 0;
  ReadCounters(device, &replays, &ecc, &nvlink);
  // A flaky link shows as data-link replays on link 0; every other counter and link is clean.
  *value = link == 0 && counter == NVML_NVLINK_ERROR_DL_REPLAY
               ? static_cast<unsigned long long>(nvlink)
               : 0;
  return NVML_SUCCESS;
}

}  // extern "C"
