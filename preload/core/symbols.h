// The real definitions behind our exported hooks, and the per-thread re-entrancy guard.
//
// A hook must reach the definition its caller would have reached without us. Three loader rules
// decide which one that is, and resolution follows them in order:
//  1. A versioned reference (`cudaLaunchKernel@libcudart.so.12`) binds to that version only. The
//     CUDA hooks are exported once per version node (versioned_entry.h); each entry forwards to
//     its own node's definition (dlvsym), so two runtimes in one process each get their calls.
//  2. The global scope first: dlsym/dlvsym(RTLD_NEXT). Found there, the address is the same for
//     every caller and is cached in `address` (the hot path: one load and a branch).
//  3. Else the caller's own scope: a library loaded RTLD_LOCAL (Python extensions, a framework
//     with its own statically linked NCCL) resolves against itself and its dependencies. Those
//     definitions are per caller object, cached by the object's address range; then the library's
//     known sonames; then every loaded object.
// A symbol found nowhere is remembered as missing until the next dlopen (g_load_generation), so a
// runtime that lacks an optional function costs nothing per call. Resolution never returns a
// definition inside libperftracker.so, so a hook can never recurse into itself.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace perftracker::preload {

// The libraries whose functions we hook.
enum class Library : unsigned char { kCudart, kNccl, kCublas, kCublasLt };

// Version nodes a hooked function is exported under: 0 is the default (unversioned references,
// and libraries without symbol versions such as NCCL), 1-3 the CUDA majors 11, 12 and 13 whose
// runtime and cuBLAS name their nodes after their sonames ("libcudart.so.12").
inline constexpr int kVersionNodes = 4;
// The node's name for `library` ("libcudart.so.11.0"), or null for node 0 and unversioned
// libraries.
const char* VersionNode(Library library, int node);

// Bumped by the dlopen hook: a symbol missing before may exist now.
inline std::atomic<uint32_t> g_load_generation{1};
void NoteLibraryLoad();

// A definition found in one caller object's own scope (rule 3), or its absence at `generation`.
struct CallerDefinition {
  std::atomic<uintptr_t> lo{0}, hi{0};  // the caller object's mapped range; hi == 0: free
  std::atomic<void*> address{nullptr};
  std::atomic<uint32_t> generation{0};  // when null: the load generation it was missing at
};

struct RealSymbol {
  const char* name;
  Library library;
  unsigned char node = 0;
  std::atomic<void*> address{nullptr};  // rule 2: the same for every caller
  std::atomic<bool> reported{false};
  CallerDefinition callers[6] = {};

  // `caller`: the hook's return address (null for our own calls: the library's scope is ours).
  template <typename Fn>
  Fn Get(const void* caller = nullptr) {
    void* p = address.load(std::memory_order_acquire);
    if (p == nullptr) [[unlikely]]
      p = ResolveCold(caller);
    return reinterpret_cast<Fn>(p);
  }
  // Get for the function a hook forwards to: its absence is reported (ReportMissing).
  template <typename Fn>
  Fn Need(const void* caller) {
    Fn fn = Get<Fn>(caller);
    if (fn == nullptr) [[unlikely]]
      ReportMissing(caller);
    return fn;
  }
  [[gnu::cold, gnu::noinline]] void* ResolveCold(const void* caller);
  // A hook found no definition at all for a call: the job gets an error the real library would
  // not have returned. Reported once per symbol, as the bug it is.
  [[gnu::cold, gnu::noinline]] void ReportMissing(const void* caller);
};

// One RealSymbol per hooked name and version node, built at compile time (hooks may run before
// our constructors).
template <size_t N>
struct RealSymbols {
  RealSymbol at[kVersionNodes][N];

  constexpr RealSymbols(Library library, const char* const (&names)[N]) : at{} {
    for (int node = 0; node < kVersionNodes; ++node) {
      for (size_t i = 0; i < N; ++i) {
        at[node][i].name = names[i];
        at[node][i].library = library;
        at[node][i].node = static_cast<unsigned char>(node);
      }
    }
  }
  RealSymbol& operator()(int node, size_t i) { return at[node][i]; }
};

// Resolves every symbol the global scope has now (constructor time); the rest at their first call.
void ResolveAll(RealSymbol* symbols, size_t count);
template <size_t N>
void ResolveAll(RealSymbols<N>& symbols) {
  ResolveAll(&symbols.at[0][0], kVersionNodes * N);
}

// libc's dlopen. Our library exports a dlopen hook (the CPython install point) and links with
// -Bsymbolic, so a plain dlopen() call here would enter that hook.
void* RealDlopen(const char* file, int flags);

// Looks up `name` (of version node `node`) in an already-loaded library (never loads one).
void* FindLoaded(Library library, const char* name, int node = 0);

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
