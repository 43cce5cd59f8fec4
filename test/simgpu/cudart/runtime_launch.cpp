// Kernel launches and the registration path that maps host stubs to kernel names.
//
// A program built by nvcc registers each kernel's host stub with __cudaRegisterFunction from a
// static constructor; test programs and the sim_train extension do the same by hand.
// cudaLaunchKernel then identifies the kernel by its stub, as the real runtime does.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "core/activity.h"
#include "core/clock.h"
#include "core/cost_model.h"
#include "core/registry.h"
#include "cudart/registration.h"
#include "cudart/runtime_internal.h"
#include "cudart/runtime_state.h"

namespace simgpu::cudart {
namespace {

struct Module {
  const void* fat_cubin = nullptr;
  std::vector<const void*> stubs;
};

struct CallConfig {
  dim3 grid;
  dim3 block;
  size_t shared_bytes;
  cudaStream_t stream;
};

std::mutex g_modules_mu;
thread_local std::vector<CallConfig> t_call_configs;

bool ValidConfig(dim3 grid, dim3 block) {
  uint64_t threads = static_cast<uint64_t>(block.x) * block.y * block.z;
  return grid.x > 0 && grid.y > 0 && grid.z > 0 && grid.y <= 65535 && grid.z <= 65535 &&
         threads > 0 && threads <= 1024 && block.z <= 64;
}

}  // namespace

cudaError_t LaunchKernel(const void* func, dim3 grid, dim3 block, void** args,
                         size_t shared_bytes, cudaStream_t stream, bool per_thread) {
  const char* name = func ? KernelName(func) : nullptr;
  if (!name) return Fail(cudaErrorInvalidDeviceFunction);
  if (!ValidConfig(grid, block)) return Fail(cudaErrorInvalidConfiguration);
  Stream* s = ResolveStream(stream, per_thread);
  WorkSpec spec;
  spec.kind = WorkKind::kKernel;
  spec.kernel.name = name;
  spec.kernel.grid[0] = grid.x;
  spec.kernel.grid[1] = grid.y;
  spec.kernel.grid[2] = grid.z;
  spec.kernel.block[0] = block.x;
  spec.kernel.block[1] = block.y;
  spec.kernel.block[2] = block.z;
  spec.kernel.dynamic_shared_bytes = static_cast<uint32_t>(shared_bytes);
  spec.duration_ns = KernelDurationNs(spec.kernel);
  spec.correlation_id = NextCorrelationId();
  spec.effect = BindKernelBody(func, args, grid, block);
  DeviceOf(s)->Enqueue(s, std::move(spec));
  return cudaSuccess;
}

cudaError_t LaunchKernelEx(const cudaLaunchConfig_t* config, const void* func, void** args,
                           bool per_thread) {
  if (!config) return Fail(cudaErrorInvalidValue);
  // Cluster and other attributes do not change the modelled duration.
  return LaunchKernel(func, config->gridDim, config->blockDim, args, config->dynamicSmemBytes,
                      config->stream, per_thread);
}

cudaError_t LaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data, bool per_thread) {
  if (!fn) return Fail(cudaErrorInvalidValue);
  Stream* s = ResolveStream(stream, per_thread);
  WorkSpec spec;
  spec.kind = WorkKind::kMarker;
  // Host functions run when the device reaches them, not when the device thread does.
  spec.exec = [fn, user_data](int64_t ready_ns) {
    SleepUntilDeviceNs(ready_ns);
    fn(user_data);
    return std::max(ready_ns, DeviceNowNs());
  };
  DeviceOf(s)->Enqueue(s, std::move(spec));
  return cudaSuccess;
}

}  // namespace simgpu::cudart

namespace sc = simgpu::cudart;

extern "C" {

void** __cudaRegisterFatBinary(void* fat_cubin) {
  auto* module = new sc::Module;
  module->fat_cubin = fat_cubin;
  return reinterpret_cast<void**>(module);
}

void __cudaRegisterFatBinaryEnd(void**) {}

void __cudaUnregisterFatBinary(void** handle) {
  auto* module = reinterpret_cast<sc::Module*>(handle);
  if (!module) return;
  for (const void* stub : module->stubs) simgpu::UnregisterKernel(stub);
  delete module;
}

void __cudaRegisterFunction(void** handle, const char* host_fun, char*, const char* device_name,
                            int, uint3*, uint3*, dim3*, dim3*, int*) {
  simgpu::RegisterKernel(host_fun, device_name);
  if (auto* module = reinterpret_cast<sc::Module*>(handle)) {
    std::lock_guard<std::mutex> lock(sc::g_modules_mu);
    module->stubs.push_back(host_fun);
  }
}

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared_bytes,
                                     struct CUstream_st* stream) {
  sc::t_call_configs.push_back({grid, block, shared_bytes, stream});
  return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared_bytes,
                                       void* stream) {
  if (sc::t_call_configs.empty()) return sc::Fail(cudaErrorInvalidConfiguration);
  sc::CallConfig c = sc::t_call_configs.back();
  sc::t_call_configs.pop_back();
  *grid = c.grid;
  *block = c.block;
  *shared_bytes = c.shared_bytes;
  *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}

cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args,
                             size_t shared_bytes, cudaStream_t stream) {
  return sc::LaunchKernel(func, grid, block, args, shared_bytes, stream, false);
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func,
                               void** args) {
  return sc::LaunchKernelEx(config, func, args, false);
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data) {
  return sc::LaunchHostFunc(stream, fn, user_data, false);
}

cudaError_t cudaFuncGetName(const char** name, const void* func) {
  if (!name) return sc::Fail(cudaErrorInvalidValue);
  const char* found = func ? simgpu::KernelName(func) : nullptr;
  if (!found) return sc::Fail(cudaErrorInvalidDeviceFunction);
  *name = found;
  return cudaSuccess;
}

}  // extern "C"
