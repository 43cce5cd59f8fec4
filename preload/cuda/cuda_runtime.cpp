// The CUDA runtime hook family's start-up: configuration of sampling and CUPTI, and the flush
// callback that collects pending device timers while CUDA is still alive. The hooks themselves
// are in cuda_launch.cpp, cuda_memory.cpp and cuda_sync.cpp; NCCL's in nccl*.cpp.
#include "preload/core/config.h"
#include "preload/cuda/cuda_hook.h"
#include "preload/core/log.h"

namespace perftracker::preload {
namespace {

RealSymbol g_runtime_version{"cudaRuntimeGetVersion", Library::kCudart};

// After bootstrap's Start (priority 101): Active() is settled.
[[gnu::constructor(200)]] void ConfigureCuda() {
  if (!Active()) return;
  const Config& config = ProcessConfig();
  SetSampleEvery(static_cast<uint32_t>(config.sample_every));
  SetHostSampleEvery(static_cast<uint32_t>(config.host_sample_every));
  g_cupti_pending.store(config.cupti, std::memory_order_relaxed);
  AddFlushCallback(&FlushDevice);
}

}  // namespace

bool CheckCudaRuntime() {
  // Signatures and semantics the hooks rely on (cudaLaunchKernelExC, cudaFuncGetName, capture
  // modes) are those of CUDA 11 to 13; another major may change them.
  const auto get_version = g_runtime_version.Get<decltype(&cudaRuntimeGetVersion)>();
  int version = 0;
  const bool known = get_version != nullptr && get_version(&version) == cudaSuccess &&
                     version >= 11000 && version < 14000;
  uint8_t expected = 0;
  if (g_cuda_runtime_state.compare_exchange_strong(expected, known ? 1 : 2) && !known) {
    Warn("CUDA runtime version %d is unknown to this build; CUDA calls pass through unrecorded "
         "(PERFTRACKER_ENABLE=0 turns everything off)", version);
  }
  return g_cuda_runtime_state.load(std::memory_order_relaxed) == 1;
}

}  // namespace perftracker::preload
