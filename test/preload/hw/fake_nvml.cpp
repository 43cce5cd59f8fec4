// A minimal libnvidia-ml.so.1 for the NVML sampler's test: one GPU, at the bus id simgpu's
// cudaDeviceGetPCIBusId gives device 1, throttled (HW thermal slowdown) at 1,410 of 1,980 MHz.
// Volatile ECC errors grow by 2 per query; NVLink and row remapping are not supported, as on a
// PCIe card; nvmlDeviceGetCurrentClocksEventReasons is missing, as before driver 535.
#include <cstring>

namespace {

int g_device;  // the handle's target
unsigned long long g_ecc = 0;
constexpr int kSuccess = 0, kInvalid = 2, kNotSupported = 3, kNotFound = 6;

}  // namespace

extern "C" {

int nvmlInit_v2() { return kSuccess; }
int nvmlShutdown() { return kSuccess; }
const char* nvmlErrorString(int) { return "fake"; }

int nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, void** device) {
  if (std::strcmp(bus_id, "0000:19:00.0") != 0) return kNotFound;
  *device = &g_device;
  return kSuccess;
}

int nvmlDeviceGetClockInfo(void* device, int type, unsigned* mhz) {
  if (device != &g_device) return kInvalid;
  *mhz = type == 1 ? 1410 : 1593;
  return kSuccess;
}
int nvmlDeviceGetMaxClockInfo(void* device, int type, unsigned* mhz) {
  if (device != &g_device) return kInvalid;
  *mhz = type == 1 ? 1980 : 1593;
  return kSuccess;
}
int nvmlDeviceGetCurrentClocksThrottleReasons(void*, unsigned long long* reasons) {
  *reasons = 0x40;
  return kSuccess;
}
int nvmlDeviceGetPowerUsage(void*, unsigned* mw) {
  *mw = 300000;
  return kSuccess;
}
int nvmlDeviceGetEnforcedPowerLimit(void*, unsigned* mw) {
  *mw = 400000;
  return kSuccess;
}
int nvmlDeviceGetTemperature(void*, int sensor, unsigned* c) {
  if (sensor != 0) return kInvalid;
  *c = 87;
  return kSuccess;
}
struct Utilization {
  unsigned gpu, memory;
};
int nvmlDeviceGetUtilizationRates(void*, Utilization* u) {
  *u = {97, 40};
  return kSuccess;
}
int nvmlDeviceGetCurrPcieLinkGeneration(void*, unsigned* v) { return *v = 4, kSuccess; }
int nvmlDeviceGetMaxPcieLinkGeneration(void*, unsigned* v) { return *v = 4, kSuccess; }
int nvmlDeviceGetCurrPcieLinkWidth(void*, unsigned* v) { return *v = 8, kSuccess; }
int nvmlDeviceGetMaxPcieLinkWidth(void*, unsigned* v) { return *v = 16, kSuccess; }
int nvmlDeviceGetPcieReplayCounter(void*, unsigned* v) { return *v = 5, kSuccess; }
int nvmlDeviceGetTotalEccErrors(void*, int type, int counter, unsigned long long* v) {
  if (counter != 0) return kInvalid;
  if (type == 0) g_ecc += 2;
  *v = type == 0 ? g_ecc : 0;
  return kSuccess;
}
int nvmlDeviceGetRemappedRows(void*, unsigned*, unsigned*, unsigned*, unsigned*) {
  return kNotSupported;
}
int nvmlDeviceGetNvLinkState(void*, unsigned, int*) { return kNotSupported; }
int nvmlDeviceGetNvLinkErrorCounter(void*, unsigned, int, unsigned long long*) {
  return kNotSupported;
}

}  // extern "C"
