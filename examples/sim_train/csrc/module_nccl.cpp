// NCCL functions of _simtorch_C: what ProcessGroupNCCL does underneath torch.distributed.
#include <cstring>

#include "module.h"

namespace simtorch {
namespace {

using Handle = unsigned long long;

ncclComm_t C(Handle h) { return FromHandle<ncclComm>(h); }
cudaStream_t S(Handle h) { return FromHandle<CUstream_st>(h); }

#define SIMTORCH_NCCL(call)                      \
  do {                                           \
    ncclResult_t r_ = (call);                    \
    if (r_ != ncclSuccess) return NcclError(r_); \
  } while (0)

PyObject* UniqueId(PyObject*, PyObject*) {
  ncclUniqueId id;
  SIMTORCH_NCCL(ncclGetUniqueId(&id));
  return PyBytes_FromStringAndSize(id.internal, sizeof(id.internal));
}

PyObject* Version(PyObject*, PyObject*) {
  int version = 0;
  SIMTORCH_NCCL(ncclGetVersion(&version));
  return PyLong_FromLong(version);
}

PyObject* CommInit(PyObject*, PyObject* args) {
  int nranks = 0, rank = 0;
  const char* bytes = nullptr;
  Py_ssize_t size = 0;
  if (!PyArg_ParseTuple(args, "iiy#", &nranks, &rank, &bytes, &size)) return nullptr;
  ncclUniqueId id;
  if (size != sizeof(id.internal)) {
    PyErr_SetString(PyExc_ValueError, "a unique id is 128 bytes");
    return nullptr;
  }
  std::memcpy(id.internal, bytes, sizeof(id.internal));
  ncclComm_t comm = nullptr;
  ncclResult_t r;
  Py_BEGIN_ALLOW_THREADS r = ncclCommInitRank(&comm, nranks, id, rank);
  Py_END_ALLOW_THREADS SIMTORCH_NCCL(r);
  return ToHandle(comm);
}

PyObject* CommSplit(PyObject*, PyObject* args) {
  Handle comm = 0;
  int color = 0, key = 0;
  if (!PyArg_ParseTuple(args, "Kii", &comm, &color, &key)) return nullptr;
  ncclComm_t child = nullptr;
  ncclResult_t r;
  Py_BEGIN_ALLOW_THREADS r = ncclCommSplit(C(comm), color, key, &child, nullptr);
  Py_END_ALLOW_THREADS SIMTORCH_NCCL(r);
  return ToHandle(child);
}

PyObject* CommDestroy(PyObject*, PyObject* args) {
  Handle comm = 0;
  if (!PyArg_ParseTuple(args, "K", &comm)) return nullptr;
  SIMTORCH_NCCL(ncclCommDestroy(C(comm)));
  Py_RETURN_NONE;
}

PyObject* AllReduce(PyObject*, PyObject* args) {
  Handle comm = 0, ptr = 0, stream = 0;
  unsigned long long count = 0;
  if (!PyArg_ParseTuple(args, "KKK|K", &comm, &ptr, &count, &stream)) return nullptr;
  void* buffer = FromHandle<void>(ptr);
  SIMTORCH_NCCL(ncclAllReduce(buffer, buffer, count, ncclBfloat16, ncclSum, C(comm), S(stream)));
  Py_RETURN_NONE;
}

PyObject* AllGather(PyObject*, PyObject* args) {
  Handle comm = 0, send = 0, recv = 0, stream = 0;
  unsigned long long count = 0;
  if (!PyArg_ParseTuple(args, "KKKK|K", &comm, &send, &recv, &count, &stream)) return nullptr;
  SIMTORCH_NCCL(ncclAllGather(FromHandle<void>(send), FromHandle<void>(recv), count, ncclBfloat16,
                              C(comm), S(stream)));
  Py_RETURN_NONE;
}

PyObject* SendRecv(PyObject* args, bool send) {
  Handle comm = 0, ptr = 0, stream = 0;
  unsigned long long count = 0;
  int peer = 0;
  if (!PyArg_ParseTuple(args, "KKKi|K", &comm, &ptr, &count, &peer, &stream)) return nullptr;
  void* buffer = FromHandle<void>(ptr);
  SIMTORCH_NCCL(send ? ncclSend(buffer, count, ncclBfloat16, peer, C(comm), S(stream))
                     : ncclRecv(buffer, count, ncclBfloat16, peer, C(comm), S(stream)));
  Py_RETURN_NONE;
}

PyObject* Send(PyObject*, PyObject* args) { return SendRecv(args, true); }
PyObject* Recv(PyObject*, PyObject* args) { return SendRecv(args, false); }

PyObject* GroupStart(PyObject*, PyObject*) {
  SIMTORCH_NCCL(ncclGroupStart());
  Py_RETURN_NONE;
}

PyObject* GroupEnd(PyObject*, PyObject*) {
  SIMTORCH_NCCL(ncclGroupEnd());
  Py_RETURN_NONE;
}

}  // namespace

PyObject* NcclError(ncclResult_t result) {
  PyErr_Format(PyExc_RuntimeError, "NCCL error: %s", ncclGetErrorString(result));
  return nullptr;
}

PyMethodDef kNcclMethods[] = {
    {"nccl_unique_id", UniqueId, METH_NOARGS, "ncclGetUniqueId() -> 128 bytes"},
    {"nccl_version", Version, METH_NOARGS, "ncclGetVersion()"},
    {"nccl_init", CommInit, METH_VARARGS, "nccl_init(nranks, rank, uid) -> comm"},
    {"nccl_split", CommSplit, METH_VARARGS, "nccl_split(comm, color, key) -> comm"},
    {"nccl_destroy", CommDestroy, METH_VARARGS, "nccl_destroy(comm)"},
    {"all_reduce", AllReduce, METH_VARARGS, "all_reduce(comm, ptr, count, stream=0) (bf16, sum)"},
    {"all_gather", AllGather, METH_VARARGS, "all_gather(comm, send, recv, count, stream=0)"},
    {"send", Send, METH_VARARGS, "send(comm, ptr, count, peer, stream=0)"},
    {"recv", Recv, METH_VARARGS, "recv(comm, ptr, count, peer, stream=0)"},
    {"group_start", GroupStart, METH_NOARGS, "ncclGroupStart()"},
    {"group_end", GroupEnd, METH_NOARGS, "ncclGroupEnd()"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace simtorch
