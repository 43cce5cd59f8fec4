// NCCL hooks: communicator life cycle. Each creation registers the new communicator under an id
// that all of its ranks compute alike without talking to each other: a hash of the
// ncclUniqueId bytes for ncclCommInitRank*, and parent id + color + the parent's split count for
// ncclCommSplit / ncclCommShrink children. Every call is also timed as a function pattern
// (bootstrap and teardown stalls show up there).
#include "preload/cuda/cuda_hook.h"
#include "preload/nccl/nccl_comms.h"

namespace perftracker::preload {
namespace {

using Kind = format::FunctionKind;
using ShrinkFn = ncclResult_t (*)(ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int);

RealSymbol g_real[] = {
    {"ncclCommInitRank", Library::kNccl},   {"ncclCommInitRankConfig", Library::kNccl},
    {"ncclCommInitRankScalable", Library::kNccl}, {"ncclCommInitAll", Library::kNccl},
    {"ncclCommSplit", Library::kNccl},      {"ncclCommShrink", Library::kNccl},
    {"ncclCommFinalize", Library::kNccl},   {"ncclCommDestroy", Library::kNccl},
    {"ncclCommAbort", Library::kNccl},
};
enum Real {
  kInitRank, kInitRankConfig, kInitScalable, kInitAll, kSplit, kShrink, kFinalize, kDestroy,
  kAbort
};

ApiSlot g_api_init{"ncclCommInitRank", Kind::kCollective};
ApiSlot g_api_init_config{"ncclCommInitRankConfig", Kind::kCollective};
ApiSlot g_api_init_scalable{"ncclCommInitRankScalable", Kind::kCollective};
ApiSlot g_api_init_all{"ncclCommInitAll", Kind::kCollective};
ApiSlot g_api_split{"ncclCommSplit", Kind::kCollective};
ApiSlot g_api_shrink{"ncclCommShrink", Kind::kCollective};
ApiSlot g_api_finalize{"ncclCommFinalize", Kind::kCollective};
ApiSlot g_api_destroy{"ncclCommDestroy", Kind::kCollective};
ApiSlot g_api_abort{"ncclCommAbort", Kind::kCollective};

[[gnu::constructor]] void ResolveNcclComm() { ResolveAll(g_real, std::size(g_real)); }

bool Ok(ncclResult_t rc) { return rc == ncclSuccess || rc == ncclInProgress; }

// Times `call` as a function pattern and returns its result.
template <typename Call>
ncclResult_t Timed(ApiSlot& api, Call call) {
  HookScope scope;
  const uint64_t start = NowNs();
  const ncclResult_t rc = call();
  const uint64_t end = NowNs();
  RecordCall(api.Get(), end, end - start, end - start, end - start);
  return rc;
}

uint64_t ChildId(ncclComm_t parent, const char* how, int color) {
  CommEntry* p = FindComm(parent);
  if (p == nullptr) return HashBytes(&color, sizeof color, HashBytes(how, 6));
  const uint32_t nth = p->splits.fetch_add(1, std::memory_order_relaxed);
  uint64_t id = HashBytes(how, 6, p->id);
  id = HashBytes(&color, sizeof color, id);
  return HashBytes(&nth, sizeof nth, id);
}

}  // namespace
}  // namespace perftracker::preload

using namespace perftracker::preload;  // NOLINT: the hooks are extern "C" at global scope

PERFTRACKER_HOOK ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id,
                                               int rank) {
  const auto real =
      g_real[kInitRank].Need<decltype(&ncclCommInitRank)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(comm, nranks, id, rank);
  const ncclResult_t rc = Timed(g_api_init, [&] { return real(comm, nranks, id, rank); });
  if (Ok(rc)) RegisterComm(*comm, HashBytes(&id, sizeof id));
  return rc;
}

PERFTRACKER_HOOK ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks,
                                                     ncclUniqueId id, int rank,
                                                     ncclConfig_t* config) {
  const auto real =
      g_real[kInitRankConfig].Need<decltype(&ncclCommInitRankConfig)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(comm, nranks, id, rank, config);
  const ncclResult_t rc =
      Timed(g_api_init_config, [&] { return real(comm, nranks, id, rank, config); });
  // ncclInProgress (non-blocking): the handle is already valid, only its set-up goes on.
  if (Ok(rc) && comm != nullptr) RegisterComm(*comm, HashBytes(&id, sizeof id));
  return rc;
}

PERFTRACKER_HOOK ncclResult_t ncclCommInitRankScalable(ncclComm_t* comm, int nranks, int rank,
                                                       int n_ids, ncclUniqueId* ids,
                                                       ncclConfig_t* config) {
  const auto real =
      g_real[kInitScalable].Need<decltype(&ncclCommInitRankScalable)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(comm, nranks, rank, n_ids, ids, config);
  const ncclResult_t rc =
      Timed(g_api_init_scalable, [&] { return real(comm, nranks, rank, n_ids, ids, config); });
  if (Ok(rc) && comm != nullptr && n_ids > 0) {
    RegisterComm(*comm, HashBytes(ids, sizeof(ncclUniqueId) * static_cast<size_t>(n_ids)));
  }
  return rc;
}

// One process, several devices: the clique never meets other processes, any shared id will do.
PERFTRACKER_HOOK ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  const auto real = g_real[kInitAll].Need<decltype(&ncclCommInitAll)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(comms, ndev, devlist);
  const ncclResult_t rc = Timed(g_api_init_all, [&] { return real(comms, ndev, devlist); });
  static std::atomic<uint32_t> cliques{0};
  const uint32_t nth = cliques.fetch_add(1);
  for (int i = 0; Ok(rc) && i < ndev; ++i) {
    RegisterComm(comms[i], HashBytes(&nth, sizeof nth, HashBytes("initall", 7)));
  }
  return rc;
}

PERFTRACKER_HOOK ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                                            ncclComm_t* newcomm, ncclConfig_t* config) {
  const auto real = g_real[kSplit].Need<decltype(&ncclCommSplit)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(comm, color, key, newcomm, config);
  // Counted before the call, on every rank, NOCOLOR included: all ranks number splits alike.
  const uint64_t id = ChildId(comm, "split", color);
  const ncclResult_t rc =
      Timed(g_api_split, [&] { return real(comm, color, key, newcomm, config); });
  if (Ok(rc) && newcomm != nullptr && *newcomm != nullptr) RegisterComm(*newcomm, id);
  return rc;
}

PERFTRACKER_HOOK ncclResult_t ncclCommShrink(ncclComm_t comm, int* exclude, int n_exclude,
                                             ncclComm_t* newcomm, ncclConfig_t* config,
                                             int flags) {
  const auto real = g_real[kShrink].Need<ShrinkFn>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(comm, exclude, n_exclude, newcomm, config, flags);
  const uint64_t id = ChildId(comm, "shrink", n_exclude);
  const ncclResult_t rc = Timed(
      g_api_shrink, [&] { return real(comm, exclude, n_exclude, newcomm, config, flags); });
  if (Ok(rc) && newcomm != nullptr && *newcomm != nullptr) RegisterComm(*newcomm, id);
  return rc;
}

PERFTRACKER_HOOK ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  const auto real =
      g_real[kFinalize].Need<decltype(&ncclCommFinalize)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(comm);
  return Timed(g_api_finalize, [&] { return real(comm); });
}

PERFTRACKER_HOOK ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  const auto real = g_real[kDestroy].Need<decltype(&ncclCommDestroy)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(comm);
  ForgetComm(comm);
  return Timed(g_api_destroy, [&] { return real(comm); });
}

PERFTRACKER_HOOK ncclResult_t ncclCommAbort(ncclComm_t comm) {
  const auto real = g_real[kAbort].Need<decltype(&ncclCommAbort)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(comm);
  ForgetComm(comm);
  return Timed(g_api_abort, [&] { return real(comm); });
}
