#include "preload/core/symbols.h"

#include <dlfcn.h>

#include <cstring>

#include "preload/core/loaded_objects.h"
#include "preload/core/log.h"
#include "preload/core/versioned_entry.h"

namespace perftracker::preload {
namespace {

// Sonames we know, newest first, for the default node. The NOLOAD lookup also matches a library
// loaded by a path. Indexed by Library.
constexpr const char* kSonames[][3] = {
    {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"},
    {"libnccl.so.2", "libnccl.so", nullptr},
    {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"},
    {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11"},
};

// Version node names, which are also the sonames (how NVIDIA names them). Indexed by Library,
// then node - 1.
constexpr const char* kNodes[][kVersionNodes - 1] = {
    {PT_NODE1_CUDART, PT_NODE2_CUDART, PT_NODE3_CUDART},
    {nullptr, nullptr, nullptr},
    {PT_NODE1_CUBLAS, PT_NODE2_CUBLAS, PT_NODE3_CUBLAS},
    {PT_NODE1_CUBLASLT, PT_NODE2_CUBLASLT, PT_NODE3_CUBLASLT},
};

// Rule 2 as the loader applies it to a versioned reference: the first definition after us that
// is either of that version or unversioned (another interposer, preloaded after us). dlvsym alone
// would skip the unversioned ones.
void* FromGlobalScope(const char* name, const char* version) {
  void* first = dlsym(RTLD_NEXT, name);
  if (first != nullptr && IsOurs(first)) first = nullptr;
  if (version == nullptr || first == nullptr) return first;
  const char* found = nullptr;
  switch (VersionOf(first, name, &found)) {
    case DefinitionVersion::kUnversioned:
      return first;
    case DefinitionVersion::kVersioned:
      if (std::strcmp(found, version) == 0) return first;
      break;
    case DefinitionVersion::kUnknown:
      break;
  }
  void* p = dlvsym(RTLD_NEXT, name, version);
  return p != nullptr && !IsOurs(p) ? p : nullptr;
}

// Rule 3 for one caller object: its own scope, the library's sonames, then any object.
void* FromCallerScope(const RealSymbol& symbol, const LoadedObject* caller) {
  const char* version = VersionNode(symbol.library, symbol.node);
  void* p = nullptr;
  if (caller != nullptr && !caller->main_program && !IsOurs(reinterpret_cast<void*>(caller->lo))) {
    p = LookupInScopeOf(caller->path, symbol.name, version);
  }
  if (p == nullptr) p = FindLoaded(symbol.library, symbol.name, symbol.node);
  if (p == nullptr) p = LookupInAnyObject(symbol.name, version);
  return p;
}

// The entry for the object spanning [lo, hi): an existing one, or a free one claimed for it
// (hi 0 -> 1 by compare-and-swap: lock-free, so a fork or a signal can never leave it held).
CallerDefinition* EntryFor(CallerDefinition (&entries)[6], uintptr_t lo, uintptr_t hi) {
  for (CallerDefinition& e : entries) {
    if (e.hi.load(std::memory_order_acquire) == hi && e.lo.load(std::memory_order_relaxed) == lo) {
      return &e;
    }
  }
  for (CallerDefinition& e : entries) {
    uintptr_t expected = 0;
    if (e.hi.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
      e.lo.store(lo, std::memory_order_relaxed);
      e.generation.store(0, std::memory_order_relaxed);
      return &e;
    }
  }
  return nullptr;  // full: resolved again on every call from a new object (correct, slower)
}

}  // namespace

const char* VersionNode(Library library, int node) {
  if (node <= 0 || node >= kVersionNodes) return nullptr;
  return kNodes[static_cast<size_t>(library)][node - 1];
}

void NoteLibraryLoad() { g_load_generation.fetch_add(1, std::memory_order_acq_rel); }

void* RealDlopen(const char* file, int flags) {
  using DlopenFn = void* (*)(const char*, int);
  static const auto real = reinterpret_cast<DlopenFn>(dlsym(RTLD_NEXT, "dlopen"));
  return real != nullptr ? real(file, flags) : nullptr;
}

void* FindLoaded(Library library, const char* name, int node) {
  const char* version = VersionNode(library, node);
  if (version != nullptr) return LookupInScopeOf(version, name, version);  // node == soname
  for (const char* soname : kSonames[static_cast<size_t>(library)]) {
    if (soname == nullptr) break;
    if (void* p = LookupInScopeOf(soname, name, nullptr)) return p;
  }
  return nullptr;
}

void* RealSymbol::ResolveCold(const void* caller) {
  // Our own calls resolve as our object would.
  const auto pc = caller != nullptr ? reinterpret_cast<uintptr_t>(caller)
                                    : reinterpret_cast<uintptr_t>(&VersionNode);
  // A generation read before the lookups: a library loaded meanwhile makes the entry stale.
  const uint32_t generation = g_load_generation.load(std::memory_order_acquire);
  for (CallerDefinition& e : callers) {
    const uintptr_t hi = e.hi.load(std::memory_order_acquire);
    if (hi <= 1 || pc < e.lo.load(std::memory_order_relaxed) || pc >= hi) continue;
    if (void* p = e.address.load(std::memory_order_acquire)) return p;
    if (e.generation.load(std::memory_order_acquire) == generation) return nullptr;
    break;  // missing at an older generation: look again
  }
  if (void* p = FromGlobalScope(name, VersionNode(library, node))) {
    address.store(p, std::memory_order_release);
    return p;
  }
  LoadedObject object;
  const bool known = ObjectContaining(reinterpret_cast<const void*>(pc), &object);
  void* p = FromCallerScope(*this, known ? &object : nullptr);
  // Code outside any object (JIT) is keyed by its own address.
  const uintptr_t lo = known ? object.lo : pc, hi = known ? object.hi : pc + 1;
  if (CallerDefinition* e = EntryFor(callers, lo, hi)) {
    e->address.store(p, std::memory_order_release);
    e->generation.store(generation, std::memory_order_release);
    e->hi.store(hi, std::memory_order_release);
  }
  return p;
}

void RealSymbol::ReportMissing(const void* caller) {
  if (reported.exchange(true)) return;
  Dl_info info{};
  const char* from = caller != nullptr && dladdr(caller, &info) != 0 && info.dli_fname != nullptr
                         ? info.dli_fname
                         : "?";
  const char* version = VersionNode(library, node);
  Warn(
      "BUG: no definition of %s%s%s is loaded for the call from %s, so the call fails; please "
      "report it with the output of `perftracker selftest` (PERFTRACKER_ENABLE=0 avoids it)",
      name, version != nullptr ? "@" : "", version != nullptr ? version : "", from);
}

void ResolveAll(RealSymbol* symbols, size_t count) {
  // The global scope only: which object calls, and from which scope, is known at the call.
  for (size_t i = 0; i < count; ++i) {
    RealSymbol& s = symbols[i];
    if (s.address.load(std::memory_order_relaxed) != nullptr) continue;
    if (void* p = FromGlobalScope(s.name, VersionNode(s.library, s.node))) {
      s.address.store(p, std::memory_order_release);
    }
  }
}

}  // namespace perftracker::preload
