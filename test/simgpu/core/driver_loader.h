// How a stand-in library that launches kernels itself (cuBLAS, cuBLASLt, NCCL) reaches the
// driver, the way the real ones do: dlopen("libcuda.so.1"), dlsym(handle, "cuGetProcAddress_v2")
// and every other entry point from cuGetProcAddress_v2 -- never through the CUDA runtime. This is
// the path perftracker's driver tier has to catch (an interposed dlsym that wraps
// cuGetProcAddress), so the calls below must stay in the calling library: header-only.
//
// Needs cuda.h (stand-ins only; the core itself has no CUDA headers).
#ifndef SIMGPU_CORE_DRIVER_LOADER_H_
#define SIMGPU_CORE_DRIVER_LOADER_H_

#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <type_traits>

namespace simgpu {

struct DriverApi {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*module_load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, unsigned, CUstream, void**, void**) = nullptr;
  bool ok = false;
};

// Loads the driver entry points (`api_version` as the library's CUDA_VERSION). On failure
// prints one line naming `who` and leaves ok == false.
inline DriverApi LoadDriverApi(const char* who, int api_version) {
  DriverApi api;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "simgpu %s: cannot load libcuda.so.1: %s\n", who, dlerror());
    return api;
  }
  using GetProcFn = CUresult (*)(const char*, void**, int, cuuint64_t,
                                 CUdriverProcAddressQueryResult*);
  auto get_proc = reinterpret_cast<GetProcFn>(dlsym(lib, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    std::fprintf(stderr, "simgpu %s: libcuda.so.1 has no cuGetProcAddress_v2\n", who);
    return api;
  }
  const auto get = [&](const char* name, auto* out) {
    void* p = nullptr;
    CUdriverProcAddressQueryResult status{};
    if (get_proc(name, &p, api_version, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS ||
        p == nullptr) {
      std::fprintf(stderr, "simgpu %s: cuGetProcAddress_v2(%s) failed\n", who, name);
      return false;
    }
    *out = reinterpret_cast<std::remove_pointer_t<decltype(out)>>(p);
    return true;
  };
  api.ok = get("cuInit", &api.init) && get("cuModuleLoadData", &api.module_load_data) &&
           get("cuModuleGetFunction", &api.module_get_function) &&
           get("cuLaunchKernel", &api.launch_kernel) && api.init(0) == CUDA_SUCCESS;
  return api;
}

}  // namespace simgpu

#endif  // SIMGPU_CORE_DRIVER_LOADER_H_
