#include "tools/synthetic/collectives.h"

#include <algorithm>

#include "tools/synthetic/synthetic.h"

namespace perftracker::synthetic {
namespace {

using format::CollectiveOp;

constexpr uint64_t kDpCommBase = 0x5eed0000;
constexpr uint64_t kPipeCommBase = 0x9900000000ull;
constexpr uint64_t kRingCommBase = 0x7700000000ull;
constexpr uint64_t kNetCommBase = 0x4e45540000ull;
constexpr double kPipeBytes = 16ull << 20;

// Everything one rank's collectives need to know about the iteration.
struct Context {
  const JobShape& shape;
  const WindowPhysics& physics;
  const std::vector<RankTimes>& all;
  int rank;
  int world;
  uint64_t window;
  std::mt19937_64& rng;
  // local[it][m]: rank m's critical time before waiting, in iteration it.
  const std::vector<std::vector<double>>& local;
};

double Noise(Context& c) {
  return std::max(0.5, std::normal_distribution<double>(1.0, c.shape.jitter)(c.rng));
}

void SetSeqs(const Context& c, format::CollectivePattern* p) {
  p->first_seq = c.window * static_cast<uint64_t>(c.shape.iterations);
  p->last_seq_launched = p->first_seq + static_cast<uint64_t>(c.shape.iterations) - 1;
  p->last_seq_completed = p->last_seq_launched;
}

const char* OpName(int i) {
  return i % 3 == 0 ? "ncclAllReduce" : i % 3 == 1 ? "ncclAllGather" : "ncclReduceScatter";
}

format::CollectivePattern DataParallelPattern(const Context& c, int i, int stage, int first,
                                              int size) {
  format::CollectivePattern p;
  p.comm_id = kDpCommBase + c.shape.seed + static_cast<uint64_t>(stage * 16 + i % 3);
  p.comm_size = static_cast<uint32_t>(size);
  p.comm_rank = static_cast<uint32_t>(c.rank - first);
  p.op = i % 3 == 0 ? CollectiveOp::kAllReduce
                    : (i % 3 == 1 ? CollectiveOp::kAllGather : CollectiveOp::kReduceScatter);
  p.name = OpName(i);
  p.bytes = static_cast<uint64_t>(CollectiveBytes(i, stage));
  return p;
}

// Gradient collectives of the rank's stage, launched by the host as soon as their bucket is
// ready (frac of the rank's own work) and run in order on one communication stream: a
// collective starts when it is launched and the previous one is done, and finishes when the
// last member has started it and the data has moved. Early arrivers spin inside it.
double AddDataParallel(Context& c, std::vector<format::CollectivePattern>* out) {
  const int size = StageSize(c.shape, c.world);
  const int stage = StageOf(c.shape, c.rank, c.world);
  const int first = stage * size;
  const double factor = c.physics.stage_link[static_cast<size_t>(stage)];
  const size_t base = out->size();
  for (int i = 0; i < c.shape.collectives; ++i) {
    out->push_back(DataParallelPattern(c, i, stage, first, size));
  }
  double device_sum = 0, transfer_sum = 0;
  for (int it = 0; it < c.shape.iterations; ++it) {
    const auto& local = c.local[static_cast<size_t>(it)];
    const double slowest =
        c.physics.stage_slowest[static_cast<size_t>(it)][static_cast<size_t>(stage)];
    double previous_done = 0;
    for (int i = 0; i < c.shape.collectives; ++i) {
      format::CollectivePattern& p = (*out)[base + static_cast<size_t>(i)];
      const double frac = 0.3 + 0.6 * i / std::max(1, c.shape.collectives);
      const double noise = NormalAt(c.shape.seed + c.shape.run_seed, 23, static_cast<uint64_t>(i),
                                    c.window, static_cast<uint64_t>(it));
      const double transfer = TransferNs(static_cast<double>(p.bytes)) * factor *
                              std::max(0.5, 1 + c.shape.jitter * noise);
      const double launch = frac * local[static_cast<size_t>(c.rank)];
      const double start = std::max(launch, previous_done);
      // A leftover rank of an uneven split is not in its stage's slowest: the collective still
      // cannot end before this rank launched it.
      const double done = std::max({frac * slowest, previous_done, launch}) + transfer;
      const auto d = static_cast<uint64_t>(done - start);
      previous_done = done;
      p.device.Add(d);
      p.launch_offset.Add(static_cast<uint64_t>(launch));
      p.device_ns += d;
      ++p.device_samples;
      ++p.count;
      p.host_ns += 3000;
      device_sum += static_cast<double>(d);
      transfer_sum += transfer;
    }
  }
  for (size_t k = base; k < out->size(); ++k) SetSeqs(c, &(*out)[k]);
  return transfer_sum > 0 ? device_sum / transfer_sum : 1;
}

void AddP2p(Context& c, uint64_t comm_base, CollectiveOp op, int peer, int calls, double bytes,
            double frac, double wait_ns, std::vector<format::CollectivePattern>* out) {
  format::CollectivePattern p;
  p.comm_id = comm_base + c.shape.seed + static_cast<uint64_t>(std::min(c.rank, peer));
  p.comm_size = 2;
  p.comm_rank = c.rank < peer ? 0 : 1;
  p.op = op;
  p.peer = peer;
  p.name = op == CollectiveOp::kSend ? "ncclSend" : "ncclRecv";
  p.bytes = static_cast<uint64_t>(bytes);
  const double factor = LinkFactor(c.shape, c.rank, peer, c.window);
  for (int it = 0; it < c.shape.iterations; ++it) {
    const double local = c.local[static_cast<size_t>(it)][static_cast<size_t>(c.rank)];
    for (int k = 0; k < calls; ++k) {
      const double transfer = TransferNs(bytes) * factor * Noise(c);
      const auto d = static_cast<uint64_t>(transfer + wait_ns);
      p.device.Add(d);
      p.launch_offset.Add(static_cast<uint64_t>(local * (frac + 0.02 * k)));
      p.device_ns += d;
      ++p.device_samples;
      ++p.count;
      p.host_ns += 2000;
    }
  }
  SetSeqs(c, &p);
  out->push_back(std::move(p));
}

// Pipeline stages hand activations forward and gradients back; a faster stage waits in its
// receives for a slower neighbour (the pipeline bubble).
void AddPipeline(Context& c, std::vector<format::CollectivePattern>* out) {
  const int stages = std::max(1, c.shape.pipeline_stages);
  if (stages < 2) return;
  const int size = StageSize(c.shape, c.world);
  const int stage = StageOf(c.shape, c.rank, c.world);
  const auto wait = [&](int peer) {
    const double gap =
        c.all[static_cast<size_t>(peer)].local - c.all[static_cast<size_t>(c.rank)].local;
    return std::max(0.0, gap) / kPipelineMicroBatches;
  };
  const int n = kPipelineMicroBatches;
  if (stage + 1 < stages) {
    const int next = c.rank + size;
    AddP2p(c, kPipeCommBase, CollectiveOp::kSend, next, n, kPipeBytes, 0.2, 0, out);
    AddP2p(c, kPipeCommBase, CollectiveOp::kRecv, next, n, kPipeBytes, 0.6, wait(next), out);
  }
  if (stage > 0) {
    const int prev = c.rank - size;
    AddP2p(c, kPipeCommBase, CollectiveOp::kRecv, prev, n, kPipeBytes, 0.1, wait(prev), out);
    AddP2p(c, kPipeCommBase, CollectiveOp::kSend, prev, n, kPipeBytes, 0.7, 0, out);
  }
}

// A ring exchange (context parallelism): both ends of a transfer wait for it.
void AddRing(Context& c, std::vector<format::CollectivePattern>* out) {
  if (!c.shape.p2p_ring || c.world < 2) return;
  const int next = (c.rank + 1) % c.world;
  const int prev = (c.rank + c.world - 1) % c.world;
  const double bytes = static_cast<double>(kRingBytes);
  AddP2p(c, kRingCommBase, CollectiveOp::kSend, next, kRingCallsPerIteration, bytes, 0.5, 0, out);
  AddP2p(c, kRingCommBase, CollectiveOp::kRecv, prev, kRingCallsPerIteration, bytes, 0.5, 0, out);
}

int NodeOfRank(const JobShape& s, int rank) { return rank / std::max(1, s.ranks_per_node); }

// What the NCCL profiler plugin records for the data-parallel ring (as NCCL's proxy sees it):
// each hop that crosses nodes, once per collective, sender side timed on the wire alone (its
// own link's speed), receiver side waiting for the whole ring (the slowest hop).
void AddNetLinks(Context& c, std::vector<format::CollectivePattern>* out) {
  if (!c.shape.net_links) return;
  const int size = StageSize(c.shape, c.world);
  const int stage = StageOf(c.shape, c.rank, c.world);
  const int first = stage * size;
  if (size < 2) return;
  const int me = c.rank - first;
  const int next = (me + 1) % size, prev = (me + size - 1) % size;
  const double ring = c.physics.stage_link[static_cast<size_t>(stage)];
  const auto add = [&](CollectiveOp op, int peer, double factor) {
    if (NodeOfRank(c.shape, c.rank) == NodeOfRank(c.shape, first + peer)) return;
    for (int i = 0; i < c.shape.collectives; ++i) {
      format::CollectivePattern p;
      p.comm_id = kNetCommBase + c.shape.seed + static_cast<uint64_t>(stage);
      p.comm_size = static_cast<uint32_t>(size);
      p.comm_rank = static_cast<uint32_t>(me);
      p.op = op;
      p.peer = peer;
      p.name = op == CollectiveOp::kNetSend ? "net_send" : "net_recv";
      p.bytes = static_cast<uint64_t>(CollectiveBytes(i, stage));
      for (int it = 0; it < c.shape.iterations; ++it) {
        const auto d =
            static_cast<uint64_t>(TransferNs(static_cast<double>(p.bytes)) * factor * Noise(c));
        p.device.Add(d);
        p.launch_offset.Add(0);
        p.device_ns += d;
        ++p.device_samples;
        ++p.count;
      }
      SetSeqs(c, &p);
      out->push_back(std::move(p));
    }
  };
  add(CollectiveOp::kNetSend, next, LinkFactor(c.shape, c.rank, first + next, c.window));
  add(CollectiveOp::kNetRecv, prev, ring);
}

}  // namespace

CollectiveResult MakeCollectives(const JobShape& shape, const WindowPhysics& physics, int rank,
                                 std::mt19937_64& rng) {
  Context c{shape,
            physics,
            physics.all,
            rank,
            static_cast<int>(physics.all.size()),
            physics.window_seq,
            rng,
            physics.local};
  CollectiveResult result;
  result.wait_ratio = AddDataParallel(c, &result.patterns);
  AddPipeline(c, &result.patterns);
  AddRing(c, &result.patterns);
  AddNetLinks(c, &result.patterns);
  return result;
}

format::LiveState MakeLiveState(const JobShape& job, int rank, int world_size,
                                uint64_t windows_written) {
  const JobShape shape = Normalized(job);
  format::LiveState live;
  live.iteration = windows_written * static_cast<uint64_t>(shape.iterations);
  live.windows_written = windows_written;
  live.update_mono_ns = 1'000'000'000ull + live.iteration * shape.iteration_ns + 200'000'000'000ull;
  live.update_real_ns = 1'790'000'000'000'000'000ull + live.update_mono_ns;
  const int size = StageSize(shape, world_size);
  const int stage = StageOf(shape, rank, world_size);
  const bool active = FaultActive(shape, windows_written);
  const bool hang = active && shape.fault == Fault::kHang;
  const bool comm_hang = active && shape.fault == Fault::kCommHang;
  const int fault_stage = StageOf(shape, std::max(0, shape.fault_rank), world_size);
  const uint64_t seq = live.iteration;  // the collective after the last window
  for (int i = 0; i < 3; ++i) {
    format::CommProgress p;
    p.comm_id = kDpCommBase + shape.seed + static_cast<uint64_t>(stage * 16 + i);
    p.comm_size = static_cast<uint32_t>(size);
    p.comm_rank = static_cast<uint32_t>(rank - stage * size);
    p.last_seq_launched = seq - 1;
    p.last_seq_completed = seq - 1;
    const bool stuck_comm = i == 0 && stage == fault_stage && (hang || comm_hang);
    if (stuck_comm && !(hang && rank == shape.fault_rank)) {
      p.last_seq_launched = seq;
      p.inflight_op = static_cast<uint8_t>(format::CollectiveOp::kAllReduce);
      p.inflight_since_mono_ns = live.update_mono_ns - 120'000'000'000ull;
    }
    live.comms.push_back(p);
  }
  if (shape.net_links) {  // the plugin's communicators (NCCL's commHash), for peer placement
    format::CommProgress p;
    p.comm_id = kNetCommBase + shape.seed + static_cast<uint64_t>(stage);
    p.comm_size = static_cast<uint32_t>(size);
    p.comm_rank = static_cast<uint32_t>(rank - stage * size);
    p.last_seq_launched = p.last_seq_completed = seq - 1;
    live.comms.push_back(p);
  }
  const bool stuck_in_host = hang && rank == shape.fault_rank;
  live.python_stack = {"train/loop.py:12:main", "train/loop.py:40:train_step",
                       stuck_in_host ? "train/data.py:88:collate"
                                     : "torch/distributed/distributed_c10d.py:2050:all_reduce"};
  if (!hang && !comm_hang) live.python_stack.pop_back();
  return live;
}

}  // namespace perftracker::synthetic
