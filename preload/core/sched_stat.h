// The scheduler's account of one thread (/proc/self/task/<tid>/schedstat): how long it ran on a
// CPU and how long it was runnable but waited in a run queue. The writer samples the training
// loop's thread at each drain, so every window knows whether its host code was slow or was held
// back by a busy host (more ranks than cores, another process on the core): the analyzer must
// not name a rank's code for time its scheduler took. Writer thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace perftracker::preload {

class SchedStat {
 public:
  SchedStat() = default;
  SchedStat(const SchedStat&) = delete;
  SchedStat& operator=(const SchedStat&) = delete;
  ~SchedStat();

  // Reads thread `tid` of this process; true with the time run and the time waited since the
  // previous sample of the same thread. The first sample of a thread (or after it changed) only
  // sets the baseline. Kernels without schedstat: false forever after the first try.
  bool Sample(pid_t tid, uint64_t* cpu_ns, uint64_t* delay_ns);

 private:
  int fd_ = -1;
  pid_t tid_ = 0;
  bool unavailable_ = false;
  uint64_t cpu_ns_ = 0, delay_ns_ = 0;
};

// Parses "<cpu ns> <run-queue delay ns> <timeslices>"; false on anything else.
bool ParseSchedStat(const char* text, uint64_t* cpu_ns, uint64_t* delay_ns);

}  // namespace perftracker::preload
