// A framework library with its own NCCL linked in statically and exported (as PyTorch builds with
// static NCCL export ncclAllReduce from libtorch_cuda.so), meant to be loaded RTLD_LOCAL: its
// calls bind to the preloaded hooks, whose RTLD_NEXT cannot see this copy. Built twice
// (PT_FRAMEWORK a and b) to put two such copies in one process.
#include <nccl.h>

#include <cstring>

#define PT_CAT2(a, b) a##b
#define PT_CAT(a, b) PT_CAT2(a, b)
#define PT_FN(name) PT_CAT(PT_CAT(framework_, PT_FRAMEWORK), name)

namespace {
int g_comm;
long g_allreduces = 0;  // received by this copy
}  // namespace

extern "C" {

// This copy of NCCL: a one-rank communicator.
ncclResult_t ncclGetVersion(int* version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int, ncclUniqueId, int) {
  *comm = reinterpret_cast<ncclComm_t>(&g_comm);
  return ncclSuccess;
}
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (comm != reinterpret_cast<ncclComm_t>(&g_comm)) return ncclInvalidArgument;  // not ours
  *count = 1;
  return ncclSuccess;
}
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (comm != reinterpret_cast<ncclComm_t>(&g_comm)) return ncclInvalidArgument;
  *rank = 0;
  return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t) { return ncclSuccess; }
ncclResult_t ncclAllReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                           ncclComm_t comm, cudaStream_t) {
  if (comm != reinterpret_cast<ncclComm_t>(&g_comm)) return ncclInvalidArgument;
  ++g_allreduces;
  return ncclSuccess;
}

// The framework's own code: `n` all-reduces on a communicator of this copy. Returns the number
// that failed.
int PT_FN(_allreduce)(int n) {
  ncclComm_t comm = nullptr;
  ncclUniqueId id;
  std::memset(&id, PT_FRAMEWORK_ID, sizeof id);
  if (ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) return n;
  int failed = 0;
  float x = 0;
  for (int i = 0; i < n; ++i) {
    failed += ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess;
  }
  ncclCommDestroy(comm);
  return failed;
}
long PT_FN(_received)() { return g_allreduces; }

}  // extern "C"
