#include "preload/cuda_sites.h"

#include <cuda_runtime_api.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <libunwind.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "preload/symbols.h"

namespace perftracker::preload {
namespace {

RealSymbol g_func_get_name{"cudaFuncGetName", Library::kCudart};
RealSymbol g_peek_error{"cudaPeekAtLastError", Library::kCudart};
RealSymbol g_get_error{"cudaGetLastError", Library::kCudart};

std::atomic<uint32_t> g_sample_every{64};

// Open addressing over a power-of-two array; a key is claimed by CAS from 0 and never removed.
template <size_t N>
class KeyTable {
  static_assert((N & (N - 1)) == 0);

 public:
  SiteEntry* Find(uint64_t key) {
    size_t i = (key * 0x9E3779B97F4A7C15ull) >> 40;
    for (int probe = 0; probe < 64; ++probe, ++i) {
      SiteEntry& e = entries_[i & (N - 1)];
      uint64_t k = e.key.load(std::memory_order_acquire);
      if (k == key) return &e;
      if (k == 0) {
        if (e.key.compare_exchange_strong(k, key, std::memory_order_acq_rel) || k == key) return &e;
      }
    }
    return nullptr;
  }

 private:
  SiteEntry entries_[N];
};

KeyTable<8192> g_sites;
KeyTable<8192> g_kernels;
KeyTable<4096> g_kernel_names;

// Frames in these libraries are plumbing: a site is named after the first frame outside them.
bool IsRuntimeModule(std::string_view path) {
  for (std::string_view lib : {"libperftracker", "libcudart", "libnccl", "libcublas", "libcudnn",
                               "libcupti", "libcuda.so"}) {
    if (path.find(lib) != std::string_view::npos) return true;
  }
  return false;
}

// The caller to name the site after: `return_address` unless it lies in a runtime library (a
// library calling the runtime through its PLT), then the first frame further out. Bounded.
const void* SiteFrame(const void* return_address) {
  Dl_info info{};
  if (dladdr(return_address, &info) == 0 || info.dli_fname == nullptr ||
      !IsRuntimeModule(info.dli_fname)) {
    return return_address;
  }
  void* frames[32];
  const int n = unw_backtrace(frames, 32);
  bool past = false;
  for (int i = 0; i < n; ++i) {
    if (frames[i] == return_address) past = true;
    if (!past || dladdr(frames[i], &info) == 0 || info.dli_fname == nullptr) continue;
    if (!IsRuntimeModule(info.dli_fname)) return frames[i];
  }
  return return_address;
}

Slot InternKernelName(const char* name) {
  return InternFunction(format::FunctionKind::kKernel, name);
}

}  // namespace

Slot ApiSlot::Intern() {
  const Slot s = InternFunction(kind, name);
  slot.store(s, std::memory_order_release);
  return s;
}

void DescribeAddress(const void* address, char* out, size_t size) {
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) {
    std::snprintf(out, size, "%p", address);
    return;
  }
  const char* slash = std::strrchr(info.dli_fname, '/');
  const char* module = slash != nullptr ? slash + 1 : info.dli_fname;
  if (*module == '\0') module = "main";
  const auto addr = reinterpret_cast<uintptr_t>(address);
  if (info.dli_sname == nullptr) {
    std::snprintf(out, size, "%s+0x%lx", module,
                  static_cast<unsigned long>(addr - reinterpret_cast<uintptr_t>(info.dli_fbase)));
    return;
  }
  int status = 0;
  char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
  std::snprintf(out, size, "%s!%s+0x%lx", module, status == 0 ? demangled : info.dli_sname,
                static_cast<unsigned long>(addr - reinterpret_cast<uintptr_t>(info.dli_saddr)));
  std::free(demangled);
}

SiteEntry* FindSite(ApiSlot& api, void* return_address) {
  const uint64_t key = reinterpret_cast<uint64_t>(return_address) * 31 +
                       reinterpret_cast<uint64_t>(&api);
  return g_sites.Find(key | 1);
}

Slot SiteSlot(SiteEntry* site, ApiSlot& api, void* return_address) {
  if (site == nullptr) return kNoSlot;
  const Slot s = site->slot.load(std::memory_order_acquire);
  if (s != kUnresolved) [[likely]] return s;
  char name[512];
  const int n = std::snprintf(name, sizeof name, "%s @ ", api.name);
  DescribeAddress(SiteFrame(return_address), name + n, sizeof name - static_cast<size_t>(n));
  const Slot interned = InternFunction(api.kind, name, api.Get());
  site->slot.store(interned, std::memory_order_release);
  return interned;
}

bool SampleSite(SiteEntry* site) {
  const uint32_t every = g_sample_every.load(std::memory_order_relaxed);
  if (site == nullptr || every == 0) return false;
  const uint32_t n = site->calls.load(std::memory_order_relaxed);
  site->calls.store(n + 1, std::memory_order_relaxed);
  return n % every == 0;
}

void SetSampleEvery(uint32_t every) { g_sample_every.store(every, std::memory_order_relaxed); }

Slot KernelSlot(const void* func) {
  SiteEntry* e = g_kernels.Find(reinterpret_cast<uint64_t>(func) | 1ull << 63);
  if (e == nullptr) return kNoSlot;
  const Slot s = e->slot.load(std::memory_order_acquire);
  if (s != kUnresolved) [[likely]] return s;
  // Our cudaFuncGetName must not replace an error the application has yet to collect.
  const auto peek = g_peek_error.Get<decltype(&cudaPeekAtLastError)>();
  const auto get_name = g_func_get_name.Get<decltype(&cudaFuncGetName)>();
  if (peek == nullptr || peek() != cudaSuccess) return kNoSlot;
  const char* name = nullptr;
  char fallback[512];
  if (get_name == nullptr || get_name(&name, func) != cudaSuccess || name == nullptr) {
    if (get_name != nullptr) g_get_error.Get<decltype(&cudaGetLastError)>()();
    fallback[0] = '\0';
    std::snprintf(fallback, sizeof fallback, "kernel ");
    DescribeAddress(func, fallback + 7, sizeof fallback - 7);
    name = fallback;
  }
  const Slot interned = InternKernelName(name);
  e->slot.store(interned, std::memory_order_release);
  return interned;
}

Slot KernelSlotByName(const char* name) {
  SiteEntry* e = g_kernel_names.Find(reinterpret_cast<uint64_t>(name) | 1);
  if (e == nullptr) return InternKernelName(name);  // cold either way: CUPTI buffers
  const Slot s = e->slot.load(std::memory_order_acquire);
  if (s != kUnresolved) return s;
  const Slot interned = InternKernelName(name);
  e->slot.store(interned, std::memory_order_release);
  return interned;
}

}  // namespace perftracker::preload
