// A do-nothing NCCL for hook_bench: a one-rank communicator whose collectives return at once, so
// the benchmark sees the cost of the NCCL hook itself (sequence numbers, communicator lookup,
// the event pair around the call) rather than a transfer.
#include <nccl.h>

#include <cstring>

namespace {
int g_comm;  // every communicator handle points here
}  // namespace

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}
ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id, 7, sizeof *id);
  return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int, ncclUniqueId, int) {
  *comm = reinterpret_cast<ncclComm_t>(&g_comm);
  return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t) { return ncclSuccess; }
ncclResult_t ncclCommCount(const ncclComm_t, int* count) {
  *count = 1;
  return ncclSuccess;
}
ncclResult_t ncclCommUserRank(const ncclComm_t, int* rank) {
  *rank = 0;
  return ncclSuccess;
}
ncclResult_t ncclAllReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                           cudaStream_t) {
  return ncclSuccess;
}
ncclResult_t ncclGroupStart() { return ncclSuccess; }
ncclResult_t ncclGroupEnd() { return ncclSuccess; }

}  // extern "C"
