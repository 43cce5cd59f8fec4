// Communicator life cycle and identity queries.
#include <nccl.h>
#include <sys/random.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "core/config.h"
#include "core/cost_model.h"
#include "core/device.h"
#include "nccl/nccl_alias.h"
#include "nccl/nccl_state.h"

namespace simgpu::nccl {
namespace {

ncclResult_t ToResult(RendezvousStatus status) {
  switch (status) {
    case RendezvousStatus::kOk:
      return ncclSuccess;
    case RendezvousStatus::kInvalidArgument:
      return ncclInvalidArgument;
    case RendezvousStatus::kSystemError:
      return ncclSystemError;
    case RendezvousStatus::kAborted:
      return ncclRemoteError;
  }
  return ncclInternalError;
}

// The child communicator of split `generation` with `color` gets a key every member derives
// the same way, and that no other communicator uses.
void ChildKey(const uint8_t parent[16], uint64_t generation, int color, uint8_t out[16]) {
  uint64_t a = 0;
  uint64_t b = 0;
  std::memcpy(&a, parent, 8);
  std::memcpy(&b, parent + 8, 8);
  uint64_t x = Mix64(a ^ Mix64(generation * 0x10001 + static_cast<uint32_t>(color)));
  uint64_t y = Mix64(b ^ x);
  std::memcpy(out, &x, 8);
  std::memcpy(out + 8, &y, 8);
}

ncclResult_t Split(ncclComm_t comm, int color, int key, ncclComm_t* out) {
  if (!comm || !out) return ncclInvalidArgument;
  uint64_t generation = comm->split_generation++;
  std::vector<std::pair<int, int>> all;
  ShmGroup& parent = *comm->shared->group;
  if (ncclResult_t r = ToResult(parent.Split(generation, color, key, &all)); r != ncclSuccess) {
    return r;
  }
  *out = nullptr;
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
  std::vector<int> members;  // parent ranks with my color, ordered by (key, parent rank)
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    if (all[r].first == color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(),
                   [&](int x, int y) { return all[x].second < all[y].second; });
  int my_index =
      static_cast<int>(std::find(members.begin(), members.end(), parent.rank()) - members.begin());
  uint8_t child[16];
  ChildKey(comm->key, generation, color, child);
  return InitComm(out, static_cast<int>(members.size()), child, my_index);
}

}  // namespace

namespace {

// Joins the group and fills in `comm`, created by InitComm.
ncclResult_t JoinComm(ncclComm* comm, int nranks, int rank) {
  std::shared_ptr<ShmGroup> group;
  RendezvousStatus status = ShmGroup::Join(comm->key, nranks, rank, ProcessRank(), &group);
  if (status != RendezvousStatus::kOk) return ToResult(status);
  comm->shared->group = std::move(group);
  // NCCL's commHash: derived from the unique id, equal on every rank of the communicator.
  uint64_t a = 0;
  uint64_t b = 0;
  std::memcpy(&a, comm->key, 8);
  std::memcpy(&b, comm->key + 8, 8);
  comm->shared->profiler = ProfilerInitComm(*comm->shared->group, Mix64(a ^ Mix64(b)));
  comm->sends_to.assign(nranks, 0);
  comm->recvs_from.assign(nranks, 0);
  return ncclSuccess;
}

}  // namespace

bool Ready(const ncclComm* comm) {
  return comm->shared->async_error.load(std::memory_order_acquire) != ncclInProgress;
}

ncclResult_t InitComm(ncclComm_t* out, int nranks, const uint8_t key[16], int rank,
                      bool blocking) {
  if (!out) return ncclInvalidArgument;
  auto* comm = new ncclComm;
  comm->shared = std::make_shared<CommShared>();
  comm->shared->device = Device::CurrentOrdinal();
  comm->shared->blocking = blocking;
  comm->device = comm->shared->device;
  std::memcpy(comm->key, key, 16);
  if (blocking) {
    const ncclResult_t rc = JoinComm(comm, nranks, rank);
    if (rc != ncclSuccess) {
      delete comm;
      return rc;
    }
    *out = comm;
    return ncclSuccess;
  }
  // Non-blocking: the handle is valid at once; the application polls ncclCommGetAsyncError
  // until the helper thread has joined the other ranks (the handle stays valid on failure, to
  // be destroyed or aborted, as NCCL's does).
  comm->shared->async_error.store(ncclInProgress, std::memory_order_release);
  *out = comm;
  std::thread([comm, nranks, rank] {
    Device::SetCurrentOrdinal(comm->device);
    const ncclResult_t rc = JoinComm(comm, nranks, rank);
    comm->shared->async_error.store(rc, std::memory_order_release);
  }).detach();
  return ncclInProgress;
}

}  // namespace simgpu::nccl

namespace sn = simgpu::nccl;

extern "C" {

ncclResult_t pncclGetVersion(int* version) {
  if (!version) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t pncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return ncclInvalidArgument;
  std::memset(id, 0, sizeof(*id));
  // 16 random bytes name the shared-memory segment; the rest stays zero.
  if (getrandom(id->internal, 16, 0) != 16) return ncclSystemError;
  return ncclSuccess;
}

ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return sn::InitComm(comm, nranks, reinterpret_cast<const uint8_t*>(id.internal), rank);
}

ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                     ncclConfig_t* config) {
  // Of the configuration only `blocking` changes behaviour (unset: blocking, as in NCCL).
  const bool blocking = config == nullptr || config->blocking != 0;
  return sn::InitComm(comm, nranks, reinterpret_cast<const uint8_t*>(id.internal), rank, blocking);
}

ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                            ncclConfig_t* config) {
  if (comm && !sn::Ready(comm)) return ncclInvalidArgument;
  // The child inherits the parent's blocking mode unless the configuration sets one. A
  // non-blocking split completes before returning here (ncclSuccess, which NCCL may also return).
  const bool blocking = config == nullptr || config->blocking == NCCL_CONFIG_UNDEF_INT
                            ? (comm == nullptr || comm->shared->blocking)
                            : config->blocking != 0;
  const ncclResult_t rc = sn::Split(comm, color, key, newcomm);
  if (rc == ncclSuccess && *newcomm != nullptr) (*newcomm)->shared->blocking = blocking;
  return rc;
}

ncclResult_t pncclCommFinalize(ncclComm_t comm) { return comm ? ncclSuccess : ncclInvalidArgument; }

ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclInvalidArgument;
  sn::ProfilerFinalizeComm(comm->shared->profiler);
  delete comm;  // work still in flight keeps the shared state alive
  return ncclSuccess;
}

ncclResult_t pncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclInvalidArgument;
  if (comm->shared->group) comm->shared->group->Abort();
  sn::ProfilerFinalizeComm(comm->shared->profiler);
  delete comm;
  return ncclSuccess;
}

ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  if (!comm || !error) return ncclInvalidArgument;
  *error = static_cast<ncclResult_t>(comm->shared->async_error.load(std::memory_order_acquire));
  if (*error == ncclSuccess && comm->shared->group->peer_lost()) *error = ncclRemoteError;
  return ncclSuccess;
}

ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  if (!comm || !count || !sn::Ready(comm)) return ncclInvalidArgument;
  *count = comm->shared->group->nranks();
  return ncclSuccess;
}

ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!comm || !rank || !sn::Ready(comm)) return ncclInvalidArgument;
  *rank = comm->shared->group->rank();
  return ncclSuccess;
}

ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (!comm || !device) return ncclInvalidArgument;
  *device = comm->device;
  return ncclSuccess;
}

const char* pncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

const char* pncclGetLastError(ncclComm_t) { return ""; }

}  // extern "C"

SIMGPU_NCCL_WEAK_ALIAS(ncclGetVersion)
SIMGPU_NCCL_WEAK_ALIAS(ncclGetUniqueId)
SIMGPU_NCCL_WEAK_ALIAS(ncclCommInitRank)
SIMGPU_NCCL_WEAK_ALIAS(ncclCommInitRankConfig)
SIMGPU_NCCL_WEAK_ALIAS(ncclCommSplit)
SIMGPU_NCCL_WEAK_ALIAS(ncclCommFinalize)
SIMGPU_NCCL_WEAK_ALIAS(ncclCommDestroy)
SIMGPU_NCCL_WEAK_ALIAS(ncclCommAbort)
SIMGPU_NCCL_WEAK_ALIAS(ncclCommGetAsyncError)
SIMGPU_NCCL_WEAK_ALIAS(ncclCommCount)
SIMGPU_NCCL_WEAK_ALIAS(ncclCommUserRank)
SIMGPU_NCCL_WEAK_ALIAS(ncclCommCuDevice)
SIMGPU_NCCL_WEAK_ALIAS(ncclGetErrorString)
SIMGPU_NCCL_WEAK_ALIAS(ncclGetLastError)
