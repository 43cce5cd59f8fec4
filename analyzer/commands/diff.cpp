// perftracker diff BASE_DIR CUR_DIR [--threshold PCT] [--json PATH|-]: per-function, per-collective
// and step-time regressions of CUR against BASE, for CI.
//
// Each metric is a distribution: one value per rank and slot. A metric regressed when its median
// grew by more than the threshold AND by more than the noise of the two runs (3 x the larger
// robust spread over the square root of the sample count, at least 1% of the base; also the
// spread of the slots' medians over the square root of the slot count: a loaded host slows every
// rank of a slot at once, so ranks are not independent samples of a run), AND by at least 0.5% of
// the base step time (functions and collectives that cost the step nothing do not fail builds; a
// collective's per-call change counts times its calls a step). Functions are joined by their
// stable id, collectives by (op, bytes, communicator size, point-to-point or not): communicator
// ids differ between runs.
// Beside them, the causes: the analysis `analyze` runs, on both runs, and the candidates that are
// new or grew in CUR (diff_causes.h), printed first. They explain regressions and never change
// the exit status: 1 on a regression, 0 otherwise, 2 on usage or unreadable input.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <vector>

#include "analyzer/commands/cli.h"
#include "analyzer/commands/command_line.h"
#include "analyzer/commands/diff_causes.h"
#include "analyzer/ingest/ingest.h"
#include "analyzer/base/progress.h"
#include "analyzer/commands/analyze.h"
#include "analyzer/base/format_text.h"
#include "analyzer/report/report.h"
#include "analyzer/base/stats.h"

namespace perftracker::analyzer {
namespace {

struct Quantity {
  std::string name, kind;
  std::vector<double> values;  // ns per iteration (per call for collectives)
  std::map<uint64_t, std::vector<double>> by_slot;  // the same values by slot key
  std::vector<double> calls;  // collectives: calls per iteration, per rank and slot

  void Add(uint64_t slot, double v) {
    values.push_back(v);
    by_slot[slot].push_back(v);
  }
};

struct Profile {
  std::map<std::string, Quantity> metrics;
  double step_ns = 0;
  size_t ranks = 0;
};

// One value per (rank, slot): cost per iteration in that slot. Slot-to-slot variation is part of
// the noise, so a function that runs once in a while (a full GC, a checkpoint) has a wide
// distribution and a median near zero, and never fails a build on one unlucky occurrence.
void ProfileFunctions(const Dataset& ds, const RankData& r, Profile* p) {
  const auto& fns = ds.catalog.functions();
  for (size_t i = 0; i < fns.size(); ++i) {
    const bool device = fns[i].kind == format::FunctionKind::kKernel ||
                        fns[i].kind == format::FunctionKind::kMemcpy;
    char key[32];
    std::snprintf(key, sizeof key, "f%016llx", static_cast<unsigned long long>(fns[i].id));
    Quantity& m = p->metrics[key];
    m.name = fns[i].name;
    m.kind = std::string(format::KindName(fns[i].kind));
    for (const Slot& s : r.slots) {
      if (s.iterations == 0) continue;
      const double v = i >= s.functions.size() ? 0
                       : device               ? s.functions[i].device_est_ns
                                              : s.functions[i].self_ns;
      m.Add(s.key, v / s.iterations);
    }
  }
}

// One value per (rank, slot), as for functions: a collective takes the same time on every rank
// of its communicator (they finish together), so the ranks alone show no noise at all, while a
// loaded host moves it from slot to slot.
void ProfileCollectives(const Dataset& ds, const RankData& r, Profile* p) {
  const auto& cs = ds.catalog.collectives();
  struct Sum {
    double device_ns = 0, samples = 0, calls = 0;
    std::string name;
  };
  for (const Slot& s : r.slots) {
    if (s.iterations == 0) continue;
    std::map<std::string, Sum> sums;  // key -> this slot's sums
    for (size_t i = 0; i < s.collectives.size() && i < cs.size(); ++i) {
      const CollectiveInfo& c = cs[i];
      // Appended, not "c" + std::string&&: GCC 12 at -O3 warns (-Wrestrict) on the prepend into
      // a temporary, a false positive (GCC bug 105329).
      std::string key = "c";
      key += std::to_string(static_cast<int>(c.op)) + ":" + std::to_string(c.bytes) + ":" +
             std::to_string(c.comm_size) + (c.peer >= 0 ? ":p2p" : "");
      Sum& sum = sums[key];
      sum.device_ns += s.collectives[i].device_ns;
      sum.samples += s.collectives[i].device_samples;
      sum.calls += s.collectives[i].count;
      sum.name = c.name + " (" + std::to_string(c.bytes) + " B)";
    }
    for (const auto& [key, sum] : sums) {
      if (sum.samples <= 0) continue;
      Quantity& m = p->metrics[key];
      m.name = sum.name;
      m.kind = "collective";
      m.Add(s.key, sum.device_ns / sum.samples);
      m.calls.push_back(sum.calls / s.iterations);
    }
  }
}

Profile MakeProfile(const Dataset& ds) {
  Profile p;
  p.ranks = ds.ranks.size();
  Quantity& step = p.metrics["step"];
  step.name = "step time";
  step.kind = "iteration";
  std::vector<double> steady;  // per rank, as analyze reports it: one definition of the step
  for (const RankData& r : ds.ranks) {
    // Start-up's slot (imports, compilation, first allocations) is no step of the job's.
    const uint64_t startup = r.StartupBegin();
    bool any = false;
    for (const Slot& s : r.slots) {
      if (s.iterations > 0 && s.iter_begin != startup) {
        step.Add(s.key, s.MeanIterationNs());
        any = true;
      }
    }
    if (any) steady.push_back(SteadyIteration(r));
    ProfileFunctions(ds, r, &p);
    ProfileCollectives(ds, r, &p);
  }
  p.step_ns = MedianOf(steady);
  return p;
}

struct Change {
  std::string name, kind;
  double base = 0, current = 0, change_pct = 0, noise = 0;
};

// The spread of a metric's per-slot medians over the square root of their number; 0 with fewer
// than three slots.
double SlotSpread(const Quantity& m) {
  if (m.by_slot.size() < 3) return 0;
  std::vector<double> medians;
  for (const auto& [key, v] : m.by_slot) medians.push_back(MedianOf(v));
  const double med = MedianOf(medians);
  return RobustSigma(medians, med) / std::sqrt(double(medians.size()));
}

std::optional<Change> Compare(const Quantity& b, const Quantity& c, double threshold_pct,
                              double base_step) {
  if (b.values.empty() || c.values.empty()) return std::nullopt;
  Change ch{b.name, b.kind, MedianOf(b.values), MedianOf(c.values), 0, 0};
  const double spread =
      std::max({RobustSigma(b.values, ch.base) / std::sqrt(double(b.values.size())),
                RobustSigma(c.values, ch.current) / std::sqrt(double(c.values.size())),
                SlotSpread(b), SlotSpread(c)});
  ch.noise = std::max(3 * spread, 0.01 * ch.base);
  const double delta = ch.current - ch.base;
  ch.change_pct = ch.base > 0 ? 100 * delta / ch.base : (delta > 0 ? 1e9 : 0);
  // A collective's per-call change, times its calls a step, is what the step pays.
  const double per_step = b.kind == "collective" ? delta * MedianOf(b.calls) : delta;
  const bool matters = b.kind == "iteration" || per_step >= 0.005 * base_step;
  if (std::abs(ch.change_pct) <= threshold_pct || std::abs(delta) <= ch.noise || !matters) {
    return std::nullopt;
  }
  return ch;
}

struct DiffOptions {
  std::string base, cur, json;
  double threshold_pct = 5;
};

Json ChangeJson(const Change& c) {
  const bool per_call = c.kind == "collective";
  return {{"name", c.name},
          {"kind", c.kind},
          {"unit", per_call ? "s/call" : "s/iter"},
          {"base", c.base * 1e-9},
          {"current", c.current * 1e-9},
          {"change_pct", c.change_pct},
          {"noise", c.noise * 1e-9}};
}

void PrintChanges(const std::vector<Change>& regs, const std::vector<Cause>& causes,
                  const DiffOptions& o, const Profile& b, const Profile& c, std::ostream& out) {
  out << "perftracker diff: base " << b.ranks << " ranks, step " << FormatSeconds(b.step_ns * 1e-9)
      << "; current " << c.ranks << " ranks, step " << FormatSeconds(c.step_ns * 1e-9) << "\n";
  PrintCauses(causes, out);
  if (regs.empty()) {
    out << "no regression beyond " << o.threshold_pct << "% and the runs' noise\n";
    return;
  }
  out << regs.size() << " regression" << (regs.size() == 1 ? "" : "s") << " beyond "
      << o.threshold_pct << "% and the runs' noise:\n";
  for (size_t i = 0; i < regs.size() && i < 20; ++i) {
    const Change& r = regs[i];
    char line[96];
    std::snprintf(line, sizeof line, "  %+7.1f%%  %-10s %9s -> %-9s  ", r.change_pct,
                  r.kind.c_str(), FormatSeconds(r.base * 1e-9).c_str(),
                  FormatSeconds(r.current * 1e-9).c_str());
    std::string name = r.name.substr(0, 60);
    for (char& ch : name) ch = static_cast<unsigned char>(ch) < 0x20 ? '?' : ch;
    out << line << name << "\n";
  }
}

}  // namespace

int DiffCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  DiffOptions o;
  CommandLine cl("diff", "Regressions of CUR_DIR against BASE_DIR (exit 1 on one).");
  cl.Argument("BASE_DIR", &o.base, "the baseline run's directory");
  cl.Argument("CUR_DIR", &o.cur, "the run compared with it");
  cl.Option("--threshold", &o.threshold_pct, "percent a median must grow by to regress");
  cl.NonNegative("--threshold");
  cl.Option("--json", &o.json, "write the comparison as JSON to PATH ('-': stdout, no text)");
  if (const auto code = cl.Parse(args, out, err)) return *code;
  std::string error;
  auto base = Ingest(o.base, {0, TerminalOrNull(err)}, &error);
  auto cur = base ? Ingest(o.cur, {0, TerminalOrNull(err)}, &error) : nullptr;
  if (!base || !cur) {
    err << "perftracker: " << error << "\n";
    return kExitUsage;
  }
  const Profile b = MakeProfile(*base), c = MakeProfile(*cur);
  Thresholds every;  // BASE without the score bar: a match for what CUR reports above it
  every.min_score = 0;
  const Thresholds usual;
  const std::vector<Cause> causes =
      NewOrGrownCauses(Analyze(std::move(base), every).candidates,
                       Analyze(std::move(cur), usual).candidates, o.threshold_pct, usual.min_score);
  std::vector<Change> regs, improvements;
  for (const auto& [key, metric] : b.metrics) {
    const auto it = c.metrics.find(key);
    if (it == c.metrics.end()) continue;
    if (auto ch = Compare(metric, it->second, o.threshold_pct, b.step_ns)) {
      (ch->current > ch->base ? regs : improvements).push_back(*ch);
    }
  }
  const auto by_size = [](const Change& x, const Change& y) {
    return std::abs(x.current - x.base) > std::abs(y.current - y.base);
  };
  std::sort(regs.begin(), regs.end(), by_size);
  std::sort(improvements.begin(), improvements.end(), by_size);
  Json j = {{"schema", 2},
            {"threshold_pct", o.threshold_pct},
            {"regression", !regs.empty()},
            {"base", {{"dir", o.base}, {"ranks", b.ranks}, {"step_s", b.step_ns * 1e-9}}},
            {"current", {{"dir", o.cur}, {"ranks", c.ranks}, {"step_s", c.step_ns * 1e-9}}},
            {"causes", CausesJson(causes)},
            {"regressions", Json::array()},
            {"improvements", Json::array()}};
  for (const Change& r : regs) j["regressions"].push_back(ChangeJson(r));
  for (const Change& r : improvements) j["improvements"].push_back(ChangeJson(r));
  if (o.json == "-") {
    out << JsonText(j, 2) << "\n";
  } else {
    if (!o.json.empty()) {
      std::ofstream os(o.json);
      os << JsonText(j, 2) << "\n";
      if (!os.good()) {
        err << "perftracker: cannot write " << o.json << "\n";
        return kExitUsage;
      }
    }
    PrintChanges(regs, causes, o, b, c, out);
  }
  return regs.empty() ? kExitOk : kExitRegression;
}

}  // namespace perftracker::analyzer
