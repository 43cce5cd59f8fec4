// How NCCL >= 2.22 launches its kernels: through cuLaunchKernel obtained from the driver with
// cuGetProcAddress_v2 (its static runtime never exports a launch an LD_PRELOAD could see). The
// kernel is a simgpu program kernel: its argument carries what the op does when the device
// reaches it (nccl_exec.cpp), as a real NCCL kernel's ncclDevKernelArgs carry the work.
#include <map>
#include <mutex>
#include <string>

#include "core/device.h"
#include "core/driver_loader.h"
#include "core/module_image.h"
#include "nccl/nccl_state.h"

namespace simgpu::nccl {
namespace {

constexpr ModuleKernel kKernels[] = {{"ncclDevKernel_*", true, WorkKind::kComm}};
constexpr ModuleImage kImage{kModuleMagic, kKernels, 1};
constexpr unsigned kChannels = 16;
constexpr unsigned kThreads = 512;

struct Driver {
  DriverApi api;
  CUmodule module = nullptr;
  std::mutex mu;
  std::map<std::string, CUfunction> functions;
};

Driver* GetDriver() {
  static Driver* driver = [] {
    auto* d = new Driver;
    d->api = LoadDriverApi("NCCL", 12080);
    if (d->api.ok && d->api.module_load_data(&d->module, &kImage) != CUDA_SUCCESS) {
      d->api.ok = false;
    }
    return d;
  }();
  return driver->api.ok ? driver : nullptr;
}

CUfunction FunctionFor(Driver* d, const char* name) {
  std::lock_guard<std::mutex> lock(d->mu);
  auto it = d->functions.find(name);
  if (it != d->functions.end()) return it->second;
  CUfunction f = nullptr;
  if (d->api.module_get_function(&f, d->module, name) != CUDA_SUCCESS) return nullptr;
  d->functions.emplace(name, f);
  return f;
}

}  // namespace

ncclResult_t LaunchOnDevice(std::vector<Op> batch, const char* kernel_name) {
  Driver* d = GetDriver();
  if (d == nullptr) return ncclUnhandledCudaError;
  CUfunction f = FunctionFor(d, kernel_name);
  if (f == nullptr) return ncclUnhandledCudaError;
  const cudaStream_t stream = batch.front().stream;
  // NCCL launches on the communicator's device whatever the caller's current device is.
  const int device = batch.front().comm->device;
  const int previous = Device::CurrentOrdinal();
  Device::SetCurrentOrdinal(device);
  DeviceProgram program{[ops = std::move(batch)](int64_t ready_ns) { return RunOps(ops, ready_ns); }};
  const DeviceProgram* arg = &program;
  void* params[] = {&arg};
  const CUresult rc = d->api.launch_kernel(f, kChannels, 1, 1, kThreads, 1, 1, 0,
                                           reinterpret_cast<CUstream>(stream), params, nullptr);
  Device::SetCurrentOrdinal(previous);
  return rc == CUDA_SUCCESS ? ncclSuccess : ncclUnhandledCudaError;
}

}  // namespace simgpu::nccl
