// A stand-in CUDA runtime with the real one's symbol versioning (version node = soname), built
// once per major (PT_RUNTIME_MAJOR) to put two runtimes in one process. It counts the launches
// it receives; standin_launches() tells a test which runtime got which calls. Without
// PT_RUNTIME_COMPLETE it lacks every optional function the hooks call on their own (timing
// events, error peeking, capture state, kernel names): a runtime we must not slow down.
#include <cuda_runtime_api.h>

#include <atomic>

namespace {
std::atomic<long> g_launches{0};
}  // namespace

extern "C" {

long standin_launches() { return g_launches.load(); }

cudaError_t cudaLaunchKernel(const void*, dim3, dim3, void**, size_t, cudaStream_t) {
  g_launches.fetch_add(1, std::memory_order_relaxed);
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = PT_RUNTIME_MAJOR * 1000;
  return cudaSuccess;
}
cudaError_t cudaGetLastError() { return cudaSuccess; }

#ifdef PT_RUNTIME_COMPLETE
cudaError_t cudaPeekAtLastError() { return cudaSuccess; }
cudaError_t cudaFuncGetName(const char** name, const void*) {
  *name = "standin_kernel";
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus* status) {
  *status = cudaStreamCaptureStatusNone;
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) {
  static char events[1 << 12];
  static std::atomic<unsigned> next{0};
  *event = reinterpret_cast<cudaEvent_t>(&events[next++ % sizeof events]);
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) {
  *ms = 0.01f;
  return cudaSuccess;
}
#endif

}  // extern "C"
