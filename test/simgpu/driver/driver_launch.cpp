// Kernel and graph launches of the driver API, and their per-thread-default-stream (_ptsz)
// entry points. A timed kernel lasts what the cost model says for its grid; a program kernel
// (NCCL) runs the DeviceProgram it was given when the device reaches it.
#include <utility>

#include "core/activity.h"
#include "core/cost_model.h"
#include "core/device.h"
#include "driver/driver_state.h"

namespace simgpu::driver {
namespace {

bool ValidShape(const LaunchShape& s) {
  const uint64_t threads = uint64_t{s.block[0]} * s.block[1] * s.block[2];
  return s.grid[0] > 0 && s.grid[1] > 0 && s.grid[2] > 0 && s.grid[1] <= 65535 &&
         s.grid[2] <= 65535 && threads > 0 && threads <= 1024 && s.block[2] <= 64;
}

}  // namespace

CUresult Launch(CUfunction f, const LaunchShape& shape, CUstream stream, void** params,
                bool per_thread) {
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (!ValidShape(shape)) return CUDA_ERROR_INVALID_VALUE;
  WorkSpec spec;
  spec.kind = f->kind;
  spec.kernel.name = f->name;
  for (int i = 0; i < 3; ++i) {
    spec.kernel.grid[i] = shape.grid[i];
    spec.kernel.block[i] = shape.block[i];
  }
  spec.kernel.dynamic_shared_bytes = shape.shared_bytes;
  if (f->program) {
    // Like any kernel argument, the program is copied at launch: the caller may reuse it.
    if (params == nullptr || params[0] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const DeviceProgram* program = *static_cast<const DeviceProgram* const*>(params[0]);
    if (program == nullptr || !program->exec) return CUDA_ERROR_INVALID_VALUE;
    spec.exec = program->exec;
  } else {
    spec.duration_ns = KernelDurationNs(spec.kernel);
  }
  spec.correlation_id = NextCorrelationId();
  Stream* s = ResolveStreamHandle(Device::CurrentOrdinal(), stream, per_thread);
  Device::Get(s->device())->Enqueue(s, std::move(spec));
  return CUDA_SUCCESS;
}

CUresult LaunchEx(const CUlaunchConfig* config, CUfunction f, void** params, bool per_thread) {
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Cluster and other attributes do not change the modelled duration.
  const LaunchShape shape{{config->gridDimX, config->gridDimY, config->gridDimZ},
                          {config->blockDimX, config->blockDimY, config->blockDimZ},
                          config->sharedMemBytes};
  return Launch(f, shape, config->hStream, params, per_thread);
}

CUresult GraphLaunch(CUgraphExec exec, CUstream stream, bool per_thread) {
  // CUgraphExec and cudaGraphExec_t are the same handle: the runtime stand-in's instantiated
  // graph, replayed in order on the launch stream.
  if (exec == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Stream* s = ResolveStreamHandle(Device::CurrentOrdinal(), stream, per_thread);
  Device* device = Device::Get(s->device());
  for (const WorkSpec& node : reinterpret_cast<const Graph*>(exec)->nodes) {
    WorkSpec copy = node;
    copy.correlation_id = NextCorrelationId();
    device->Enqueue(s, std::move(copy));
  }
  return CUDA_SUCCESS;
}

}  // namespace simgpu::driver

namespace sd = simgpu::driver;

// The _ptsz entry points cuda.h only declares under CUDA_API_PER_THREAD_DEFAULT_STREAM.
extern "C" {
CUresult cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void**, void**);
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig*, CUfunction, void**, void**);
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, unsigned, unsigned, CUstream, void**);
CUresult cuGraphLaunch_ptsz(CUgraphExec, CUstream);
}

extern "C" {

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, CUstream stream, void** params,
                        void**) {
  return sd::Launch(f, {{gx, gy, gz}, {bx, by, bz}, shared}, stream, params, false);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shared, CUstream stream,
                             void** params, void**) {
  return sd::Launch(f, {{gx, gy, gz}, {bx, by, bz}, shared}, stream, params, true);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void**) {
  return sd::LaunchEx(config, f, params, false);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params,
                               void**) {
  return sd::LaunchEx(config, f, params, true);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                   unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                   CUstream stream, void** params) {
  return sd::Launch(f, {{gx, gy, gz}, {bx, by, bz}, shared}, stream, params, false);
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                        unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                        CUstream stream, void** params) {
  return sd::Launch(f, {{gx, gy, gz}, {bx, by, bz}, shared}, stream, params, true);
}

CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  return sd::GraphLaunch(exec, stream, false);
}

CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream stream) {
  return sd::GraphLaunch(exec, stream, true);
}

}  // extern "C"
