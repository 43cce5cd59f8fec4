// Process-wide simulator configuration, read once from SIMGPU_* environment variables.
//
// Every knob is one row of SIMGPU_KNOBS (name, type, default, doc); README.md mirrors the table.
// The configuration is immutable after the first call to GetConfig(): the simulator reads it from
// device threads without locks.
#ifndef SIMGPU_CORE_CONFIG_H_
#define SIMGPU_CORE_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

namespace simgpu {

// X(field, type, env name, default, doc). Types are double, int64 or string (specs parsed below).
#define SIMGPU_KNOBS(X)                                                                          \
  X(time_scale, double, "SIMGPU_TIME_SCALE", 1.0, "wall seconds per simulated second")           \
  X(rank, int64, "SIMGPU_RANK", -1, "global rank of this process (default: $RANK, else 0)")      \
  X(ranks_per_node, int64, "SIMGPU_RANKS_PER_NODE", 0,                                           \
    "ranks per node (default: $LOCAL_WORLD_SIZE, else 8)")                                       \
  X(device_count, int64, "SIMGPU_DEVICE_COUNT", 8, "devices reported per process")               \
  X(sm_count, int64, "SIMGPU_SM_COUNT", 132, "streaming multiprocessors per device")             \
  X(kernel_base_ns, int64, "SIMGPU_KERNEL_BASE_NS", 2000, "fixed cost of every kernel")          \
  X(block_ns, int64, "SIMGPU_BLOCK_NS", 4000, "time one wave of thread blocks takes")            \
  X(pcie_gbps, double, "SIMGPU_PCIE_GBPS", 25.0, "host<->device copy bandwidth, GB/s")           \
  X(hbm_gbps, double, "SIMGPU_HBM_GBPS", 2000.0, "device memory bandwidth, GB/s")                \
  X(nvlink_gbps, double, "SIMGPU_NVLINK_GBPS", 150.0, "intra-node link bandwidth, GB/s")         \
  X(nic_gbps, double, "SIMGPU_NIC_GBPS", 25.0, "inter-node link bandwidth, GB/s")                \
  X(nccl_latency_ns, int64, "SIMGPU_NCCL_LATENCY_NS", 10000, "fixed cost of every NCCL op")      \
  X(nccl_algo, string, "SIMGPU_NCCL_ALGO", "ring", "collective model: ring or tree")             \
  X(compute_slowdown, string, "SIMGPU_COMPUTE_SLOWDOWN", "",                                     \
    "kernel time factor per rank: R=F[@A[-B]],... (R: rank, A-B or *; @: ops issued in [A,B))") \
  X(pcie_slowdown, string, "SIMGPU_PCIE_SLOWDOWN", "", "host<->device copy time factor: R=F,..") \
  X(kernel_slowdown, string, "SIMGPU_KERNEL_SLOWDOWN", "",                                       \
    "kernel time factor by name on every rank: PART=F,.. (kernels whose name contains PART)")    \
  X(link_factor, string, "SIMGPU_LINK_FACTOR", "",                                               \
    "bandwidth factor per link: A-B=F (ranks A,B) or nK=F (every link of node K)")               \
  X(hang, string, "SIMGPU_HANG", "", "R:S rank R stops before its NCCL op number S")             \
  X(stall, string, "SIMGPU_STALL", "",                                                           \
    "R:S[:MS] NCCL op S stalls MS simulated ms on rank R's link (forever without MS)")           \
  X(jitter, double, "SIMGPU_JITTER", 0.0, "relative random jitter of every duration (0.05=5%)")  \
  X(seed, int64, "SIMGPU_SEED", 1, "seed of the jitter")                                         \
  X(nvml, int64, "SIMGPU_NVML", 1, "0: nvmlInit fails with NVML_ERROR_DRIVER_NOT_LOADED")        \
  X(nvml_throttle, string, "SIMGPU_NVML_THROTTLE", "",                                           \
    "clock event reasons per rank while slowed: R=hw_thermal[+sw_power...] or R=0x40,..")       \
  X(nvml_temp, string, "SIMGPU_NVML_TEMP", "", "GPU temperature per rank, C: R=T[@A[-B]],..")    \
  X(nvml_pcie_replays, string, "SIMGPU_NVML_PCIE_REPLAYS", "", "PCIe replays per second: R=N,..") \
  X(nvml_ecc, string, "SIMGPU_NVML_ECC", "", "corrected ECC errors per second: R=N,..")          \
  X(nvml_nvlink_errors, string, "SIMGPU_NVML_NVLINK_ERRORS", "",                                 \
    "NVLink errors per second (link 0): R=N,..")                                                 \
  X(verbose, int64, "SIMGPU_VERBOSE", 0, "1: print the resolved configuration on stderr")

// A factor that applies to a set of ranks (an inclusive range), optionally only while the
// process's NCCL op count is in [from_op, to_op): a fault that begins (or ends) mid-run.
struct RankFactor {
  int64_t first = 0;
  int64_t last = 0;
  double factor = 1.0;
  int64_t from_op = 0;
  int64_t to_op = INT64_MAX;
};

// A factor on one link (rank_a <-> rank_b) or, when node >= 0, on every link touching that node.
struct LinkFactor {
  int64_t rank_a = -1;
  int64_t rank_b = -1;
  int64_t node = -1;
  double factor = 1.0;
};

// A factor on every kernel whose device name contains `name_part`, on every rank: one kernel that
// a library upgrade or a changed shape made slower, the regression `perftracker diff` must name.
struct KernelFactor {
  std::string name_part;
  double factor = 1.0;
};

// "Rank R at NCCL op S" (optionally for a duration).
struct OpFault {
  int64_t rank = -1;
  int64_t op = -1;
  int64_t stall_ns = -1;  // < 0: forever
};

struct Config {
  using int64 = int64_t;
  using string = std::string;
#define SIMGPU_DECLARE_FIELD(field, type, env, def, doc) type field = def;
  SIMGPU_KNOBS(SIMGPU_DECLARE_FIELD)
#undef SIMGPU_DECLARE_FIELD

  // Parsed forms of the spec strings.
  std::vector<RankFactor> compute_factors;
  std::vector<RankFactor> pcie_factors;
  std::vector<KernelFactor> kernel_factors;
  std::vector<LinkFactor> link_factors;
  OpFault hang_fault;
  OpFault stall_fault;
  int64_t time_scale_ppm = 1000000;  // time_scale in millionths, for exact integer clocks
};

// The configuration of this process (parsed on first call; thread-safe).
const Config& GetConfig();

// This process's global rank and the node it sits on.
int64_t ProcessRank();
int64_t NodeOf(int64_t global_rank);

// Factor of `rank` in a list (1.0 when no entry matches) when this process has issued `ops`
// NCCL ops.
double FactorFor(const std::vector<RankFactor>& factors, int64_t rank, int64_t ops = 0);
// Factor of the kernel named `name` (1.0 when no entry's part is in it).
double FactorFor(const std::vector<KernelFactor>& factors, const char* name);

// This process's NCCL op count: the collectives and point-to-point ops it has issued (the "op S"
// of SIMGPU_HANG/SIMGPU_STALL and the "@A-B" of rank factors). NextOpNumber() counts one more.
int64_t OpsIssued();
int64_t NextOpNumber();

// Parsers, exposed for tests. They return false on malformed input.
bool ParseRankFactors(const std::string& spec, std::vector<RankFactor>* out);
bool ParseLinkFactors(const std::string& spec, std::vector<LinkFactor>* out);
bool ParseKernelFactors(const std::string& spec, std::vector<KernelFactor>* out);
bool ParseOpFault(const std::string& spec, OpFault* out);

}  // namespace simgpu

#endif  // SIMGPU_CORE_CONFIG_H_
