// Internal state of the NCCL stand-in.
//
// A communicator is a ShmGroup (the cross-process wire) plus host-side counters. Work enqueued
// on a stream holds a CommShared, so ncclCommDestroy/Abort never free state a device thread is
// still using.
#ifndef SIMGPU_NCCL_NCCL_STATE_H_
#define SIMGPU_NCCL_NCCL_STATE_H_

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/cost_model.h"
#include "core/rendezvous.h"
#include "nccl/nccl_profiler.h"

namespace simgpu::nccl {

struct CommShared {
  std::shared_ptr<ShmGroup> group;
  int device = 0;  // the CUDA device current when the communicator was created
  // ncclInProgress while a non-blocking call's work is still being set up (init, or a launch
  // not yet enqueued on its stream), then its result, as ncclCommGetAsyncError reports it.
  std::atomic<int> async_error{ncclSuccess};
  bool blocking = true;  // ncclConfig_t.blocking: 0 makes init and launches asynchronous
  std::shared_ptr<CommProfiler> profiler;  // null: no profiler plugin for this communicator
};

// One NCCL operation as issued by the host: everything its device-side execution needs.
struct Op {
  CollKind kind = CollKind::kAllReduce;
  std::shared_ptr<CommShared> comm;
  cudaStream_t stream = nullptr;
  uint64_t bytes = 0;  // the full buffer (see CollectiveNs)
  ncclDataType_t type = ncclFloat32;  // names the kernel, as NCCL's per-type kernels
  int peer = -1;       // send/recv only
  bool is_send = false;
  uint64_t seq = 0;       // collective number on the communicator, or p2p message index
  int64_t op_number = 0;  // process-wide NCCL op number (the fault knobs count these)
};

}  // namespace simgpu::nccl

// The communicator handle type nccl.h declares as opaque.
struct ncclComm {
  std::shared_ptr<simgpu::nccl::CommShared> shared;
  int device = 0;
  uint8_t key[16] = {};
  uint64_t next_collective = 0;
  uint64_t split_generation = 0;
  std::vector<uint64_t> sends_to;  // message counters per peer
  std::vector<uint64_t> recvs_from;
};

namespace simgpu::nccl {

// Joins the communicator `key` as `rank` of `nranks` (blocks until all ranks joined). A
// non-blocking one (`blocking` false) is handed out at once, joins on a helper thread and
// returns ncclInProgress, as NCCL does.
ncclResult_t InitComm(ncclComm_t* out, int nranks, const uint8_t key[16], int rank,
                      bool blocking = true);

// False while a non-blocking call on `comm` has not finished (ncclCommGetAsyncError reports
// ncclInProgress): NCCL refuses to use the communicator then (ncclInvalidArgument).
bool Ready(const ncclComm* comm);

// Issues an op now, or queues it until the outermost ncclGroupEnd.
ncclResult_t Issue(Op op);

// Device-side execution of a batch of ops that reached the head of a stream at `ready_ns`;
// returns the device time at which the last of them completes.
int64_t RunOps(const std::vector<Op>& ops, int64_t ready_ns);

size_t TypeBytes(ncclDataType_t type);

// Launches a fused batch of ops (one stream) as the kernel `kernel_name`, through the driver's
// cuLaunchKernel as NCCL >= 2.22 does (nccl_launch.cpp). ncclUnhandledCudaError when the
// driver cannot be loaded or refuses the launch.
ncclResult_t LaunchOnDevice(std::vector<Op> batch, const char* kernel_name);

}  // namespace simgpu::nccl

#endif  // SIMGPU_NCCL_NCCL_STATE_H_
