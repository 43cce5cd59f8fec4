// CUDA graphs through stream capture: work launched on a capturing stream is recorded instead of
// run; cudaGraphLaunch replays it in order on the launch stream (so CUPTI sees every kernel).
// NCCL work captured into a graph is not supported (its sequence numbers are host-ordered).
#include <cuda_runtime_api.h>

#include "core/activity.h"
#include "cudart/runtime_internal.h"
#include "cudart/runtime_state.h"

namespace simgpu::cudart {
namespace {

Graph* ToGraph(cudaGraph_t graph) { return reinterpret_cast<Graph*>(graph); }
Graph* ToGraph(cudaGraphExec_t exec) { return reinterpret_cast<Graph*>(exec); }

}  // namespace

cudaError_t StreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode, bool per_thread) {
  Stream* s = ResolveStream(stream, per_thread);
  if (s == CurrentDevice()->Legacy()) return Fail(cudaErrorStreamCaptureUnsupported);
  if (s->capture()) return Fail(cudaErrorIllegalState);
  s->set_capture(new Graph);
  return cudaSuccess;
}

cudaError_t StreamEndCapture(cudaStream_t stream, cudaGraph_t* graph, bool per_thread) {
  if (!graph) return Fail(cudaErrorInvalidValue);
  Stream* s = ResolveStream(stream, per_thread);
  if (!s->capture()) return Fail(cudaErrorIllegalState);
  *graph = reinterpret_cast<cudaGraph_t>(s->capture());
  s->set_capture(nullptr);
  return cudaSuccess;
}

cudaError_t StreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status,
                              bool per_thread) {
  if (!status) return Fail(cudaErrorInvalidValue);
  *status = ResolveStream(stream, per_thread)->capture() ? cudaStreamCaptureStatusActive
                                                         : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

cudaError_t GraphLaunch(cudaGraphExec_t exec, cudaStream_t stream, bool per_thread) {
  if (!exec) return Fail(cudaErrorInvalidResourceHandle);
  Stream* s = ResolveStream(stream, per_thread);
  Device* device = DeviceOf(s);
  for (const WorkSpec& node : ToGraph(exec)->nodes) {
    WorkSpec copy = node;
    copy.correlation_id = NextCorrelationId();
    device->Enqueue(s, std::move(copy));
  }
  return cudaSuccess;
}

}  // namespace simgpu::cudart

namespace sc = simgpu::cudart;

extern "C" {

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  return sc::StreamBeginCapture(stream, mode, false);
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  return sc::StreamEndCapture(stream, graph, false);
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus* status) {
  return sc::StreamIsCapturing(stream, status, false);
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode) {
  if (!mode) return sc::Fail(cudaErrorInvalidValue);
  // The simulator has a single capture behaviour; report global mode and keep the caller's.
  *mode = cudaStreamCaptureModeGlobal;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (!exec || !graph) return sc::Fail(cudaErrorInvalidValue);
  *exec = reinterpret_cast<cudaGraphExec_t>(new simgpu::Graph(*sc::ToGraph(graph)));
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  return sc::GraphLaunch(exec, stream, false);
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete sc::ToGraph(exec);
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete sc::ToGraph(graph);
  return cudaSuccess;
}

}  // extern "C"
