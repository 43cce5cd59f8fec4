// The CUDA libraries the selftest workload drives, loaded at run time by soname (never linked:
// the workload must start on a node without them and say what is missing).
//
// Each library is dlopened RTLD_GLOBAL, and every function is then looked up with
// dlsym(RTLD_DEFAULT): the global scope, where an LD_PRELOAD library comes first, exactly as a
// normally linked program (PyTorch) binds its calls. A lookup through the library's own handle
// would go past any interposer; `bypass` pointers do that on purpose (the failure drill).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

namespace perftracker::selftest {

struct Library {
  void* handle = nullptr;
  std::string soname;  // the one that loaded
  std::string path;    // where it was found
  std::string tried;   // "libx.so.13, libx.so.12" for the message when none loads
};

// Opens the first soname that loads (null-terminated list).
Library OpenLibrary(const char* const* sonames);

// Functions with C++ overloads in the CUDA headers have their C signature spelled out.
struct Cudart {
  Library lib;
  decltype(&cudaRuntimeGetVersion) runtime_version = nullptr;
  decltype(&cudaGetDeviceCount) device_count = nullptr;
  decltype(&cudaSetDevice) set_device = nullptr;
  decltype(&cudaDeviceGetAttribute) device_attribute = nullptr;
  decltype(&cudaGetErrorName) error_name = nullptr;
  decltype(&cudaStreamCreateWithFlags) stream_create = nullptr;
  decltype(&cudaStreamDestroy) stream_destroy = nullptr;
  decltype(&cudaStreamSynchronize) stream_sync = nullptr;
  decltype(&cudaStreamWaitEvent) stream_wait_event = nullptr;
  decltype(&cudaStreamBeginCapture) begin_capture = nullptr;
  decltype(&cudaStreamEndCapture) end_capture = nullptr;
  cudaError_t (*graph_instantiate)(cudaGraphExec_t*, cudaGraph_t, unsigned long long) = nullptr;
  decltype(&cudaGraphLaunch) graph_launch = nullptr;
  decltype(&cudaGraphExecDestroy) graph_exec_destroy = nullptr;
  decltype(&cudaGraphDestroy) graph_destroy = nullptr;
  cudaError_t (*malloc)(void**, size_t) = nullptr;
  decltype(&cudaFree) free = nullptr;
  cudaError_t (*malloc_host)(void**, size_t) = nullptr;
  decltype(&cudaFreeHost) free_host = nullptr;
  decltype(&cudaMemcpy) memcpy = nullptr;
  decltype(&cudaMemcpyAsync) memcpy_async = nullptr;
  decltype(&cudaMemsetAsync) memset_async = nullptr;
  cudaError_t (*event_create)(cudaEvent_t*) = nullptr;
  decltype(&cudaEventDestroy) event_destroy = nullptr;
  decltype(&cudaEventRecord) event_record = nullptr;
  decltype(&cudaEventSynchronize) event_sync = nullptr;
  decltype(&cudaEventElapsedTime) event_elapsed = nullptr;
  decltype(&cudaDeviceSynchronize) device_sync = nullptr;
  using LaunchFn = cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t);
  LaunchFn launch = nullptr;
  LaunchFn launch_bypass = nullptr;  // past any interposer
  // CUDA 12+: without them there is no kernel to launch (no nvcc, no fat binary).
  decltype(&cudaLibraryLoadData) library_load = nullptr;
  decltype(&cudaLibraryGetKernel) library_get_kernel = nullptr;
  decltype(&cudaLibraryUnload) library_unload = nullptr;
  std::string missing;  // the first required function that was not found
};

struct Cublas {
  Library lib;
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  std::string missing;
};

struct Nccl {
  Library lib;
  decltype(&ncclGetUniqueId) unique_id = nullptr;
  decltype(&ncclCommInitRank) init_rank = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclCommDestroy) destroy = nullptr;
  std::string missing;
};

// Each loads its library and resolves its functions; `missing` (or lib.handle == null) says why
// it cannot be used.
Cudart LoadCudart();
Cublas LoadCublas();
Nccl LoadNccl();

}  // namespace perftracker::selftest
