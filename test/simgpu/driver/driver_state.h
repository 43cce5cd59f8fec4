// Internal state of the libcuda.so.1 stand-in: modules, functions, and the shared launch path.
//
// Exported cu* functions are thin wrappers around the functions declared here; code inside the
// library never calls an exported symbol, so an interposer (perftracker's driver tier, which
// hands out wrappers from cuGetProcAddress) sees exactly the calls its callers made.
#ifndef SIMGPU_DRIVER_DRIVER_STATE_H_
#define SIMGPU_DRIVER_DRIVER_STATE_H_

#include <cuda.h>

#include <map>
#include <mutex>
#include <string>

#include "core/module_image.h"

// The opaque handle types cuda.h declares.
struct CUfunc_st {
  const char* name = nullptr;  // interned
  bool program = false;
  simgpu::WorkKind kind = simgpu::WorkKind::kKernel;
};

struct CUmod_st {
  const simgpu::ModuleImage* image = nullptr;
  std::mutex mu;
  std::map<std::string, CUfunc_st*, std::less<>> functions;  // never freed: handles stay valid
};

namespace simgpu::driver {

struct LaunchShape {
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
};

// Enqueues `f` on `stream` (null: the legacy stream, or the per-thread one for _ptsz entries).
CUresult Launch(CUfunction f, const LaunchShape& shape, CUstream stream, void** params,
                bool per_thread);
CUresult LaunchEx(const CUlaunchConfig* config, CUfunction f, void** params, bool per_thread);
CUresult GraphLaunch(CUgraphExec exec, CUstream stream, bool per_thread);

// The driver API version this stand-in implements (cuDriverGetVersion).
inline constexpr int kDriverVersion = 13000;

}  // namespace simgpu::driver

#endif  // SIMGPU_DRIVER_DRIVER_STATE_H_
