// The ground truth for the CUDA/NCCL hook tests: a second LD_PRELOAD library, listed after
// libperftracker.so, so perftracker's hooks forward to it and it forwards to the real library.
// It counts every call the application made and, separately, every cudaEventRecord issued on a
// capturing stream (which perftracker must never do). Counts go to
// $CALL_COUNTER_DIR/rank-<RANK>.txt (pid-<pid>.txt without RANK) at exit, one "name count" line
// each.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {

enum Counter {
  kLaunchKernel,
  kMemcpy,
  kMemcpyAsync,
  kMemsetAsync,
  kStreamSync,
  kDeviceSync,
  kEventSync,
  kStreamWaitEvent,
  kGraphLaunch,
  kAllReduce,
  kAllGather,
  kSend,
  kRecv,
  kEventRecordCapturing,
  kCount
};
const char* const kNames[kCount] = {"cudaLaunchKernel",
                                    "cudaMemcpy",
                                    "cudaMemcpyAsync",
                                    "cudaMemsetAsync",
                                    "cudaStreamSynchronize",
                                    "cudaDeviceSynchronize",
                                    "cudaEventSynchronize",
                                    "cudaStreamWaitEvent",
                                    "cudaGraphLaunch",
                                    "ncclAllReduce",
                                    "ncclAllGather",
                                    "ncclSend",
                                    "ncclRecv",
                                    "event_record_on_capturing_stream"};
std::atomic<long> g_counts[kCount];

// RTLD_NEXT, else the library loaded in a local scope (a Python extension's dependency).
void* Next(const char* name, const char* soname) {
  if (void* p = dlsym(RTLD_NEXT, name)) return p;
  void* handle = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
  return handle != nullptr ? dlsym(handle, name) : nullptr;
}
template <typename F>
F Cuda(const char* name) {
  return reinterpret_cast<F>(Next(name, "libcudart.so.13"));
}
template <typename F>
F Nccl(const char* name) {
  return reinterpret_cast<F>(Next(name, "libnccl.so.2"));
}

struct Dump {
  ~Dump() {
    const char* dir = std::getenv("CALL_COUNTER_DIR");
    if (dir == nullptr) return;
    char path[4096];
    const char* rank = std::getenv("RANK");
    if (rank != nullptr) {
      std::snprintf(path, sizeof path, "%s/rank-%s.txt", dir, rank);
    } else {
      std::snprintf(path, sizeof path, "%s/pid-%d.txt", dir, static_cast<int>(getpid()));
    }
    FILE* f = std::fopen(path, "w");
    if (f == nullptr) return;
    for (int i = 0; i < kCount; ++i) std::fprintf(f, "%s %ld\n", kNames[i], g_counts[i].load());
    std::fclose(f);
  }
} g_dump;

}  // namespace

extern "C" {

cudaError_t cudaLaunchKernel(const void* f, dim3 g, dim3 b, void** a, size_t s, cudaStream_t st) {
  using Fn = cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t);
  static auto real = Cuda<Fn>("cudaLaunchKernel");
  ++g_counts[kLaunchKernel];
  return real(f, g, b, a, s, st);
}

cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind k) {
  static auto real = Cuda<decltype(&cudaMemcpy)>("cudaMemcpy");
  ++g_counts[kMemcpy];
  return real(d, s, n, k);
}

cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind k, cudaStream_t st) {
  static auto real = Cuda<decltype(&cudaMemcpyAsync)>("cudaMemcpyAsync");
  ++g_counts[kMemcpyAsync];
  return real(d, s, n, k, st);
}

cudaError_t cudaMemsetAsync(void* d, int v, size_t n, cudaStream_t st) {
  static auto real = Cuda<decltype(&cudaMemsetAsync)>("cudaMemsetAsync");
  ++g_counts[kMemsetAsync];
  return real(d, v, n, st);
}

cudaError_t cudaStreamSynchronize(cudaStream_t st) {
  static auto real = Cuda<decltype(&cudaStreamSynchronize)>("cudaStreamSynchronize");
  ++g_counts[kStreamSync];
  return real(st);
}

cudaError_t cudaDeviceSynchronize() {
  static auto real = Cuda<decltype(&cudaDeviceSynchronize)>("cudaDeviceSynchronize");
  ++g_counts[kDeviceSync];
  return real();
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  static auto real = Cuda<decltype(&cudaEventSynchronize)>("cudaEventSynchronize");
  ++g_counts[kEventSync];
  return real(e);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t st, cudaEvent_t e, unsigned int flags) {
  static auto real = Cuda<decltype(&cudaStreamWaitEvent)>("cudaStreamWaitEvent");
  ++g_counts[kStreamWaitEvent];
  return real(st, e, flags);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t st) {
  static auto real = Cuda<decltype(&cudaGraphLaunch)>("cudaGraphLaunch");
  ++g_counts[kGraphLaunch];
  return real(exec, st);
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t st) {
  static auto real = Cuda<decltype(&cudaEventRecord)>("cudaEventRecord");
  static auto is_capturing = Cuda<decltype(&cudaStreamIsCapturing)>("cudaStreamIsCapturing");
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (is_capturing(st, &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
    ++g_counts[kEventRecordCapturing];
  }
  return real(e, st);
}

ncclResult_t ncclAllReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t c, cudaStream_t st) {
  static auto real = Nccl<decltype(&ncclAllReduce)>("ncclAllReduce");
  ++g_counts[kAllReduce];
  return real(s, r, n, t, op, c, st);
}

ncclResult_t ncclAllGather(const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t c,
                           cudaStream_t st) {
  static auto real = Nccl<decltype(&ncclAllGather)>("ncclAllGather");
  ++g_counts[kAllGather];
  return real(s, r, n, t, c, st);
}

ncclResult_t ncclSend(const void* s, size_t n, ncclDataType_t t, int peer, ncclComm_t c,
                      cudaStream_t st) {
  static auto real = Nccl<decltype(&ncclSend)>("ncclSend");
  ++g_counts[kSend];
  return real(s, n, t, peer, c, st);
}

ncclResult_t ncclRecv(void* r, size_t n, ncclDataType_t t, int peer, ncclComm_t c,
                      cudaStream_t st) {
  static auto real = Nccl<decltype(&ncclRecv)>("ncclRecv");
  ++g_counts[kRecv];
  return real(r, n, t, peer, c, st);
}

}  // extern "C"
