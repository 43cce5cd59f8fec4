// cudaGetLastError & co. The last error is per host thread; launch and argument errors are not
// sticky (the simulator never corrupts a context, so there are no sticky errors to report).
#include <cuda_runtime_api.h>

#include "cudart/runtime_state.h"

namespace simgpu::cudart {
namespace {

struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* text;
};

constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
     "invalid configuration argument"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
     "invalid copy direction for memcpy"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
     "operation failed due to a previous error during capture"},
    {cudaErrorIllegalState, "cudaErrorIllegalState",
     "the operation cannot be performed in the present state"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorInvalidPtx, "cudaErrorInvalidPtx", "a PTX JIT compilation failed"},
    {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound", "named symbol not found"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const ErrorText* Find(cudaError_t code) {
  for (const ErrorText& e : kErrors) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

}  // namespace
}  // namespace simgpu::cudart

using simgpu::cudart::Find;

extern "C" {

cudaError_t cudaGetLastError(void) { return simgpu::cudart::TakeLastError(); }

cudaError_t cudaPeekAtLastError(void) { return simgpu::cudart::PeekLastError(); }

const char* cudaGetErrorString(cudaError_t error) {
  const auto* e = Find(error);
  return e ? e->text : "unrecognized error code";
}

const char* cudaGetErrorName(cudaError_t error) {
  const auto* e = Find(error);
  return e ? e->name : "cudaErrorUnknown";
}

}  // extern "C"
