// A minimal LD_PRELOAD interposer, shaped like perftracker's hooks: it counts calls and forwards
// to the next definition (dlsym RTLD_NEXT). Used to prove that the stand-ins can be interposed
// like the real libraries and that they never call their own exported symbols internally.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <atomic>

namespace {

enum Counter {
  kLaunch,
  kMemcpy,
  kMemcpyAsync,
  kStreamSync,
  kEventRecord,
  kAllReduce,
  kGroupEnd,
  kCount
};
std::atomic<int> g_counts[kCount];

template <typename F>
F Next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" {

int simgpu_interposer_count(int which) { return g_counts[which].load(); }

cudaError_t cudaLaunchKernel(const void* f, dim3 grid, dim3 block, void** args, size_t shared,
                             cudaStream_t stream) {
  // Spelled out: the C++ runtime header also declares template overloads of this name.
  using Fn = cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t);
  static auto real = Next<Fn>("cudaLaunchKernel");
  ++g_counts[kLaunch];
  return real(f, grid, block, args, shared, stream);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  static auto real = Next<decltype(&cudaMemcpy)>("cudaMemcpy");
  ++g_counts[kMemcpy];
  return real(dst, src, n, kind);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  static auto real = Next<decltype(&cudaMemcpyAsync)>("cudaMemcpyAsync");
  ++g_counts[kMemcpyAsync];
  return real(dst, src, n, kind, stream);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  static auto real = Next<decltype(&cudaStreamSynchronize)>("cudaStreamSynchronize");
  ++g_counts[kStreamSync];
  return real(stream);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  static auto real = Next<decltype(&cudaEventRecord)>("cudaEventRecord");
  ++g_counts[kEventRecord];
  return real(event, stream);
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  static auto real = Next<decltype(&ncclAllReduce)>("ncclAllReduce");
  ++g_counts[kAllReduce];
  return real(send, recv, count, type, op, comm, stream);
}

ncclResult_t ncclGroupEnd() {
  static auto real = Next<decltype(&ncclGroupEnd)>("ncclGroupEnd");
  ++g_counts[kGroupEnd];
  return real();
}

}  // extern "C"
