// Shared by driver/driver.cpp (cuGetProcAddress, the entry-point table, the tier's state) and
// driver/driver_launch.cpp (the launch wrappers and the kernel table).
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>

#include "preload/driver/driver_tier.h"

namespace perftracker::preload::driver {

// The driver entry points we hand out wrapped, in one table.
enum Entry : int {
  kLaunch,
  kLaunchPtsz,
  kLaunchEx,
  kLaunchExPtsz,
  kCoop,
  kCoopPtsz,
  kGraph,
  kGraphPtsz,
  kGetProc,
  kGetProcV2,
  kEntryCount,
};

// Who writes, who reads: `real` is set once (CAS from null) by the first lookup that returns
// this entry point, before its wrapper is handed out; wrappers only read it. A lookup that finds
// a different real definition (a second driver library, another ABI) gets it unwrapped.
struct EntryPoint {
  const char* name;
  void* wrapper;
  std::atomic<void*> real{nullptr};
};
extern EntryPoint g_entries[kEntryCount];

template <typename Fn>
inline Fn RealOf(Entry e) {
  return reinterpret_cast<Fn>(g_entries[e].real.load(std::memory_order_acquire));
}

// Launch wrappers (driver_launch.cpp), with the driver's exact signatures.
CUresult LaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                      unsigned, CUstream, void**, void**);
CUresult LaunchKernelPtsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                          unsigned, CUstream, void**, void**);
CUresult LaunchKernelEx(const CUlaunchConfig*, CUfunction, void**, void**);
CUresult LaunchKernelExPtsz(const CUlaunchConfig*, CUfunction, void**, void**);
CUresult LaunchCooperative(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, unsigned, CUstream, void**);
CUresult LaunchCooperativePtsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void**);
CUresult GraphLaunch(CUgraphExec, CUstream);
CUresult GraphLaunchPtsz(CUgraphExec, CUstream);

// Set once the driver checked out (driver.cpp): names kernels; 1 in `every` launches per kernel
// gets device time (0: none).
using FuncGetNameFn = CUresult (*)(const char**, CUfunction);
void SetKernelNaming(FuncGetNameFn func_get_name, uint32_t sample_every);

// Test and benchmark counters.
struct Stats {
  uint64_t wrapped = 0;      // entry points handed out wrapped
  uint64_t mismatched = 0;   // lookups left unwrapped: a second real definition
};
Stats GetStats();

}  // namespace perftracker::preload::driver
