#include "core/config.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <utility>

namespace simgpu {
namespace {

void Read(const char* env, double* value) {
  if (const char* s = std::getenv(env); s && *s) *value = std::strtod(s, nullptr);
}
void Read(const char* env, int64_t* value) {
  if (const char* s = std::getenv(env); s && *s) *value = std::strtoll(s, nullptr, 10);
}
void Read(const char* env, std::string* value) {
  if (const char* s = std::getenv(env)) *value = s;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, sep);) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

bool ParseInt(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtoll(s.c_str(), &end, 10);
  return *end == '\0';
}

bool ParseDouble(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return *end == '\0' && *out >= 0.0;
}

// "3", "0-3" or "*".
bool ParseRankRange(const std::string& s, int64_t* first, int64_t* last) {
  if (s == "*") {
    *first = 0;
    *last = INT64_MAX;
    return true;
  }
  size_t dash = s.find('-');
  if (dash == std::string::npos) return ParseInt(s, first) && ParseInt(s, last);
  return ParseInt(s.substr(0, dash), first) && ParseInt(s.substr(dash + 1), last);
}

void Warn(const char* env, const std::string& value) {
  std::fprintf(stderr, "simgpu: ignoring malformed %s='%s' (see test/simgpu/README.md)\n", env,
               value.c_str());
}

void PrintConfig(const Config& c) {
#define SIMGPU_PRINT_FIELD(field, type, env, def, doc) \
  std::fprintf(stderr, "simgpu: %s=%s\n", env, ToText(c.field).c_str());
  auto ToText = [](const auto& v) {
    std::ostringstream out;
    out << v;
    return out.str();
  };
  SIMGPU_KNOBS(SIMGPU_PRINT_FIELD)
#undef SIMGPU_PRINT_FIELD
}

Config Load() {
  Config c;
#define SIMGPU_READ_FIELD(field, type, env, def, doc) Read(env, &c.field);
  SIMGPU_KNOBS(SIMGPU_READ_FIELD)
#undef SIMGPU_READ_FIELD
  if (!(c.time_scale > 0.0)) c.time_scale = 1.0;
  c.time_scale_ppm = std::max<int64_t>(1, std::llround(c.time_scale * 1e6));
  if (!ParseRankFactors(c.compute_slowdown, &c.compute_factors)) {
    Warn("SIMGPU_COMPUTE_SLOWDOWN", c.compute_slowdown);
  }
  if (!ParseRankFactors(c.pcie_slowdown, &c.pcie_factors)) {
    Warn("SIMGPU_PCIE_SLOWDOWN", c.pcie_slowdown);
  }
  if (!ParseKernelFactors(c.kernel_slowdown, &c.kernel_factors)) {
    Warn("SIMGPU_KERNEL_SLOWDOWN", c.kernel_slowdown);
  }
  if (!ParseLinkFactors(c.link_factor, &c.link_factors)) Warn("SIMGPU_LINK_FACTOR", c.link_factor);
  if (!ParseOpFault(c.hang, &c.hang_fault)) Warn("SIMGPU_HANG", c.hang);
  if (!ParseOpFault(c.stall, &c.stall_fault)) Warn("SIMGPU_STALL", c.stall);
  if (c.rank < 0) {
    c.rank = 0;
    Read("RANK", &c.rank);
  }
  if (c.ranks_per_node <= 0) {
    c.ranks_per_node = 8;
    Read("LOCAL_WORLD_SIZE", &c.ranks_per_node);
    if (c.ranks_per_node <= 0) c.ranks_per_node = 8;
  }
  if (c.verbose) PrintConfig(c);
  return c;
}

}  // namespace

const Config& GetConfig() {
  // Leaked on purpose: device threads may still read it while static destructors run at exit.
  static const Config* config = new Config(Load());
  return *config;
}

int64_t ProcessRank() { return GetConfig().rank; }

int64_t NodeOf(int64_t global_rank) { return global_rank / GetConfig().ranks_per_node; }

double FactorFor(const std::vector<RankFactor>& factors, int64_t rank, int64_t ops) {
  double factor = 1.0;
  for (const RankFactor& f : factors) {
    if (rank >= f.first && rank <= f.last && ops >= f.from_op && ops < f.to_op) {
      factor *= f.factor;
    }
  }
  return factor;
}

double FactorFor(const std::vector<KernelFactor>& factors, const char* name) {
  double factor = 1.0;
  for (const KernelFactor& f : factors) {
    if (name && std::strstr(name, f.name_part.c_str())) factor *= f.factor;
  }
  return factor;
}

namespace {
// In the core library, one per process: libnccl counts ops, libcudart reads the count.
std::atomic<int64_t> g_ops_issued{0};
}  // namespace

int64_t OpsIssued() { return g_ops_issued.load(std::memory_order_relaxed); }
int64_t NextOpNumber() { return g_ops_issued.fetch_add(1, std::memory_order_relaxed); }

bool ParseRankFactors(const std::string& spec, std::vector<RankFactor>* out) {
  out->clear();
  for (const std::string& entry : Split(spec, ',')) {
    size_t eq = entry.find('=');
    RankFactor f;
    std::string value = eq == std::string::npos ? "" : entry.substr(eq + 1);
    bool ok = eq != std::string::npos && ParseRankRange(entry.substr(0, eq), &f.first, &f.last);
    if (size_t at = value.find('@'); ok && at != std::string::npos) {
      // "@A" (from op A on), "@A-" (the same) or "@A-B" (ops A to B-1).
      const std::string ops = value.substr(at + 1);
      value.resize(at);
      const size_t dash = ops.find('-');
      ok = ParseInt(ops.substr(0, dash), &f.from_op) &&
           (dash == std::string::npos || dash + 1 == ops.size() ||
            ParseInt(ops.substr(dash + 1), &f.to_op));
    }
    if (!ok || !ParseDouble(value, &f.factor)) {
      out->clear();
      return false;
    }
    out->push_back(f);
  }
  return true;
}

bool ParseLinkFactors(const std::string& spec, std::vector<LinkFactor>* out) {
  out->clear();
  for (const std::string& entry : Split(spec, ',')) {
    size_t eq = entry.find('=');
    LinkFactor f;
    bool ok = eq != std::string::npos && ParseDouble(entry.substr(eq + 1), &f.factor);
    std::string key = ok ? entry.substr(0, eq) : "";
    if (ok && !key.empty() && key[0] == 'n') {
      ok = ParseInt(key.substr(1), &f.node);
    } else if (ok) {
      size_t dash = key.find('-');
      ok = dash != std::string::npos && ParseInt(key.substr(0, dash), &f.rank_a) &&
           ParseInt(key.substr(dash + 1), &f.rank_b);
    }
    if (!ok) {
      out->clear();
      return false;
    }
    out->push_back(f);
  }
  return true;
}

bool ParseKernelFactors(const std::string& spec, std::vector<KernelFactor>* out) {
  out->clear();
  for (const std::string& entry : Split(spec, ',')) {
    // The last '=' splits: a template argument list may hold one ("Traits<N=128>").
    const size_t eq = entry.rfind('=');
    KernelFactor f;
    if (eq == std::string::npos || eq == 0 || !ParseDouble(entry.substr(eq + 1), &f.factor)) {
      out->clear();
      return false;
    }
    f.name_part = entry.substr(0, eq);
    out->push_back(std::move(f));
  }
  return true;
}

bool ParseOpFault(const std::string& spec, OpFault* out) {
  *out = OpFault{};
  if (spec.empty()) return true;
  std::vector<std::string> parts = Split(spec, ':');
  double ms = -1.0;
  bool ok = (parts.size() == 2 || parts.size() == 3) && ParseInt(parts[0], &out->rank) &&
            ParseInt(parts[1], &out->op) && (parts.size() == 2 || ParseDouble(parts[2], &ms));
  if (!ok) {
    *out = OpFault{};
    return false;
  }
  out->stall_ns = ms < 0 ? -1 : static_cast<int64_t>(ms * 1e6);
  return true;
}

}  // namespace simgpu
