// The hardware and host samplers on the writer thread: every PERFTRACKER_SIGNAL_MS (a writer
// tick, never a hook), their values go into the window open at that moment (core/signal_set.h).
// Only a rank (or `perftracker run`'s lone process) samples: its helpers would repeat the host's
// signals. Each source that is missing says so once, and only where it matters: NVML when the
// process uses CUDA, InfiniBand when it uses NCCL.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>

#include "preload/core/config.h"
#include "preload/core/log.h"
#include "preload/core/recorder.h"
#include "preload/core/symbols.h"
#include "preload/core/writer.h"
#include "preload/hw/host_proc.h"
#include "preload/hw/nic_sysfs.h"
#include "preload/hw/nvml.h"

namespace perftracker::preload::hw {
namespace {

// NCCL's NIC choice, copied at start-up: the environment is not read from the writer thread,
// where a concurrent setenv could free it under us.
struct NcclEnv {
  std::string ib_hca, socket_ifname;
  bool has_ib_hca = false, has_socket_ifname = false, ib_disabled = false;
};

struct Samplers {
  NcclEnv env;
  std::unique_ptr<HostSampler> host;
  std::unique_ptr<NicSampler> nics;
  NvmlSampler nvml;
  enum class Gpu { kWaiting, kOpening, kOpen, kOff } gpu = Gpu::kWaiting;
  // Set by the thread that opens NVML (release) once `nvml` and `nvml_error` are written; the
  // writer reads them after seeing it (acquire).
  enum Opened : int { kPending, kOpened, kFailed };
  std::atomic<int> opened{kPending};
  std::string nvml_error;
  int ordinal = -1;  // the device NVML was attached for (tried once per ordinal)
  bool warned_ib = false;
};
Samplers* g_samplers = nullptr;

// The runtime's own cudaDeviceGetPCIBusId (not hooked; never one of our definitions).
RealSymbol g_bus_id{"cudaDeviceGetPCIBusId", Library::kCudart};
using BusIdFn = int (*)(char*, int, int);

bool UsesCuda() {
  return g_cuda_device.load(std::memory_order_relaxed) >= 0 ||
         g_cuda_runtime_nodes.load(std::memory_order_relaxed) != 0 ||
         g_cuda_runtime_nodes_ever.load(std::memory_order_relaxed) != 0;
}

// nvmlInit_v2 can take seconds on a node whose GPUs are not in persistence mode: a thread of its
// own waits for it, so the writer keeps draining the rings meanwhile (it inherits the writer's
// mask: every signal blocked). Nothing else touches `nvml` until `opened` says it is done.
void* OpenNvml(void* arg) {
  auto* s = static_cast<Samplers*>(arg);
  const bool ok = s->nvml.Open(&s->nvml_error);
  s->opened.store(ok ? Samplers::kOpened : Samplers::kFailed, std::memory_order_release);
  return nullptr;
}

// Whether NVML is open: starts the opening thread the first time, and says once why not.
bool NvmlReady(Samplers& s) {
  if (s.gpu == Samplers::Gpu::kWaiting) {
    s.gpu = Samplers::Gpu::kOpening;
    pthread_t thread;
    if (pthread_create(&thread, nullptr, &OpenNvml, &s) != 0) {
      OpenNvml(&s);  // no thread to spare: open it here, once
    } else {
      pthread_setname_np(thread, "perftracker-nvml");
      pthread_detach(thread);
    }
  }
  if (s.gpu == Samplers::Gpu::kOpening) {
    const int opened = s.opened.load(std::memory_order_acquire);
    if (opened == Samplers::kPending) return false;
    s.gpu = opened == Samplers::kOpened ? Samplers::Gpu::kOpen : Samplers::Gpu::kOff;
    if (s.gpu == Samplers::Gpu::kOff) {
      Warn(
          "NVML is not available (%s); GPU clocks, power, temperature and errors are not "
          "recorded",
          s.nvml_error.c_str());
    }
  }
  return s.gpu == Samplers::Gpu::kOpen;
}

// The rank's device: the ordinal it made current (cudaSetDevice), else 0 once it used CUDA;
// CUDA's bus id for it names the same GPU to NVML.
void SampleGpu(Samplers& s, SignalSet& signals) {
  if (s.gpu == Samplers::Gpu::kOff || !UsesCuda() || !NvmlReady(s)) return;
  const int ordinal = std::max(g_cuda_device.load(std::memory_order_relaxed), 0);
  if (ordinal != s.ordinal) {
    s.ordinal = ordinal;
    char bus_id[64] = {};
    const auto bus_id_of = g_bus_id.Get<BusIdFn>();
    const bool known = bus_id_of != nullptr &&
                       bus_id_of(bus_id, static_cast<int>(sizeof bus_id) - 1, ordinal) == 0;
    if (!known || !s.nvml.Attach(bus_id)) s.nvml.Detach();
  }
  s.nvml.Sample(signals);
}

void SampleSignals() {
  SignalSet* signals = WriterSignals();
  // A helper forked from its rank inherits the tick: the host's signals are the rank's to record,
  // and the parent's NVML handles are not the child's to use.
  if (signals == nullptr || !Active() || WriterIsHelper()) return;
  Samplers& s = *g_samplers;
  if (!s.host) {  // the first tick: listing the NICs and the cgroup is the writer's work
    const Config& config = ProcessConfig();
    s.host = std::make_unique<HostSampler>(config.procfs_root, config.sysfs_root);
    s.nics = std::make_unique<NicSampler>(
        config.sysfs_root, s.env.has_ib_hca ? s.env.ib_hca.c_str() : nullptr,
        s.env.has_socket_ifname ? s.env.socket_ifname.c_str() : nullptr, s.env.ib_disabled);
  }
  s.host->Sample(*signals);
  s.nics->Sample(*signals);
  if (!s.warned_ib && !s.env.ib_disabled && !s.nics->has_infiniband() &&
      g_nccl_used.load(std::memory_order_relaxed)) {
    s.warned_ib = true;
    Warn(
        "no InfiniBand device under %s/class/infiniband; NIC signals come from network "
        "interfaces only",
        ProcessConfig().sysfs_root ? ProcessConfig().sysfs_root : "/sys");
  }
  SampleGpu(s, *signals);
}

// After bootstrap's Start (priority 101): Active() and the writer's identity are settled.
[[gnu::constructor(200)]] void StartSignals() {
  if (!Active()) return;
  const Config& config = ProcessConfig();
  if (config.signal_ms == 0 || WriterIsHelper()) return;
  g_samplers = new Samplers();  // never freed: the writer thread may sample until exit
  NcclEnv& env = g_samplers->env;
  if (const char* v = std::getenv("NCCL_IB_HCA"); v != nullptr && *v != '\0') {
    env.ib_hca = v, env.has_ib_hca = true;
  }
  if (const char* v = std::getenv("NCCL_SOCKET_IFNAME"); v != nullptr && *v != '\0') {
    env.socket_ifname = v, env.has_socket_ifname = true;
  }
  const char* disable = std::getenv("NCCL_IB_DISABLE");
  env.ib_disabled = disable != nullptr && std::string(disable) == "1";
  AddWriterTick(&SampleSignals, config.signal_ms * 1'000'000ull);
}

}  // namespace
}  // namespace perftracker::preload::hw
