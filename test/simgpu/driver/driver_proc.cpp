// cuGetProcAddress / cuGetProcAddress_v2: how the CUDA runtime, cuBLAS and NCCL obtain every
// driver entry point (dlopen("libcuda.so.1") + dlsym("cuGetProcAddress_v2"), then this). The
// table maps a base name and a minimum API version to the default-stream and per-thread entry
// points; asking for "cuGetProcAddress" itself returns the version the caller's API expects.
#include <cstring>

#include "driver/driver_state.h"

extern "C" {
CUresult cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void**, void**);
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig*, CUfunction, void**, void**);
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, unsigned, unsigned, CUstream, void**);
CUresult cuGraphLaunch_ptsz(CUgraphExec, CUstream);
// The CUDA 11.3 signature, exported under its own name (cuda.h maps the name to _v2).
CUresult SimgpuGetProcAddressV1(const char* symbol, void** pfn, int version, cuuint64_t flags)
    __asm__("cuGetProcAddress");
}

namespace simgpu::driver {
namespace {

struct Entry {
  const char* name;
  int since;  // first CUDA version with this ABI
  void* legacy;
  void* per_thread;  // null: the same as legacy
};

template <typename Fn>
void* P(Fn fn) {
  return reinterpret_cast<void*>(fn);
}

const Entry* Find(const char* name) {
  static const Entry kEntries[] = {
      {"cuInit", 2000, P(&cuInit), nullptr},
      {"cuDriverGetVersion", 2020, P(&cuDriverGetVersion), nullptr},
      {"cuDeviceGet", 2000, P(&cuDeviceGet), nullptr},
      {"cuDeviceGetCount", 2000, P(&cuDeviceGetCount), nullptr},
      {"cuGetErrorName", 6000, P(&cuGetErrorName), nullptr},
      {"cuGetErrorString", 6000, P(&cuGetErrorString), nullptr},
      {"cuModuleLoadData", 2000, P(&cuModuleLoadData), nullptr},
      {"cuModuleUnload", 2000, P(&cuModuleUnload), nullptr},
      {"cuModuleGetFunction", 2000, P(&cuModuleGetFunction), nullptr},
      {"cuFuncGetName", 12030, P(&cuFuncGetName), nullptr},
      {"cuGetExportTable", 3000, P(&cuGetExportTable), nullptr},
      {"cuLaunchKernel", 4000, P(&cuLaunchKernel), P(&cuLaunchKernel_ptsz)},
      {"cuLaunchKernelEx", 11060, P(&cuLaunchKernelEx), P(&cuLaunchKernelEx_ptsz)},
      {"cuLaunchCooperativeKernel", 9000, P(&cuLaunchCooperativeKernel),
       P(&cuLaunchCooperativeKernel_ptsz)},
      {"cuGraphLaunch", 10000, P(&cuGraphLaunch), P(&cuGraphLaunch_ptsz)},
  };
  for (const Entry& e : kEntries) {
    if (std::strcmp(e.name, name) == 0) return &e;
  }
  return nullptr;
}

CUresult Lookup(const char* symbol, void** pfn, int version, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (flags > (CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const auto report = [status](CUdriverProcAddressQueryResult s) {
    if (status != nullptr) *status = s;
  };
  *pfn = nullptr;
  if (std::strcmp(symbol, "cuGetProcAddress") == 0) {
    *pfn = version >= 12000 ? P(&cuGetProcAddress_v2) : P(&SimgpuGetProcAddressV1);
    report(CU_GET_PROC_ADDRESS_SUCCESS);
    return CUDA_SUCCESS;
  }
  const Entry* e = Find(symbol);
  if (e == nullptr) {
    report(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    return CUDA_ERROR_NOT_FOUND;
  }
  if (version < e->since) {
    report(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    return CUDA_ERROR_NOT_FOUND;
  }
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  *pfn = per_thread && e->per_thread != nullptr ? e->per_thread : e->legacy;
  report(CU_GET_PROC_ADDRESS_SUCCESS);
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace simgpu::driver

extern "C" {

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* status) {
  return simgpu::driver::Lookup(symbol, pfn, version, flags, status);
}

CUresult SimgpuGetProcAddressV1(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return simgpu::driver::Lookup(symbol, pfn, version, flags, nullptr);
}

}  // extern "C"
