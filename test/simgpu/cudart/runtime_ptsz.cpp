// The per-thread-default-stream entry points (cudaLaunchKernel_ptsz, cudaMemcpy_ptds, ...).
//
// This file is compiled with CUDA_API_PER_THREAD_DEFAULT_STREAM, so the CUDA header renames
// every affected API to its _ptsz/_ptds symbol: each definition below is checked against the
// real per-thread prototype, and a null stream means the calling thread's default stream.
#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "runtime_ptsz.cpp must be compiled with CUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif

#include <cuda_runtime_api.h>

#include "cudart/runtime_internal.h"

namespace sc = simgpu::cudart;

extern "C" {

cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args,
                             size_t shared_bytes, cudaStream_t stream) {
  return sc::LaunchKernel(func, grid, block, args, shared_bytes, stream, true);
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func,
                               void** args) {
  return sc::LaunchKernelEx(config, func, args, true);
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data) {
  return sc::LaunchHostFunc(stream, fn, user_data, true);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  return sc::Memcpy(dst, src, count, kind, true);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return sc::MemcpyAsync(dst, src, count, kind, stream, true);
}

cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                         size_t height, enum cudaMemcpyKind kind) {
  return sc::Memcpy2D(dst, dpitch, src, spitch, width, height, kind, nullptr, false, true);
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind,
                              cudaStream_t stream) {
  return sc::Memcpy2D(dst, dpitch, src, spitch, width, height, kind, stream, true, true);
}

cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms* p) {
  return sc::Memcpy3D(p, nullptr, false, true);
}

cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms* p, cudaStream_t stream) {
  return sc::Memcpy3D(p, stream, true, true);
}

cudaError_t cudaMemset(void* dst, int value, size_t count) {
  return sc::Memset(dst, value, count, true);
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t count, cudaStream_t stream) {
  return sc::MemsetAsync(dst, value, count, stream, true);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return sc::StreamSynchronize(stream, true);
}

cudaError_t cudaStreamQuery(cudaStream_t stream) { return sc::StreamQuery(stream, true); }

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return sc::StreamWaitEvent(stream, event, flags, true);
}

cudaError_t cudaStreamGetPriority(cudaStream_t stream, int* priority) {
  return sc::StreamGetPriority(stream, priority, true);
}

cudaError_t cudaStreamGetFlags(cudaStream_t stream, unsigned int* flags) {
  return sc::StreamGetFlags(stream, flags, true);
}

cudaError_t cudaStreamGetId(cudaStream_t stream, unsigned long long* id) {
  return sc::StreamGetId(stream, id, true);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return sc::EventRecord(event, stream, true);
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int) {
  return sc::EventRecord(event, stream, true);
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  return sc::StreamBeginCapture(stream, mode, true);
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  return sc::StreamEndCapture(stream, graph, true);
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus* status) {
  return sc::StreamIsCapturing(stream, status, true);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  return sc::GraphLaunch(exec, stream, true);
}

}  // extern "C"
