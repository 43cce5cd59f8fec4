// The JSON report, schema 1. Field names are a contract (ARCHITECTURE.md): add, never rename.
#include "analyzer/report/report.h"
#include "schemas/format/version.h"

namespace perftracker::analyzer {
namespace {

Json RanksJson(const Dataset& ds) {
  Json found = Json::array();
  for (const RankData& r : ds.ranks) found.push_back(r.rank());
  return {{"found", ds.ranks.size()},
          {"expected", ds.expected},
          {"missing", ds.missing},
          {"found_ranks", found}};
}

Json InputsJson(const Dataset& ds) {
  Json diags = Json::object();
  for (size_t i = 0; i < static_cast<size_t>(Diagnostic::kCount); ++i) {
    const auto d = static_cast<Diagnostic>(i);
    diags[std::string(DiagnosticName(d))] = ds.diagnostics.Count(d);
  }
  Json helpers = Json::array();
  for (const RankData& h : ds.helpers) {
    helpers.push_back({{"rank", h.rank()}, {"pid", h.identity.pid}, {"path", h.path}});
  }
  return {{"files", ds.files},
          {"job_id", ds.job_id},
          {"helpers", helpers},
          {"diagnostics", diags},
          {"messages", ds.diagnostics.messages()}};
}

Json IterationsJson(const Report& rep) {
  Json per_rank = Json::array();
  for (const RankIterations& it : rep.iterations) {
    per_rank.push_back({{"rank", it.rank},
                        {"count", it.count},
                        {"mean_s", it.mean_s},
                        {"steady_s", it.steady_s},
                        {"p50_s", it.p50_s},
                        {"p99_s", it.p99_s},
                        {"min_s", it.min_s},
                        {"max_s", it.max_s}});
  }
  uint64_t first = UINT64_MAX, end = 0;
  for (const RankData& r : rep.dataset->ranks) {
    for (const Slot& s : r.slots)
      first = std::min(first, s.iter_begin), end = std::max(end, s.iter_end);
  }
  return {{"first", first == UINT64_MAX ? 0 : first},
          {"end", end},
          {"aligned_slots", rep.dataset->slot_keys.size()},
          {"median_s", rep.median_iteration_s},
          {"steady", {{"mean_s", rep.steady.mean_step_s},
                      {"first", rep.steady.begin},
                      {"end", rep.steady.end}}},
          {"per_rank", per_rank}};
}

Json CandidateJson(const Candidate& c) {
  return {{"rank_set", c.rank_set}, {"function", c.function},
          {"kind", c.kind},         {"category", c.category},
          {"score", c.score},       {"impact_s_per_iter", c.impact_s_per_iter},
          {"evidence", c.evidence}};
}

Json HangJson(const Hang& h) {
  Json frames = Json::array();
  for (const auto& [rank, frame] : h.last_python_frame) {
    frames.push_back({{"rank", rank}, {"frame", frame}});
  }
  return {{"collective", h.collective},
          {"sequence", h.sequence},
          {"kind", h.communication ? "communication" : "non_communication"},
          {"ranks_arrived", h.ranks_arrived},
          {"ranks_missing", h.ranks_missing},
          {"last_python_frame", frames},
          {"stuck_s", h.stuck_s},
          {"ranks_without_file", h.ranks_without_file},
          {"ranks_exited_normally", h.ranks_exited_normally},
          {"ranks_sigterm", h.ranks_sigterm},
          {"ranks_vanished", h.ranks_vanished}};
}

}  // namespace

bool ChargeMeasured(const Json& evidence) {
  const std::string by = evidence.value("decided_by", std::string());
  return by == "arrival" || by == "loop_thread";
}

std::string JsonText(const Json& j, int indent) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

Json ReportJson(const Report& rep, size_t top) {
  Json groups = Json::array();
  for (const PeerGroup& g : rep.groups) {
    Json ranks = Json::array();
    for (const size_t m : g.members) ranks.push_back(rep.dataset->ranks[m].rank());
    groups.push_back({{"label", g.label}, {"ranks", ranks}});
  }
  Json cands = Json::array();
  for (size_t i = 0; i < rep.candidates.size() && i < top; ++i) {
    cands.push_back(CandidateJson(rep.candidates[i]));
  }
  Json hangs = Json::array();
  for (const Hang& h : rep.hangs) hangs.push_back(HangJson(h));
  Json warnings = Json::array();
  for (const SignalDeviation& d : rep.signal_warnings) warnings.push_back(d.ToJson());
  return {{"schema", 4},
          {"tool", std::string("perftracker ") + format::kLibraryVersion},
          {"ranks", RanksJson(*rep.dataset)},
          {"inputs", InputsJson(*rep.dataset)},
          {"iterations", IterationsJson(rep)},
          {"peer_groups", groups},
          {"candidates", cands},
          {"hangs", hangs},
          {"signal_warnings", warnings}};
}

}  // namespace perftracker::analyzer
