#include "nvml/nvml_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "core/clock.h"
#include "core/config.h"

namespace simgpu::nvml {
namespace {

struct ReasonName {
  const char* name;
  unsigned long long bit;
};

// Every documented clock event reason, under the names the knob accepts.
constexpr ReasonName kReasons[] = {
    {"idle", nvmlClocksEventReasonGpuIdle},
    {"app_clocks", nvmlClocksEventReasonApplicationsClocksSetting},
    {"sw_power", nvmlClocksEventReasonSwPowerCap},
    {"sw_power_cap", nvmlClocksEventReasonSwPowerCap},
    {"hw_slowdown", nvmlClocksThrottleReasonHwSlowdown},
    {"sync_boost", nvmlClocksEventReasonSyncBoost},
    {"sw_thermal", nvmlClocksEventReasonSwThermalSlowdown},
    {"hw_thermal", nvmlClocksThrottleReasonHwThermalSlowdown},
    {"hw_power_brake", nvmlClocksThrottleReasonHwPowerBrakeSlowdown},
    {"display", nvmlClocksEventReasonDisplayClockSetting},
};

constexpr unsigned long long kAllReasons = 0x1ff;

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, sep);) parts.push_back(part);
  return parts;
}

bool ParseInt(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtoll(s.c_str(), &end, 10);
  return *end == '\0' && *out >= 0;
}

bool ParseReason(const std::string& s, unsigned long long* bits) {
  for (const ReasonName& r : kReasons) {
    if (s == r.name) {
      *bits |= r.bit;
      return true;
    }
  }
  if (s.empty()) return false;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(s.c_str(), &end, 0);
  if (*end != '\0' || value == 0 || (value & ~kAllReasons) != 0) return false;
  *bits |= value;
  return true;
}

bool ParseHex(const std::string& s, unsigned long max, unsigned* out) {
  if (s.empty() || s.size() > 8) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  const unsigned long value = std::strtoul(s.c_str(), nullptr, 16);
  if (value > max) return false;
  *out = static_cast<unsigned>(value);
  return true;
}

struct Knobs {
  std::vector<RankBits> throttle;
  std::vector<RankFactor> temperature;
  std::vector<RankFactor> pcie_replays;
  std::vector<RankFactor> ecc;
  std::vector<RankFactor> nvlink_errors;
};

void ParseOrWarn(const char* env, const std::string& spec, std::vector<RankFactor>* out) {
  if (!ParseRankFactors(spec, out)) {
    std::fprintf(stderr, "simgpu: ignoring malformed %s='%s' (see test/simgpu/README.md)\n", env,
                 spec.c_str());
  }
}

Knobs LoadKnobs() {
  const Config& c = GetConfig();
  Knobs k;
  if (!ParseThrottle(c.nvml_throttle, &k.throttle)) {
    std::fprintf(stderr,
                 "simgpu: ignoring malformed SIMGPU_NVML_THROTTLE='%s' (see "
                 "test/simgpu/README.md)\n",
                 c.nvml_throttle.c_str());
  }
  ParseOrWarn("SIMGPU_NVML_TEMP", c.nvml_temp, &k.temperature);
  ParseOrWarn("SIMGPU_NVML_PCIE_REPLAYS", c.nvml_pcie_replays, &k.pcie_replays);
  ParseOrWarn("SIMGPU_NVML_ECC", c.nvml_ecc, &k.ecc);
  ParseOrWarn("SIMGPU_NVML_NVLINK_ERRORS", c.nvml_nvlink_errors, &k.nvlink_errors);
  return k;
}

const Knobs& GetKnobs() {
  static const Knobs* knobs = new Knobs(LoadKnobs());
  return *knobs;
}

// A value knob (temperature, rate): the last entry matching the rank and op count, else
// `fallback`. Unlike FactorFor, entries do not multiply: "3=88" means 88 °C, whatever else says.
double ValueFor(const std::vector<RankFactor>& entries, int64_t rank, double fallback) {
  const int64_t ops = OpsIssued();
  double value = fallback;
  for (const RankFactor& e : entries) {
    if (rank >= e.first && rank <= e.last && ops >= e.from_op && ops < e.to_op) value = e.factor;
  }
  return value;
}

// Counters count from when the process loaded the library: a sampler reads their increase.
const int64_t g_loaded_ns = DeviceNowNs();

}  // namespace

bool ParseThrottle(const std::string& spec, std::vector<RankBits>* out) {
  out->clear();
  for (const std::string& entry : Split(spec, ',')) {
    if (entry.empty()) continue;
    const size_t eq = entry.find('=');
    RankBits r;
    bool ok = eq != std::string::npos;
    if (ok) {
      const std::string range = entry.substr(0, eq);
      const size_t dash = range.find('-');
      if (range == "*") {
        r.first = 0;
        r.last = INT64_MAX;
      } else if (dash == std::string::npos) {
        ok = ParseInt(range, &r.first) && ParseInt(range, &r.last);
      } else {
        ok = ParseInt(range.substr(0, dash), &r.first) && ParseInt(range.substr(dash + 1), &r.last);
      }
    }
    if (ok) {
      const std::vector<std::string> reasons = Split(entry.substr(eq + 1), '+');
      ok = !reasons.empty();
      for (const std::string& reason : reasons) ok = ok && ParseReason(reason, &r.bits);
    }
    if (!ok) {
      out->clear();
      return false;
    }
    out->push_back(r);
  }
  return true;
}

bool ParsePciBusId(const char* text, unsigned* domain, unsigned* bus, unsigned* device,
                   unsigned* function) {
  if (!text) return false;
  std::string s(text);
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::vector<std::string> parts = Split(s, ':');
  if (parts.size() != 2 && parts.size() != 3) return false;
  *domain = 0;
  if (parts.size() == 3 && !ParseHex(parts[0], 0xffffffffUL, domain)) return false;
  if (!ParseHex(parts[parts.size() - 2], 0xff, bus)) return false;
  const std::string& last = parts.back();
  const size_t dot = last.find('.');
  *function = 0;
  if (dot == std::string::npos) {
    // domain:bus:device has no function; bus:device.function must have one.
    return parts.size() == 3 && ParseHex(last, 0x1f, device);
  }
  return ParseHex(last.substr(0, dot), 0x1f, device) && ParseHex(last.substr(dot + 1), 7, function);
}

const std::vector<nvmlDevice_st*>& Devices() {
  static const std::vector<nvmlDevice_st*>* devices = [] {
    const Config& c = GetConfig();
    const int64_t first_rank = NodeOf(ProcessRank()) * c.ranks_per_node;
    auto* list = new std::vector<nvmlDevice_st*>();
    for (int64_t i = 0; i < std::max<int64_t>(0, c.device_count); ++i) {
      auto* d = new nvmlDevice_st();
      d->ordinal = static_cast<unsigned>(i);
      d->rank = first_rank + i;
      d->counted_to_ns = g_loaded_ns;
      list->push_back(d);
    }
    return list;
  }();
  return *devices;
}

bool IsDevice(nvmlDevice_t device) {
  const std::vector<nvmlDevice_st*>& all = Devices();
  return device && std::find(all.begin(), all.end(), device) != all.end();
}

double ComputeFactor(const nvmlDevice_st& device) {
  return FactorFor(GetConfig().compute_factors, device.rank, OpsIssued());
}

unsigned SmClockMhz(const nvmlDevice_st& device) {
  const double factor = ComputeFactor(device);
  // A factor below 1 (a faster rank) cannot boost past the maximum clock.
  return factor > 1.0 ? static_cast<unsigned>(std::lround(kSmClockMaxMhz / factor))
                      : kSmClockMaxMhz;
}

unsigned long long ClockEventReasons(const nvmlDevice_st& device) {
  // A reason without a slower clock would contradict the compute model: none while at speed.
  if (ComputeFactor(device) <= 1.0) return 0;
  unsigned long long bits = 0;
  for (const RankBits& r : GetKnobs().throttle) {
    if (device.rank >= r.first && device.rank <= r.last) bits |= r.bits;
  }
  return bits;
}

unsigned TemperatureC(const nvmlDevice_st& device) {
  // Independent of speed on purpose: a warm GPU that is not slower must be expressible.
  const double c = ValueFor(GetKnobs().temperature, device.rank, kDefaultTemperatureC);
  return static_cast<unsigned>(std::lround(c));
}

unsigned PowerDrawMw(const nvmlDevice_st& device) {
  // Power falls with the clock: a throttled GPU draws less.
  return static_cast<unsigned>(std::lround(kPowerDrawMw / std::max(1.0, ComputeFactor(device))));
}

unsigned PcieWidth(const nvmlDevice_st& device) {
  const double factor = FactorFor(GetConfig().pcie_factors, device.rank, OpsIssued());
  // Links train at power-of-two widths: the widest one at most 16 / factor lanes, at least x1.
  unsigned width = kPcieWidthMax;
  while (width > 1 && width * factor > kPcieWidthMax + 1e-9) width /= 2;
  return width;
}

void ReadCounters(nvmlDevice_st* device, double* pcie_replays, double* ecc_corrected,
                  double* nvlink_errors) {
  const Knobs& k = GetKnobs();
  std::lock_guard<std::mutex> lock(device->mu);
  const int64_t now = DeviceNowNs();
  const double seconds = std::max<int64_t>(0, now - device->counted_to_ns) * 1e-9;
  device->counted_to_ns = std::max(now, device->counted_to_ns);
  device->pcie_replays += seconds * ValueFor(k.pcie_replays, device->rank, 0);
  device->ecc_corrected += seconds * ValueFor(k.ecc, device->rank, 0);
  device->nvlink_errors += seconds * ValueFor(k.nvlink_errors, device->rank, 0);
  *pcie_replays = device->pcie_replays;
  *ecc_corrected = device->ecc_corrected;
  *nvlink_errors = device->nvlink_errors;
}

}  // namespace simgpu::nvml
