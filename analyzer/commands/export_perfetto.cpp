// perftracker export DIR --perfetto PATH: the aligned slots as a Chrome JSON trace that the
// Perfetto UI (ui.perfetto.dev) and chrome://tracing open. Ranks share no clock, so the time axis
// is the iteration axis: slot k of every rank starts at the same place, and inside it each rank
// shows one average iteration, its largest metrics laid end to end, plus an iteration-time
// counter and the candidates as instant events on their ranks.
#include <algorithm>
#include <fstream>

#include "analyzer/commands/cli.h"
#include "analyzer/commands/command_line.h"
#include "analyzer/ingest/ingest.h"
#include "analyzer/base/progress.h"
#include "analyzer/commands/analyze.h"
#include "analyzer/report/report.h"

namespace perftracker::analyzer {
namespace {

constexpr size_t kSlicesPerIteration = 12;

Json Meta(int pid, const std::string& name) {
  return {
      {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"name", "process_name"}, {"args", {{"name", name}}}};
}

Json Slice(int pid, int tid, const std::string& name, double ts_us, double dur_us, Json args) {
  return {{"ph", "X"},
          {"pid", pid},
          {"tid", tid},
          {"name", name},
          {"ts", ts_us},
          {"dur", dur_us},
          {"args", std::move(args)}};
}

// The biggest per-iteration metrics of one rank in one slot.
std::vector<std::pair<double, std::string>> Largest(const Frame& f, size_t r, size_t k) {
  std::vector<std::pair<double, std::string>> out;
  const auto& fns = f.ds->catalog.functions();
  for (size_t fn = 0; fn < fns.size(); ++fn) {
    if (fns[fn].comm) continue;
    const double v = MetricValue(f, r, k, static_cast<int32_t>(fn), Aggregate::kNone);
    if (v > 0) out.push_back({v, fns[fn].name});
  }
  out.push_back({MetricValue(f, r, k, -1, Aggregate::kCollectives), "all collectives"});
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (out.size() > kSlicesPerIteration) out.resize(kSlicesPerIteration);
  return out;
}

void RankEvents(const Frame& f, size_t r, const std::vector<double>& slot_start_us, Json* events) {
  const RankData& rank = f.ds->ranks[r];
  const int pid = rank.rank();
  events->push_back(Meta(pid, "rank " + std::to_string(pid) + " (" + rank.identity.hostname + ")"));
  for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) {
    const Slot* s = SlotAt(f, r, k);
    if (!s) continue;
    const double iter_us = s->MeanIterationNs() * 1e-3;
    events->push_back(Slice(
        pid, 0, "iterations " + std::to_string(s->iter_begin) + "-" + std::to_string(s->iter_end),
        slot_start_us[k], iter_us, {{"iterations", s->iterations}, {"windows", s->windows}}));
    events->push_back({{"ph", "C"},
                       {"pid", pid},
                       {"name", "iteration ms"},
                       {"ts", slot_start_us[k]},
                       {"args", {{"ms", iter_us * 1e-3}}}});
    double ts = slot_start_us[k];
    for (const auto& [ns, name] : Largest(f, r, k)) {
      events->push_back(Slice(pid, 1, name, ts, ns * 1e-3, {{"ns_per_iteration", ns}}));
      ts += ns * 1e-3;
    }
  }
}

Json Trace(const Report& rep) {
  const Frame f = MakeFrame(*rep.dataset, rep.groups, rep.thresholds);
  std::vector<double> start_us;
  double t = 0;
  for (size_t k = 0; k < rep.dataset->slot_keys.size(); ++k) {
    start_us.push_back(t);
    double longest = 0;
    for (size_t r = 0; r < rep.dataset->ranks.size(); ++r) {
      if (const Slot* s = SlotAt(f, r, k)) longest = std::max(longest, s->MeanIterationNs());
    }
    t += longest * 2e-3;  // room for the end-to-end metrics
  }
  Json events = Json::array();
  for (size_t r = 0; r < rep.dataset->ranks.size(); ++r) RankEvents(f, r, start_us, &events);
  for (size_t i = 0; i < rep.candidates.size(); ++i) {
    const Candidate& c = rep.candidates[i];
    for (const int rank : c.rank_set) {
      events.push_back({{"ph", "i"},
                        {"pid", rank},
                        {"tid", 0},
                        {"s", "p"},
                        {"ts", 0},
                        {"name", "candidate #" + std::to_string(i + 1) + " " + c.category},
                        {"args", {{"function", c.function}, {"score", c.score}}}});
    }
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace

int ExportCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  std::string dir, path;
  CommandLine cl("export", "The aligned windows as a trace for ui.perfetto.dev.");
  cl.Argument("DIR", &dir, "the job's directory");
  cl.Option("--perfetto", &path, "the trace to write (JSON)");
  cl.Require("--perfetto");
  if (const auto code = cl.Parse(args, out, err)) return *code;
  std::string error;
  auto ds = Ingest(dir, {0, TerminalOrNull(err)}, &error);
  if (!ds) {
    err << "perftracker: " << error << "\n";
    return kExitUsage;
  }
  const Report rep = Analyze(std::move(ds), Thresholds{});
  std::ofstream os(path, std::ios::binary);
  os << JsonText(Trace(rep), -1) << "\n";
  if (!os.good()) {
    err << "perftracker: cannot write " << path << "\n";
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace perftracker::analyzer
