#include "analyzer/selftest/cuda_api.h"

#include <dlfcn.h>
#include <link.h>

namespace perftracker::selftest {
namespace {

// Looks `name` up in the global scope (interposers first), else in the library itself.
template <typename Fn>
void Resolve(const Library& lib, const char* name, Fn* out, std::string* missing) {
  void* p = dlsym(RTLD_DEFAULT, name);
  if (p == nullptr) p = dlsym(lib.handle, name);
  *out = reinterpret_cast<Fn>(p);
  if (p == nullptr && missing->empty()) *missing = name;
}

}  // namespace

Library OpenLibrary(const char* const* sonames) {
  Library lib;
  for (const char* const* s = sonames; *s != nullptr; ++s) {
    lib.tried += (lib.tried.empty() ? "" : ", ") + std::string(*s);
    lib.handle = dlopen(*s, RTLD_NOW | RTLD_GLOBAL);
    if (lib.handle == nullptr) continue;
    lib.soname = *s;
    link_map* map = nullptr;
    lib.path = dlinfo(lib.handle, RTLD_DI_LINKMAP, &map) == 0 && map ? map->l_name : *s;
    break;
  }
  return lib;
}

Cudart LoadCudart() {
  static const char* const kSonames[] = {"libcudart.so.13", "libcudart.so.12", nullptr};
  Cudart c;
  c.lib = OpenLibrary(kSonames);
  if (c.lib.handle == nullptr) return c;
  std::string* m = &c.missing;
  Resolve(c.lib, "cudaRuntimeGetVersion", &c.runtime_version, m);
  Resolve(c.lib, "cudaGetDeviceCount", &c.device_count, m);
  Resolve(c.lib, "cudaSetDevice", &c.set_device, m);
  Resolve(c.lib, "cudaDeviceGetAttribute", &c.device_attribute, m);
  Resolve(c.lib, "cudaGetErrorName", &c.error_name, m);
  Resolve(c.lib, "cudaStreamCreateWithFlags", &c.stream_create, m);
  Resolve(c.lib, "cudaStreamDestroy", &c.stream_destroy, m);
  Resolve(c.lib, "cudaStreamSynchronize", &c.stream_sync, m);
  Resolve(c.lib, "cudaStreamWaitEvent", &c.stream_wait_event, m);
  Resolve(c.lib, "cudaStreamBeginCapture", &c.begin_capture, m);
  Resolve(c.lib, "cudaStreamEndCapture", &c.end_capture, m);
  Resolve(c.lib, "cudaGraphInstantiate", &c.graph_instantiate, m);
  Resolve(c.lib, "cudaGraphLaunch", &c.graph_launch, m);
  Resolve(c.lib, "cudaGraphExecDestroy", &c.graph_exec_destroy, m);
  Resolve(c.lib, "cudaGraphDestroy", &c.graph_destroy, m);
  Resolve(c.lib, "cudaMalloc", &c.malloc, m);
  Resolve(c.lib, "cudaFree", &c.free, m);
  Resolve(c.lib, "cudaMallocHost", &c.malloc_host, m);
  Resolve(c.lib, "cudaFreeHost", &c.free_host, m);
  Resolve(c.lib, "cudaMemcpy", &c.memcpy, m);
  Resolve(c.lib, "cudaMemcpyAsync", &c.memcpy_async, m);
  Resolve(c.lib, "cudaMemsetAsync", &c.memset_async, m);
  Resolve(c.lib, "cudaEventCreate", &c.event_create, m);
  Resolve(c.lib, "cudaEventDestroy", &c.event_destroy, m);
  Resolve(c.lib, "cudaEventRecord", &c.event_record, m);
  Resolve(c.lib, "cudaEventSynchronize", &c.event_sync, m);
  Resolve(c.lib, "cudaEventElapsedTime", &c.event_elapsed, m);
  Resolve(c.lib, "cudaDeviceSynchronize", &c.device_sync, m);
  Resolve(c.lib, "cudaLaunchKernel", &c.launch, m);
  c.launch_bypass = reinterpret_cast<Cudart::LaunchFn>(dlsym(c.lib.handle, "cudaLaunchKernel"));
  // Optional (CUDA 12+): checked by the kernel step, not a reason to give up on the runtime.
  std::string optional;
  Resolve(c.lib, "cudaLibraryLoadData", &c.library_load, &optional);
  Resolve(c.lib, "cudaLibraryGetKernel", &c.library_get_kernel, &optional);
  Resolve(c.lib, "cudaLibraryUnload", &c.library_unload, &optional);
  return c;
}

Cublas LoadCublas() {
  static const char* const kSonames[] = {"libcublas.so.13", "libcublas.so.12", nullptr};
  Cublas c;
  c.lib = OpenLibrary(kSonames);
  if (c.lib.handle == nullptr) return c;
  Resolve(c.lib, "cublasCreate_v2", &c.create, &c.missing);
  Resolve(c.lib, "cublasDestroy_v2", &c.destroy, &c.missing);
  Resolve(c.lib, "cublasSetStream_v2", &c.set_stream, &c.missing);
  Resolve(c.lib, "cublasSgemm_v2", &c.sgemm, &c.missing);
  return c;
}

Nccl LoadNccl() {
  static const char* const kSonames[] = {"libnccl.so.2", nullptr};
  Nccl n;
  n.lib = OpenLibrary(kSonames);
  if (n.lib.handle == nullptr) return n;
  Resolve(n.lib, "ncclGetUniqueId", &n.unique_id, &n.missing);
  Resolve(n.lib, "ncclCommInitRank", &n.init_rank, &n.missing);
  Resolve(n.lib, "ncclAllReduce", &n.all_reduce, &n.missing);
  Resolve(n.lib, "ncclCommDestroy", &n.destroy, &n.missing);
  return n;
}

}  // namespace perftracker::selftest
