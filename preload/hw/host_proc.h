// Host signals from procfs (and the cgroup's cpu.stat under sysfs): CPU steal and iowait, load,
// the cgroup's CPU throttling, pressure stall time, the process's involuntary switches.
// Writer thread only (signals.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "preload/core/signal_set.h"

namespace perftracker::preload::hw {

// The `cpu ` line of /proc/stat: all CPUs' time (user..steal; guest time is inside user), and
// the steal and iowait parts of it, in clock ticks.
struct CpuTimes {
  uint64_t total = 0, steal = 0, iowait = 0;
};
bool ParseProcStat(std::string_view text, CpuTimes* out);

// /proc/loadavg: "0.52 0.58 0.59 3/1024 12345" -> 1-minute load, runnable tasks.
bool ParseLoadavg(std::string_view text, double* load1, uint64_t* runnable);

// The cgroup's cpu.stat, relative to the sysfs root ("/fs/cgroup/<path>/cpu.stat"), from the
// text of /proc/self/cgroup: cgroup v1's `cpu` controller line ("4:cpu,cpuacct:/job") when
// there is one, else v2's unified line ("0::/job"). False without either.
bool CgroupCpuStatPath(std::string_view proc_self_cgroup, std::string* path);

// cpu.stat: periods, throttled periods, throttled time in ns (v2 `throttled_usec`, v1
// `throttled_time` in ns). `has_*` false for a key absent (no CPU limit: v2 has no nr_periods).
struct CpuStat {
  uint64_t periods = 0, throttled = 0, throttled_ns = 0;
  bool has_periods = false, has_throttled = false, has_throttled_ns = false;
};
void ParseCpuStat(std::string_view text, CpuStat* out);

// A PSI file's `some ... total=<us>` line.
bool ParsePsiSomeTotalUs(std::string_view text, uint64_t* total_us);

// Percent of `d_part` in `d_total`, the change between two /proc/stat samples.
double PercentOf(uint64_t d_part, uint64_t d_total);

class HostSampler {
 public:
  // Roots: PERFTRACKER_PROCFS_ROOT / PERFTRACKER_SYSFS_ROOT (null: /proc, /sys). Reads
  // /proc/self/cgroup once, to find the cgroup's cpu.stat.
  HostSampler(const char* procfs_root, const char* sysfs_root);
  void Sample(SignalSet& signals);

 private:
  void SampleStat(SignalSet& signals);
  void SampleCgroup(SignalSet& signals);

  std::string stat_, loadavg_, cpu_stat_, pressure_[3];
  SignalId steal_ = kNoSignal, iowait_ = kNoSignal, load1_ = kNoSignal, runnable_ = kNoSignal;
  SignalId periods_ = kNoSignal, throttled_ = kNoSignal, throttled_ns_ = kNoSignal;
  SignalId pressure_ids_[3] = {kNoSignal, kNoSignal, kNoSignal};
  SignalId switches_ = kNoSignal;
  SignalId process_cpu_ = kNoSignal;
  SignalId cpus_ = kNoSignal;
  CpuTimes last_cpu_;
  bool has_last_cpu_ = false;
  bool interned_ = false;
  char buf_[4096];
};

}  // namespace perftracker::preload::hw
