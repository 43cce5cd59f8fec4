// CUDA graphs through stream capture: work launched on a capturing stream is recorded instead of
// run; cudaGraphLaunch replays it in order on the launch stream (so CUPTI sees every kernel).
// NCCL work captured into a graph is not supported (its sequence numbers are host-ordered).
//
// Capture interaction modes as CUDA defines them: a "potentially unsafe" call (CheckCaptureSafe)
// made by a thread in global mode while another thread captures in global mode, or by any
// non-relaxed thread while it captures itself in a non-relaxed mode, fails with
// cudaErrorStreamCaptureUnsupported and invalidates those captures (their end reports
// cudaErrorStreamCaptureInvalidated). A thread's mode is set by
// cudaThreadExchangeStreamCaptureMode.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

#include "core/activity.h"
#include "cudart/runtime_internal.h"
#include "cudart/runtime_state.h"

namespace simgpu::cudart {
namespace {

Graph* ToGraph(cudaGraph_t graph) { return reinterpret_cast<Graph*>(graph); }
Graph* ToGraph(cudaGraphExec_t exec) { return reinterpret_cast<Graph*>(exec); }

// One capture sequence in progress.
struct Capture {
  Stream* stream;
  cudaStreamCaptureMode mode;
  std::thread::id thread;
  bool invalidated;
};
std::mutex g_captures_mu;
std::vector<Capture> g_captures;  // guarded by g_captures_mu
thread_local cudaStreamCaptureMode t_mode = cudaStreamCaptureModeGlobal;

}  // namespace

cudaError_t CheckCaptureSafe() {
  if (t_mode == cudaStreamCaptureModeRelaxed) return cudaSuccess;
  const std::thread::id self = std::this_thread::get_id();
  std::lock_guard<std::mutex> lock(g_captures_mu);
  bool prohibited = false;
  for (Capture& c : g_captures) {
    const bool mine = c.thread == self && c.mode != cudaStreamCaptureModeRelaxed;
    const bool global = t_mode == cudaStreamCaptureModeGlobal &&
                        c.mode == cudaStreamCaptureModeGlobal;
    if (mine || global) {
      c.invalidated = true;
      prohibited = true;
    }
  }
  return prohibited ? Fail(cudaErrorStreamCaptureUnsupported) : cudaSuccess;
}

cudaError_t StreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode, bool per_thread) {
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed) {
    return Fail(cudaErrorInvalidValue);
  }
  Stream* s = ResolveStream(stream, per_thread);
  if (s == CurrentDevice()->Legacy()) return Fail(cudaErrorStreamCaptureUnsupported);
  if (s->capture()) return Fail(cudaErrorIllegalState);
  s->set_capture(new Graph);
  std::lock_guard<std::mutex> lock(g_captures_mu);
  g_captures.push_back({s, mode, std::this_thread::get_id(), false});
  return cudaSuccess;
}

cudaError_t StreamEndCapture(cudaStream_t stream, cudaGraph_t* graph, bool per_thread) {
  if (!graph) return Fail(cudaErrorInvalidValue);
  Stream* s = ResolveStream(stream, per_thread);
  if (!s->capture()) return Fail(cudaErrorIllegalState);
  bool invalidated = false;
  {
    std::lock_guard<std::mutex> lock(g_captures_mu);
    auto it = std::find_if(g_captures.begin(), g_captures.end(),
                           [s](const Capture& c) { return c.stream == s; });
    if (it != g_captures.end()) {
      if (it->mode != cudaStreamCaptureModeRelaxed && it->thread != std::this_thread::get_id()) {
        return Fail(cudaErrorStreamCaptureWrongThread);
      }
      invalidated = it->invalidated;
      g_captures.erase(it);
    }
  }
  Graph* captured = s->capture();
  s->set_capture(nullptr);
  if (invalidated) {
    delete captured;
    *graph = nullptr;
    return Fail(cudaErrorStreamCaptureInvalidated);
  }
  *graph = reinterpret_cast<cudaGraph_t>(captured);
  return cudaSuccess;
}

cudaError_t ExchangeCaptureMode(cudaStreamCaptureMode* mode) {
  if (!mode || (*mode != cudaStreamCaptureModeGlobal &&
                *mode != cudaStreamCaptureModeThreadLocal &&
                *mode != cudaStreamCaptureModeRelaxed)) {
    return Fail(cudaErrorInvalidValue);
  }
  std::swap(*mode, t_mode);
  return cudaSuccess;
}

cudaError_t GraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  if (!graph || !count) return Fail(cudaErrorInvalidValue);
  std::vector<WorkSpec>& all = ToGraph(graph)->nodes;
  if (nodes != nullptr) {
    // As CUDA: fills min(*count, nodes) handles, then reports how many there are.
    for (size_t i = 0; i < std::min(*count, all.size()); ++i) {
      nodes[i] = reinterpret_cast<cudaGraphNode_t>(&all[i]);
    }
  }
  *count = all.size();
  return cudaSuccess;
}

cudaError_t GraphNodeGetType(cudaGraphNode_t node, cudaGraphNodeType* type) {
  if (!node || !type) return Fail(cudaErrorInvalidValue);
  switch (reinterpret_cast<const WorkSpec*>(node)->kind) {
    case WorkKind::kMemcpy:
      *type = cudaGraphNodeTypeMemcpy;
      break;
    case WorkKind::kMemset:
      *type = cudaGraphNodeTypeMemset;
      break;
    case WorkKind::kMarker:
      *type = cudaGraphNodeTypeEmpty;
      break;
    default:  // kernels, NCCL's kernels, host functions run as programs
      *type = cudaGraphNodeTypeKernel;
      break;
  }
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
  return sc::ExchangeCaptureMode(mode);
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  return sc::GraphGetNodes(graph, nodes, count);
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType* type) {
  return sc::GraphNodeGetType(node, type);
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
