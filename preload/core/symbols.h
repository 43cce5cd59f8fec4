// The real definitions behind our exported hooks, and the per-thread re-entrancy guard.
//
// Every hook forwards through a RealSymbol. The constructor of each hook family resolves its
// symbols up front (ResolveAll, before any thread of ours exists); a symbol whose library is not
// loaded yet (Python dlopens the extension that needs libcudart much later) is resolved on the
// first call instead, on a cold path, and cached. Resolution never returns a definition inside
// libperftracker.so, so a hook can never recurse into itself.
//
// Hot path: Get() is one relaxed atomic load and a predictable branch.
#pragma once

#include <atomic>
#include <cstddef>

namespace perftracker::preload {

// Libraries a symbol may live in, tried with dlopen(RTLD_NOLOAD) when dlsym(RTLD_NEXT) cannot see
// it: RTLD_NEXT only searches the global scope, and a library loaded as the dependency of an
// RTLD_LOCAL dlopen (a Python extension linked to libcudart) is not in it.
enum class Library : unsigned char { kCudart, kNccl, kCublas, kCublasLt };

struct RealSymbol {
  const char* name;
  Library library;
  std::atomic<void*> address{nullptr};

  template <typename Fn>
  Fn Get() {
    void* p = address.load(std::memory_order_acquire);
    if (p == nullptr) [[unlikely]] p = ResolveCold();
    return reinterpret_cast<Fn>(p);
  }
  [[gnu::cold, gnu::noinline]] void* ResolveCold();
};

// Resolves every symbol now (constructor time). Missing ones stay null and are retried lazily.
void ResolveAll(RealSymbol* symbols, size_t count);

// libc's dlopen. Our library exports a dlopen hook (the CPython install point) and links with
// -Bsymbolic, so a plain dlopen() call here would enter that hook.
void* RealDlopen(const char* file, int flags);

// Looks up `name` in an already-loaded library (never loads one). Null when absent.
void* FindLoaded(Library library, const char* name);

// The re-entrancy guard: true while this thread is inside one of our hooks. A hooked call made
// from inside a hook (a library calling another exported symbol, our own poller) passes through.
inline thread_local bool t_in_hook [[gnu::tls_model("initial-exec")]] = false;

class HookScope {
 public:
  HookScope() { t_in_hook = true; }
  ~HookScope() { t_in_hook = false; }
  HookScope(const HookScope&) = delete;
  HookScope& operator=(const HookScope&) = delete;
};

}  // namespace perftracker::preload
