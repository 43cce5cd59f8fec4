// A do-nothing CUDA runtime for hook_bench: every call returns at once, so the benchmark sees the
// cost of the hook itself rather than the (microseconds of) real launch work. Built once more
// with PT_STUB_QUERY_HANGS for the exit tests (a GPU that never answers), and with
// PT_STUB_MINIMAL for a runtime that lacks every optional function the hooks call on their own
// (names, errors, timing events, capture state): the hooks must not look them up per call.
#include <cuda_runtime_api.h>
#include <unistd.h>

extern "C" {

cudaError_t cudaLaunchKernel(const void*, dim3, dim3, void**, size_t, cudaStream_t) {
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = 13000;
  return cudaSuccess;
}
cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaMemcpyAsync(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t) {
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }

#ifndef PT_STUB_MINIMAL
cudaError_t cudaFuncGetName(const char** name, const void*) {
  *name = "bench_kernel";
  return cudaSuccess;
}
cudaError_t cudaPeekAtLastError() { return cudaSuccess; }
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) {
  static char events[1 << 16];
  static unsigned next = 0;
  *event = reinterpret_cast<cudaEvent_t>(&events[next++ % sizeof events]);
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventQuery(cudaEvent_t) {
#ifdef PT_STUB_QUERY_HANGS
  for (;;) pause();  // a hung GPU: the device-timer thread never comes back
#endif
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) {
  *ms = 0.01f;
  return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus* status) {
  *status = cudaStreamCaptureStatusNone;
  return cudaSuccess;
}
cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode*) { return cudaSuccess; }
#endif  // PT_STUB_MINIMAL

}  // extern "C"
