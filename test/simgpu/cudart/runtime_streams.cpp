// Stream management and stream-ordered synchronization.
#include <cuda_runtime_api.h>

#include "cudart/runtime_internal.h"
#include "cudart/runtime_state.h"

namespace simgpu::cudart {
namespace {

cudaError_t Create(cudaStream_t* handle, unsigned flags, int priority) {
  if (!handle) return Fail(cudaErrorInvalidValue);
  if (flags & ~static_cast<unsigned>(cudaStreamNonBlocking)) return Fail(cudaErrorInvalidValue);
  bool blocking = (flags & cudaStreamNonBlocking) == 0;
  *handle = ToHandle(CurrentDevice()->CreateStream(blocking, priority < -5 ? -5 : priority));
  return cudaSuccess;
}

}  // namespace

cudaError_t StreamSynchronize(cudaStream_t stream, bool per_thread) {
  Stream* s = ResolveStream(stream, per_thread);
  if (s->capture()) return Fail(cudaErrorStreamCaptureUnsupported);
  if (cudaError_t rc = CheckCaptureSafe(); rc != cudaSuccess) return rc;
  if (WorkRef last = s->Last()) s->WaitComplete(last);
  return cudaSuccess;
}

cudaError_t StreamQuery(cudaStream_t stream, bool per_thread) {
  if (cudaError_t rc = CheckCaptureSafe(); rc != cudaSuccess) return rc;
  Stream* s = ResolveStream(stream, per_thread);
  WorkRef last = s->Last();
  return !last || s->IsComplete(last) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t StreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned, bool per_thread) {
  if (!event) return Fail(cudaErrorInvalidResourceHandle);
  Stream* s = ResolveStream(stream, per_thread);
  WorkRef recorded = ToEvent(event)->Latest();
  if (!recorded) return cudaSuccess;  // never recorded: nothing to wait for
  WorkSpec spec;
  spec.kind = WorkKind::kMarker;
  DeviceOf(s)->Enqueue(s, std::move(spec), {std::move(recorded)});
  return cudaSuccess;
}

cudaError_t StreamGetPriority(cudaStream_t stream, int* priority, bool per_thread) {
  if (!priority) return Fail(cudaErrorInvalidValue);
  *priority = ResolveStream(stream, per_thread)->priority();
  return cudaSuccess;
}

cudaError_t StreamGetFlags(cudaStream_t stream, unsigned* flags, bool per_thread) {
  if (!flags) return Fail(cudaErrorInvalidValue);
  *flags =
      ResolveStream(stream, per_thread)->blocking() ? cudaStreamDefault : cudaStreamNonBlocking;
  return cudaSuccess;
}

cudaError_t StreamGetId(cudaStream_t stream, unsigned long long* id, bool per_thread) {
  if (!id) return Fail(cudaErrorInvalidValue);
  *id = ResolveStream(stream, per_thread)->id();
  return cudaSuccess;
}

}  // namespace simgpu::cudart

namespace sc = simgpu::cudart;

extern "C" {

cudaError_t cudaStreamCreate(cudaStream_t* stream) { return sc::Create(stream, 0, 0); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  return sc::Create(stream, flags, 0);
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority) {
  return sc::Create(stream, flags, priority);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (!stream || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
    return sc::Fail(cudaErrorInvalidResourceHandle);
  }
  simgpu::Stream* s = sc::ResolveStream(stream, false);
  sc::DeviceOf(s)->DestroyStream(s);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return sc::StreamSynchronize(stream, false);
}

cudaError_t cudaStreamQuery(cudaStream_t stream) { return sc::StreamQuery(stream, false); }

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return sc::StreamWaitEvent(stream, event, flags, false);
}

cudaError_t cudaStreamGetPriority(cudaStream_t stream, int* priority) {
  return sc::StreamGetPriority(stream, priority, false);
}

cudaError_t cudaStreamGetFlags(cudaStream_t stream, unsigned int* flags) {
  return sc::StreamGetFlags(stream, flags, false);
}

cudaError_t cudaStreamGetId(cudaStream_t stream, unsigned long long* id) {
  return sc::StreamGetId(stream, id, false);
}

}  // extern "C"
