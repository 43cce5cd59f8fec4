// Device management, properties and versions: what PyTorch-like callers ask at start-up.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

#include "core/config.h"
#include "core/pci.h"
#include "core/registry.h"
#include "cudart/runtime_internal.h"
#include "cudart/runtime_state.h"

namespace simgpu::cudart {
namespace {

constexpr size_t kTotalMemory = 80ull << 30;  // an 80 GB part

bool ValidDevice(int device) { return Device::Get(device) != nullptr; }

void FillProperties(cudaDeviceProp* p, int device) {
  std::memset(p, 0, sizeof(*p));
  std::snprintf(p->name, sizeof(p->name), "SimGPU H100-class (simgpu)");
  p->uuid.bytes[0] = static_cast<char>(device + 1);
  p->totalGlobalMem = kTotalMemory;
  p->sharedMemPerBlock = 48 << 10;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 0x7fffffff;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->totalConstMem = 64 << 10;
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = static_cast<int>(GetConfig().sm_count);
  p->concurrentKernels = 1;
  p->pciBusID = simgpu::PciBusOf(device);
  p->pciDeviceID = simgpu::kPciDevice;
  p->pciDomainID = simgpu::kPciDomain;
  p->asyncEngineCount = 2;
  p->unifiedAddressing = 1;
  p->l2CacheSize = 50 << 20;
  p->maxThreadsPerMultiProcessor = 2048;
  p->streamPrioritiesSupported = 1;
  p->sharedMemPerMultiprocessor = 228 << 10;
  p->regsPerMultiprocessor = 65536;
  p->managedMemory = 1;
  p->maxBlocksPerMultiProcessor = 32;
  p->clusterLaunch = 1;
}

int Attribute(cudaDeviceAttr attr, int device) {
  cudaDeviceProp p;
  FillProperties(&p, device);
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock:
      return p.maxThreadsPerBlock;
    case cudaDevAttrWarpSize:
      return p.warpSize;
    case cudaDevAttrMultiProcessorCount:
      return p.multiProcessorCount;
    case cudaDevAttrComputeCapabilityMajor:
      return p.major;
    case cudaDevAttrComputeCapabilityMinor:
      return p.minor;
    case cudaDevAttrMaxThreadsPerMultiProcessor:
      return p.maxThreadsPerMultiProcessor;
    case cudaDevAttrConcurrentKernels:
      return 1;
    case cudaDevAttrUnifiedAddressing:
      return 1;
    case cudaDevAttrPciBusId:
      return p.pciBusID;
    case cudaDevAttrPciDeviceId:
      return p.pciDeviceID;
    case cudaDevAttrPciDomainId:
      return p.pciDomainID;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      return static_cast<int>(p.sharedMemPerBlock);
    case cudaDevAttrL2CacheSize:
      return p.l2CacheSize;
    default:
      return 0;
  }
}

}  // namespace
}  // namespace simgpu::cudart

using namespace simgpu::cudart;  // NOLINT: exported C functions only forward

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return Fail(cudaErrorInvalidValue);
  *count = simgpu::Device::Count();
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (!ValidDevice(device)) return Fail(cudaErrorInvalidDevice);
  SetCurrentDeviceOrdinal(device);
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (!device) return Fail(cudaErrorInvalidValue);
  *device = CurrentDeviceOrdinal();
  return cudaSuccess;
}

cudaError_t cudaInitDevice(int device, unsigned int, unsigned int) {
  return ValidDevice(device) ? cudaSuccess : Fail(cudaErrorInvalidDevice);
}

cudaError_t cudaSetDeviceFlags(unsigned int) { return cudaSuccess; }

cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  if (!flags) return Fail(cudaErrorInvalidValue);
  *flags = cudaDeviceScheduleAuto | cudaDeviceMapHost;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  if (!prop) return Fail(cudaErrorInvalidValue);
  if (!ValidDevice(device)) return Fail(cudaErrorInvalidDevice);
  FillProperties(prop, device);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  if (!value) return Fail(cudaErrorInvalidValue);
  if (!ValidDevice(device)) return Fail(cudaErrorInvalidDevice);
  *value = Attribute(attr, device);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* bus_id, int len, int device) {
  if (!bus_id || len <= 0) return Fail(cudaErrorInvalidValue);
  if (!ValidDevice(device)) return Fail(cudaErrorInvalidDevice);
  // CUDA's form: 4-digit domain, upper-case hex (NCCL lower-cases it to match sysfs; NVML's own
  // busId has an 8-digit domain).
  std::snprintf(bus_id, len, "%04X:%02X:%02X.%X", simgpu::kPciDomain, simgpu::PciBusOf(device),
                simgpu::kPciDevice, simgpu::kPciFunction);
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int* can_access, int device, int peer) {
  if (!can_access) return Fail(cudaErrorInvalidValue);
  if (!ValidDevice(device) || !ValidDevice(peer)) return Fail(cudaErrorInvalidDevice);
  *can_access = device != peer;
  return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int) {
  return ValidDevice(peer) ? cudaSuccess : Fail(cudaErrorInvalidDevice);
}

cudaError_t cudaDeviceSynchronize(void) {
  if (cudaError_t rc = CheckCaptureSafe(); rc != cudaSuccess) return rc;
  CurrentDevice()->Synchronize();
  return cudaSuccess;
}

cudaError_t cudaDeviceReset(void) {
  CurrentDevice()->Synchronize();
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (!free_bytes || !total_bytes) return Fail(cudaErrorInvalidValue);
  size_t used = simgpu::DeviceBytesInUse(CurrentDeviceOrdinal());
  *total_bytes = kTotalMemory;
  *free_bytes = used < kTotalMemory ? kTotalMemory - used : 0;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  if (!version) return Fail(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  if (!version) return Fail(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

}  // extern "C"
