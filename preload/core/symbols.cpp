#include "preload/core/symbols.h"

#include <dlfcn.h>

namespace perftracker::preload {
namespace {

// Sonames we know, newest first. The NOLOAD lookup also matches a library loaded by a path.
// Indexed by Library.
constexpr const char* kSonames[][3] = {
    {"libcudart.so.13", "libcudart.so.12", "libcudart.so"},
    {"libnccl.so.2", "libnccl.so", nullptr},
    {"libcublas.so.13", "libcublas.so.12", "libcublas.so"},
    {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"},
};

// True if `p` lies inside libperftracker.so: forwarding to it would recurse forever.
bool IsOurs(void* p) {
  Dl_info mine{}, theirs{};
  if (dladdr(reinterpret_cast<void*>(&IsOurs), &mine) == 0) return false;
  if (dladdr(p, &theirs) == 0) return false;
  return mine.dli_fbase == theirs.dli_fbase;
}

}  // namespace

void* RealDlopen(const char* file, int flags) {
  using DlopenFn = void* (*)(const char*, int);
  static const auto real = reinterpret_cast<DlopenFn>(dlsym(RTLD_NEXT, "dlopen"));
  return real != nullptr ? real(file, flags) : nullptr;
}

void* FindLoaded(Library library, const char* name) {
  for (const char* soname : kSonames[static_cast<size_t>(library)]) {
    if (soname == nullptr) break;
    void* handle = RealDlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    void* p = dlsym(handle, name);
    dlclose(handle);  // drops the reference NOLOAD took; the library stays loaded
    if (p != nullptr && !IsOurs(p)) return p;
  }
  return nullptr;
}

void* RealSymbol::ResolveCold() {
  void* p = dlsym(RTLD_NEXT, name);
  if (p != nullptr && IsOurs(p)) p = nullptr;
  if (p == nullptr) p = FindLoaded(library, name);
  // Only a found address is cached: a library loaded later is found on a later call.
  if (p != nullptr) address.store(p, std::memory_order_release);
  return p;
}

void ResolveAll(RealSymbol* symbols, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (symbols[i].address.load(std::memory_order_relaxed) == nullptr) symbols[i].ResolveCold();
  }
}

}  // namespace perftracker::preload
