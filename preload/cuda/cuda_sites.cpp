#include "preload/cuda/cuda_sites.h"

#include <cuda_runtime_api.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <unwind.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "preload/core/symbols.h"

namespace perftracker::preload {
namespace {

RealSymbol g_func_get_name{"cudaFuncGetName", Library::kCudart};
RealSymbol g_peek_error{"cudaPeekAtLastError", Library::kCudart};
RealSymbol g_get_error{"cudaGetLastError", Library::kCudart};

KeyTable<4096> g_kernel_names;

// Frames in these libraries are plumbing: a site is named after the first frame outside them.
bool IsRuntimeModule(std::string_view path) {
  for (std::string_view lib : {"libperftracker", "libcudart", "libnccl", "libcublas", "libcudnn",
                               "libcupti", "libcuda.so"}) {
    if (path.find(lib) != std::string_view::npos) return true;
  }
  return false;
}

struct Frames {
  void* at[32];
  int n = 0;
};

_Unwind_Reason_Code AddFrame(_Unwind_Context* context, void* arg) {
  auto* frames = static_cast<Frames*>(arg);
  if (frames->n == static_cast<int>(std::size(frames->at))) return _URC_END_OF_STACK;
  frames->at[frames->n++] = reinterpret_cast<void*>(_Unwind_GetIP(context));
  return _URC_NO_REASON;
}

// The caller to name the site after: `return_address` unless it lies in a runtime library (a
// library calling the runtime through its PLT), then the first frame further out. Bounded.
// libgcc's unwinder (linked in statically, reading .eh_frame) walks the stack: no libunwind.
const void* SiteFrame(const void* return_address) {
  Dl_info info{};
  if (dladdr(return_address, &info) == 0 || info.dli_fname == nullptr ||
      !IsRuntimeModule(info.dli_fname)) {
    return return_address;
  }
  Frames walk;
  _Unwind_Backtrace(AddFrame, &walk);
  void* const* frames = walk.at;
  const int n = walk.n;
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

Slot ResolveSiteSlot(SiteEntry* site, ApiSlot& api, void* return_address) {
  char name[512];
  const int n = std::snprintf(name, sizeof name, "%s @ ", api.name);
  DescribeAddress(SiteFrame(return_address), name + n, sizeof name - static_cast<size_t>(n));
  const Slot interned = InternFunction(api.kind, name, api.Get());
  site->slot.store(interned, std::memory_order_release);
  return interned;
}

void SetSampleEvery(uint32_t every) {
  g_device_sample_every.store(every, std::memory_order_relaxed);
}

Slot ResolveKernelSlot(SiteEntry* e, const void* func) {
  // Our cudaFuncGetName must not replace an error the application has yet to collect: asked
  // only when none is pending, and never without a way to tell (a runtime lacking either
  // function names its kernels by address, once).
  const auto peek = g_peek_error.Get<decltype(&cudaPeekAtLastError)>();
  const auto get_name = g_func_get_name.Get<decltype(&cudaFuncGetName)>();
  const bool ask = peek != nullptr && get_name != nullptr;
  if (ask && peek() != cudaSuccess) return kNoSlot;  // asked again at the next launch
  const char* name = nullptr;
  char fallback[512];
  if (!ask || get_name(&name, func) != cudaSuccess || name == nullptr) {
    if (ask) g_get_error.Get<decltype(&cudaGetLastError)>()();
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
