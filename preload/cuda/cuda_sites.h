// Slots of the CUDA runtime hooks: per API function, per call site (return address) and per
// kernel (host stub pointer), each cached in a fixed-size lock-free table.
//
// Who writes, who reads: any hook thread. A key is claimed with one CAS and never removed; its
// slot starts as kUnresolved and is filled once by whichever thread gets to the cold path first
// (interning is idempotent: the same arguments give the same slot, so two threads racing on a
// new key store the same value). A full table (or a full function table: kNoSlot) means the
// call is still counted under its API function, never that the hook waits.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "preload/core/recorder.h"

namespace perftracker::preload {

inline constexpr Slot kUnresolved = kNoSlot - 1;

// One API function pattern ("cudaLaunchKernel", "cudaMemcpyAsync HtoD", ...).
struct ApiSlot {
  const char* name;
  format::FunctionKind kind;
  std::atomic<Slot> slot{kUnresolved};

  Slot Get() {
    const Slot s = slot.load(std::memory_order_acquire);
    return s != kUnresolved ? s : Intern();
  }
  [[gnu::cold, gnu::noinline]] Slot Intern();
};

struct SiteEntry {
  std::atomic<uint64_t> key{0};
  std::atomic<Slot> slot{kUnresolved};
  std::atomic<uint32_t> calls{0};  // sampling counter; racy increments only skew sampling
  std::atomic<uint32_t> window{0};  // g_window_epoch at its last first-in-window sample
};

// Open addressing over a power-of-two array; a key is claimed by CAS from 0 and never removed.
// Inline: every hooked call looks up its site and most look up a kernel.
template <size_t N>
class KeyTable {
  static_assert((N & (N - 1)) == 0);

 public:
  SiteEntry* Find(uint64_t key) {
    size_t i = (key * 0x9E3779B97F4A7C15ull) >> 40;
    SiteEntry& first = entries_[i & (N - 1)];
    if (first.key.load(std::memory_order_acquire) == key) [[likely]]
      return &first;
    return Probe(key, i);
  }

 private:
  [[gnu::noinline]] SiteEntry* Probe(uint64_t key, size_t i) {
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
  SiteEntry entries_[N];
};

inline KeyTable<8192> g_site_table;
inline KeyTable<8192> g_kernel_table;
inline std::atomic<uint32_t> g_device_sample_every{64};

// The call site of `api` at `return_address`; null when the site table is full. Its slot is a
// child of the API's slot named after the caller (module!symbol+offset), symbolized once.
inline SiteEntry* FindSite(ApiSlot& api, void* return_address) {
  const uint64_t key =
      reinterpret_cast<uint64_t>(return_address) * 31 + reinterpret_cast<uint64_t>(&api);
  return g_site_table.Find(key | 1);
}
[[gnu::cold, gnu::noinline]] Slot ResolveSiteSlot(SiteEntry* site, ApiSlot& api,
                                                  void* return_address);
inline Slot SiteSlot(SiteEntry* site, ApiSlot& api, void* return_address) {
  if (site == nullptr) return kNoSlot;
  const Slot s = site->slot.load(std::memory_order_acquire);
  if (s != kUnresolved) [[likely]]
    return s;
  return ResolveSiteSlot(site, api, return_address);
}

// True on 1 in N calls through `site` (N = PERFTRACKER_SAMPLE_EVERY; never if 0; which ones:
// SampledCall), and on its first call in each window. A site called once a step (a batch's
// host-to-device copy) is timed once in 64 steps by the count alone: at 1 s steps a few times a
// run, and most windows then price it from no sample of their own (the benchmark's sim_tp copy
// degraded at 1 s steps went unnamed). A window's first call costs one timed call per site per
// window.
inline bool SampleSite(SiteEntry* site) {
  const uint32_t every = g_device_sample_every.load(std::memory_order_relaxed);
  if (site == nullptr || every == 0) return false;
  const uint32_t n = site->calls.load(std::memory_order_relaxed);
  site->calls.store(n + 1, std::memory_order_relaxed);
  const uint32_t window = g_window_epoch.load(std::memory_order_relaxed);
  if (site->window.load(std::memory_order_relaxed) != window) [[unlikely]] {
    site->window.store(window, std::memory_order_relaxed);
    return true;
  }
  return SampledCall(n, every);
}
void SetSampleEvery(uint32_t every);

// The kernel slot of host stub `func` (name from cudaFuncGetName through the real runtime).
// kNoSlot when it cannot be named right now.
[[gnu::cold, gnu::noinline]] Slot ResolveKernelSlot(SiteEntry* entry, const void* func);
inline Slot KernelSlot(const void* func) {
  SiteEntry* e = g_kernel_table.Find(reinterpret_cast<uint64_t>(func) | 1ull << 63);
  if (e == nullptr) return kNoSlot;
  const Slot s = e->slot.load(std::memory_order_acquire);
  if (s != kUnresolved) [[likely]]
    return s;
  return ResolveKernelSlot(e, func);
}

// The kernel slot of a kernel known by name only (CUPTI records).
Slot KernelSlotByName(const char* name);

// Describes `address` as "module!symbol+0xoff" (or "module+0xoff"), stable across ranks
// running the same binaries. Cold path.
void DescribeAddress(const void* address, char* out, size_t size);

}  // namespace perftracker::preload
