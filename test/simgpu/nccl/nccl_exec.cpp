// What a NCCL op does once the simulated device reaches it: publish this rank's arrival in the
// communicator's shared memory, wait for the other ranks, and end at
//   max(arrivals) + modelled duration (+ any injected stall),
// a value every rank computes identically from the same published numbers.
#include <algorithm>

#include "core/clock.h"
#include "core/config.h"
#include "nccl/nccl_state.h"

namespace simgpu::nccl {
namespace {

int64_t SaturatingAdd(int64_t a, int64_t b) {
  return (a >= kNeverNs || b >= kNeverNs || a + b >= kNeverNs) ? kNeverNs : a + b;
}

int64_t StallFor(const Op& op) {
  const OpFault& stall = GetConfig().stall_fault;
  if (stall.rank != ProcessRank() || stall.op != op.op_number) return 0;
  return stall.stall_ns < 0 ? kNeverNs : stall.stall_ns;
}

Arrival MakeArrival(const Op& op, int64_t ready_ns) {
  const ShmGroup& g = *op.comm->group;
  int n = g.nranks();
  int r = g.rank();
  int64_t me = g.GlobalRank(r);
  Arrival a;
  a.arrival_ns = ready_ns;
  a.extra_ns = StallFor(op);
  a.ring_bytes_per_ns = n > 1 ? LinkBytesPerNs(me, g.GlobalRank((r + 1) % n)) : 1e30;
  a.tree_bytes_per_ns = r > 0 ? LinkBytesPerNs(me, g.GlobalRank((r - 1) / 2)) : 0;
  return a;
}

bool CrossesNodes(const ShmGroup& g, int a, int b) {
  return NodeOf(g.GlobalRank(a)) != NodeOf(g.GlobalRank(b));
}

// The network hops of this rank in a ring collective: the send to the next rank and the
// receive from the previous one, when they are on another node (NCCL has proxy events for
// network transport only).
std::vector<NetOp> RingNetOps(const Op& op, int64_t ready_ns, int64_t last, int64_t duration) {
  const ShmGroup& g = *op.comm->group;
  const int n = g.nranks();
  const int r = g.rank();
  std::vector<NetOp> out;
  if (n < 2 || duration >= kNeverNs) return out;
  const int64_t start = last + CollectiveLatencyNs(op.kind, n, false);
  const double wire = WireBytes(op.kind, op.bytes, n, false);
  const int next = (r + 1) % n;
  const int prev = (r + n - 1) % n;
  if (CrossesNodes(g, r, next)) {
    out.push_back(NetOp{next, true, wire, LinkBytesPerNs(g.GlobalRank(r), g.GlobalRank(next)),
                        ready_ns, start, last + duration});
  }
  if (CrossesNodes(g, prev, r)) {
    out.push_back(NetOp{prev, false, wire, LinkBytesPerNs(g.GlobalRank(prev), g.GlobalRank(r)),
                        ready_ns, start, last + duration});
  }
  return out;
}

int64_t RunCollective(const Op& op, int64_t ready_ns) {
  ShmGroup& g = *op.comm->group;
  std::vector<Arrival> all;
  if (g.Collective(op.seq, MakeArrival(op, ready_ns), &all) != RendezvousStatus::kOk) {
    op.comm->async_error.store(ncclSystemError);
    return ready_ns;  // aborted: the op completes as failed
  }
  int64_t last = 0;
  int64_t extra = 0;
  double ring = 1e30;
  double tree = 1e30;
  for (size_t r = 0; r < all.size(); ++r) {
    last = std::max(last, all[r].arrival_ns);
    extra = std::max(extra, all[r].extra_ns);
    ring = std::min(ring, all[r].ring_bytes_per_ns);
    if (r > 0) tree = std::min(tree, all[r].tree_bytes_per_ns);
  }
  bool use_tree = GetConfig().nccl_algo == "tree" && op.kind == CollKind::kAllReduce;
  int64_t duration = CollectiveNs(op.kind, op.bytes, g.nranks(), use_tree ? tree : ring, use_tree);
  if (op.comm->profiler && !use_tree) {
    ProfilerNetOps(op.comm->profiler, RingNetOps(op, ready_ns, last, duration));
  }
  return SaturatingAdd(SaturatingAdd(last, duration), extra);
}

// Posts every send/recv of a group before waiting for any, so that paired transfers (rank A
// sends to B and receives from B in one group) never deadlock.
int64_t RunP2p(const std::vector<const Op*>& ops, int64_t ready_ns) {
  std::vector<P2pSide> mine(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = *ops[i];
    ShmGroup& g = *op.comm->group;
    mine[i] = P2pSide{ready_ns + StallFor(op), op.bytes,
                      LinkBytesPerNs(g.GlobalRank(g.rank()), g.GlobalRank(op.peer))};
    if (op.is_send) {
      g.PostSend(op.peer, op.seq, mine[i]);
    } else {
      g.PostRecv(op.peer, op.seq, mine[i]);
    }
  }
  int64_t end = ready_ns;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = *ops[i];
    ShmGroup& g = *op.comm->group;
    P2pSide theirs;
    RendezvousStatus status = op.is_send ? g.WaitRecvSide(op.peer, op.seq, &theirs)
                                         : g.WaitSendSide(op.peer, op.seq, &theirs);
    if (status != RendezvousStatus::kOk) {
      op.comm->async_error.store(ncclSystemError);
      continue;
    }
    uint64_t bytes = op.is_send ? op.bytes : theirs.bytes;
    double bw = std::min(mine[i].bytes_per_ns, theirs.bytes_per_ns);
    int64_t start = std::max(mine[i].arrival_ns, theirs.arrival_ns);
    const int64_t done =
        SaturatingAdd(start, CollectiveNs(CollKind::kSendRecv, bytes, 2, bw, false));
    end = std::max(end, done);
    if (op.comm->profiler && CrossesNodes(g, g.rank(), op.peer)) {
      const int64_t flow = start + CollectiveLatencyNs(CollKind::kSendRecv, 2, false);
      ProfilerNetOps(op.comm->profiler, {NetOp{op.peer, op.is_send, static_cast<double>(bytes), bw,
                                               mine[i].arrival_ns, flow, done}});
    }
  }
  return end;
}

}  // namespace

int64_t RunOps(const std::vector<Op>& ops, int64_t ready_ns) {
  int64_t t = ready_ns;
  std::vector<const Op*> p2p;
  for (const Op& op : ops) {
    if (op.kind == CollKind::kSendRecv) {
      p2p.push_back(&op);
    } else {
      t = RunCollective(op, t);  // collectives of a group run one after another
    }
  }
  return p2p.empty() ? t : RunP2p(p2p, t);
}

}  // namespace simgpu::nccl
