#include "analyzer/verdict/signals.h"

#include <algorithm>
#include <map>
#include <set>

#include "analyzer/detect/peers.h"
#include "analyzer/verdict/candidate.h"
#include "analyzer/base/stats.h"

namespace perftracker::analyzer {
namespace {

struct Value {
  double value = 0;
  uint64_t bits = 0;
  std::string device;
};

// One rank's value of a signal over its windows, in the spec's unit: a gauge's mean, a
// counter's rate, a flag set's bits. Over several devices (NICs) the worst one stands for the
// rank, and counters add up.
bool ValueOf(const RankData& r, std::string_view name, const SignalSpec& spec, Value* out) {
  bool any = false;
  double best_part = -1;
  for (const SignalTotal& t : r.signals) {
    if (t.name != name) continue;
    double v = 0;
    if (t.kind == format::SignalKind::kFlags) {
      out->bits |= t.bits;
      if (!any || t.bits != 0) out->device = t.device;
      any = true;
      continue;
    }
    if (t.kind == format::SignalKind::kCounter) {
      if (t.window_ns <= 0) continue;
      v = t.sum / t.window_ns * 1e9;
      if (spec.unit == SignalUnit::kStallShare) v /= 1e7;  // ns per s -> percent of the time
      if (v > best_part) best_part = v, out->device = t.device;
      out->value = any ? out->value + v : v;
      any = true;
      continue;
    }
    if (t.samples == 0) continue;
    v = t.sum / static_cast<double>(t.samples);
    const bool worse = !any || (spec.worse < 0 ? v < out->value : v > out->value);
    if (worse) out->value = v, out->device = t.device;
    any = true;
  }
  if (spec.unit == SignalUnit::kFlags) out->value = static_cast<double>(out->bits);
  return any;
}

// The ranks (or hosts, for node-wide signals) compared, each with its value.
struct Unit {
  std::vector<int> ranks;
  std::string host;
  Value value;
  double max = 0;
};

std::vector<Unit> UnitsOf(const Dataset& ds, std::string_view name, const SignalSpec& spec) {
  std::vector<Unit> units;
  std::map<std::string, size_t> by_host;
  for (const RankData& r : ds.ranks) {
    Value v;
    if (!ValueOf(r, name, spec, &v)) continue;
    Value max;
    const double max_value =
        !spec.max_name.empty() && ValueOf(r, spec.max_name, SpecOf(spec.max_name), &max) ? max.value
                                                                                         : 0;
    if (spec.node_wide) {
      const auto [it, fresh] = by_host.emplace(r.identity.hostname, units.size());
      if (!fresh) {
        units[it->second].ranks.push_back(r.rank());
        continue;
      }
    }
    units.push_back(Unit{{r.rank()}, r.identity.hostname, std::move(v), max_value});
  }
  return units;
}

std::string Where(const Unit& u, const SignalSpec& spec) {
  if (!spec.node_wide) return "rank " + std::to_string(u.ranks.front());
  return "host " + u.host + " (rank" + (u.ranks.size() == 1 ? " " : "s ") + RankListLabel(u.ranks) +
         ")";
}

SignalDeviation Deviation(std::string_view name, const SignalSpec& spec, const Unit& u,
                          double peers) {
  SignalDeviation d;
  d.name = name;
  d.scope = spec.scope;
  d.ranks = u.ranks;
  if (spec.node_wide) d.host = u.host;
  d.device = u.value.device;
  d.value = u.value.value;
  d.peers = peers;
  d.max = u.max;
  d.text = Where(u, spec) + ": ";
  if (spec.unit == SignalUnit::kFlags) {
    d.text += std::string(spec.label) + ": " + ThrottleReasons(u.value.bits) +
              " (peers: " + ThrottleReasons(static_cast<uint64_t>(peers)) + ")";
  } else {
    d.text += std::string(spec.label) + " " + FormatSignal(spec, d.value) + " vs peers " +
              FormatSignal(spec, peers);
    if (d.max > 0) d.text += " (max " + FormatSignal(spec, d.max) + ")";
  }
  if (!d.device.empty() && spec.node_wide) d.text += " on " + d.device;
  return d;
}

// Throttle reasons: a rank deviates by the slowing reasons most of its peers do not have.
void FlagDeviations(std::string_view name, const SignalSpec& spec, const std::vector<Unit>& units,
                    std::vector<SignalDeviation>* out) {
  uint64_t majority = 0;
  for (int bit = 0; bit < 64; ++bit) {
    const uint64_t mask = uint64_t{1} << bit;
    const size_t have = static_cast<size_t>(std::count_if(
        units.begin(), units.end(), [&](const Unit& u) { return (u.value.bits & mask) != 0; }));
    if (2 * have > units.size()) majority |= mask;
  }
  for (const Unit& u : units) {
    if ((u.value.bits & kSlowingReasons & ~majority) != 0) {
      out->push_back(Deviation(name, spec, u, static_cast<double>(majority)));
    }
  }
}

// Numbers: a minority of units worse than the healthy half's median by more than the spec's
// floor and share. The reference is the better half, so that one bad node of two still stands
// out against the good one (with the plain median, both would sit half-way).
void NumberDeviations(std::string_view name, const SignalSpec& spec, bool known,
                      const std::vector<Unit>& units, std::vector<SignalDeviation>* out) {
  std::vector<double> values;
  for (const Unit& u : units) values.push_back(u.value.value);
  std::sort(values.begin(), values.end());
  const size_t half = (values.size() + 1) / 2;
  std::vector<double> better =
      spec.worse > 0 ? std::vector<double>(values.begin(), values.begin() + static_cast<long>(half))
      : spec.worse < 0 ? std::vector<double>(values.end() - static_cast<long>(half), values.end())
                       : values;
  const double ref = Median(better);
  const double threshold = std::max(spec.floor, spec.relative * std::abs(ref));
  auto deviates = [&](double v) {
    const double excess = spec.worse > 0 ? v - ref : spec.worse < 0 ? ref - v : std::abs(v - ref);
    return excess > threshold && (known || excess > 0);
  };
  std::vector<double> peers;
  std::vector<const Unit*> flagged;
  for (const Unit& u : units) {
    if (deviates(u.value.value)) {
      flagged.push_back(&u);
    } else {
      peers.push_back(u.value.value);
    }
  }
  if (flagged.empty() || 2 * flagged.size() > units.size()) return;  // everyone is no outlier
  const double peer_median = Median(peers);
  for (const Unit* u : flagged) out->push_back(Deviation(name, spec, *u, peer_median));
}

}  // namespace

Json SignalDeviation::ToJson() const {
  Json j = {{"signal", name}, {"ranks", ranks}, {"value", value}, {"peers", peers}};
  if (!host.empty()) j["host"] = host;
  if (!device.empty()) j["device"] = device;
  if (max > 0) j["max"] = max;
  j["text"] = text;
  return j;
}

std::vector<SignalDeviation> SignalDeviations(const Dataset& ds) {
  std::set<std::string> names;
  for (const RankData& r : ds.ranks) {
    for (const SignalTotal& t : r.signals) names.insert(t.name);
  }
  std::vector<SignalDeviation> out;
  for (const std::string& name : names) {
    bool known = false;
    const SignalSpec spec = SpecOf(name, &known);
    if (known && spec.worse == 0) continue;  // informational: traffic, maxima, power draw
    const std::vector<Unit> units = UnitsOf(ds, name, spec);
    if (units.size() < 2) continue;
    if (spec.unit == SignalUnit::kFlags) {
      FlagDeviations(name, spec, units, &out);
    } else {
      NumberDeviations(name, spec, known, units, &out);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const SignalDeviation& a, const SignalDeviation& b) {
    return a.ranks.front() < b.ranks.front();
  });
  return out;
}

std::vector<SignalDeviation> AttachSignals(std::vector<SignalDeviation> deviations,
                                           std::vector<Candidate>* candidates) {
  std::vector<SignalDeviation> unexplained;
  for (SignalDeviation& d : deviations) {
    bool used = false;
    for (Candidate& c : *candidates) {
      const bool overlaps = std::any_of(d.ranks.begin(), d.ranks.end(), [&](int r) {
        return std::find(c.rank_set.begin(), c.rank_set.end(), r) != c.rank_set.end();
      });
      if (!overlaps || !Explains(d.scope, c.category)) continue;
      if (!c.evidence.contains("signals")) c.evidence["signals"] = Json::array();
      c.evidence["signals"].push_back(d.ToJson());
      used = true;
    }
    if (!used) unexplained.push_back(std::move(d));
  }
  return unexplained;
}

}  // namespace perftracker::analyzer
