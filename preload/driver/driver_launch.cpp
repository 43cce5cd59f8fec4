// Driver-tier launch wrappers: cuLaunchKernel[Ex][_ptsz], cuLaunchCooperativeKernel[_ptsz] and
// cuGraphLaunch[_ptsz], handed out by driver/driver.cpp.
//
// Each launch counts under its API function and its kernel (named once per CUfunction with
// cuFuncGetName, cached in a fixed lock-free table); 1 in PERFTRACKER_SAMPLE_EVERY launches per
// kernel also gets its device time from the runtime tier's pooled timing events.
//
// Double counting: a launch made from inside one of our runtime hooks (the real libcudart
// launches through these same driver pointers) is already recorded there and passes through.
// NCCL's hooks record the collective, not its kernel: an NCCL kernel is recorded here even
// inside them, as a child of the NCCL function named by the kernel -- the join between the
// API call and the kernel it launched.
#include <cstring>

#include "preload/cuda/cuda_hook.h"
#include "preload/driver/driver_internal.h"

namespace perftracker::preload::driver {
namespace {

// Who writes, who reads: any launching thread. A CUfunction claims an entry with one CAS and
// keeps it; its slot is interned by whichever thread gets there first (idempotent). Full table
// or too many probes: the launch counts under its API function only.
struct KernelEntry {
  std::atomic<uintptr_t> key{0};
  std::atomic<Slot> slot{kUnresolved};
  std::atomic<bool> nccl{false};
  std::atomic<uint32_t> calls{0};  // sampling counter; racy increments only skew sampling
};
constexpr size_t kKernelTable = 8192;  // power of two
constexpr int kMaxProbes = 32;
KernelEntry g_kernels[kKernelTable];

std::atomic<FuncGetNameFn> g_func_get_name{nullptr};
std::atomic<uint32_t> g_every{64};

ApiSlot g_api_launch{"cuLaunchKernel", format::FunctionKind::kCudaApi};
ApiSlot g_api_launch_ex{"cuLaunchKernelEx", format::FunctionKind::kCudaApi};
ApiSlot g_api_coop{"cuLaunchCooperativeKernel", format::FunctionKind::kCudaApi};
ApiSlot g_api_graph{"cuGraphLaunch", format::FunctionKind::kCudaApi};
KernelEntry g_graph_entry;  // sampling counter of graph launches

KernelEntry* FindKernel(CUfunction f) {
  const auto key = reinterpret_cast<uintptr_t>(f);
  if (key == 0) return nullptr;  // 0 marks a free entry; the driver rejects it anyway
  size_t i = (key >> 4) * 0x9E3779B97F4A7C15ull >> 51;  // 13 bits
  for (int probe = 0; probe < kMaxProbes; ++probe, i = (i + 1) & (kKernelTable - 1)) {
    KernelEntry& e = g_kernels[i];
    uintptr_t seen = e.key.load(std::memory_order_acquire);
    if (seen == key) return &e;
    if (seen == 0 && e.key.compare_exchange_strong(seen, key, std::memory_order_acq_rel)) {
      return &e;
    }
    if (seen == key) return &e;  // another thread claimed it for the same function
  }
  return nullptr;
}

// "ncclDevKernel_AllReduce_Sum_f32_RING_LL" -> "ncclAllReduce" (the API that launches it).
Slot NcclParent(const char* kernel) {
  const char* op = std::strchr(kernel, '_');
  char name[64] = "nccl";
  size_t n = 4;
  for (op = op ? op + 1 : ""; *op != '\0' && *op != '_' && n + 1 < sizeof name; ++op) {
    name[n++] = *op;
  }
  name[n] = '\0';
  return InternFunction(format::FunctionKind::kCollective, name);
}

[[gnu::cold, gnu::noinline]] Slot ResolveKernel(KernelEntry* e, CUfunction f) {
  const FuncGetNameFn get_name = g_func_get_name.load(std::memory_order_acquire);
  const char* name = nullptr;
  if (get_name == nullptr || get_name(&name, f) != CUDA_SUCCESS || name == nullptr) {
    return kNoSlot;  // asked again next time: cheap enough for a function nobody can name
  }
  const bool nccl =
      std::strncmp(name, "ncclDevKernel", 13) == 0 || std::strncmp(name, "ncclKernel", 10) == 0;
  const Slot slot = nccl ? InternFunction(format::FunctionKind::kKernel, name, NcclParent(name))
                         : InternFunction(format::FunctionKind::kKernel, name);
  e->nccl.store(nccl, std::memory_order_relaxed);
  e->slot.store(slot, std::memory_order_release);
  return slot;
}

bool Sample(KernelEntry* e) {
  const uint32_t every = g_every.load(std::memory_order_relaxed);
  if (every == 0) return false;
  const uint32_t n = e->calls.load(std::memory_order_relaxed);
  e->calls.store(n + 1, std::memory_order_relaxed);
  return SampledCall(n, every);
}

// A launch into a stream being captured is recorded into the graph, not run: it counts as
// captured, as in the runtime tier. Captures are seen when begun through the runtime (hooked);
// one begun with cuStreamBeginCapture alone is not (launches count as run).
bool Captured(CUstream stream) {
  return g_open_captures.load(std::memory_order_relaxed) != 0 &&
         StreamCapturing(reinterpret_cast<cudaStream_t>(stream));
}

// One launch of `f` on `stream`, forwarded by `call`. Kernel slot first: naming it may call
// the driver, which must not land between the timing events.
template <typename Call>
CUresult Launch(ApiSlot& api, CUfunction f, CUstream stream, Call call) {
  if (!Enabled() || !Active()) return call();
  KernelEntry* e = FindKernel(f);
  Slot kernel = kNoSlot;
  if (e != nullptr) {
    kernel = e->slot.load(std::memory_order_acquire);
    if (kernel == kUnresolved) [[unlikely]]
      kernel = ResolveKernel(e, f);
  }
  const bool nccl = e != nullptr && e->nccl.load(std::memory_order_relaxed);
  if (t_in_hook && !nccl) return call();  // the runtime tier records this launch
  const bool captured = Captured(stream);
  const bool timed = !captured && e != nullptr && kernel != kNoSlot && Sample(e) &&
                     !g_cupti_timing.load(std::memory_order_relaxed);
  HostSample host(HostTiming::kSampled);
  const int32_t timer = timed ? TimerStart(stream) : kNoTimer;
  host.Start();
  const CUresult rc = call();
  host.End();
  if (timer != kNoTimer) [[unlikely]] {
    if (rc == CUDA_SUCCESS) {
      TimerEnd(timer, stream, {TimerTarget::Kind::kDevice, kernel, 0});
    } else {
      TimerCancel(timer);
    }
  }
  RecordNativeCall(api.Get(), kNoSlot, rc == CUDA_SUCCESS ? kernel : kNoSlot, CurrentPythonSlot(),
                   host.timed(), false, host.end_ns(), host.duration_ns(), 0, captured);
  host.ReportOverhead();
  return rc;
}

template <typename Call>
CUresult Graph(CUstream stream, Call call) {
  if (!Enabled() || !Active() || t_in_hook) return call();
  if (Captured(stream)) [[unlikely]] {  // a graph launched into a capture: a node of that graph
    HostSample host(HostTiming::kSampled);
    host.Start();
    const CUresult rc = call();
    host.End();
    RecordNativeCall(g_api_graph.Get(), kNoSlot, kNoSlot, CurrentPythonSlot(), false, false,
                     host.end_ns(), host.duration_ns(), 0, true);
    return rc;
  }
  const bool timed = Sample(&g_graph_entry) && !g_cupti_timing.load(std::memory_order_relaxed);
  const int32_t timer = timed ? TimerStart(stream) : kNoTimer;
  const uint64_t start = NowNs();
  const CUresult rc = call();
  const uint64_t end = NowNs();
  const Slot api = g_api_graph.Get();
  if (timer != kNoTimer) [[unlikely]] {
    if (rc == CUDA_SUCCESS) {
      TimerEnd(timer, stream, {TimerTarget::Kind::kDevice, api, 0});
    } else {
      TimerCancel(timer);
    }
  }
  RecordCall(api, end, end - start, end - start);
  return rc;
}

using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);
using LaunchExFn = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
using CoopFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, CUstream, void**);
using GraphFn = CUresult (*)(CUgraphExec, CUstream);

CUstream PerThreadStream(CUstream s) { return s == nullptr ? CU_STREAM_PER_THREAD : s; }

}  // namespace

void SetKernelNaming(FuncGetNameFn func_get_name, uint32_t sample_every) {
  g_every.store(sample_every, std::memory_order_relaxed);
  g_func_get_name.store(func_get_name, std::memory_order_release);
}

CUresult LaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                      unsigned bz, unsigned shared, CUstream s, void** params, void** extra) {
  const auto real = RealOf<LaunchFn>(kLaunch);
  return Launch(g_api_launch, f, s,
                [&] { return real(f, gx, gy, gz, bx, by, bz, shared, s, params, extra); });
}

CUresult LaunchKernelPtsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned shared, CUstream s, void** params,
                          void** extra) {
  const auto real = RealOf<LaunchFn>(kLaunchPtsz);
  return Launch(g_api_launch, f, PerThreadStream(s),
                [&] { return real(f, gx, gy, gz, bx, by, bz, shared, s, params, extra); });
}

CUresult LaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  const auto real = RealOf<LaunchExFn>(kLaunchEx);
  if (config == nullptr) return real(config, f, params, extra);
  return Launch(g_api_launch_ex, f, config->hStream,
                [&] { return real(config, f, params, extra); });
}

CUresult LaunchKernelExPtsz(const CUlaunchConfig* config, CUfunction f, void** params,
                            void** extra) {
  const auto real = RealOf<LaunchExFn>(kLaunchExPtsz);
  if (config == nullptr) return real(config, f, params, extra);
  return Launch(g_api_launch_ex, f, PerThreadStream(config->hStream),
                [&] { return real(config, f, params, extra); });
}

CUresult LaunchCooperative(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                           unsigned by, unsigned bz, unsigned shared, CUstream s, void** params) {
  const auto real = RealOf<CoopFn>(kCoop);
  return Launch(g_api_coop, f, s,
                [&] { return real(f, gx, gy, gz, bx, by, bz, shared, s, params); });
}

CUresult LaunchCooperativePtsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shared, CUstream s,
                               void** params) {
  const auto real = RealOf<CoopFn>(kCoopPtsz);
  return Launch(g_api_coop, f, PerThreadStream(s),
                [&] { return real(f, gx, gy, gz, bx, by, bz, shared, s, params); });
}

CUresult GraphLaunch(CUgraphExec exec, CUstream s) {
  const auto real = RealOf<GraphFn>(kGraph);
  return Graph(s, [&] { return real(exec, s); });
}

CUresult GraphLaunchPtsz(CUgraphExec exec, CUstream s) {
  const auto real = RealOf<GraphFn>(kGraphPtsz);
  return Graph(PerThreadStream(s), [&] { return real(exec, s); });
}

}  // namespace perftracker::preload::driver
