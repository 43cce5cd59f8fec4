#include "cudart/runtime_state.h"

namespace simgpu::cudart {
namespace {

thread_local cudaError_t t_last_error = cudaSuccess;
thread_local int t_device = 0;

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

int CurrentDeviceOrdinal() { return t_device; }
void SetCurrentDeviceOrdinal(int ordinal) { t_device = ordinal; }
Device* CurrentDevice() { return Device::Get(t_device); }

Stream* ResolveStream(cudaStream_t handle, bool per_thread_default) {
  if (handle == cudaStreamLegacy) return CurrentDevice()->Legacy();
  if (handle == cudaStreamPerThread || (handle == nullptr && per_thread_default)) {
    return CurrentDevice()->PerThread();
  }
  if (handle == nullptr) return CurrentDevice()->Legacy();
  return reinterpret_cast<Stream*>(handle);
}

}  // namespace simgpu::cudart
