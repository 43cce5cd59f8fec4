// NIC signals from sysfs: InfiniBand ports (counters, hw_counters, rate, state) and network
// interfaces (statistics, speed, operstate), for the NICs NCCL uses when the environment says
// which (NCCL_IB_HCA, NCCL_SOCKET_IFNAME), else every IB port and physical interface.
// Writer thread only (signals.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "preload/core/signal_set.h"

namespace perftracker::preload::hw {

// "100 Gb/sec (4X EDR)" -> 100.
bool ParseIbRate(std::string_view text, double* gbps);
// "4: ACTIVE" -> 4 (the port's state number; 4 is active).
bool ParseIbState(std::string_view text, uint64_t* state);

// NCCL's device list syntax (NCCL_IB_HCA, NCCL_SOCKET_IFNAME): comma-separated names, each with
// an optional `:port`; a leading `^` excludes the list instead, a leading `=` (after `^` if
// both) matches names exactly instead of by prefix. Unset or empty: `set` false, all match.
struct NcclDeviceFilter {
  struct Item {
    std::string name;
    int port = -1;  // -1: every port
  };
  bool set = false, exclude = false, exact = false;
  std::vector<Item> items;
  bool Matches(std::string_view name, int port = -1) const;
};
NcclDeviceFilter ParseNcclDeviceFilter(const char* text);

class NicSampler {
 public:
  static constexpr size_t kMaxInstances = 16;
  // One counter signal of an instance: the values of `files` summed, times `scale`.
  struct Counter {
    const char* name;
    std::vector<std::string> files;  // summed
    uint64_t scale;
    SignalId id = kNoSignal;
  };

  // Lists the NICs once (sysfs root: PERFTRACKER_SYSFS_ROOT, null for /sys). `ib_hca`,
  // `socket_ifname`: the NCCL variables' values (null: unset); `ib_disabled`: NCCL_IB_DISABLE=1.
  NicSampler(const char* sysfs_root, const char* ib_hca, const char* socket_ifname,
             bool ib_disabled);
  void Sample(SignalSet& signals);

  // A device under class/infiniband (whether or not one was selected).
  bool has_infiniband() const { return has_infiniband_; }
  // The instances sampled: "mlx5_0/1", "eth0".
  std::vector<std::string> Devices() const;

 private:
  struct Instance {
    std::string device;
    bool ib = false;
    std::string rate, state;  // ib: rate, state; netdev: speed, operstate
    SignalId rate_id = kNoSignal, up_id = kNoSignal;
    std::vector<Counter> counters;
  };
  void AddIbPorts(const std::string& root, const NcclDeviceFilter& filter);
  void AddNetdevs(const std::string& root, const NcclDeviceFilter& filter);
  void SampleInstance(SignalSet& signals, Instance& nic);

  std::vector<Instance> nics_;
  bool has_infiniband_ = false;
  bool interned_ = false;
  char buf_[256];
};

}  // namespace perftracker::preload::hw
