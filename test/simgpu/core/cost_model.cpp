#include "core/cost_model.h"

#include <algorithm>
#include <cmath>

#include "core/clock.h"
#include "core/config.h"

namespace simgpu {
namespace {

constexpr uint64_t kResidentThreadsPerSm = 2048;
constexpr uint64_t kMaxBlocksPerSm = 32;

uint64_t Product(const uint32_t dims[3]) {
  return static_cast<uint64_t>(dims[0]) * dims[1] * dims[2];
}

// GB/s is bytes per ns.
int64_t TransferNs(double bytes, double bytes_per_ns) {
  if (bytes <= 0) return 0;
  return bytes_per_ns > 0 ? static_cast<int64_t>(bytes / bytes_per_ns) : kNeverNs;
}

}  // namespace

uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

int64_t KernelDurationNs(const KernelInfo& kernel) {
  const Config& c = GetConfig();
  uint64_t threads = std::max<uint64_t>(1, Product(kernel.block));
  uint64_t blocks_per_sm =
      std::clamp<uint64_t>(kResidentThreadsPerSm / threads, 1, kMaxBlocksPerSm);
  uint64_t per_wave = std::max<uint64_t>(1, blocks_per_sm * static_cast<uint64_t>(c.sm_count));
  uint64_t waves = (Product(kernel.grid) + per_wave - 1) / per_wave;
  double ns = static_cast<double>(c.kernel_base_ns) + static_cast<double>(waves * c.block_ns);
  return static_cast<int64_t>(ns * FactorFor(c.compute_factors, c.rank, OpsIssued()) *
                              FactorFor(c.kernel_factors, kernel.name));
}

int64_t CopyDurationNs(const CopyInfo& copy) {
  const Config& c = GetConfig();
  double bytes = static_cast<double>(copy.bytes);
  switch (copy.dir) {
    case CopyDir::kHostToDevice:
    case CopyDir::kDeviceToHost:
      return static_cast<int64_t>(static_cast<double>(TransferNs(bytes, c.pcie_gbps)) *
                                  FactorFor(c.pcie_factors, c.rank, OpsIssued()));
    case CopyDir::kDeviceToDevice:
      return TransferNs(2 * bytes, c.hbm_gbps);  // read + write
    case CopyDir::kHostToHost:
      return TransferNs(bytes, c.hbm_gbps / 4);
  }
  return 0;
}

int64_t MemsetDurationNs(uint64_t bytes) {
  return TransferNs(static_cast<double>(bytes), GetConfig().hbm_gbps);
}

double JitterFactor(uint32_t stream_id, uint64_t index) {
  const Config& c = GetConfig();
  if (c.jitter <= 0) return 1.0;
  uint64_t h = Mix64(static_cast<uint64_t>(c.seed) ^
                     Mix64(static_cast<uint64_t>(c.rank) << 32 | stream_id) ^ Mix64(index));
  double unit = static_cast<double>(h >> 11) / static_cast<double>(1ull << 53);  // [0, 1)
  return std::max(0.0, 1.0 + c.jitter * (2 * unit - 1));
}

double LinkBytesPerNs(int64_t rank_a, int64_t rank_b) {
  const Config& c = GetConfig();
  int64_t node_a = NodeOf(rank_a);
  int64_t node_b = NodeOf(rank_b);
  double bw = node_a == node_b ? c.nvlink_gbps : c.nic_gbps;
  for (const LinkFactor& f : c.link_factors) {
    bool match = f.node >= 0 ? (node_a == f.node || node_b == f.node)
                             : ((f.rank_a == rank_a && f.rank_b == rank_b) ||
                                (f.rank_a == rank_b && f.rank_b == rank_a));
    if (match) bw *= f.factor;
  }
  return bw;
}

double WireBytes(CollKind kind, uint64_t bytes, int nranks, bool tree) {
  double n = nranks;
  double b = static_cast<double>(bytes);
  switch (kind) {
    case CollKind::kAllReduce:
      // Tree: reduce up and broadcast down a pipelined tree, bytes twice.
      if (tree) return nranks > 1 ? 2 * b : 0;
      return 2 * (n - 1) / n * b;
    case CollKind::kAllGather:
    case CollKind::kReduceScatter:
      return (n - 1) / n * b;
    case CollKind::kBroadcast:
    case CollKind::kReduce:
      return nranks > 1 ? b : 0;
    case CollKind::kSendRecv:
      break;
  }
  return b;
}

int64_t CollectiveLatencyNs(CollKind kind, int nranks, bool tree) {
  int64_t latency = GetConfig().nccl_latency_ns;
  if (tree && kind == CollKind::kAllReduce) {
    latency *= std::max(1, static_cast<int>(std::ceil(std::log2(static_cast<double>(nranks)))));
  }
  return latency;
}

int64_t CollectiveNs(CollKind kind, uint64_t bytes, int nranks, double min_bytes_per_ns,
                     bool tree) {
  int64_t transfer = TransferNs(WireBytes(kind, bytes, nranks, tree), min_bytes_per_ns);
  return transfer >= kNeverNs ? kNeverNs : CollectiveLatencyNs(kind, nranks, tree) + transfer;
}

}  // namespace simgpu
