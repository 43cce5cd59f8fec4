// Implementations shared by the plain and the per-thread-default-stream (_ptsz/_ptds) entry
// points. `per_thread` says which default stream a null handle means.
#ifndef SIMGPU_CUDART_RUNTIME_INTERNAL_H_
#define SIMGPU_CUDART_RUNTIME_INTERNAL_H_

#include <cuda_runtime_api.h>

#include <functional>

namespace simgpu::cudart {

// `args`: the kernel's parameters, read at launch by kernels with a simulated body.
cudaError_t LaunchKernel(const void* func, dim3 grid, dim3 block, void** args,
                         size_t shared_bytes, cudaStream_t stream, bool per_thread);
cudaError_t LaunchKernelEx(const cudaLaunchConfig_t* config, const void* func, void** args,
                           bool per_thread);
// The device-side work of a library kernel with a simulated body (runtime_library.cpp), its
// arguments bound now; empty for every other kernel.
std::function<void()> BindKernelBody(const void* func, void** args, dim3 grid, dim3 block);
cudaError_t LaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data, bool per_thread);

cudaError_t Memcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind, bool per_thread);
cudaError_t MemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                        cudaStream_t stream, bool per_thread);
cudaError_t Memcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                     size_t height, cudaMemcpyKind kind, cudaStream_t stream, bool async,
                     bool per_thread);
cudaError_t Memcpy3D(const cudaMemcpy3DParms* params, cudaStream_t stream, bool async,
                     bool per_thread);
cudaError_t Memset(void* dst, int value, size_t count, bool per_thread);
cudaError_t MemsetAsync(void* dst, int value, size_t count, cudaStream_t stream, bool per_thread);

cudaError_t StreamSynchronize(cudaStream_t stream, bool per_thread);
cudaError_t StreamQuery(cudaStream_t stream, bool per_thread);
cudaError_t StreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags,
                            bool per_thread);
cudaError_t StreamGetPriority(cudaStream_t stream, int* priority, bool per_thread);
cudaError_t StreamGetFlags(cudaStream_t stream, unsigned* flags, bool per_thread);
cudaError_t StreamGetId(cudaStream_t stream, unsigned long long* id, bool per_thread);
cudaError_t EventRecord(cudaEvent_t event, cudaStream_t stream, bool per_thread);

cudaError_t StreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode, bool per_thread);
cudaError_t StreamEndCapture(cudaStream_t stream, cudaGraph_t* graph, bool per_thread);
cudaError_t StreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status,
                              bool per_thread);
// cudaErrorStreamCaptureUnsupported (and the captures it concerns invalidated) when the calling
// thread may not make a potentially unsafe call now (capture modes, runtime_graphs.cpp).
cudaError_t CheckCaptureSafe();
cudaError_t ExchangeCaptureMode(cudaStreamCaptureMode* mode);
cudaError_t GraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count);
cudaError_t GraphNodeGetType(cudaGraphNode_t node, cudaGraphNodeType* type);
cudaError_t GraphLaunch(cudaGraphExec_t exec, cudaStream_t stream, bool per_thread);

}  // namespace simgpu::cudart

#endif  // SIMGPU_CUDART_RUNTIME_INTERNAL_H_
