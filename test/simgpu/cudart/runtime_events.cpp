// Events: device timestamps recorded in stream order.
#include <cuda_runtime_api.h>

#include "core/clock.h"
#include "cudart/runtime_internal.h"
#include "cudart/runtime_state.h"

namespace simgpu::cudart {
namespace {

cudaError_t Create(cudaEvent_t* event, unsigned flags) {
  if (!event) return Fail(cudaErrorInvalidValue);
  constexpr unsigned kKnown =
      cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
  if (flags & ~kKnown) return Fail(cudaErrorInvalidValue);
  *event = ToHandle(new Event((flags & cudaEventDisableTiming) == 0));
  return cudaSuccess;
}

cudaError_t ElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!ms) return Fail(cudaErrorInvalidValue);
  if (!start || !end) return Fail(cudaErrorInvalidResourceHandle);
  Event* a = ToEvent(start);
  Event* b = ToEvent(end);
  if (!a->timing() || !b->timing()) return Fail(cudaErrorInvalidResourceHandle);
  WorkRef first = a->Latest();
  WorkRef second = b->Latest();
  if (!first || !second) return Fail(cudaErrorInvalidResourceHandle);
  if (!first->stream->IsComplete(first) || !second->stream->IsComplete(second)) {
    return cudaErrorNotReady;
  }
  *ms = static_cast<float>(static_cast<double>(second->end_ns - first->end_ns) / 1e6);
  return cudaSuccess;
}

}  // namespace

cudaError_t EventRecord(cudaEvent_t event, cudaStream_t stream, bool per_thread) {
  if (!event) return Fail(cudaErrorInvalidResourceHandle);
  Stream* s = ResolveStream(stream, per_thread);
  ToEvent(event)->Record(DeviceOf(s), s);
  return cudaSuccess;
}

}  // namespace simgpu::cudart

namespace sc = simgpu::cudart;

extern "C" {

cudaError_t cudaEventCreate(cudaEvent_t* event) { return sc::Create(event, cudaEventDefault); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  return sc::Create(event, flags);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (!event) return sc::Fail(cudaErrorInvalidResourceHandle);
  delete sc::ToEvent(event);  // items it recorded stay alive through their stream
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return sc::EventRecord(event, stream, false);
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int) {
  return sc::EventRecord(event, stream, false);
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (!event) return sc::Fail(cudaErrorInvalidResourceHandle);
  if (cudaError_t rc = sc::CheckCaptureSafe(); rc != cudaSuccess) return rc;
  return sc::ToEvent(event)->Query() ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (!event) return sc::Fail(cudaErrorInvalidResourceHandle);
  if (cudaError_t rc = sc::CheckCaptureSafe(); rc != cudaSuccess) return rc;
  sc::ToEvent(event)->Synchronize();
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  return sc::ElapsedTime(ms, start, end);
}

}  // extern "C"
