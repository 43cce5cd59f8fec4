// Host signals (preload/hw/host_proc.cpp): the procfs and cgroup parsers, and a sampler over a
// fake tree whose files change between two samples.
#include "preload/hw/host_proc.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <map>

#include "test/preload/hw/fake_tree.h"

using namespace perftracker::preload::hw;  // NOLINT
using perftracker::format::Signal;
using perftracker::preload::SignalSet;
using perftracker::test::FakeTree;
using perftracker::test::TakeSignals;

TEST_CASE("/proc/stat's cpu line gives total, steal and iowait", "[hw]") {
  CpuTimes t;
  REQUIRE(ParseProcStat("cpu  10 1 5 80 3 0 1 2 7 0\ncpu0 10 1 5 80 3 0 1 2 7 0\n", &t));
  CHECK(t.total == 102);  // user..steal; guest (7) is inside user already
  CHECK(t.iowait == 3);
  CHECK(t.steal == 2);
  CHECK_FALSE(ParseProcStat("cpu0 1 2 3 4\n", &t));
  CHECK_FALSE(ParseProcStat("intr 1 2 3\n", &t));
  REQUIRE(ParseProcStat("cpu  10 1 5 80\n", &t));  // an old kernel: no iowait, no steal
  CHECK(t.total == 96);
  CHECK(t.steal == 0);
  CHECK(PercentOf(5, 200) == 2.5);
  CHECK(PercentOf(5, 0) == 0);
}

TEST_CASE("/proc/loadavg gives the 1-minute load and runnable tasks", "[hw]") {
  double load = 0;
  uint64_t runnable = 0;
  REQUIRE(ParseLoadavg("0.52 0.58 0.59 3/1024 12345\n", &load, &runnable));
  CHECK(load == 0.52);
  CHECK(runnable == 3);
  CHECK_FALSE(ParseLoadavg("", &load, &runnable));
  CHECK_FALSE(ParseLoadavg("x 0.58 0.59 3/1024 1\n", &load, &runnable));
}

TEST_CASE("/proc/self/cgroup names the cgroup's cpu.stat, v1 cpu controller first", "[hw]") {
  std::string path;
  REQUIRE(CgroupCpuStatPath("0::/kubepods/pod1/c1\n", &path));
  CHECK(path == "/fs/cgroup/kubepods/pod1/c1/cpu.stat");
  REQUIRE(CgroupCpuStatPath("0::/\n", &path));
  CHECK(path == "/fs/cgroup/cpu.stat");
  REQUIRE(
      CgroupCpuStatPath("12:memory:/slurm/job1\n4:cpu,cpuacct:/slurm/job1\n"
                        "1:name=systemd:/x\n0::/x\n",
                        &path));
  CHECK(path == "/fs/cgroup/cpu,cpuacct/slurm/job1/cpu.stat");
  REQUIRE(CgroupCpuStatPath("3:cpuacct,cpu:/\n", &path));
  CHECK(path == "/fs/cgroup/cpuacct,cpu/cpu.stat");
  CHECK_FALSE(CgroupCpuStatPath("5:cpuset:/a\n2:cpuacct:/a\n", &path));  // no `cpu` controller
  CHECK_FALSE(CgroupCpuStatPath("", &path));
}

TEST_CASE("cpu.stat in v2 (usec) and v1 (ns) gives throttled time in ns", "[hw]") {
  CpuStat s;
  ParseCpuStat("usage_usec 10\nnr_periods 7\nnr_throttled 3\nthrottled_usec 1500\n", &s);
  CHECK((s.has_periods && s.periods == 7));
  CHECK((s.has_throttled && s.throttled == 3));
  CHECK((s.has_throttled_ns && s.throttled_ns == 1'500'000));
  ParseCpuStat("nr_periods 7\nnr_throttled 3\nthrottled_time 123456\n", &s);
  CHECK(s.throttled_ns == 123456);
  ParseCpuStat("usage_usec 10\nuser_usec 5\n", &s);  // no CPU limit
  CHECK_FALSE((s.has_periods || s.has_throttled || s.has_throttled_ns));
}

TEST_CASE("PSI gives the `some` line's total", "[hw]") {
  uint64_t us = 0;
  REQUIRE(
      ParsePsiSomeTotalUs("some avg10=1.00 avg60=0.50 avg300=0.10 total=123456\n"
                          "full avg10=0.00 avg60=0.00 avg300=0.00 total=99\n",
                          &us));
  CHECK(us == 123456);
  CHECK_FALSE(ParsePsiSomeTotalUs("full avg10=0.00 total=99\n", &us));
  CHECK_FALSE(ParsePsiSomeTotalUs("some avg10=0.00\n", &us));
}

TEST_CASE("the host sampler over a fake tree: percentages and counter increases", "[hw]") {
  FakeTree t;
  perftracker::test::WriteHost(t);
  HostSampler host((t.root() + "/proc").c_str(), (t.root() + "/sys").c_str());
  SignalSet set;
  host.Sample(set);  // baselines; gauges only
  auto w = TakeSignals(set);
  CHECK(w.count("host.cpu_steal_pct") == 0);  // needs two samples
  CHECK(w.count("host.cgroup_throttled_ns") == 0);
  REQUIRE(w.count("host.load1"));
  CHECK(w["host.load1"].sum == 3.5);
  CHECK(w["host.runnable"].sum == 5);

  // 20 ms on a CPU, which the process's CPU time counts.
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
       std::chrono::steady_clock::now() < until;) {
  }
  // 1,000 more ticks: 100 of them stolen, 50 waiting for I/O; a throttled period of 200 us.
  t.Write("proc/stat", "cpu  500 0 300 950 100 0 0 150 0 0\n");
  t.Write("sys/fs/cgroup/job.slice/rank0/cpu.stat",
          "nr_periods 20\nnr_throttled 3\nthrottled_usec 500\n");
  t.Write("proc/pressure/memory", "some avg10=0.00 avg60=0.00 avg300=0.00 total=4000\n");
  host.Sample(set);
  w = TakeSignals(set);
  CHECK(w["host.cpu_steal_pct"].sum == Approx(10.0));
  CHECK(w["host.cpu_iowait_pct"].sum == Approx(5.0));
  CHECK(w["host.cgroup_periods"].sum == 10);
  CHECK(w["host.cgroup_throttled_periods"].sum == 1);
  CHECK(w["host.cgroup_throttled_ns"].sum == 200'000);
  CHECK(w["host.mem_pressure_ns"].sum == 3'000'000);
  CHECK(w["host.cpu_pressure_ns"].sum == 0);
  CHECK(w["host.cpu_pressure_ns"].samples == 1);
  CHECK(w.count("host.involuntary_switches") == 1);
  // The process's CPU time between the samples: this thread spun for 20 ms of it at least.
  REQUIRE(w.count("host.process_cpu_ns") == 1);
  CHECK(w["host.process_cpu_ns"].sum >= 15e6);
  // The process's own affinity: at least one CPU, at most what the machine has.
  REQUIRE(w.count("host.cpus") == 1);
  CHECK(w["host.cpus"].sum >= 1);
  CHECK(w["host.cpus"].sum <= static_cast<double>(sysconf(_SC_NPROCESSORS_CONF)));

  // A counter reset (the cgroup re-created): a new baseline, no increase.
  t.Write("sys/fs/cgroup/job.slice/rank0/cpu.stat",
          "nr_periods 1\nnr_throttled 0\nthrottled_usec 0\n");
  host.Sample(set);
  w = TakeSignals(set);
  CHECK(w.count("host.cgroup_periods") == 0);
}

TEST_CASE("the host sampler with nothing to read samples nothing and does not fail", "[hw]") {
  FakeTree t;
  HostSampler host((t.root() + "/proc").c_str(), (t.root() + "/sys").c_str());
  SignalSet set;
  host.Sample(set);
  host.Sample(set);
  auto w = TakeSignals(set);
  w.erase("host.involuntary_switches");  // getrusage and the affinity are the process's own
  w.erase("host.process_cpu_ns");
  w.erase("host.cpus");
  CHECK(w.empty());
}
