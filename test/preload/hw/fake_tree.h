// A fake sysfs/procfs tree in a temporary directory, for the samplers' tests. Files are
// replaced by rename, as a test that changes counters between two samples would.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "preload/core/signal_set.h"

namespace perftracker::test {

class FakeTree {
 public:
  FakeTree() {
    char name[] = "/tmp/pt-hw-XXXXXX";
    root_ = mkdtemp(name);
  }
  ~FakeTree() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  const std::string& root() const { return root_; }
  std::string Path(const std::string& rel) const { return root_ + "/" + rel; }

  // Writes `text` to root/rel (directories created), through a rename.
  void Write(const std::string& rel, const std::string& text) const {
    const std::filesystem::path path = Path(rel);
    std::filesystem::create_directories(path.parent_path());
    const std::string tmp = path.string() + ".new";
    std::ofstream(tmp) << text;
    std::filesystem::rename(tmp, path);
  }
  void Dir(const std::string& rel) const { std::filesystem::create_directories(Path(rel)); }

 private:
  std::string root_;
};

// A host with procfs and sysfs files for every sampler: one IB port (mlx5_0/1), one physical
// interface (eth0), lo and a veth (skipped), a cgroup v2 with CPU limits.
inline void WriteHost(const FakeTree& t) {
  t.Write("proc/stat", "cpu  100 0 100 700 50 0 0 50 0 0\ncpu0 100 0 100 700 50 0 0 50 0 0\n");
  t.Write("proc/loadavg", "3.50 2.00 1.00 5/300 4242\n");
  t.Write("proc/self/cgroup", "0::/job.slice/rank0\n");
  t.Write("sys/fs/cgroup/job.slice/rank0/cpu.stat",
          "usage_usec 5000\nnr_periods 10\nnr_throttled 2\nthrottled_usec 300\n");
  for (const char* psi : {"cpu", "memory", "io"}) {
    t.Write(std::string("proc/pressure/") + psi,
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=1000\n"
            "full avg10=0.00 avg60=0.00 avg300=0.00 total=500\n");
  }
  const std::string ib = "sys/class/infiniband/mlx5_0/ports/1/";
  t.Write(ib + "rate", "100 Gb/sec (4X EDR)\n");
  t.Write(ib + "state", "4: ACTIVE\n");
  t.Write(ib + "counters/port_rcv_data", "1000\n");
  t.Write(ib + "counters/port_xmit_data", "2000\n");
  t.Write(ib + "counters/symbol_error", "0\n");
  t.Write(ib + "counters/link_downed", "1\n");
  t.Write(ib + "hw_counters/np_cnp_sent", "5\n");
  for (const char* dev : {"eth0", "lo", "veth1"}) {
    const std::string net = std::string("sys/class/net/") + dev + "/";
    t.Write(net + "speed", "25000\n");
    t.Write(net + "operstate", "up\n");
    t.Write(net + "statistics/rx_bytes", "100\n");
    t.Write(net + "statistics/rx_dropped", "0\n");
  }
  t.Dir("sys/class/net/eth0/device");
}

// The window's signals by "name" (the host's) or "name@device".
inline std::map<std::string, format::Signal> TakeSignals(preload::SignalSet& set) {
  std::vector<format::Signal> out;
  set.TakeWindow(&out);
  std::map<std::string, format::Signal> by_name;
  for (const format::Signal& s : out) {
    by_name[s.name + (s.device.empty() ? "" : "@" + s.device)] = s;
  }
  return by_name;
}

}  // namespace perftracker::test
