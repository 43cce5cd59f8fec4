// The profiler plugin side of the NCCL stand-in, as NCCL 2.28 does it: NCCL_PROFILER_PLUGIN
// names the library ("none" disables it; unset: libnccl-profiler.so; a name that does not load
// as given is tried as libnccl-profiler-<name>.so), dlopen + dlsym("ncclProfiler_v5") (older
// struct versions are not offered), init per communicator with (commHash, nNodes, nranks,
// rank) and the plugin's activation mask, finalize at destroy.
//
// Events: like NCCL, ProxyOp/ProxyStep events exist only for network connections (ring
// neighbours or p2p peers on another node); intra-node links have none. Their timing comes from
// the ring/p2p model: a step's data is on the wire (SendWait) for step bytes / link bandwidth,
// so the slowest link's sender transmits the whole time while the others wait for their GPU
// (SendGPUWait, fed by the slow hop upstream). A proxy thread per process delivers each event
// at its device time. Steps are at most 8 per op (coarser than NCCL's 512 KiB) to keep the
// simulation cheap. Coll/P2p/Group events are not produced.
#ifndef SIMGPU_NCCL_NCCL_PROFILER_H_
#define SIMGPU_NCCL_NCCL_PROFILER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace simgpu {
class ShmGroup;
}

namespace simgpu::nccl {

struct CommProfiler {
  void* context = nullptr;
  int mask = 0;
  int rank = 0;
  std::atomic<int64_t> last_event_ns{0};  // finalize comes after the last scheduled event
};

// One network connection's share of an op, in device ns.
struct NetOp {
  int peer = -1;  // rank in the communicator
  bool is_send = false;
  double wire_bytes = 0;
  double bytes_per_ns = 0;  // this link's bandwidth
  int64_t arrive_ns = 0;    // this rank reached the op
  int64_t start_ns = 0;     // data starts to flow (all ranks there, latency paid)
  int64_t end_ns = 0;
};

// Null when no plugin is loaded or it declined the communicator.
// Scheduled events hold the CommProfiler, so it outlives the communicator until they ran.
std::shared_ptr<CommProfiler> ProfilerInitComm(const ShmGroup& group, uint64_t comm_hash);
void ProfilerFinalizeComm(const std::shared_ptr<CommProfiler>& p);
void ProfilerNetOps(const std::shared_ptr<CommProfiler>& p, const std::vector<NetOp>& ops);

}  // namespace simgpu::nccl

#endif  // SIMGPU_NCCL_NCCL_PROFILER_H_
