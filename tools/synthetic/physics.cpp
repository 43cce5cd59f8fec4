#include "tools/synthetic/physics.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace perftracker::synthetic {
namespace {

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

bool Hits(const JobShape& s, int rank) { return s.fault_rank < 0 || s.fault_rank == rank; }

int NodeOf(const JobShape& s, int rank) { return rank / std::max(1, s.ranks_per_node); }

}  // namespace

constexpr std::array<std::pair<Fault, std::string_view>, 11> kFaultNames = {{
    {Fault::kNone, "none"},
    {Fault::kSlowGpu, "slow-gpu"},
    {Fault::kSlowLink, "slow-link"},
    {Fault::kSlowNodeLinks, "slow-node-links"},
    {Fault::kSlowPcie, "slow-pcie"},
    {Fault::kSlowDataLoader, "slow-dataloader"},
    {Fault::kHostSync, "host-sync"},
    {Fault::kGc, "gc"},
    {Fault::kCpuContention, "cpu-contention"},
    {Fault::kHang, "hang"},
    {Fault::kCommHang, "comm-hang"},
}};

std::string_view FaultName(Fault fault) {
  for (const auto& [f, name] : kFaultNames) {
    if (f == fault) return name;
  }
  return "none";
}

std::optional<Fault> ParseFault(std::string_view name) {
  for (const auto& [f, n] : kFaultNames) {
    if (n == name) return f;
  }
  return std::nullopt;
}

JobShape Normalized(const JobShape& shape) {
  JobShape s = shape;
  if (s.fault == Fault::kNone && s.slow_rank >= 0) {
    s.fault = Fault::kSlowGpu;
    s.fault_rank = s.slow_rank;
    s.fault_factor = s.slow_factor;
  }
  return s;
}

int StageSize(const JobShape& shape, int world_size) {
  return std::max(1, world_size / std::max(1, shape.pipeline_stages));
}

int StageOf(const JobShape& shape, int rank, int world_size) {
  return std::min(std::max(1, shape.pipeline_stages) - 1, rank / StageSize(shape, world_size));
}

double StageWork(int stage) { return 1.0 + 0.35 * stage; }

bool FaultActive(const JobShape& shape, uint64_t window_seq) {
  return shape.fault != Fault::kNone && window_seq >= shape.fault_from_window;
}

RankTimes TimesOf(const JobShape& shape, int rank, int world_size, uint64_t window_seq) {
  const double t = static_cast<double>(shape.iteration_ns);
  const double work = StageWork(StageOf(shape, rank, world_size));
  RankTimes r;
  const int culprit = shape.fault_moves_to >= 0 && window_seq >= shape.fault_move_window
                          ? shape.fault_moves_to
                          : shape.fault_rank;
  if (FaultActive(shape, window_seq)) {
    const double f = shape.fault_factor;
    switch (shape.fault) {
      case Fault::kSlowGpu:
        r.gpu_factor = culprit == rank ? f : 1;
        break;
      case Fault::kSlowPcie:
        r.pcie_factor = culprit == rank ? f : 1;
        break;
      case Fault::kSlowDataLoader:
        r.dl_factor = Hits(shape, rank) ? f : 1;
        break;
      case Fault::kHostSync:
        r.sync_factor = Hits(shape, rank) ? f : 1;
        break;
      case Fault::kGc:
        r.gc_factor = Hits(shape, rank) ? f : 1;
        break;
      case Fault::kCpuContention:
        r.cpu_factor = culprit == rank ? f : 1;
        break;
      default:
        break;
    }
  }
  r.compute = kComputeShare * t * work * r.gpu_factor;
  r.python = kPythonShare * t * work * r.cpu_factor;
  r.api = kApiShare * t * work * r.cpu_factor;
  r.dataloader = kDataLoaderShare * t * r.dl_factor;
  r.gc = kGcShare * t * r.gc_factor;
  r.sync = kSyncShare * t * r.sync_factor;
  r.memcpy = kMemcpyShare * t * work * r.pcie_factor;
  // A contended CPU launches late: half of the extra host time starves the GPU.
  const double starvation = 0.5 * (kPythonShare + kApiShare) * t * work * (r.cpu_factor - 1);
  r.local = r.dataloader + r.gc + r.sync + r.memcpy + r.compute + starvation;
  return r;
}

std::vector<RankTimes> AllTimes(const JobShape& shape, int world_size, uint64_t window_seq) {
  std::vector<RankTimes> all;
  all.reserve(static_cast<size_t>(world_size));
  for (int r = 0; r < world_size; ++r) all.push_back(TimesOf(shape, r, world_size, window_seq));
  return all;
}

double LinkFactor(const JobShape& shape, int a, int b, uint64_t window_seq) {
  if (!FaultActive(shape, window_seq) || a == b) return 1;
  if (shape.fault == Fault::kSlowLink) {
    const bool hit = (a == shape.fault_rank && b == shape.fault_peer) ||
                     (b == shape.fault_rank && a == shape.fault_peer);
    return hit ? shape.fault_factor : 1;
  }
  if (shape.fault == Fault::kSlowNodeLinks) {
    const int n = NodeOf(shape, shape.fault_rank);
    const bool cross = NodeOf(shape, a) != NodeOf(shape, b);
    return cross && (NodeOf(shape, a) == n || NodeOf(shape, b) == n) ? shape.fault_factor : 1;
  }
  return 1;
}

double GroupLinkFactor(const JobShape& shape, int first, int size, uint64_t window_seq) {
  // A ring over the group runs at the speed of its slowest hop.
  double worst = 1;
  for (int i = 0; i < size; ++i) {
    const int a = first + i;
    const int b = first + (i + 1) % size;
    worst = std::max(worst, LinkFactor(shape, a, b, window_seq));
  }
  return worst;
}

double NormalAt(uint64_t seed, uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  const uint64_t h1 = SplitMix(seed ^ SplitMix(a ^ SplitMix(b ^ SplitMix(c ^ SplitMix(d)))));
  const uint64_t h2 = SplitMix(h1);
  const double u1 = (static_cast<double>(h1 >> 11) + 0.5) / 9007199254740992.0;
  const double u2 = static_cast<double>(h2 >> 11) / 9007199254740992.0;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

double LocalAt(const JobShape& shape, const RankTimes& t, int rank, uint64_t window_seq, int it) {
  const double n = NormalAt(shape.seed + shape.run_seed * 0x9e3779b97f4a7c15ull, 11,
                            static_cast<uint64_t>(rank), window_seq, static_cast<uint64_t>(it));
  return t.local * std::max(0.5, 1.0 + shape.jitter * n);
}

double RingExtraNs(const JobShape& shape, int rank, int world_size, uint64_t window_seq) {
  if (!shape.p2p_ring || world_size < 2) return 0;
  const int next = (rank + 1) % world_size;
  const int prev = (rank + world_size - 1) % world_size;
  const double per_call = TransferNs(static_cast<double>(kRingBytes));
  const double slow =
      LinkFactor(shape, rank, next, window_seq) - 1 + LinkFactor(shape, prev, rank, window_seq) - 1;
  return slow * per_call * kRingCallsPerIteration;
}

double CollectiveBytes(int i, int stage) {
  return static_cast<double>(uint64_t{1} << (16 + i % 10)) * StageWork(stage);
}

double TransferNs(double bytes) { return 20'000.0 + bytes / 50.0; }

WindowPhysics MakeWindowPhysics(const JobShape& shape, int world, uint64_t window_seq) {
  WindowPhysics p;
  p.window_seq = window_seq;
  p.all = AllTimes(shape, world, window_seq);
  const int size = StageSize(shape, world);
  const int stages = (world + size - 1) / size;
  for (int s = 0; s < stages; ++s) {
    p.stage_link.push_back(GroupLinkFactor(shape, s * size, size, window_seq));
  }
  // Communication exposed per iteration: the slowest stage's collectives, back to back.
  double comm = 0;
  for (int s = 0; s < stages; ++s) {
    double stage_comm = 0;
    for (int i = 0; i < shape.collectives; ++i) {
      stage_comm += TransferNs(CollectiveBytes(i, s)) * p.stage_link[static_cast<size_t>(s)];
    }
    comm = std::max(comm, stage_comm);
  }
  for (int it = 0; it < shape.iterations; ++it) {
    std::vector<double> local(static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) {
      local[static_cast<size_t>(r)] =
          LocalAt(shape, p.all[static_cast<size_t>(r)], r, window_seq, it) +
          RingExtraNs(shape, r, world, window_seq);
    }
    // By block of `size` ranks: a stage's collectives span [stage * size, stage * size + size)
    // (StageOf puts leftover ranks of an uneven split in the last stage, outside its ring).
    std::vector<double> slowest(static_cast<size_t>(stages), 0.0);
    for (int r = 0; r < world; ++r) {
      double& s = slowest[static_cast<size_t>(r / size)];
      s = std::max(s, local[static_cast<size_t>(r)]);
    }
    p.iteration_ns.push_back(*std::max_element(slowest.begin(), slowest.end()) + comm);
    p.stage_slowest.push_back(std::move(slowest));
    p.local.push_back(std::move(local));
  }
  return p;
}

}  // namespace perftracker::synthetic
