// Durations of device work: kernels, copies, memsets and collectives.
//
// Kernel: base + waves * block time, where a wave is as many blocks as the device holds at once
// (SMs * blocks per SM, from 2048 resident threads per SM), times the rank's compute slowdown
// and the kernel's own (SIMGPU_KERNEL_SLOWDOWN, by name).
// Copy: bytes / bandwidth (PCIe for host<->device, times the rank's PCIe slowdown; HBM read+write
// for device<->device). Collective: NCCL latency + bytes on the wire / slowest link (see below).
// Jitter multiplies a duration by 1 +- SIMGPU_JITTER, drawn from a hash of (seed, rank, stream,
// position), so a run is deterministic whatever the thread interleaving.
#ifndef SIMGPU_CORE_COST_MODEL_H_
#define SIMGPU_CORE_COST_MODEL_H_

#include <cstdint>

#include "core/work.h"

namespace simgpu {

int64_t KernelDurationNs(const KernelInfo& kernel);
int64_t CopyDurationNs(const CopyInfo& copy);
int64_t MemsetDurationNs(uint64_t bytes);

// 1 +- jitter for the item at `index` on stream `stream_id` of this process.
double JitterFactor(uint32_t stream_id, uint64_t index);

// Bandwidth (bytes per device ns) of the link between two global ranks: NVLink inside a node,
// the NIC between nodes, times every SIMGPU_LINK_FACTOR entry that matches the link.
double LinkBytesPerNs(int64_t rank_a, int64_t rank_b);

enum class CollKind : uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kSendRecv,
};

// Modelled duration of a collective on `nranks` ranks moving `bytes` (the full buffer: for
// all-gather and reduce-scatter, count per rank * nranks) when its slowest ring/tree link has
// `min_bytes_per_ns`. Ring all-reduce puts 2(n-1)/n * bytes on every link; all-gather and
// reduce-scatter (n-1)/n; broadcast/reduce and send/recv are pipelined: bytes once.
int64_t CollectiveNs(CollKind kind, uint64_t bytes, int nranks, double min_bytes_per_ns, bool tree);
// Its parts: bytes every link carries, and the fixed latency.
double WireBytes(CollKind kind, uint64_t bytes, int nranks, bool tree);
int64_t CollectiveLatencyNs(CollKind kind, int nranks, bool tree);

// 64-bit mix (splitmix64 finaliser), used for jitter and ids.
uint64_t Mix64(uint64_t x);

}  // namespace simgpu

#endif  // SIMGPU_CORE_COST_MODEL_H_
