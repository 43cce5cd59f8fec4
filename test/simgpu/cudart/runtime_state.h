// Internal state of the CUDA runtime stand-in: the calling thread's current device and last
// error, and the mapping between CUDA handles and simulator objects.
//
// Exported cuda* functions are thin wrappers around the functions declared in runtime_internal.h;
// code inside the library only ever calls those, never an exported symbol, so an LD_PRELOAD
// interposer sees exactly the calls the application made.
#ifndef SIMGPU_CUDART_RUNTIME_STATE_H_
#define SIMGPU_CUDART_RUNTIME_STATE_H_

#include <cuda_runtime_api.h>

#include "core/device.h"
#include "core/event.h"

namespace simgpu::cudart {

// Records a failure as the thread's last error (cudaErrorNotReady is a status, not an error)
// and returns it, so call sites read `return Fail(cudaErrorInvalidValue);`.
cudaError_t Fail(cudaError_t error);
inline cudaError_t Check(cudaError_t error) {
  return error == cudaSuccess || error == cudaErrorNotReady ? error : Fail(error);
}
cudaError_t TakeLastError();
cudaError_t PeekLastError();

int CurrentDeviceOrdinal();
void SetCurrentDeviceOrdinal(int ordinal);
Device* CurrentDevice();

// Resolves a stream handle: 0 means the legacy stream, or the per-thread stream when the call
// came through a _ptsz/_ptds entry point; cudaStreamLegacy and cudaStreamPerThread are honoured.
Stream* ResolveStream(cudaStream_t handle, bool per_thread_default);
inline cudaStream_t ToHandle(Stream* stream) { return reinterpret_cast<cudaStream_t>(stream); }
// The device a stream belongs to.
inline Device* DeviceOf(Stream* stream) { return Device::Get(stream->device()); }

inline Event* ToEvent(cudaEvent_t handle) { return reinterpret_cast<Event*>(handle); }
inline cudaEvent_t ToHandle(Event* event) { return reinterpret_cast<cudaEvent_t>(event); }

}  // namespace simgpu::cudart

#endif  // SIMGPU_CUDART_RUNTIME_STATE_H_
