// The _simtorch_C extension: a tiny stand-in for torch._C. Python calls it; it calls the CUDA
// runtime and NCCL through their shared libraries (DT_NEEDED libcudart.so.13, libnccl.so.2),
// the same path as Python -> libtorch_cuda -> cudart in PyTorch.
//
// Handles (pointers, streams, events, communicators) cross into Python as integers. Blocking
// calls release the GIL, as PyTorch does, so other Python threads keep running.
#ifndef SIM_TRAIN_CSRC_MODULE_H_
#define SIM_TRAIN_CSRC_MODULE_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

namespace simtorch {

// Raises RuntimeError for a failed CUDA / NCCL call; returns null so callers can
// `return CudaError(e);`.
PyObject* CudaError(cudaError_t error);
PyObject* NcclError(ncclResult_t result);

template <typename T>
T* FromHandle(unsigned long long handle) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(handle));
}
PyObject* ToHandle(const void* pointer);

// Method tables of the two halves of the module.
extern PyMethodDef kRuntimeMethods[];
extern PyMethodDef kNcclMethods[];

}  // namespace simtorch

#endif  // SIM_TRAIN_CSRC_MODULE_H_
