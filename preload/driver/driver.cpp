// The driver tier's entry points (see preload/driver/driver_tier.h): the table of wrapped driver
// functions, the cuGetProcAddress / cuGetProcAddress_v2 wrappers, and the tier's state.
//
// cuGetProcAddress hands out a wrapper only for the launch entry points (cuLaunchKernel[Ex],
// cuLaunchCooperativeKernel, cuGraphLaunch; per-thread variants for
// CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) and for itself (the runtime asks for its own
// address). Everything else -- cuGetExportTable's private tables first of all -- is the driver's
// own pointer. Lookups for an API version we do not know (>= 14.0) are never wrapped: a newer
// ABI of the same name could be handed out.
#include <dlfcn.h>

#include <cstring>

#include "preload/core/config.h"
#include "preload/core/log.h"
#include "preload/core/recorder.h"
#include "preload/core/symbols.h"
#include "preload/driver/driver_internal.h"

namespace perftracker::preload::driver {
namespace {

constexpr int kMinDriverVersion = 12030;  // cuFuncGetName
constexpr int kMaxApiVersion = 14000;     // exclusive: ABIs we have not seen

std::atomic<bool> g_enabled{false};
std::atomic<bool> g_warned{false};
std::atomic<uint64_t> g_wrapped{0};
std::atomic<uint64_t> g_mismatched{0};
uint32_t g_sample_every = 64;

using GetProcV1Fn = CUresult (*)(const char*, void**, int, cuuint64_t);
using GetProcV2Fn = CUresult (*)(const char*, void**, int, cuuint64_t,
                                 CUdriverProcAddressQueryResult*);

// Checks the driver that defines `real` (any of its entry points) once: a known version and
// cuFuncGetName. Cold; the first wrapped lookup pays it.
bool CheckDriver(void* real) {
  Dl_info info{};
  if (dladdr(real, &info) == 0 || info.dli_fname == nullptr) {
    Disable("cannot tell which library defines the driver entry points");
    return false;
  }
  void* lib = RealDlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (lib == nullptr) {
    Disable("the driver library is not loaded");
    return false;
  }
  using VersionFn = CUresult (*)(int*);
  auto version_fn = reinterpret_cast<VersionFn>(RealDlsym(lib, "cuDriverGetVersion"));
  auto name_fn = reinterpret_cast<FuncGetNameFn>(RealDlsym(lib, "cuFuncGetName"));
  dlclose(lib);  // drops the NOLOAD reference only
  int version = 0;
  if (version_fn == nullptr || version_fn(&version) != CUDA_SUCCESS) {
    Disable("cuDriverGetVersion is missing or failed");
    return false;
  }
  if (version < kMinDriverVersion || version >= kMaxApiVersion) {
    Warn("driver version %d is not supported (12.3 to 13.x)", version);
    Disable("unknown driver version");
    return false;
  }
  if (name_fn == nullptr) {
    Disable("cuFuncGetName is missing");
    return false;
  }
  SetKernelNaming(name_fn, g_sample_every);
  return true;
}

bool DriverOk(void* real) {
  static const bool ok = CheckDriver(real);  // thread-safe once
  return ok;
}

void* Wrap(Entry e, void* real) {
  EntryPoint& entry = g_entries[e];
  if (real == nullptr || real == entry.wrapper || !Enabled() || !DriverOk(real)) return real;
  void* expected = nullptr;
  if (!entry.real.compare_exchange_strong(expected, real, std::memory_order_acq_rel) &&
      expected != real) {
    g_mismatched.fetch_add(1, std::memory_order_relaxed);
    return real;
  }
  g_wrapped.fetch_add(1, std::memory_order_relaxed);
  return entry.wrapper;
}

// The wrapper for what cuGetProcAddress returned for `symbol`, or `p` itself.
void* WrapProc(const char* symbol, void* p, int version, cuuint64_t flags) {
  if (!Enabled() || symbol == nullptr || version >= kMaxApiVersion) return p;
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  struct Named {
    const char* name;
    Entry legacy;
    Entry ptsz;
  };
  static constexpr Named kNamed[] = {
      {"cuLaunchKernel", kLaunch, kLaunchPtsz},
      {"cuLaunchKernelEx", kLaunchEx, kLaunchExPtsz},
      {"cuLaunchCooperativeKernel", kCoop, kCoopPtsz},
      {"cuGraphLaunch", kGraph, kGraphPtsz},
  };
  if (std::strcmp(symbol, "cuGetProcAddress") == 0) {
    return Wrap(version >= 12000 ? kGetProcV2 : kGetProc, p);
  }
  for (const Named& n : kNamed) {
    if (std::strcmp(symbol, n.name) == 0) return Wrap(per_thread ? n.ptsz : n.legacy, p);
  }
  return p;
}

CUresult GetProcAddressV2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                          CUdriverProcAddressQueryResult* status) {
  const auto real = RealOf<GetProcV2Fn>(kGetProcV2);
  const CUresult rc = real(symbol, pfn, version, flags, status);
  if (rc == CUDA_SUCCESS && pfn != nullptr && *pfn != nullptr) {
    *pfn = WrapProc(symbol, *pfn, version, flags);
  }
  return rc;
}

CUresult GetProcAddressV1(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  const auto real = RealOf<GetProcV1Fn>(kGetProc);
  const CUresult rc = real(symbol, pfn, version, flags);
  if (rc == CUDA_SUCCESS && pfn != nullptr && *pfn != nullptr) {
    *pfn = WrapProc(symbol, *pfn, version, flags);
  }
  return rc;
}

template <typename Fn>
void* W(Fn fn) {
  return reinterpret_cast<void*>(fn);
}

// Runs after bootstrap's Start (priority 101): Active() is final.
[[gnu::constructor]] void StartDriverTier() {
  const Config& config = ProcessConfig();
  if (!config.driver || !config.enable || !Active()) return;
  g_sample_every = static_cast<uint32_t>(config.sample_every);
  g_enabled.store(true, std::memory_order_release);
  EnableDlsymInterposition();
}

}  // namespace

EntryPoint g_entries[kEntryCount] = {
    {"cuLaunchKernel", W(&LaunchKernel)},
    {"cuLaunchKernel_ptsz", W(&LaunchKernelPtsz)},
    {"cuLaunchKernelEx", W(&LaunchKernelEx)},
    {"cuLaunchKernelEx_ptsz", W(&LaunchKernelExPtsz)},
    {"cuLaunchCooperativeKernel", W(&LaunchCooperative)},
    {"cuLaunchCooperativeKernel_ptsz", W(&LaunchCooperativePtsz)},
    {"cuGraphLaunch", W(&GraphLaunch)},
    {"cuGraphLaunch_ptsz", W(&GraphLaunchPtsz)},
    {"cuGetProcAddress", W(&GetProcAddressV1)},
    {"cuGetProcAddress_v2", W(&GetProcAddressV2)},
};

bool Enabled() { return g_enabled.load(std::memory_order_relaxed); }

void Disable(const char* why) {
  g_enabled.store(false, std::memory_order_release);
  if (!g_warned.exchange(true)) {
    Warn("driver tier off (%s): kernels launched through the driver are not recorded", why);
  }
}

bool IsDriverSymbol(const char* name) {
  if (name[0] != 'c' || name[1] != 'u') return false;
  for (const EntryPoint& e : g_entries) {
    if (std::strcmp(e.name, name) == 0) return true;
  }
  return false;
}

void* WrapDriverSymbol(const char* name, void* real) {
  for (int e = 0; e < kEntryCount; ++e) {
    if (std::strcmp(g_entries[e].name, name) == 0) return Wrap(static_cast<Entry>(e), real);
  }
  return real;
}

Stats GetStats() {
  return {g_wrapped.load(std::memory_order_relaxed), g_mismatched.load(std::memory_order_relaxed)};
}

}  // namespace perftracker::preload::driver
