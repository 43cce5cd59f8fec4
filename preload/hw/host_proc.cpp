#include "preload/hw/host_proc.h"

#include <sched.h>
#include <sys/resource.h>

#include <cstdlib>

#include "preload/hw/text_file.h"

namespace perftracker::preload::hw {
namespace {

using format::SignalKind;

// The next blank-separated field of `text` from `*pos`.
std::string_view Field(std::string_view text, size_t* pos) {
  size_t i = *pos;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  size_t j = i;
  while (j < text.size() && text[j] != ' ' && text[j] != '\t' && text[j] != '\n') ++j;
  *pos = j;
  return text.substr(i, j - i);
}

std::string_view Line(std::string_view text, size_t* pos) {
  const size_t start = *pos;
  size_t end = text.find('\n', start);
  if (end == std::string_view::npos) end = text.size();
  *pos = end < text.size() ? end + 1 : end;
  return text.substr(start, end - start);
}

}  // namespace

bool ParseProcStat(std::string_view text, CpuTimes* out) {
  if (text.substr(0, 4) != "cpu ") return false;
  size_t pos = 4;
  uint64_t v[8] = {};  // user nice system idle iowait irq softirq steal
  int n = 0;
  for (; n < 8; ++n) {
    if (!ParseU64(Field(text, &pos), &v[n])) break;
  }
  if (n < 4) return false;  // steal and iowait came later (2.6): absent reads as 0
  *out = CpuTimes{};
  for (int i = 0; i < n; ++i) out->total += v[i];
  out->iowait = v[4];
  out->steal = v[7];
  return true;
}

bool ParseLoadavg(std::string_view text, double* load1, uint64_t* runnable) {
  size_t pos = 0;
  const std::string load(Field(text, &pos));
  char* end = nullptr;
  const double l = std::strtod(load.c_str(), &end);
  if (load.empty() || *end != '\0') return false;
  Field(text, &pos);
  Field(text, &pos);
  uint64_t r = 0;
  if (!ParseU64(Field(text, &pos), &r)) return false;
  *load1 = l;
  *runnable = r;
  return true;
}

bool CgroupCpuStatPath(std::string_view text, std::string* path) {
  std::string unified;
  bool have_unified = false;
  for (size_t pos = 0; pos < text.size();) {
    const std::string_view line = Line(text, &pos);
    const size_t a = line.find(':');
    const size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    const std::string_view controllers = line.substr(a + 1, b - a - 1);
    std::string_view where = line.substr(b + 1);
    if (where == "/") where = "";
    if (line.substr(0, a) == "0" && controllers.empty()) {
      unified = "/fs/cgroup" + std::string(where) + "/cpu.stat";
      have_unified = true;
      continue;
    }
    // v1: the hierarchy whose controller list has `cpu` ("cpu,cpuacct" is mounted as such).
    for (size_t c = 0; c <= controllers.size();) {
      size_t comma = controllers.find(',', c);
      if (comma == std::string_view::npos) comma = controllers.size();
      if (controllers.substr(c, comma - c) == "cpu") {
        *path = "/fs/cgroup/" + std::string(controllers) + std::string(where) + "/cpu.stat";
        return true;
      }
      c = comma + 1;
    }
  }
  if (have_unified) *path = unified;
  return have_unified;
}

void ParseCpuStat(std::string_view text, CpuStat* out) {
  *out = CpuStat{};
  for (size_t pos = 0; pos < text.size();) {
    const std::string_view line = Line(text, &pos);
    size_t at = 0;
    const std::string_view key = Field(line, &at);
    uint64_t v = 0;
    if (!ParseU64(Field(line, &at), &v)) continue;
    if (key == "nr_periods") {
      out->periods = v, out->has_periods = true;
    } else if (key == "nr_throttled") {
      out->throttled = v, out->has_throttled = true;
    } else if (key == "throttled_usec") {
      out->throttled_ns = v * 1000, out->has_throttled_ns = true;
    } else if (key == "throttled_time") {
      out->throttled_ns = v, out->has_throttled_ns = true;
    }
  }
}

bool ParsePsiSomeTotalUs(std::string_view text, uint64_t* total_us) {
  for (size_t pos = 0; pos < text.size();) {
    const std::string_view line = Line(text, &pos);
    if (line.substr(0, 5) != "some ") continue;
    const size_t at = line.find("total=");
    return at != std::string_view::npos && ParseU64(line.substr(at + 6), total_us);
  }
  return false;
}

double PercentOf(uint64_t d_part, uint64_t d_total) {
  return d_total == 0 ? 0.0 : 100.0 * static_cast<double>(d_part) / static_cast<double>(d_total);
}

HostSampler::HostSampler(const char* procfs_root, const char* sysfs_root)
    : stat_(Rooted(procfs_root, "/proc", "/stat")),
      loadavg_(Rooted(procfs_root, "/proc", "/loadavg")),
      pressure_{Rooted(procfs_root, "/proc", "/pressure/cpu"),
                Rooted(procfs_root, "/proc", "/pressure/memory"),
                Rooted(procfs_root, "/proc", "/pressure/io")} {
  std::string rel;
  const std::string cgroup = Rooted(procfs_root, "/proc", "/self/cgroup");
  if (auto text = ReadText(cgroup.c_str(), buf_, sizeof buf_);
      text && CgroupCpuStatPath(*text, &rel)) {
    cpu_stat_ = Rooted(sysfs_root, "/sys", rel);
  }
}

void HostSampler::Sample(SignalSet& s) {
  if (!interned_) {
    interned_ = true;
    steal_ = s.Intern("host.cpu_steal_pct", "", SignalKind::kGauge);
    iowait_ = s.Intern("host.cpu_iowait_pct", "", SignalKind::kGauge);
    load1_ = s.Intern("host.load1", "", SignalKind::kGauge);
    runnable_ = s.Intern("host.runnable", "", SignalKind::kGauge);
    periods_ = s.Intern("host.cgroup_periods", "", SignalKind::kCounter);
    throttled_ = s.Intern("host.cgroup_throttled_periods", "", SignalKind::kCounter);
    throttled_ns_ = s.Intern("host.cgroup_throttled_ns", "", SignalKind::kCounter);
    static constexpr const char* kPressure[3] = {"host.cpu_pressure_ns", "host.mem_pressure_ns",
                                                 "host.io_pressure_ns"};
    for (int i = 0; i < 3; ++i) pressure_ids_[i] = s.Intern(kPressure[i], "", SignalKind::kCounter);
    switches_ = s.Intern("host.involuntary_switches", "", SignalKind::kCounter);
    process_cpu_ = s.Intern("host.process_cpu_ns", "", SignalKind::kCounter);
    cpus_ = s.Intern("host.cpus", "", SignalKind::kGauge);
  }
  SampleStat(s);
  if (auto text = ReadText(loadavg_.c_str(), buf_, sizeof buf_)) {
    double load1 = 0;
    uint64_t runnable = 0;
    if (ParseLoadavg(*text, &load1, &runnable)) {
      s.AddGauge(load1_, load1);
      s.AddGauge(runnable_, static_cast<double>(runnable));
    }
  }
  SampleCgroup(s);
  for (int i = 0; i < 3; ++i) {
    uint64_t us = 0;
    if (auto text = ReadText(pressure_[i].c_str(), buf_, sizeof buf_);
        text && ParsePsiSomeTotalUs(*text, &us)) {
      s.AddCounter(pressure_ids_[i], us * 1000);
    }
  }
  rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    s.AddCounter(switches_, static_cast<uint64_t>(usage.ru_nivcsw));
    // Every thread's CPU time, the ones no Python event names too (gloo's, intra-op pools'):
    // what the process asks of the node's CPUs.
    const auto ns = [](const timeval& t) {
      return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000u +
             static_cast<uint64_t>(t.tv_usec) * 1'000u;
    };
    s.AddCounter(process_cpu_, ns(usage.ru_utime) + ns(usage.ru_stime));
  }
  // The CPUs this process may run on (its affinity: taskset, a cpuset cgroup), which its ranks
  // and their loader workers share: what turns a helper's CPU time into the node's time it took.
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) s.AddGauge(cpus_, CPU_COUNT(&set));
}

// Percentages of the time between two samples: the first only sets the baseline.
void HostSampler::SampleStat(SignalSet& s) {
  CpuTimes now;
  auto text = ReadText(stat_.c_str(), buf_, sizeof buf_);
  if (!text || !ParseProcStat(*text, &now)) return;
  if (has_last_cpu_ && now.total > last_cpu_.total && now.steal >= last_cpu_.steal &&
      now.iowait >= last_cpu_.iowait) {
    const uint64_t total = now.total - last_cpu_.total;
    s.AddGauge(steal_, PercentOf(now.steal - last_cpu_.steal, total));
    s.AddGauge(iowait_, PercentOf(now.iowait - last_cpu_.iowait, total));
  }
  last_cpu_ = now;
  has_last_cpu_ = true;
}

void HostSampler::SampleCgroup(SignalSet& s) {
  if (cpu_stat_.empty()) return;
  auto text = ReadText(cpu_stat_.c_str(), buf_, sizeof buf_);
  if (!text) return;
  CpuStat stat;
  ParseCpuStat(*text, &stat);
  if (stat.has_periods) s.AddCounter(periods_, stat.periods);
  if (stat.has_throttled) s.AddCounter(throttled_, stat.throttled);
  if (stat.has_throttled_ns) s.AddCounter(throttled_ns_, stat.throttled_ns);
}

}  // namespace perftracker::preload::hw
