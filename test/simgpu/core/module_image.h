// The "fat binary" format of the simulated device: what cuModuleLoadData (libcuda.so.1) accepts.
//
// A real module image holds compiled kernels; a simulated one holds kernel names and how the
// device runs them. Libraries that load kernels through the driver (cuBLAS, NCCL) hand such an
// image to cuModuleLoadData, look kernels up with cuModuleGetFunction and launch them with
// cuLaunchKernel, all through pointers from cuGetProcAddress_v2 -- the path the real libraries
// take, which never passes through the CUDA runtime.
//
// Two kinds of kernels:
//  - timed: the cost model decides the duration from the grid (as for runtime launches);
//  - program: the kernel's first parameter is a `const DeviceProgram*` whose `exec` runs when
//    the work reaches the head of its stream (NCCL: publish the arrival, wait for the peers).
//    The launch copies the program, as CUDA copies kernel arguments at launch time.
#ifndef SIMGPU_CORE_MODULE_IMAGE_H_
#define SIMGPU_CORE_MODULE_IMAGE_H_

#include <cstdint>

#include "core/work.h"

namespace simgpu {

inline constexpr uint64_t kModuleMagic = 0x31444f4d55504753ull;  // "SGPUMOD1"

struct ModuleKernel {
  // A kernel name, or a prefix ending in '*' that matches every name starting with it (a
  // library with one kernel per data type and algorithm registers the family).
  const char* name;
  bool program;   // kernelParams[0] points at a `const DeviceProgram*`
  WorkKind kind;  // kKernel, or kComm for communication kernels
};

struct ModuleImage {
  uint64_t magic = kModuleMagic;
  const ModuleKernel* kernels = nullptr;
  uint32_t count = 0;
};

struct DeviceProgram {
  ExecFn exec;
};

}  // namespace simgpu

#endif  // SIMGPU_CORE_MODULE_IMAGE_H_
