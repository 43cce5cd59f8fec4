// perftracker diff BASE_DIR... CUR_DIR [--threshold PCT] [--run-noise PCT] [--json PATH|-]:
// per-function, per-collective and step-time regressions of CUR against the baseline runs, for CI.
//
// A function or collective is judged against the rest of the job: its base is first scaled by
// what the job's other work did between the runs, so that a machine that is slower or loaded
// (every function a share slower) fails no function, and the whole step's change is reported
// as the job's ("the whole job is N% slower; no function stands out"). A kernel or copy is
// judged against the devices' other work (a throttled GPU slows every kernel alike). The step is
// judged against the run-to-run noise: the spread of the baselines' medians where several are
// given, else --run-noise (10%: two clean runs of one CPU job on the benchmark machine differ
// by 7.3%).
//
// Each metric is a distribution: one value per rank and slot. A metric regressed when its median
// grew by more than the threshold AND by more than the noise of the two runs (3 x the larger
// robust spread over the square root of the sample count, at least 1% of the base; also the
// spread of the slots' medians over the square root of the slot count: a loaded host slows every
// rank of a slot at once, so ranks are not independent samples of a run), AND by at least 0.5% of
// the base step time (functions and collectives that cost the step nothing do not fail builds; a
// collective's per-call change counts times its calls a step). Functions are joined by their
// stable id, Python functions by file and name (the line a code change moves left out),
// collectives by (op, bytes, communicator size, point-to-point or not): communicator ids differ
// between runs.
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
  std::vector<double> runs;   // a baseline's: each baseline run's median (MergeBaselines)

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

// A Python function as two runs of changed code both know it: its file and qualified name, the
// line left out ("/job/train.py:122:MLP.forward" is the same function as ":118:" once four lines
// were added above it, as a change that slows it adds them), and its callers merged. Other
// kinds by their stable id.
std::string MetricKey(const FunctionInfo& f) {
  if (f.kind == format::FunctionKind::kPython) {
    const size_t name = f.name.rfind(':');
    const size_t line = name == std::string::npos || name == 0 ? std::string::npos
                                                                : f.name.rfind(':', name - 1);
    if (line != std::string::npos &&
        f.name.find_first_not_of("0123456789", line + 1) == name && name > line + 1) {
      return "p" + f.name.substr(0, line) + f.name.substr(name);
    }
  }
  char key[32];
  std::snprintf(key, sizeof key, "f%016llx", static_cast<unsigned long long>(f.id));
  return key;
}

// One value per (rank, slot): cost per iteration in that slot. Slot-to-slot variation is part of
// the noise, so a function that runs once in a while (a full GC, a checkpoint) has a wide
// distribution and a median near zero, and never fails a build on one unlucky occurrence.
void ProfileFunctions(const Dataset& ds, const RankData& r, Profile* p) {
  const auto& fns = ds.catalog.functions();
  std::map<std::string, std::map<uint64_t, double>> per_slot;  // key -> slot key -> ns
  for (size_t i = 0; i < fns.size(); ++i) {
    const bool device = fns[i].kind == format::FunctionKind::kKernel ||
                        fns[i].kind == format::FunctionKind::kMemcpy;
    const std::string key = MetricKey(fns[i]);
    Quantity& m = p->metrics[key];
    if (m.name.empty()) {
      m.name = fns[i].name;
      m.kind = std::string(format::KindName(fns[i].kind));
    }
    std::map<uint64_t, double>& sums = per_slot[key];
    for (const Slot& s : r.slots) {
      if (s.iterations == 0) continue;
      const double v = i >= s.functions.size() ? 0
                       : device               ? s.functions[i].device_est_ns
                                              : s.functions[i].self_ns;
      sums[s.key] += v / s.iterations;
    }
  }
  for (const auto& [key, sums] : per_slot) {
    for (const auto& [slot, v] : sums) p->metrics[key].Add(slot, v);
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
    const std::vector<const Slot*> steady_slots = r.SteadySlots();
    for (const Slot* s : steady_slots) step.Add(s->key, s->MeanIterationNs());
    if (!steady_slots.empty()) steady.push_back(SteadyIteration(r));
    ProfileFunctions(ds, r, &p);
    ProfileCollectives(ds, r, &p);
  }
  p.step_ns = MedianOf(steady);
  return p;
}

struct Change {
  std::string name, kind;
  double base = 0, current = 0, change_pct = 0, noise = 0;
  double beyond_job_pct = 0;  // the change beyond what the rest of the job's work did
};

// Several baseline runs as one: every run's values together, and each run's median, whose
// spread is the run-to-run noise (a machine's load, a different node) that no run shows alone.
Profile MergeBaselines(std::vector<Profile> runs) {
  Profile out = std::move(runs.front());
  for (auto& [key, m] : out.metrics) m.runs.push_back(MedianOf(m.values));
  std::vector<double> steps = {out.step_ns};
  for (size_t i = 1; i < runs.size(); ++i) {
    for (auto& [key, m] : runs[i].metrics) {
      const auto it = out.metrics.find(key);
      if (it == out.metrics.end() || m.values.empty()) continue;
      Quantity& into = it->second;
      into.runs.push_back(MedianOf(m.values));
      into.values.insert(into.values.end(), m.values.begin(), m.values.end());
      into.calls.insert(into.calls.end(), m.calls.begin(), m.calls.end());
      for (auto& [slot, v] : m.by_slot) {
        // Slots of different runs are different samples of the host's load: keyed apart.
        into.by_slot[slot ^ (uint64_t{i} << 56)] = std::move(v);
      }
    }
    steps.push_back(runs[i].step_ns);
  }
  out.step_ns = MedianOf(steps);
  return out;
}

// Per step: a collective's per-call time times its calls, anything else as measured.
double PerStep(const Quantity& m, double v) {
  return m.kind == "collective" && !m.calls.empty() ? v * MedianOf(m.calls) : v;
}

// Work a device does (ProfileFunctions times it on the device, not the host). A communication
// kernel's time holds its wait for the peers, as the step does: it is no measure of the device.
bool DeviceWork(const Quantity& m) {
  return (m.kind == "kernel" || m.kind == "memcpy") && !m.name.starts_with("nccl");
}

// The devices' work a step: every kernel's and copy's median, added up.
double DeviceStep(const Profile& p) {
  double ns = 0;
  for (const auto& [key, m] : p.metrics) {
    if (DeviceWork(m) && !m.values.empty()) ns += MedianOf(m.values);
  }
  return ns;
}

// The spread of a metric's per-slot medians over the square root of their number; 0 with fewer
// than three slots.
double SlotSpread(const Quantity& m) {
  if (m.by_slot.size() < 3) return 0;
  std::vector<double> medians;
  for (const auto& [key, v] : m.by_slot) medians.push_back(MedianOf(v));
  const double med = MedianOf(medians);
  return RobustSigma(medians, med) / std::sqrt(double(medians.size()));
}

// The step's run-to-run noise when a single baseline gives none: two clean runs of one CPU job on
// this project's 2-core benchmark machine differ by up to 7.3% (161 vs 150 ms a step), a
// whole job slower by less than this is no regression of its code.
constexpr double kRunNoisePct = 10;

struct DiffOptions {
  std::vector<std::string> dirs;  // BASE... CUR
  std::string json;
  double threshold_pct = 5;
  double run_noise_pct = kRunNoisePct;
};

// `b` against `c`. A function or collective is judged against the rest of the job: where the
// job's other work grew by a share (a loaded host, a slower machine), this metric's base is
// scaled by that share first, so that what every function did alike is the whole job's change
// and no function's. The step is judged against the runs' noise: the baselines' spread, or
// with one baseline o.run_noise_pct.
std::optional<Change> Compare(const Quantity& b, const Quantity& c, const DiffOptions& o,
                              double base_step, double cur_step, double base_device,
                              double cur_device) {
  if (b.values.empty() || c.values.empty()) return std::nullopt;
  Change ch{b.name, b.kind, MedianOf(b.values), MedianOf(c.values), 0, 0, 0};
  const double spread =
      std::max({RobustSigma(b.values, ch.base) / std::sqrt(double(b.values.size())),
                RobustSigma(c.values, ch.current) / std::sqrt(double(c.values.size())),
                SlotSpread(b), SlotSpread(c)});
  ch.noise = std::max(3 * spread, 0.01 * ch.base);
  if (b.runs.size() >= 2) {
    ch.noise = std::max(ch.noise, *std::max_element(b.runs.begin(), b.runs.end()) -
                                      *std::min_element(b.runs.begin(), b.runs.end()));
  } else if (b.kind == "iteration") {
    ch.noise = std::max(ch.noise, 0.01 * o.run_noise_pct * ch.base);
  }
  const double delta = ch.current - ch.base;
  ch.change_pct = ch.base > 0 ? 100 * delta / ch.base : (delta > 0 ? 1e9 : 0);
  double expected = ch.base;
  if (b.kind != "iteration") {
    // The rest of the step, before and after. A metric that is nearly all of it, or more (a
    // device's time overlaps the host's and other streams'), leaves no rest to tell the job's
    // change by: the step's own change is the job's. A kernel or copy is judged against the
    // devices' other work instead: a slower GPU slows every kernel alike, while the step also
    // holds the waits a slower kernel causes (a pipeline's bubbles and receives grew with the
    // benchmark's sim_pp kernel_slow as much as the kernel did, and hid it).
    const bool device = DeviceWork(b) && base_device > 0 && cur_device > 0;
    const double whole_b = device ? base_device : base_step;
    const double whole_c = device ? cur_device : cur_step;
    const double rest_b = whole_b - PerStep(b, ch.base);
    const double rest_c = whole_c - PerStep(c, ch.current);
    if (rest_b > 0.1 * whole_b && rest_c > 0) {
      expected = ch.base * rest_c / rest_b;
    } else if (whole_b > 0 && whole_c > 0) {
      expected = ch.base * whole_c / whole_b;
    }
  }
  const double beyond = ch.current - expected;
  ch.beyond_job_pct = expected > 0 ? 100 * beyond / expected : (beyond > 0 ? 1e9 : 0);
  // A collective's per-call change, times its calls a step, is what the step pays.
  const bool matters = b.kind == "iteration" || PerStep(b, beyond) >= 0.005 * base_step;
  if (std::abs(ch.change_pct) <= o.threshold_pct || std::abs(ch.beyond_job_pct) <= o.threshold_pct ||
      std::abs(delta) <= ch.noise || std::abs(beyond) <= ch.noise || !matters) {
    return std::nullopt;
  }
  return ch;
}

Json ChangeJson(const Change& c) {
  const bool per_call = c.kind == "collective";
  return {{"name", c.name},
          {"kind", c.kind},
          {"unit", per_call ? "s/call" : "s/iter"},
          {"base", c.base * 1e-9},
          {"current", c.current * 1e-9},
          {"change_pct", c.change_pct},
          {"beyond_job_pct", c.beyond_job_pct},
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
  if (regs.size() == 1 && regs.front().kind == "iteration") {
    out << "the whole job is " << FormatNumber("%.1f%%", regs.front().change_pct)
        << " slower; no function stands out (each grew with the rest of the job)\n";
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
  CommandLine cl("diff",
                 "Regressions of CUR_DIR against BASE_DIR, or several baseline runs (exit 1 on "
                 "one).");
  cl.Arguments("BASE_DIR... CUR_DIR", &o.dirs, 2,
               "the baseline runs' directories (their spread is the run-to-run noise), then the "
               "run compared with them");
  cl.Option("--threshold", &o.threshold_pct, "percent a median must grow by to regress");
  cl.NonNegative("--threshold");
  cl.Option("--run-noise", &o.run_noise_pct,
            "percent the whole step may differ between runs of one job, with one baseline");
  cl.NonNegative("--run-noise");
  cl.Option("--json", &o.json, "write the comparison as JSON to PATH ('-': stdout, no text)");
  if (const auto code = cl.Parse(args, out, err)) return *code;
  std::string error;
  std::vector<Profile> baselines;
  std::unique_ptr<Dataset> base;  // the first baseline: its causes are matched against CUR's
  for (size_t i = 0; i + 1 < o.dirs.size(); ++i) {
    auto ds = Ingest(o.dirs[i], {0, TerminalOrNull(err)}, &error);
    if (!ds) {
      err << "perftracker: " << error << "\n";
      return kExitUsage;
    }
    baselines.push_back(MakeProfile(*ds));
    if (!base) base = std::move(ds);
  }
  auto cur = Ingest(o.dirs.back(), {0, TerminalOrNull(err)}, &error);
  if (!cur) {
    err << "perftracker: " << error << "\n";
    return kExitUsage;
  }
  const Profile b = MergeBaselines(std::move(baselines)), c = MakeProfile(*cur);
  Thresholds every;  // BASE without the score bar: a match for what CUR reports above it
  every.min_score = 0;
  const Thresholds usual;
  const std::vector<Cause> causes =
      NewOrGrownCauses(Analyze(std::move(base), every).candidates,
                       Analyze(std::move(cur), usual).candidates, o.threshold_pct, usual.min_score);
  std::vector<Change> regs, improvements;
  const double base_device = DeviceStep(b), cur_device = DeviceStep(c);
  for (const auto& [key, metric] : b.metrics) {
    const auto it = c.metrics.find(key);
    if (it == c.metrics.end()) continue;
    if (auto ch = Compare(metric, it->second, o, b.step_ns, c.step_ns, base_device, cur_device)) {
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
            {"base",
             {{"dir", o.dirs.front()},
              {"runs", o.dirs.size() - 1},
              {"ranks", b.ranks},
              {"step_s", b.step_ns * 1e-9}}},
            {"current", {{"dir", o.dirs.back()}, {"ranks", c.ranks}, {"step_s", c.step_ns * 1e-9}}},
            {"whole_job_only", regs.size() == 1 && regs.front().kind == "iteration"},
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
