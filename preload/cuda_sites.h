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
#include <cstdint>

#include "preload/recorder.h"

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
};

// The call site of `api` at `return_address`; null when the site table is full. Its slot is a
// child of the API's slot named after the caller (module!symbol+offset), symbolized once.
SiteEntry* FindSite(ApiSlot& api, void* return_address);
Slot SiteSlot(SiteEntry* site, ApiSlot& api, void* return_address);

// True on the 1st, (N+1)th, ... call through `site` (N = PERFTRACKER_SAMPLE_EVERY; never if 0).
bool SampleSite(SiteEntry* site);
void SetSampleEvery(uint32_t every);

// The kernel slot of host stub `func` (name from cudaFuncGetName through the real runtime).
// kNoSlot when it cannot be named right now.
Slot KernelSlot(const void* func);

// The kernel slot of a kernel known by name only (CUPTI records).
Slot KernelSlotByName(const char* name);

// Describes `address` as "module!symbol+0xoff" (or "module+0xoff"), stable across ranks
// running the same binaries. Cold path.
void DescribeAddress(const void* address, char* out, size_t size);

}  // namespace perftracker::preload
