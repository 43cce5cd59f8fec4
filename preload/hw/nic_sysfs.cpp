#include "preload/hw/nic_sysfs.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "preload/hw/text_file.h"

namespace perftracker::preload::hw {
namespace {

using format::SignalKind;

// A counter signal: the files summed (relative to the port or interface directory), and the
// unit of their values in the signal's unit (IB data counters count 4-byte words).
struct CounterSpec {
  const char* name;
  const char* files[4];
  uint64_t scale;
};

constexpr CounterSpec kIbCounters[] = {
    {"nic.rx_bytes", {"counters/port_rcv_data"}, 4},
    {"nic.tx_bytes", {"counters/port_xmit_data"}, 4},
    {"nic.rx_packets", {"counters/port_rcv_packets"}, 1},
    {"nic.tx_packets", {"counters/port_xmit_packets"}, 1},
    {"nic.rx_errors",
     {"counters/port_rcv_errors", "counters/port_rcv_remote_physical_errors",
      "counters/port_rcv_switch_relay_errors"},
     1},
    // Receive buffers overrun at the port, and mlx5's packets dropped for want of a receive WQE.
    {"nic.rx_discards",
     {"counters/excessive_buffer_overrun_errors", "hw_counters/out_of_buffer"},
     1},
    {"nic.tx_discards", {"counters/port_xmit_discards"}, 1},
    {"nic.link_errors",
     {"counters/symbol_error", "counters/link_error_recovery", "counters/link_downed",
      "counters/local_link_integrity_errors"},
     1},
    {"nic.ecn_marked", {"hw_counters/np_ecn_marked_roce_packets"}, 1},
    {"nic.cnp_sent", {"hw_counters/np_cnp_sent"}, 1},
    {"nic.cnp_handled", {"hw_counters/rp_cnp_handled"}, 1},
};

constexpr CounterSpec kNetdevCounters[] = {
    {"nic.rx_bytes", {"statistics/rx_bytes"}, 1},
    {"nic.tx_bytes", {"statistics/tx_bytes"}, 1},
    {"nic.rx_packets", {"statistics/rx_packets"}, 1},
    {"nic.tx_packets", {"statistics/tx_packets"}, 1},
    {"nic.rx_errors", {"statistics/rx_errors"}, 1},
    {"nic.tx_errors", {"statistics/tx_errors"}, 1},
    {"nic.rx_discards", {"statistics/rx_dropped"}, 1},
    {"nic.tx_discards", {"statistics/tx_dropped"}, 1},
};

// The entries of `dir` (not . and ..), sorted: the same order on every rank of a node.
std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

template <size_t N>
std::vector<NicSampler::Counter> Counters(const std::string& dir, const CounterSpec (&specs)[N]);

}  // namespace

bool ParseIbRate(std::string_view text, double* gbps) {
  const std::string number(text.substr(0, text.find(' ')));
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  if (number.empty() || *end != '\0' || text.find("Gb/sec") == std::string_view::npos) {
    return false;
  }
  *gbps = v;
  return true;
}

bool ParseIbState(std::string_view text, uint64_t* state) {
  return text.find(':') != std::string_view::npos && ParseU64(text, state);
}

NcclDeviceFilter ParseNcclDeviceFilter(const char* text) {
  NcclDeviceFilter f;
  if (text == nullptr || *text == '\0') return f;
  f.set = true;
  std::string_view s(text);
  if (!s.empty() && s[0] == '^') f.exclude = true, s.remove_prefix(1);
  if (!s.empty() && s[0] == '=') f.exact = true, s.remove_prefix(1);
  while (!s.empty()) {
    const size_t comma = std::min(s.find(','), s.size());
    std::string_view item = s.substr(0, comma);
    s.remove_prefix(std::min(comma + 1, s.size()));
    NcclDeviceFilter::Item it;
    if (const size_t colon = item.find(':'); colon != std::string_view::npos) {
      uint64_t port = 0;
      if (ParseU64(item.substr(colon + 1), &port)) it.port = static_cast<int>(port);
      item = item.substr(0, colon);
    }
    it.name = item;
    if (!it.name.empty()) f.items.push_back(std::move(it));
  }
  return f;
}

bool NcclDeviceFilter::Matches(std::string_view name, int port) const {
  if (!set) return true;
  bool listed = false;
  for (const Item& it : items) {
    const bool named = exact ? name == it.name : name.substr(0, it.name.size()) == it.name;
    if (named && (it.port < 0 || port < 0 || it.port == port)) listed = true;
  }
  return listed != exclude;
}

namespace {

template <size_t N>
std::vector<NicSampler::Counter> Counters(const std::string& dir, const CounterSpec (&specs)[N]) {
  std::vector<NicSampler::Counter> counters;
  for (const CounterSpec& spec : specs) {
    NicSampler::Counter c{spec.name, {}, spec.scale};
    for (const char* file : spec.files) {
      if (file != nullptr && Exists(dir + "/" + file)) c.files.push_back(dir + "/" + file);
    }
    if (!c.files.empty()) counters.push_back(std::move(c));
  }
  return counters;
}

}  // namespace

NicSampler::NicSampler(const char* sysfs_root, const char* ib_hca, const char* socket_ifname,
                       bool ib_disabled) {
  const std::string ib_root = Rooted(sysfs_root, "/sys", "/class/infiniband");
  has_infiniband_ = !List(ib_root).empty();
  if (!ib_disabled) AddIbPorts(ib_root, ParseNcclDeviceFilter(ib_hca));
  AddNetdevs(Rooted(sysfs_root, "/sys", "/class/net"), ParseNcclDeviceFilter(socket_ifname));
}

void NicSampler::AddIbPorts(const std::string& root, const NcclDeviceFilter& filter) {
  for (const std::string& dev : List(root)) {
    const std::string ports = root + "/" + dev + "/ports";
    for (const std::string& port : List(ports)) {
      uint64_t number = 0;
      if (!ParseU64(port, &number) || !filter.Matches(dev, static_cast<int>(number))) continue;
      if (nics_.size() >= kMaxInstances) return;
      const std::string dir = ports + "/" + port;
      Instance nic;
      nic.device = dev + "/" + port;
      nic.ib = true;
      nic.rate = dir + "/rate";
      nic.state = dir + "/state";
      nic.counters = Counters(dir, kIbCounters);
      nics_.push_back(std::move(nic));
    }
  }
}

// Without NCCL_SOCKET_IFNAME: the physical interfaces (a `device` link: not lo, veth, bridges,
// docker, ifb), as NCCL's own default skips the virtual ones.
void NicSampler::AddNetdevs(const std::string& root, const NcclDeviceFilter& filter) {
  for (const std::string& name : List(root)) {
    const std::string dir = root + "/" + name;
    const bool chosen = filter.set ? filter.Matches(name) : name != "lo" && Exists(dir + "/device");
    if (!chosen) continue;
    if (nics_.size() >= kMaxInstances) return;
    Instance nic;
    nic.device = name;
    nic.rate = dir + "/speed";
    nic.state = dir + "/operstate";
    nic.counters = Counters(dir, kNetdevCounters);
    nics_.push_back(std::move(nic));
  }
}

std::vector<std::string> NicSampler::Devices() const {
  std::vector<std::string> devices;
  for (const Instance& nic : nics_) devices.push_back(nic.device);
  return devices;
}

void NicSampler::Sample(SignalSet& s) {
  if (!interned_) {
    interned_ = true;
    for (Instance& nic : nics_) {
      nic.rate_id = s.Intern("nic.rate_gbps", nic.device, SignalKind::kGauge);
      nic.up_id = s.Intern("nic.up", nic.device, SignalKind::kGauge);
      for (Counter& c : nic.counters) c.id = s.Intern(c.name, nic.device, SignalKind::kCounter);
    }
  }
  for (Instance& nic : nics_) SampleInstance(s, nic);
}

void NicSampler::SampleInstance(SignalSet& s, Instance& nic) {
  if (auto text = ReadText(nic.rate.c_str(), buf_, sizeof buf_)) {
    double gbps = 0;
    uint64_t mbps = 0;
    if (nic.ib ? ParseIbRate(*text, &gbps) : ParseU64(*text, &mbps)) {
      s.AddGauge(nic.rate_id, nic.ib ? gbps : static_cast<double>(mbps) / 1000.0);
    }
  }
  if (auto text = ReadText(nic.state.c_str(), buf_, sizeof buf_)) {
    uint64_t state = 0;
    if (nic.ib && ParseIbState(*text, &state)) s.AddGauge(nic.up_id, state == 4 ? 1 : 0);
    if (!nic.ib) s.AddGauge(nic.up_id, text->substr(0, 2) == "up" ? 1 : 0);
  }
  for (Counter& c : nic.counters) {
    uint64_t sum = 0;
    bool all = true;
    for (const std::string& file : c.files) {
      uint64_t v = 0;
      auto text = ReadText(file.c_str(), buf_, sizeof buf_);
      all = all && text && ParseU64(*text, &v);
      sum += v;
    }
    // A file that could not be read this time: no sample (a partial sum would look like a reset).
    if (all) s.AddCounter(c.id, sum * c.scale);
  }
}

}  // namespace perftracker::preload::hw
