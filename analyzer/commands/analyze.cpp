// perftracker analyze DIR [--json PATH|-] [--html PATH] [--top N] [--jobs N] [--last N]
// [--since DURATION] [--iterations A:B]: ingest every ring file under DIR (the selected windows),
// then align -> peers -> detect -> rank, then report.
#include "analyzer/commands/analyze.h"

#include <cmath>
#include <cstdio>
#include <fstream>

#include "analyzer/base/progress.h"
#include "analyzer/base/stats.h"
#include "analyzer/commands/cli.h"
#include "analyzer/commands/command_line.h"
#include "analyzer/ingest/ingest.h"
#include "analyzer/report/report.h"
#include "analyzer/verdict/cpu_share.h"
#include "analyzer/verdict/verdict.h"

namespace perftracker::analyzer {
namespace {

struct AnalyzeOptions {
  std::string dir;
  std::string json_path;
  std::string html_path;
  size_t top = 10;
  int threads = 0;
  double min_score = Thresholds{}.min_score;
  double intra_link_gbps = 0, inter_link_gbps = 0;
  WindowSelection selection;
};

// "INTRA[,INTER]" in GB/s; one number is both.
bool ParseLinkGbps(const std::string& v, AnalyzeOptions* o) {
  char* end = nullptr;
  o->intra_link_gbps = std::strtod(v.c_str(), &end);
  o->inter_link_gbps = o->intra_link_gbps;
  if (*end == ',') o->inter_link_gbps = std::strtod(end + 1, &end);
  return *end == '\0' && o->intra_link_gbps > 0 && o->inter_link_gbps > 0;
}

}  // namespace

// The step as the program measures it: the median over the rank's slots of their mean
// iteration, start-up's slot left out (RankData::StartupBegin). A median over slots, not a mean
// over iterations: one checkpoint or evaluation window does not move it either.
double SteadyIteration(const RankData& r) {
  std::vector<double> means;
  for (const Slot* s : r.SteadySlots()) means.push_back(s->MeanIterationNs());
  return Median(means);
}

namespace {

// The median rank's run after start-up: every rank in step has the same mean, and a rank that
// joined late or was cut short does not move it.
SteadyRun Steady(const Dataset& ds) {
  std::vector<double> means, begins, ends;
  for (const RankData& r : ds.ranks) {
    double ns = 0, n = 0;
    uint64_t begin = UINT64_MAX, end = 0;
    for (const Slot* s : r.SteadySlots()) {
      ns += s->iteration_ns, n += s->iterations;
      begin = std::min(begin, s->iter_begin), end = std::max(end, s->iter_end);
    }
    if (n <= 0) continue;
    means.push_back(ns / n * 1e-9);
    begins.push_back(static_cast<double>(begin));
    ends.push_back(static_cast<double>(end));
  }
  SteadyRun run;
  if (means.empty()) return run;
  run.mean_step_s = Median(means);
  run.begin = static_cast<uint64_t>(Median(begins));
  run.end = std::max(run.begin, static_cast<uint64_t>(Median(ends)));
  return run;
}

std::vector<RankIterations> IterationStats(const Dataset& ds) {
  std::vector<RankIterations> out;
  for (const RankData& r : ds.ranks) {
    RankIterations it;
    it.rank = r.rank();
    double total = 0, n = 0;
    for (const Slot& s : r.slots) total += s.iteration_ns, n += s.iterations;
    it.count = static_cast<uint64_t>(n);
    it.mean_s = n > 0 ? total / n * 1e-9 : 0;
    it.steady_s = SteadyIteration(r) * 1e-9;
    // The spread after start-up, as the median is (its first batches, a first collective's
    // set-up and compilation are no measure of the steady step).
    const format::Histogram h = r.SteadyIterationHist();
    it.p50_s = static_cast<double>(h.Quantile(0.5)) * 1e-9;
    it.p99_s = static_cast<double>(h.Quantile(0.99)) * 1e-9;
    it.min_s = static_cast<double>(h.Quantile(0)) * 1e-9;
    it.max_s = static_cast<double>(h.Quantile(1)) * 1e-9;
    out.push_back(it);
  }
  return out;
}

// Rows: every candidate's metric plus the functions that cost most; cells: a rank's value over
// its peer group's median, minus one.
HeatMap BuildHeat(const Frame& f, const std::vector<Candidate>& cands) {
  HeatMap h;
  for (const RankData& r : f.ds->ranks) h.ranks.push_back(r.rank());
  std::vector<std::pair<int32_t, Aggregate>> rows;
  for (const Candidate& c : cands) {
    if (c.catalog_function >= 0 || c.aggregate != Aggregate::kNone) {
      rows.push_back({c.catalog_function, c.aggregate});
    }
  }
  for (const Aggregate a : {Aggregate::kKernels, Aggregate::kPython, Aggregate::kCudaApi,
                            Aggregate::kMemcpy, Aggregate::kCollectives}) {
    rows.push_back({-1, a});
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  for (const auto& [fn, agg] : rows) {
    std::vector<double> mean(f.ds->ranks.size());
    for (size_t r = 0; r < f.ds->ranks.size(); ++r) {
      double sum = 0, n = 0;
      for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) {
        if (SlotAt(f, r, k)) sum += MetricValue(f, r, k, fn, agg), ++n;
      }
      mean[r] = n > 0 ? sum / n : 0;
    }
    std::vector<double> row(f.ds->ranks.size());
    for (const PeerGroup& g : *f.groups) {
      std::vector<double> v;
      for (const size_t m : g.members) v.push_back(mean[m]);
      const double med = Median(v);
      for (const size_t m : g.members) row[m] = med > 0 ? mean[m] / med - 1 : 0;
    }
    h.rows.push_back(agg != Aggregate::kNone
                         ? std::string(AggregateName(agg))
                         : f.ds->catalog.functions()[static_cast<size_t>(fn)].name);
    h.cells.push_back(std::move(row));
    h.keys.push_back({fn, agg});
  }
  return h;
}

// Step time outside the collectives, per rank and slot, for the HTML report's chart.
std::vector<std::vector<double>> OwnStepTimes(const Frame& f) {
  std::vector<std::vector<double>> out(f.ds->ranks.size(),
                                       std::vector<double>(f.ds->slot_keys.size(), NAN));
  for (size_t r = 0; r < out.size(); ++r) {
    for (size_t k = 0; k < out[r].size(); ++k) {
      const Slot* s = SlotAt(f, r, k);
      if (s == nullptr) continue;
      const double colls = f.aggregates[r][k][static_cast<size_t>(Aggregate::kCollectives)];
      out[r][k] = std::max(0.0, s->MeanIterationNs() - colls) * 1e-9;
    }
  }
  return out;
}

bool WriteFile(const std::string& path, const std::string& text, std::ostream& err) {
  std::ofstream os(path, std::ios::binary);
  os << text;
  if (os.good()) return true;
  err << "perftracker: cannot write " << path << "\n";
  return false;
}

}  // namespace

Report Analyze(std::unique_ptr<Dataset> dataset, const Thresholds& thresholds) {
  Report rep;
  rep.thresholds = thresholds;
  rep.dataset = std::move(dataset);
  const Dataset& ds = *rep.dataset;
  rep.groups = GroupPeers(ds);
  rep.iterations = IterationStats(ds);
  std::vector<double> means;
  for (const RankIterations& it : rep.iterations) {
    if (it.count > 0) means.push_back(it.steady_s);
  }
  rep.median_iteration_s = Median(means);
  rep.steady = Steady(ds);
  const Frame frame = MakeFrame(ds, rep.groups, thresholds);
  std::vector<Finding> findings;
  for (auto detect : {DetectDifferential, DetectExpectedRange, DetectCriticalPath, DetectTemporal,
                      DetectArrival, DetectLinks, DetectBandwidth}) {
    std::vector<Finding> more = detect(frame);
    findings.insert(findings.end(), more.begin(), more.end());
  }
  rep.hangs = DetectHangs(ds, rep.median_iteration_s * 1e9);
  rep.candidates = RankCandidates(frame, findings, rep.hangs, rep.median_iteration_s);
  const std::map<int, WorkerLoad> loads = WorkerLoads(ds);
  AddWorkerCandidates(frame, loads, rep.median_iteration_s, &rep.candidates);
  AttachHelperEvidence(ds, loads, &rep.candidates);
  AddThreadCandidates(frame, ThreadLoads(ds), rep.median_iteration_s, &rep.candidates);
  AttachBeta(frame, &rep.candidates);
  AttachWhatIf(rep.steady,
               CpuBounds(frame, WorkerCores(loads), rep.steady.mean_step_s, rep.candidates),
               &rep.candidates);
  rep.signal_warnings = AttachSignals(SignalDeviations(ds), &rep.candidates);
  rep.heat = BuildHeat(frame, rep.candidates);
  rep.links.cells = LinkRates(frame, &rep.links.net);
  rep.own_step_s = OwnStepTimes(frame);
  return rep;
}

int AnalyzeCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  AnalyzeOptions o;
  CommandLine cl("analyze",
                 "Rank root-cause candidates across every rank under DIR (ring files *.ptr and "
                 "reduced files *.ptrd).");
  cl.Argument("DIR", &o.dir, "the job's directory (any tree of its files)");
  cl.Option("--json", &o.json_path, "write the report as JSON to PATH ('-': stdout, no text)");
  cl.Option("--html", &o.html_path, "write a self-contained HTML report to PATH");
  cl.Option("--top", &o.top, "candidates reported");
  cl.Option("--jobs,--threads", &o.threads, "threads reading and comparing (0: every core)");
  cl.Option("--min-score", &o.min_score, "the score a finding needs to become a candidate");
  cl.Option(
      "--link-gbps", "INTRA[,INTER]",
      [&o](const std::string& v) {
        return ParseLinkGbps(v, &o) ? ""
                                    : "bad --link-gbps: wants INTRA[,INTER] in GB/s, e.g. 450,50";
      },
      "per-GPU link peak in GB/s inside a node and between nodes (judges collectives' bus "
      "bandwidth)");
  AddSelectionOptions(cl, &o.selection);
  if (const auto code = cl.Parse(args, out, err)) return *code;
  std::string error;
  auto ds = Ingest(o.dir, {o.threads, TerminalOrNull(err)}, &error, o.selection);
  if (!ds) {
    err << "perftracker: " << error << "\n";
    return kExitUsage;
  }
  Thresholds thresholds;
  thresholds.min_score = o.min_score;
  thresholds.intra_link_gbps = o.intra_link_gbps;
  thresholds.inter_link_gbps = o.inter_link_gbps;
  const Report rep = Analyze(std::move(ds), thresholds);
  if (!o.html_path.empty()) {
    std::ostringstream html;
    WriteHtml(rep, o.top, html);
    if (!WriteFile(o.html_path, html.str(), err)) return kExitUsage;
  }
  if (o.json_path == "-") {
    out << JsonText(ReportJson(rep, o.top), 2) << "\n";
    return kExitOk;
  }
  if (!o.json_path.empty() &&
      !WriteFile(o.json_path, JsonText(ReportJson(rep, o.top), 2) + "\n", err)) {
    return kExitUsage;
  }
  WriteText(rep, o.top, out);
  return kExitOk;
}

}  // namespace perftracker::analyzer
