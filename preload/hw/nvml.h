// GPU signals through NVML, loaded with dlopen("libnvidia-ml.so.1"): no link-time dependency, and
// only the documented entry points below are declared. A function missing from the library, or
// NVML_ERROR_NOT_SUPPORTED for one device, leaves its signal out.
// Open runs once, on a thread of its own (signals.cpp: nvmlInit_v2 can take seconds); the rest
// runs on the writer thread, after Open has returned.
#pragma once

#include <cstdint>
#include <string>

#include "preload/core/signal_set.h"

namespace perftracker::preload::hw {

class NvmlSampler {
 public:
  // Loads and initializes NVML once; false with the reason in `error` ("libnvidia-ml.so.1: ...",
  // or nvmlErrorString of nvmlInit_v2's result).
  bool Open(std::string* error);
  // The device with this PCI bus id (as cudaDeviceGetPCIBusId gives it) becomes the one sampled;
  // false when NVML does not know it.
  bool Attach(const std::string& bus_id);
  // No device sampled until the next Attach.
  void Detach() { device_ = nullptr; }
  const std::string& bus_id() const { return bus_id_; }
  void Sample(SignalSet& signals);

 private:
  void Intern(SignalSet& signals);

  void* library_ = nullptr;
  void* device_ = nullptr;  // nvmlDevice_t
  std::string bus_id_;
  bool interned_ = false;
  enum Id {
    kSm,
    kSmMax,
    kMem,
    kMemMax,
    kThrottle,
    kPower,
    kPowerLimit,
    kTemperature,
    kUtil,
    kMemUtil,
    kPcieGen,
    kPcieGenMax,
    kPcieWidth,
    kPcieWidthMax,
    kReplays,
    kEccCorrected,
    kEccUncorrected,
    kRemapped,
    kRemapPending,
    kNvlinkErrors,
    kIds
  };
  SignalId ids_[kIds] = {};
};

}  // namespace perftracker::preload::hw
