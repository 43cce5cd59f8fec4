#include "preload/core/sched_stat.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace perftracker::preload {

bool ParseSchedStat(const char* text, uint64_t* cpu_ns, uint64_t* delay_ns) {
  char* end = nullptr;
  const unsigned long long cpu = std::strtoull(text, &end, 10);
  if (end == text || *end != ' ') return false;
  const char* next = end + 1;
  const unsigned long long delay = std::strtoull(next, &end, 10);
  if (end == next || (*end != ' ' && *end != '\n' && *end != '\0')) return false;
  *cpu_ns = cpu;
  *delay_ns = delay;
  return true;
}

SchedStat::~SchedStat() {
  if (fd_ >= 0) close(fd_);
}

bool SchedStat::Sample(pid_t tid, uint64_t* cpu_ns, uint64_t* delay_ns) {
  if (unavailable_ || tid <= 0) return false;
  const bool same = tid == tid_ && fd_ >= 0;
  if (!same) {
    if (fd_ >= 0) close(fd_);
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", static_cast<int>(tid));
    fd_ = open(path, O_RDONLY | O_CLOEXEC);
    tid_ = tid;
    if (fd_ < 0) {
      // No such file: the kernel keeps no schedstat (it is there for every live thread when it
      // does); a thread that has exited is not this, and its successor gets its own try.
      unavailable_ = access("/proc/thread-self/schedstat", R_OK) != 0;
      return false;
    }
  }
  char buf[96];
  const ssize_t n = pread(fd_, buf, sizeof buf - 1, 0);  // seq_file: each read from 0 is fresh
  uint64_t cpu = 0, delay = 0;
  if (n <= 0 || (buf[n] = '\0', !ParseSchedStat(buf, &cpu, &delay))) {
    close(fd_);  // the thread exited: start over with whichever thread is next
    fd_ = -1;
    return false;
  }
  const bool have_baseline = same;
  *cpu_ns = have_baseline && cpu >= cpu_ns_ ? cpu - cpu_ns_ : 0;
  *delay_ns = have_baseline && delay >= delay_ns_ ? delay - delay_ns_ : 0;
  cpu_ns_ = cpu;
  delay_ns_ = delay;
  return have_baseline;
}

}  // namespace perftracker::preload
