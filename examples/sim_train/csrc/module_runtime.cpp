// Device, memory, stream, event and kernel functions of _simtorch_C.
#include <cstring>

#include "kernels.h"
#include "module.h"

namespace simtorch {
namespace {

using Handle = unsigned long long;

cudaStream_t S(Handle h) { return FromHandle<CUstream_st>(h); }
cudaEvent_t E(Handle h) { return FromHandle<CUevent_st>(h); }

#define SIMTORCH_CHECK(call)                     \
  do {                                           \
    cudaError_t e_ = (call);                     \
    if (e_ != cudaSuccess) return CudaError(e_); \
  } while (0)

PyObject* Init(PyObject*, PyObject* args) {
  int device = 0;
  if (!PyArg_ParseTuple(args, "i", &device)) return nullptr;
  SIMTORCH_CHECK(cudaSetDevice(device));
  SIMTORCH_CHECK(cudaFree(nullptr));  // "create the context", as torch.cuda.init does
  cudaDeviceProp prop;
  SIMTORCH_CHECK(cudaGetDeviceProperties(&prop, device));
  RegisterKernels();
  return Py_BuildValue("{s:s,s:i,s:K}", "name", prop.name, "sms", prop.multiProcessorCount,
                       "memory", static_cast<unsigned long long>(prop.totalGlobalMem));
}

// The calling thread's device: CUDA's current device is per thread, and a thread that launches
// for the model (autograd's device thread) selects it first, as PyTorch's does.
PyObject* SetDevice(PyObject*, PyObject* args) {
  int device = 0;
  if (!PyArg_ParseTuple(args, "i", &device)) return nullptr;
  SIMTORCH_CHECK(cudaSetDevice(device));
  Py_RETURN_NONE;
}

PyObject* StreamCreate(PyObject*, PyObject* args) {
  int nonblocking = 1, priority = 0;
  if (!PyArg_ParseTuple(args, "|pi", &nonblocking, &priority)) return nullptr;
  cudaStream_t s = nullptr;
  SIMTORCH_CHECK(cudaStreamCreateWithPriority(
      &s, nonblocking ? cudaStreamNonBlocking : cudaStreamDefault, priority));
  return ToHandle(s);
}

PyObject* StreamSynchronize(PyObject*, PyObject* args) {
  Handle stream = 0;
  if (!PyArg_ParseTuple(args, "|K", &stream)) return nullptr;
  cudaError_t e;
  Py_BEGIN_ALLOW_THREADS e = cudaStreamSynchronize(S(stream));
  Py_END_ALLOW_THREADS SIMTORCH_CHECK(e);
  Py_RETURN_NONE;
}

PyObject* DeviceSynchronize(PyObject*, PyObject*) {
  cudaError_t e;
  Py_BEGIN_ALLOW_THREADS e = cudaDeviceSynchronize();
  Py_END_ALLOW_THREADS SIMTORCH_CHECK(e);
  Py_RETURN_NONE;
}

PyObject* EventCreate(PyObject*, PyObject* args) {
  int timing = 0;
  if (!PyArg_ParseTuple(args, "|p", &timing)) return nullptr;
  cudaEvent_t ev = nullptr;
  SIMTORCH_CHECK(cudaEventCreateWithFlags(&ev, timing ? cudaEventDefault : cudaEventDisableTiming));
  return ToHandle(ev);
}

PyObject* EventRecord(PyObject*, PyObject* args) {
  Handle ev = 0, stream = 0;
  if (!PyArg_ParseTuple(args, "K|K", &ev, &stream)) return nullptr;
  SIMTORCH_CHECK(cudaEventRecord(E(ev), S(stream)));
  Py_RETURN_NONE;
}

PyObject* StreamWaitEvent(PyObject*, PyObject* args) {
  Handle stream = 0, ev = 0;
  if (!PyArg_ParseTuple(args, "KK", &stream, &ev)) return nullptr;
  SIMTORCH_CHECK(cudaStreamWaitEvent(S(stream), E(ev), 0));
  Py_RETURN_NONE;
}

PyObject* EventElapsed(PyObject*, PyObject* args) {
  Handle a = 0, b = 0;
  if (!PyArg_ParseTuple(args, "KK", &a, &b)) return nullptr;
  float ms = 0;
  cudaError_t e;
  Py_BEGIN_ALLOW_THREADS e = cudaEventSynchronize(E(b));
  Py_END_ALLOW_THREADS SIMTORCH_CHECK(e);
  SIMTORCH_CHECK(cudaEventElapsedTime(&ms, E(a), E(b)));
  return PyFloat_FromDouble(ms);
}

PyObject* Malloc(PyObject*, PyObject* args) {
  unsigned long long bytes = 0;
  int pinned_host = 0;
  if (!PyArg_ParseTuple(args, "K|p", &bytes, &pinned_host)) return nullptr;
  void* p = nullptr;
  SIMTORCH_CHECK(pinned_host ? cudaMallocHost(&p, bytes) : cudaMalloc(&p, bytes));
  return ToHandle(p);
}

PyObject* Free(PyObject*, PyObject* args) {
  Handle p = 0;
  int pinned_host = 0;
  if (!PyArg_ParseTuple(args, "K|p", &p, &pinned_host)) return nullptr;
  SIMTORCH_CHECK(pinned_host ? cudaFreeHost(FromHandle<void>(p)) : cudaFree(FromHandle<void>(p)));
  Py_RETURN_NONE;
}

PyObject* CopyAsync(PyObject*, PyObject* args) {
  Handle dst = 0, src = 0, stream = 0;
  unsigned long long bytes = 0;
  if (!PyArg_ParseTuple(args, "KKK|K", &dst, &src, &bytes, &stream)) return nullptr;
  SIMTORCH_CHECK(cudaMemcpyAsync(FromHandle<void>(dst), FromHandle<void>(src), bytes,
                                 cudaMemcpyDefault, S(stream)));
  Py_RETURN_NONE;
}

// tensor.item(): a synchronous 4-byte device-to-host copy on the default stream.
PyObject* Item(PyObject*, PyObject* args) {
  Handle src = 0;
  if (!PyArg_ParseTuple(args, "K", &src)) return nullptr;
  float value = 0;
  cudaError_t e;
  Py_BEGIN_ALLOW_THREADS e =
      cudaMemcpy(&value, FromHandle<void>(src), sizeof(value), cudaMemcpyDeviceToHost);
  Py_END_ALLOW_THREADS SIMTORCH_CHECK(e);
  return PyFloat_FromDouble(value);
}

PyObject* Memset(PyObject*, PyObject* args) {
  Handle dst = 0, stream = 0;
  unsigned long long bytes = 0;
  int value = 0;
  if (!PyArg_ParseTuple(args, "KiK|K", &dst, &value, &bytes, &stream)) return nullptr;
  SIMTORCH_CHECK(cudaMemsetAsync(FromHandle<void>(dst), value, bytes, S(stream)));
  Py_RETURN_NONE;
}

PyObject* Gemm(PyObject*, PyObject* args) {
  long long m = 0, n = 0, k = 0;
  Handle stream = 0;
  if (!PyArg_ParseTuple(args, "LLL|K", &m, &n, &k, &stream)) return nullptr;
  SIMTORCH_CHECK(LaunchGemm(m, n, k, S(stream)));
  Py_RETURN_NONE;
}

PyObject* Attention(PyObject*, PyObject* args) {
  long long batch = 0, heads = 0, seq = 0, dim = 0;
  int backward = 0;
  Handle stream = 0;
  if (!PyArg_ParseTuple(args, "LLLLp|K", &batch, &heads, &seq, &dim, &backward, &stream)) {
    return nullptr;
  }
  SIMTORCH_CHECK(LaunchAttention(batch, heads, seq, dim, backward, S(stream)));
  Py_RETURN_NONE;
}

PyObject* Elementwise(PyObject*, PyObject* args) {
  const char* name = nullptr;
  long long bytes = 0;
  Handle stream = 0;
  if (!PyArg_ParseTuple(args, "sL|K", &name, &bytes, &stream)) return nullptr;
  Kernel kernel;
  if (!KernelByName(name, &kernel)) {
    PyErr_Format(PyExc_ValueError, "unknown kernel '%s'", name);
    return nullptr;
  }
  SIMTORCH_CHECK(LaunchMemoryBound(kernel, bytes, S(stream)));
  Py_RETURN_NONE;
}

}  // namespace

PyObject* CudaError(cudaError_t error) {
  PyErr_Format(PyExc_RuntimeError, "CUDA error: %s (%s)", cudaGetErrorString(error),
               cudaGetErrorName(error));
  return nullptr;
}

PyObject* ToHandle(const void* pointer) {
  return PyLong_FromUnsignedLongLong(reinterpret_cast<uintptr_t>(pointer));
}

PyMethodDef kRuntimeMethods[] = {
    {"init", Init, METH_VARARGS, "init(device) -> properties; cudaSetDevice + context"},
    {"set_device", SetDevice, METH_VARARGS, "set_device(device): cudaSetDevice on this thread"},
    {"stream_create", StreamCreate, METH_VARARGS, "stream_create(nonblocking=True, priority=0)"},
    {"stream_synchronize", StreamSynchronize, METH_VARARGS, "stream_synchronize(stream=0)"},
    {"device_synchronize", DeviceSynchronize, METH_NOARGS, "cudaDeviceSynchronize()"},
    {"event_create", EventCreate, METH_VARARGS, "event_create(timing=False)"},
    {"event_record", EventRecord, METH_VARARGS, "event_record(event, stream=0)"},
    {"stream_wait_event", StreamWaitEvent, METH_VARARGS, "stream_wait_event(stream, event)"},
    {"event_elapsed", EventElapsed, METH_VARARGS, "event_elapsed(start, end) -> ms"},
    {"malloc", Malloc, METH_VARARGS, "malloc(bytes, pinned_host=False) -> ptr"},
    {"free", Free, METH_VARARGS, "free(ptr, pinned_host=False)"},
    {"copy_async", CopyAsync, METH_VARARGS, "copy_async(dst, src, bytes, stream=0)"},
    {"item", Item, METH_VARARGS, "item(ptr) -> float (synchronous)"},
    {"memset", Memset, METH_VARARGS, "memset(ptr, value, bytes, stream=0)"},
    {"gemm", Gemm, METH_VARARGS, "gemm(m, n, k, stream=0)"},
    {"attention", Attention, METH_VARARGS, "attention(b, h, s, d, backward, stream=0)"},
    {"elementwise", Elementwise, METH_VARARGS, "elementwise(kernel, bytes, stream=0)"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace simtorch
