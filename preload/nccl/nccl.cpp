// NCCL hooks: every collective and point-to-point call of nccl.h 2.28, and group start/end.
//
// Per call: the communicator's sequence number, bytes (count x dtype size), the host time of the
// API call and its launch time (RecordCollectiveLaunch), and the device duration from a pooled
// event pair: start before the op on its stream, end after it -- or, inside a group, after the
// outermost ncclGroupEnd, because only then is the work launched. The duration includes the
// time spent waiting for late peers, so the last rank to arrive has the shortest one.
//
// A non-blocking communicator's launch may return ncclInProgress (the call outside a group, or
// the group's end): NCCL enqueues the work later, from its own thread. An end event recorded
// then would land before the work, so such ops get no device time, only a completion marker
// once ncclCommGetAsyncError reports the launch done (NotePending, nccl_async.cpp).
#include "preload/cuda/cuda_hook.h"
#include "preload/nccl/nccl_comms.h"

namespace perftracker::preload {
namespace {

using Op = format::CollectiveOp;

RealSymbol g_real[] = {
    {"ncclAllReduce", Library::kNccl}, {"ncclAllGather", Library::kNccl},
    {"ncclReduceScatter", Library::kNccl}, {"ncclBroadcast", Library::kNccl},
    {"ncclBcast", Library::kNccl}, {"ncclReduce", Library::kNccl},
    {"ncclAlltoAll", Library::kNccl}, {"ncclGather", Library::kNccl},
    {"ncclScatter", Library::kNccl}, {"ncclSend", Library::kNccl},
    {"ncclRecv", Library::kNccl}, {"ncclGroupStart", Library::kNccl},
    {"ncclGroupEnd", Library::kNccl},
};
enum Real {
  kAllReduce, kAllGather, kReduceScatter, kBroadcast, kBcast, kReduce, kAlltoAll, kGather,
  kScatter, kSend, kRecv, kGroupStart, kGroupEnd
};

[[gnu::constructor]] void ResolveNccl() { ResolveAll(g_real, std::size(g_real)); }

// Ops issued inside a group wait here for their end events until the outermost ncclGroupEnd.
struct Deferred {
  int32_t timer;
  cudaStream_t stream;
  TimerTarget target;
  CommEntry* entry;
};
constexpr int kMaxDeferred = 256;
struct GroupState {
  int depth = 0;
  int deferred_count = 0;
  Deferred deferred[kMaxDeferred];
};
thread_local GroupState t_group;

// After the op's call returned `rc` (ncclSuccess or ncclInProgress).
void FinishTimer(int32_t timer, cudaStream_t stream, const TimerTarget& target, CommEntry* entry,
                 ncclResult_t rc) {
  if (t_group.depth == 0) {
    if (rc == ncclInProgress) {
      TimerCancel(timer);
      return NotePending(entry, target.slot, target.seq, stream);
    }
    if (timer != kNoTimer) TimerEnd(timer, stream, target);
    return;
  }
  // Inside a group the outermost ncclGroupEnd decides, also for ops without a timer (whose
  // completion marker may be needed).
  if (t_group.deferred_count == kMaxDeferred) return TimerCancel(timer);
  t_group.deferred[t_group.deferred_count++] = {timer, stream, target, entry};
}

// One collective or p2p call of `count` elements of `type`, forwarded by `call`.
template <typename Call>
ncclResult_t Collective(const void* caller, Op op, const char* name, size_t count,
                        ncclDataType_t type, int peer, ncclComm_t comm, cudaStream_t stream,
                        Call call) {
  HookScope scope;
  CommEntry* entry = FindComm(comm);
  if (entry == nullptr) return call();
  const Slot slot = EnsureIdentity(entry, comm, caller)
                        ? CollectiveSlot(entry, op, peer, count * DtypeBytes(type), name)
                        : kNoSlot;
  // Captured ops run at graph launch: no events then (a collective without device time is
  // covered by the completion of the next one on its communicator).
  const int32_t timer = slot != kNoSlot ? TimerStart(stream) : kNoTimer;
  const uint64_t start = NowNs();
  const ncclResult_t rc = call();
  const uint64_t end = NowNs();
  if (rc != ncclSuccess && rc != ncclInProgress) {
    TimerCancel(timer);
    return rc;
  }
  const uint64_t seq = entry->seq.fetch_add(1, std::memory_order_relaxed);
  if (slot == kNoSlot) return rc;
  RecordCollectiveLaunch(slot, seq, start, end - start);
  FinishTimer(timer, stream, {TimerTarget::Kind::kCollective, slot, seq}, entry, rc);
  return rc;
}

}  // namespace
}  // namespace perftracker::preload

using namespace perftracker::preload;  // NOLINT: the hooks are extern "C" at global scope

PERFTRACKER_HOOK ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count,
                                            ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                                            cudaStream_t stream) {
  const auto real = g_real[kAllReduce].Need<decltype(&ncclAllReduce)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(send, recv, count, type, op, comm, stream);
  return Collective(__builtin_return_address(0), Op::kAllReduce, "ncclAllReduce", count, type, -1,
                    comm, stream, [&] { return real(send, recv, count, type, op, comm, stream); });
}

// AllGather's count is what each rank sends; the bytes of the pattern are the same.
PERFTRACKER_HOOK ncclResult_t ncclAllGather(const void* send, void* recv, size_t count,
                                            ncclDataType_t type, ncclComm_t comm,
                                            cudaStream_t stream) {
  const auto real = g_real[kAllGather].Need<decltype(&ncclAllGather)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(send, recv, count, type, comm, stream);
  return Collective(__builtin_return_address(0), Op::kAllGather, "ncclAllGather", count, type, -1,
                    comm, stream, [&] { return real(send, recv, count, type, comm, stream); });
}

PERFTRACKER_HOOK ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count,
                                                ncclDataType_t type, ncclRedOp_t op,
                                                ncclComm_t comm, cudaStream_t stream) {
  const auto real =
      g_real[kReduceScatter].Need<decltype(&ncclReduceScatter)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(send, recv, count, type, op, comm, stream);
  return Collective(__builtin_return_address(0), Op::kReduceScatter, "ncclReduceScatter", count,
                    type, -1, comm, stream,
                    [&] { return real(send, recv, count, type, op, comm, stream); });
}

PERFTRACKER_HOOK ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count,
                                            ncclDataType_t type, int root, ncclComm_t comm,
                                            cudaStream_t stream) {
  const auto real = g_real[kBroadcast].Need<decltype(&ncclBroadcast)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(send, recv, count, type, root, comm, stream);
  return Collective(__builtin_return_address(0), Op::kBroadcast, "ncclBroadcast", count, type, root,
                    comm, stream,
                    [&] { return real(send, recv, count, type, root, comm, stream); });
}

PERFTRACKER_HOOK ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t type, int root,
                                        ncclComm_t comm, cudaStream_t stream) {
  const auto real = g_real[kBcast].Need<decltype(&ncclBcast)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(buff, count, type, root, comm, stream);
  return Collective(__builtin_return_address(0), Op::kBroadcast, "ncclBcast", count, type, root,
                    comm, stream, [&] { return real(buff, count, type, root, comm, stream); });
}

PERFTRACKER_HOOK ncclResult_t ncclReduce(const void* send, void* recv, size_t count,
                                         ncclDataType_t type, ncclRedOp_t op, int root,
                                         ncclComm_t comm, cudaStream_t stream) {
  const auto real = g_real[kReduce].Need<decltype(&ncclReduce)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(send, recv, count, type, op, root, comm, stream);
  return Collective(__builtin_return_address(0), Op::kReduce, "ncclReduce", count, type, root, comm,
                    stream, [&] { return real(send, recv, count, type, op, root, comm, stream); });
}

PERFTRACKER_HOOK ncclResult_t ncclAlltoAll(const void* send, void* recv, size_t count,
                                           ncclDataType_t type, ncclComm_t comm,
                                           cudaStream_t stream) {
  const auto real = g_real[kAlltoAll].Need<decltype(&ncclAlltoAll)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(send, recv, count, type, comm, stream);
  return Collective(__builtin_return_address(0), Op::kAllToAll, "ncclAlltoAll", count, type, -1,
                    comm, stream, [&] { return real(send, recv, count, type, comm, stream); });
}

PERFTRACKER_HOOK ncclResult_t ncclGather(const void* send, void* recv, size_t count,
                                         ncclDataType_t type, int root, ncclComm_t comm,
                                         cudaStream_t stream) {
  const auto real = g_real[kGather].Need<decltype(&ncclGather)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(send, recv, count, type, root, comm, stream);
  return Collective(__builtin_return_address(0), Op::kGather, "ncclGather", count, type, root, comm,
                    stream, [&] { return real(send, recv, count, type, root, comm, stream); });
}

PERFTRACKER_HOOK ncclResult_t ncclScatter(const void* send, void* recv, size_t count,
                                          ncclDataType_t type, int root, ncclComm_t comm,
                                          cudaStream_t stream) {
  const auto real = g_real[kScatter].Need<decltype(&ncclScatter)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(send, recv, count, type, root, comm, stream);
  return Collective(__builtin_return_address(0), Op::kScatter, "ncclScatter", count, type, root,
                    comm, stream,
                    [&] { return real(send, recv, count, type, root, comm, stream); });
}

PERFTRACKER_HOOK ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t type,
                                       int peer, ncclComm_t comm, cudaStream_t stream) {
  const auto real = g_real[kSend].Need<decltype(&ncclSend)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(send, count, type, peer, comm, stream);
  return Collective(__builtin_return_address(0), Op::kSend, "ncclSend", count, type, peer, comm,
                    stream, [&] { return real(send, count, type, peer, comm, stream); });
}

PERFTRACKER_HOOK ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t type, int peer,
                                       ncclComm_t comm, cudaStream_t stream) {
  const auto real = g_real[kRecv].Need<decltype(&ncclRecv)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  if (!NcclTracing()) return real(recv, count, type, peer, comm, stream);
  return Collective(__builtin_return_address(0), Op::kRecv, "ncclRecv", count, type, peer, comm,
                    stream, [&] { return real(recv, count, type, peer, comm, stream); });
}

PERFTRACKER_HOOK ncclResult_t ncclGroupStart() {
  const auto real =
      g_real[kGroupStart].Need<decltype(&ncclGroupStart)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  const ncclResult_t rc = real();
  if (rc == ncclSuccess && NcclTracing()) ++t_group.depth;
  return rc;
}

PERFTRACKER_HOOK ncclResult_t ncclGroupEnd() {
  const auto real = g_real[kGroupEnd].Need<decltype(&ncclGroupEnd)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  const ncclResult_t rc = real();
  if (t_group.depth == 0 || --t_group.depth > 0) return rc;
  // The outermost end launched the group's work: end events go after it, on each op's stream.
  // ncclInProgress: the work is not on the streams yet (a non-blocking communicator).
  HookScope scope;
  for (int i = 0; i < t_group.deferred_count; ++i) {
    const Deferred& d = t_group.deferred[i];
    if (rc == ncclSuccess && d.timer != kNoTimer) {
      TimerEnd(d.timer, d.stream, d.target);
      continue;
    }
    TimerCancel(d.timer);
    if (rc == ncclInProgress) NotePending(d.entry, d.target.slot, d.target.seq, d.stream);
  }
  t_group.deferred_count = 0;
  return rc;
}
