#include "cudart/runtime_state.h"

namespace simgpu::cudart {
namespace {

thread_local cudaError_t t_last_error = cudaSuccess;

}  // namespace

cudaError_t Fail(cudaError_t error) {
  if (error != cudaSuccess && error != cudaErrorNotReady) t_last_error = error;
  return error;
}

cudaError_t TakeLastError() {
  cudaError_t error = t_last_error;
  t_last_error = cudaSuccess;
  return error;
}

cudaError_t PeekLastError() { return t_last_error; }

int CurrentDeviceOrdinal() { return Device::CurrentOrdinal(); }
void SetCurrentDeviceOrdinal(int ordinal) { Device::SetCurrentOrdinal(ordinal); }
Device* CurrentDevice() { return Device::Get(Device::CurrentOrdinal()); }

Stream* ResolveStream(cudaStream_t handle, bool per_thread_default) {
  return ResolveStreamHandle(Device::CurrentOrdinal(), handle, per_thread_default);
}

}  // namespace simgpu::cudart
