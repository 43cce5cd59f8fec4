// Collectives, point-to-point and groups. As with real NCCL the call only enqueues: the op runs
// on the stream (see nccl_exec.cpp). Inside ncclGroupStart/End ops are collected per host thread
// and launched at the outermost ncclGroupEnd, one fused work item per stream. A non-blocking
// communicator's launch (outside a group, or its group's end) returns ncclInProgress and is
// enqueued a little later by a helper thread (Launch).
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "core/activity.h"
#include "core/config.h"
#include "core/device.h"
#include "core/registry.h"
#include "nccl/nccl_alias.h"
#include "nccl/nccl_state.h"

namespace simgpu::nccl {
namespace {

thread_local int t_group_depth = 0;
thread_local std::vector<Op> t_pending;

const char* TypeName(ncclDataType_t type) {
  switch (type) {
    case ncclInt8: return "i8";
    case ncclUint8: return "u8";
    case ncclInt32: return "i32";
    case ncclUint32: return "u32";
    case ncclInt64: return "i64";
    case ncclUint64: return "u64";
    case ncclFloat16: return "f16";
    case ncclFloat32: return "f32";
    case ncclFloat64: return "f64";
    case ncclBfloat16: return "bf16";
    case ncclFloat8e4m3: return "f8e4m3";
    case ncclFloat8e5m2: return "f8e5m2";
    default: return "x";
  }
}

// NCCL's kernel names: collective, reduction, data type (where it matters), algorithm, protocol.
std::string KernelNameFor(const Op& op) {
  static const char* const kNames[] = {"AllReduce_Sum_", "AllGather", "ReduceScatter_Sum_",
                                       "Broadcast",      "Reduce_Sum_", "SendRecv"};
  std::string name = "ncclDevKernel_";
  name += kNames[static_cast<int>(op.kind)];
  if (op.kind == CollKind::kSendRecv) return name;
  if (name.back() == '_') name += TypeName(op.type);
  const bool tree = GetConfig().nccl_algo == "tree" && op.kind == CollKind::kAllReduce;
  name += tree ? "_TREE_LL" : "_RING_LL";
  return name;
}

// SIMGPU_HANG: this rank stops for good before issuing the chosen op, as a rank stuck in
// Python or a dead data loader would. The other ranks then wait inside that collective.
void MaybeHang(int64_t op_number) {
  const OpFault& hang = GetConfig().hang_fault;
  if (hang.rank != ProcessRank() || hang.op != op_number) return;
  std::fprintf(stderr, "simgpu: SIMGPU_HANG: rank %ld stops before NCCL op %ld\n",
               static_cast<long>(hang.rank), static_cast<long>(op_number));
  for (;;) pause();
}

ncclResult_t LaunchNow(std::vector<Op> ops) {
  // One fused kernel per stream, in issue order.
  ncclResult_t result = ncclSuccess;
  while (!ops.empty()) {
    cudaStream_t stream = ops.front().stream;
    std::vector<Op> batch;
    std::vector<Op> rest;
    for (Op& op : ops) (op.stream == stream ? batch : rest).push_back(std::move(op));
    const std::string name = KernelNameFor(batch.front());
    const ncclResult_t rc = LaunchOnDevice(std::move(batch), name.c_str());
    if (rc != ncclSuccess) result = rc;
    ops = std::move(rest);
  }
  return result;
}

// How long a non-blocking communicator's launch takes to reach its stream, in wall time: long
// enough that whatever the caller records on the stream right after the call lands before it.
constexpr auto kAsyncLaunchDelay = std::chrono::milliseconds(2);

// Launches `ops`. With a non-blocking communicator among them, NCCL hands the launch to a
// helper thread and returns ncclInProgress: the work reaches the streams later, and
// ncclCommGetAsyncError reports ncclInProgress on those communicators until it has.
ncclResult_t Launch(std::vector<Op> ops) {
  std::vector<std::shared_ptr<CommShared>> async;
  for (const Op& op : ops) {
    if (!op.comm->blocking &&
        std::find(async.begin(), async.end(), op.comm) == async.end()) {
      async.push_back(op.comm);
    }
  }
  if (async.empty()) return LaunchNow(std::move(ops));
  for (const auto& comm : async) comm->async_error.store(ncclInProgress, std::memory_order_release);
  const int device = Device::CurrentOrdinal();
  std::thread([ops = std::move(ops), async = std::move(async), device]() mutable {
    std::this_thread::sleep_for(kAsyncLaunchDelay);
    Device::SetCurrentOrdinal(device);
    const ncclResult_t rc = LaunchNow(std::move(ops));
    for (const auto& comm : async) comm->async_error.store(rc, std::memory_order_release);
  }).detach();
  return ncclInProgress;
}

ncclResult_t Collective(CollKind kind, uint64_t count, ncclDataType_t type, ncclComm_t comm,
                        cudaStream_t stream, bool per_rank_count) {
  if (!comm || !Ready(comm)) return ncclInvalidArgument;
  size_t size = TypeBytes(type);
  if (size == 0) return ncclInvalidArgument;
  Op op;
  op.kind = kind;
  op.comm = comm->shared;
  op.stream = stream;
  op.bytes = count * size * (per_rank_count ? comm->shared->group->nranks() : 1);
  op.type = type;
  op.seq = comm->next_collective++;
  return Issue(std::move(op));
}

ncclResult_t PointToPoint(bool is_send, size_t count, ncclDataType_t type, int peer,
                          ncclComm_t comm, cudaStream_t stream) {
  if (!comm || !Ready(comm)) return ncclInvalidArgument;
  size_t size = TypeBytes(type);
  if (size == 0 || peer < 0 || peer >= comm->shared->group->nranks()) {
    return ncclInvalidArgument;
  }
  Op op;
  op.kind = CollKind::kSendRecv;
  op.comm = comm->shared;
  op.stream = stream;
  op.bytes = count * size;
  op.peer = peer;
  op.is_send = is_send;
  op.seq = is_send ? comm->sends_to[peer]++ : comm->recvs_from[peer]++;
  return Issue(std::move(op));
}

bool ValidRoot(int root, ncclComm_t comm) {
  return comm && Ready(comm) && root >= 0 && root < comm->shared->group->nranks();
}

}  // namespace

size_t TypeBytes(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

ncclResult_t Issue(Op op) {
  op.op_number = NextOpNumber();
  MaybeHang(op.op_number);
  if (t_group_depth > 0) {
    t_pending.push_back(std::move(op));
    return ncclSuccess;
  }
  std::vector<Op> ops;
  ops.push_back(std::move(op));
  return Launch(std::move(ops));
}

}  // namespace simgpu::nccl

namespace sn = simgpu::nccl;
using simgpu::CollKind;

extern "C" {

ncclResult_t pncclAllReduce(const void*, void*, size_t count, ncclDataType_t type, ncclRedOp_t,
                            ncclComm_t comm, cudaStream_t stream) {
  return sn::Collective(CollKind::kAllReduce, count, type, comm, stream, false);
}

ncclResult_t pncclAllGather(const void*, void*, size_t send_count, ncclDataType_t type,
                            ncclComm_t comm, cudaStream_t stream) {
  return sn::Collective(CollKind::kAllGather, send_count, type, comm, stream, true);
}

ncclResult_t pncclReduceScatter(const void*, void*, size_t recv_count, ncclDataType_t type,
                                ncclRedOp_t, ncclComm_t comm, cudaStream_t stream) {
  return sn::Collective(CollKind::kReduceScatter, recv_count, type, comm, stream, true);
}

ncclResult_t pncclBroadcast(const void*, void*, size_t count, ncclDataType_t type, int root,
                            ncclComm_t comm, cudaStream_t stream) {
  if (!sn::ValidRoot(root, comm)) return ncclInvalidArgument;
  return sn::Collective(CollKind::kBroadcast, count, type, comm, stream, false);
}

ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                        cudaStream_t stream) {
  if (!sn::ValidRoot(root, comm)) return ncclInvalidArgument;
  (void)buff;
  return sn::Collective(CollKind::kBroadcast, count, type, comm, stream, false);
}

ncclResult_t pncclReduce(const void*, void*, size_t count, ncclDataType_t type, ncclRedOp_t,
                         int root, ncclComm_t comm, cudaStream_t stream) {
  if (!sn::ValidRoot(root, comm)) return ncclInvalidArgument;
  return sn::Collective(CollKind::kReduce, count, type, comm, stream, false);
}

ncclResult_t pncclSend(const void*, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                       cudaStream_t stream) {
  return sn::PointToPoint(true, count, type, peer, comm, stream);
}

ncclResult_t pncclRecv(void*, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                       cudaStream_t stream) {
  return sn::PointToPoint(false, count, type, peer, comm, stream);
}

ncclResult_t pncclGroupStart() {
  ++sn::t_group_depth;
  return ncclSuccess;
}

ncclResult_t pncclGroupEnd() {
  if (sn::t_group_depth == 0) return ncclInvalidUsage;
  if (--sn::t_group_depth == 0 && !sn::t_pending.empty()) {
    std::vector<sn::Op> ops = std::move(sn::t_pending);
    sn::t_pending.clear();
    return sn::Launch(std::move(ops));
  }
  return ncclSuccess;
}

}  // extern "C"

SIMGPU_NCCL_WEAK_ALIAS(ncclAllReduce)
SIMGPU_NCCL_WEAK_ALIAS(ncclAllGather)
SIMGPU_NCCL_WEAK_ALIAS(ncclReduceScatter)
SIMGPU_NCCL_WEAK_ALIAS(ncclBroadcast)
SIMGPU_NCCL_WEAK_ALIAS(ncclBcast)
SIMGPU_NCCL_WEAK_ALIAS(ncclReduce)
SIMGPU_NCCL_WEAK_ALIAS(ncclSend)
SIMGPU_NCCL_WEAK_ALIAS(ncclRecv)
SIMGPU_NCCL_WEAK_ALIAS(ncclGroupStart)
SIMGPU_NCCL_WEAK_ALIAS(ncclGroupEnd)
