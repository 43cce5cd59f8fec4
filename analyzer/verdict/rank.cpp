// Stage 5: from findings to candidates. Classify each finding, keep the culprit rather than its
// victims (arrival order), prefer the one function that explains a kind's excess over the kind's
// sum (or the sum over its many small parts), merge what different detectors or ranks say about
// the same thing, and order by score = time lost per iteration / iteration x persistence.
#include <algorithm>
#include <map>
#include <set>

#include "analyzer/verdict/verdict.h"

namespace perftracker::analyzer {

double Score(double lost_ns, double step_ns, double windows_seen, double windows_total) {
  const double persistence = windows_total > 0 ? windows_seen / windows_total : 1;
  return step_ns > 0 ? std::max(0.0, lost_ns) / step_ns * persistence : 0;
}

namespace {

using format::FunctionKind;

std::string_view SourceName(Source s) {
  switch (s) {
    case Source::kDifferential:
      return "differential";
    case Source::kExpectedRange:
      return "expected_range";
    case Source::kTemporal:
      return "temporal";
    case Source::kArrival:
      return "arrival_order";
    case Source::kLink:
      return "link_matrix";
    case Source::kHang:
      return "live_slots";
    case Source::kWorkers:
      return "workers";
    case Source::kThreads:
      return "threads";
    case Source::kBandwidth:
      return "bus_bandwidth";
  }
  return "";
}

// The signal a verdict rests on, as the evidence says it ("decided_by"): what a GPU or link
// verdict needs is device time, never host time stretched by a busy scheduler.
// Other detectors rest on one signal each, their own.
std::string_view DecidedBy(const Finding& x, const std::string& kind) {
  if (x.source == Source::kDifferential) {
    const bool device =
        kind == "kernel" || kind == "memcpy" || kind == "memset" || kind == "collective";
    return device ? "device_time" : "host_time";
  }
  if (x.source == Source::kExpectedRange && x.extra.contains("beta")) {
    return "critical_path_share";
  }
  return SourceName(x.source);
}

std::string KindOf(const Frame& f, const Finding& x) {
  switch (x.aggregate) {
    case Aggregate::kKernels:
      return "kernel";
    case Aggregate::kPython:
      return "python";
    case Aggregate::kCudaApi:
      return "cuda_api";
    case Aggregate::kMemcpy:
      return "memcpy";
    case Aggregate::kCollectives:
      return "collective";
    case Aggregate::kNone:
      break;
  }
  if (x.function >= 0) {
    return std::string(
        format::KindName(f.ds->catalog.functions()[static_cast<size_t>(x.function)].kind));
  }
  return "collective";
}

std::string CategoryAllRanks(const std::string& kind) {
  if (kind == "dataloader" || kind == "gc") return kind;
  if (kind == "kernel") return "gpu_compute";
  if (kind == "collective") return "communication_link";
  return "software_all_ranks";
}

std::string CategorySubset(const std::string& kind, bool aggregate) {
  if (kind == "kernel") return "gpu_compute";
  if (kind == "memcpy" || kind == "memset" || kind == "alloc") return "gpu_memory";
  if (kind == "collective") return "communication_link";
  if (kind == "dataloader" || kind == "gc") return kind;
  if (kind == "python") return aggregate ? "host_cpu" : "python";
  return "host_cpu";  // CUDA API, syncs, unknown host work
}

// A Python function called (directly or deeper) by the data loader or the garbage collector is
// a part of it: a slow collate function is a slow data loader, whichever frame holds the time.
std::string EnclosingCategory(const Frame& f, const Finding& x) {
  if (x.function < 0 || x.aggregate != Aggregate::kNone) return "";
  const auto& fns = f.ds->catalog.functions();
  int32_t fn = x.function;
  for (int depth = 0; fn >= 0 && depth < 64; ++depth) {
    const FunctionInfo& info = fns[static_cast<size_t>(fn)];
    if (info.kind == FunctionKind::kDataLoader) return "dataloader";
    if (info.kind == FunctionKind::kGc) return "gc";
    if (info.kind != FunctionKind::kPython || info.parent_id == 0) break;
    fn = f.ds->catalog.IndexOf(info.parent_id);
  }
  return "";
}

size_t GroupSize(const Frame& f, int group) {
  if (group < 0 || static_cast<size_t>(group) >= f.groups->size()) return 0;
  return (*f.groups)[static_cast<size_t>(group)].members.size();
}

// `ranks` of peer group `group` are the group as a whole: three quarters of it or more.
bool CoversGroup(const Frame& f, int group, size_t ranks) {
  const size_t n = GroupSize(f, group);
  return n >= 2 && ranks * 4 >= n * 3;
}

bool AllOfGroup(const Frame& f, const Finding& x) {
  return CoversGroup(f, x.group, x.ranks.size());
}

Candidate ToCandidate(const Frame& f, const Finding& x) {
  Candidate c;
  c.rank_set = x.ranks;
  c.kind = KindOf(f, x);
  if (x.aggregate != Aggregate::kNone)
    c.function = std::string(AggregateName(x.aggregate));
  else if (x.function >= 0)
    c.function = f.ds->catalog.functions()[static_cast<size_t>(x.function)].name;
  else
    c.function = x.label;
  const bool all =
      x.source == Source::kExpectedRange || x.source == Source::kTemporal || AllOfGroup(f, x);
  c.category = x.source == Source::kLink        ? "communication_link"
               : x.source == Source::kBandwidth ? "communication_fabric"
               : all                            ? CategoryAllRanks(c.kind)
                                         : CategorySubset(c.kind, x.aggregate != Aggregate::kNone);
  if (x.source == Source::kArrival) c.category = "host_cpu";
  if (const std::string enclosing = EnclosingCategory(f, x); !enclosing.empty()) {
    c.category = enclosing;
  }
  c.impact_s_per_iter = std::max(0.0, x.excess_ns) * 1e-9;
  if (x.steady_lost_ns >= 0 && x.excess_ns > 0) {
    c.steady_iterations = std::max(0.0, x.steady_lost_ns) / x.excess_ns;
  }
  c.score = Score(x.excess_ns, x.iteration_ns, x.windows_seen, x.windows_total);
  c.source = x.source;
  c.catalog_function = x.function;
  c.aggregate = x.aggregate;
  c.group = x.group;
  const bool per_byte = x.source == Source::kLink;
  const bool gbps = x.source == Source::kBandwidth;
  Json e = {{"source", SourceName(x.source)},
            {"peer_median", per_byte || gbps ? x.peer_median_ns : x.peer_median_ns * 1e-9},
            {"value", per_byte || gbps ? x.value_ns : x.value_ns * 1e-9},
            {"deviation", x.deviation},
            {"windows_seen", x.windows_seen},
            {"windows_total", x.windows_total},
            {"unit", per_byte ? "ns/byte" : gbps ? "GB/s" : "s/iter"},
            {"iteration_s", x.iteration_ns * 1e-9}};
  if (x.group >= 0) e["peer_group"] = (*f.groups)[static_cast<size_t>(x.group)].label;
  e["decided_by"] = DecidedBy(x, c.kind);
  e.update(x.extra);
  c.evidence = std::move(e);
  return c;
}

}  // namespace

uint64_t SpansLength(const Json& spans) {
  uint64_t n = 0;
  for (const Json& x : spans) {
    if (x.is_array() && x.size() == 2) n += x[1].get<uint64_t>() - x[0].get<uint64_t>();
  }
  return n;
}

bool OnCandidateRanks(const Frame& f, const Candidate& c, size_t rank_index) {
  const int rank = f.ds->ranks[rank_index].rank();
  return std::find(c.rank_set.begin(), c.rank_set.end(), rank) != c.rank_set.end();
}

namespace {

bool Waits(const std::string& kind) { return kind == "collective" || kind == "sync"; }

// The ranks that hold their group back: those that arrive late at collectives (C4), and those
// whose own work (not their waiting) is slower than their peers'.
std::map<int, std::set<int>> Stragglers(const Frame& f, const std::vector<Finding>& findings) {
  std::map<int, std::set<int>> out;
  const auto& fns = f.ds->catalog.functions();
  for (const Finding& x : findings) {
    const bool own_work =
        x.source == Source::kDifferential &&
        (x.function < 0 ||
         !Waits(std::string(format::KindName(fns[static_cast<size_t>(x.function)].kind))));
    if (x.source == Source::kArrival || own_work) {
      out[x.group].insert(x.ranks.begin(), x.ranks.end());
    }
  }
  return out;
}

// Arrival order: findings on a straggler carry its arrival evidence; an arrival finding that
// some candidate on the same rank explains is folded into that candidate.
void ApplyArrival(const std::vector<Finding>& findings, std::vector<Candidate>* cands) {
  for (const Finding& a : findings) {
    if (a.source != Source::kArrival) continue;
    bool explained = false;
    for (Candidate& c : *cands) {
      if (c.source == Source::kArrival || c.source == Source::kLink) continue;
      if (c.group != a.group || c.rank_set != a.ranks) continue;
      c.evidence["arrival"] = {{"delay_s", a.value_ns * 1e-9},
                               {"z", a.deviation},
                               {"last_to_arrive_share", a.extra["last_to_arrive_share"]},
                               {"peers_wait_s_per_iter", a.extra["peers_wait_s_per_iter"]}};
      c.evidence["culprit"] = true;
      explained = true;
    }
    if (explained) {
      std::erase_if(*cands, [&](const Candidate& c) {
        return c.source == Source::kArrival && c.rank_set == a.ranks && c.group == a.group;
      });
    }
  }
}

// The most the stragglers' own work was measured to exceed their peers' by, per iteration (a
// slower GPU, a longer step of theirs), among the differential candidates on stragglers alone
// (never `c`, a temporal trend).
double StragglersOwnExcess(const Candidate& c, const std::set<int>& stragglers,
                           const std::vector<Candidate>& cands) {
  double most = 0;
  for (const Candidate& o : cands) {
    if (o.group != c.group || o.source != Source::kDifferential || Waits(o.kind) ||
        o.score <= 0 || o.rank_set.empty()) {
      continue;
    }
    const bool theirs = std::all_of(o.rank_set.begin(), o.rank_set.end(),
                                    [&](int r) { return stragglers.count(r) > 0; });
    if (theirs) most = std::max(most, o.impact_s_per_iter);
  }
  return most;
}

// Whether a trend of the whole group is the stragglers' delay passed on: the group's waiting
// grew (syncs, collectives: the stragglers' own host waits for their slow device too); the
// stragglers' own excess is as large as the growth (every rank's waiting in a thread of its own
// grows with it, the stragglers' included: in a device thread that waits for its own slow GPU,
// the peers' for the collective); or the function grew on the others and not on the stragglers
// (a CPU job's backward, inside which DDP waits for the rank that is late).
bool PassedOn(const Frame& f, const Candidate& c, const std::set<int>& stragglers,
              const std::vector<Candidate>& cands) {
  const PeerGroup& g = (*f.groups)[static_cast<size_t>(c.group)];
  if (c.source != Source::kTemporal || stragglers.size() >= g.members.size()) return false;
  if (Waits(c.kind)) return true;
  const double growth = c.evidence.value("value", 0.0) - c.evidence.value("peer_median", 0.0);
  if (growth <= 0) return false;
  if (StragglersOwnExcess(c, stragglers, cands) >= 0.5 * growth) return true;
  for (const size_t m : g.members) {
    if (stragglers.count(f.ds->ranks[m].rank()) == 0) continue;
    if (RankChange(f, m, c.catalog_function, c.aggregate) * 1e-9 >= 0.5 * growth) return false;
  }
  return true;
}

// Victims: communication-time findings in a group whose straggler is someone else, and trends
// of the whole group that are its delay passed on.
void DemoteVictims(const Frame& f, const std::vector<Finding>& findings,
                   std::vector<Candidate>* cands) {
  const auto stragglers = Stragglers(f, findings);
  for (Candidate& c : *cands) {
    const auto it = stragglers.find(c.group);
    if (it == stragglers.end() || c.source == Source::kArrival) continue;
    const bool on_straggler = std::any_of(c.rank_set.begin(), c.rank_set.end(),
                                          [&](int r) { return it->second.count(r) > 0; });
    const bool waits = Waits(c.kind) || c.source == Source::kTemporal;
    if ((!on_straggler && waits) || PassedOn(f, c, it->second, *cands)) {
      c.score *= 0.1;
      c.evidence["likely_victim_of"] = std::vector<int>(it->second.begin(), it->second.end());
    }
  }
}

// Collectives absorb every wait: when the whole group's collectives grew while something else
// grew too, the collectives are the victims of that something.
void DemoteCommunicationGrowth(std::vector<Candidate>* cands) {
  for (Candidate& c : *cands) {
    if (c.source != Source::kTemporal || c.kind != "collective") continue;
    const auto cause = std::find_if(cands->begin(), cands->end(), [&](const Candidate& o) {
      return o.group == c.group && o.kind != "collective" && o.source != Source::kArrival &&
             o.score > 0.2 * c.score;
    });
    if (cause == cands->end()) continue;
    c.score *= 0.1;
    c.evidence["likely_victim_of"] = cause->function;
  }
}

Aggregate AggregateClass(const Frame& f, int32_t fn) {
  if (fn < 0) return Aggregate::kNone;
  return AggregateOf(f.ds->catalog.functions()[static_cast<size_t>(fn)]);
}

double Relative(const Candidate& c) {
  const double peer = c.evidence.value("peer_median", 0.0);
  return peer > 0 ? c.evidence.value("value", 0.0) / peer - 1 : 1e9;
}

bool SamePart(const Frame& f, const Candidate& a, const Candidate& s) {
  return s.source == a.source && s.rank_set == a.rank_set && s.group == a.group &&
         AggregateClass(f, s.catalog_function) == a.aggregate;
}

// A kind's sum against its parts. One function stands for the kind when it explains nearly all
// of the excess, or most of it while deviating far more than the kind does (one bad kernel);
// otherwise the slowdown is spread (a throttled GPU slows every kernel alike) and the sum
// stands for its parts, which become its evidence.
void FoldAggregates(const Frame& f, std::vector<Candidate>* cands) {
  std::vector<bool> drop(cands->size());
  for (size_t i = 0; i < cands->size(); ++i) {
    Candidate& a = (*cands)[i];
    if (a.aggregate == Aggregate::kNone || a.source != Source::kDifferential) continue;
    size_t best = cands->size();
    for (size_t j = 0; j < cands->size(); ++j) {
      if (SamePart(f, a, (*cands)[j]) &&
          (best == cands->size() ||
           (*cands)[j].impact_s_per_iter > (*cands)[best].impact_s_per_iter)) {
        best = j;
      }
    }
    const double share = best < cands->size() ? (*cands)[best].impact_s_per_iter /
                                                    std::max(1e-12, a.impact_s_per_iter)
                                              : 0;
    const bool specific =
        share >= 0.9 || (share >= 0.5 && Relative((*cands)[best]) > 2 * Relative(a));
    for (size_t j = 0; j < cands->size(); ++j) {
      if (SamePart(f, a, (*cands)[j]) && !(specific && j == best)) drop[j] = true;
    }
    if (specific) {
      (*cands)[best].evidence["kind_excess_s_per_iter"] = a.impact_s_per_iter;
      drop[i] = true;
    }
  }
  std::vector<Candidate> kept;
  for (size_t i = 0; i < cands->size(); ++i) {
    if (!drop[i]) kept.push_back(std::move((*cands)[i]));
  }
  *cands = std::move(kept);
}

// Whether a candidate speaks of the whole group (against an expected range, or a trend of the
// median rank) or of the ranks that deviate from their peers.
bool WholeGroup(const Candidate& c) {
  return c.source == Source::kExpectedRange || c.source == Source::kTemporal ||
         c.source == Source::kBandwidth;
}

// An expected-range or temporal finding has no peer to stand out from: what every rank does
// alike is as often the job's design or the host's (a loader's IPC on shared cores, a collector
// run) as a fault. It is claimed only where it costs a material share of the step
// (Thresholds::whole_group_material says how much, and why). Ranks over the range where the
// rest of their group is within it do stand out from peers doing the same work (in a pair, one
// rank's excess lifts the median over the range): that is a deviation, not the job's design.
// The benchmark's sim_pp slow reads at rank 0: 10 ms of its 175 ms reads a step on the critical
// path, its pair's none, the job 4% slower than its twin, dropped as not material. Link
// bandwidth is judged against the peak the user gave (--link-gbps), not against a guess at
// what is normal.
bool Material(const Frame& f, const Candidate& c) {
  if (c.source != Source::kExpectedRange && c.source != Source::kTemporal) return true;
  if (c.source == Source::kExpectedRange && GroupSize(f, c.group) >= 2 &&
      !CoversGroup(f, c.group, c.rank_set.size())) {
    return true;
  }
  const double step_s = c.evidence.value("iteration_s", 0.0);
  return step_s <= 0 || c.impact_s_per_iter >= f.th.whole_group_material * step_s;
}

// Iterations two spans lists ([[begin, end), ...]) have in common.
uint64_t Overlap(const Json& a, const Json& b) {
  uint64_t common = 0;
  for (const Json& x : a) {
    for (const Json& y : b) {
      const uint64_t lo = std::max(x[0].get<uint64_t>(), y[0].get<uint64_t>());
      const uint64_t hi = std::min(x[1].get<uint64_t>(), y[1].get<uint64_t>());
      if (hi > lo) common += hi - lo;
    }
  }
  return common;
}

// The same fault on other ranks (`c`) joins `into`, with each rank's iterations. Ranks slow at
// the same time pace the job together (the slowest sets the step); a fault that moved from rank
// to rank cost the job in each rank's turn, so its windows and score add up.
void MergeRanksInTime(const Candidate& c, Candidate* into) {
  Json& e = into->evidence;
  if (!e.contains("iterations") || !c.evidence.contains("iterations")) return;
  if (!e.contains("iterations_by_rank")) {
    for (const int r : into->rank_set) {
      e["iterations_by_rank"].push_back({{"rank", r}, {"iterations", e["iterations"]}});
    }
  }
  const Json& theirs = c.evidence["iterations"];
  for (const int r : c.rank_set) {
    e["iterations_by_rank"].push_back({{"rank", r}, {"iterations", theirs}});
  }
  const uint64_t shorter = std::min(SpansLength(e["iterations"]), SpansLength(theirs));
  if (shorter == 0 || 4 * Overlap(e["iterations"], theirs) > shorter) return;
  into->score += c.score;
  e["windows_seen"] = e.value("windows_seen", 0) + c.evidence.value("windows_seen", 0);
  // Its turn's cost, in iterations' worth of the verdict's impact.
  if (into->steady_iterations >= 0 && c.steady_iterations >= 0 && into->impact_s_per_iter > 0) {
    into->steady_iterations +=
        c.steady_iterations * c.impact_s_per_iter / into->impact_s_per_iter;
  } else {
    into->steady_iterations = -1;
  }
  Json all = e["iterations"];
  for (const Json& x : theirs) all.push_back(x);
  std::sort(all.begin(), all.end());
  e["iterations"] = all;
}

// Same thing said twice: by several detectors, or about several ranks (union of rank sets), or
// host CPU seen in both the Python and CUDA API sums. A whole-group finding and a finding on
// some ranks stay apart even on one function: the data loader may be slow everywhere and much
// slower on one rank.
void MergeDuplicates(std::vector<Candidate>* cands) {
  std::sort(cands->begin(), cands->end(),
            [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
  std::vector<Candidate> out;
  for (Candidate& c : *cands) {
    auto same = std::find_if(out.begin(), out.end(), [&](const Candidate& o) {
      const bool same_thing = o.function == c.function && o.category == c.category &&
                              o.group == c.group && WholeGroup(o) == WholeGroup(c);
      const bool host = o.category == "host_cpu" && c.category == "host_cpu" &&
                        o.rank_set == c.rank_set && o.group == c.group;
      return same_thing || host;
    });
    if (same == out.end()) {
      out.push_back(std::move(c));
      continue;
    }
    if (same->rank_set != c.rank_set) MergeRanksInTime(c, &*same);
    std::set<int> ranks(same->rank_set.begin(), same->rank_set.end());
    ranks.insert(c.rank_set.begin(), c.rank_set.end());
    same->rank_set.assign(ranks.begin(), ranks.end());
    same->evidence["also"].push_back({{"function", c.function},
                                      {"source", c.evidence["source"]},
                                      {"impact_s_per_iter", c.impact_s_per_iter}});
  }
  *cands = std::move(out);
}

Candidate HangCandidate(const Hang& h, double iteration_s) {
  Candidate c;
  c.rank_set = h.communication ? h.ranks_arrived : h.ranks_missing;
  c.function = h.collective;
  c.kind = "collective";
  c.category = "hang";
  c.score = 1000 + h.stuck_s;
  c.source = Source::kHang;
  c.evidence = {{"source", "live_slots"},
                {"peer_median", iteration_s},
                {"value", h.stuck_s},
                {"deviation", iteration_s > 0 ? h.stuck_s / iteration_s : 0},
                {"windows_seen", 0},
                {"windows_total", 0},
                {"unit", "s stuck"},
                {"ranks_arrived", h.ranks_arrived},
                {"ranks_missing", h.ranks_missing},
                {"hang", h.communication ? "communication" : "non_communication"},
                {"sequence", h.sequence},
                {"ranks_exited_normally", h.ranks_exited_normally},
                {"ranks_sigterm", h.ranks_sigterm},
                {"ranks_vanished", h.ranks_vanished}};
  return c;
}

// Victims belong to their culprit: a rank or function whose excess is its wait for another
// (DemoteVictims, DemoteCommunicationGrowth) is that culprit's evidence, `victims` ("ranks 0, 1,
// 3 wait 28 ms a step in backward for it"), not a candidate beside it: the user reads one cost
// once, and the runner-up the report shows is another cause. The culprit is the best candidate
// on the stragglers' ranks (or, for a collective's growth, in its peer group) that is no
// victim itself. Where none survived (the straggler's own finding under the bar), the victim
// stays, marked: the only trace of the delay.
void FoldVictims(std::vector<Candidate>* cands) {
  std::vector<bool> victim(cands->size()), folded(cands->size());
  for (size_t i = 0; i < cands->size(); ++i) {
    victim[i] = (*cands)[i].evidence.contains("likely_victim_of");
  }
  for (size_t i = 0; i < cands->size(); ++i) {
    if (!victim[i]) continue;
    const Candidate& v = (*cands)[i];
    const Json& of = v.evidence["likely_victim_of"];
    const auto culprit_of = [&](const Candidate& c) {
      if (!of.is_array()) return c.group == v.group;
      return std::any_of(c.rank_set.begin(), c.rank_set.end(), [&](int r) {
        return std::find(of.begin(), of.end(), Json(r)) != of.end();
      });
    };
    size_t best = cands->size();
    for (size_t j = 0; j < cands->size(); ++j) {
      if (victim[j] || !culprit_of((*cands)[j])) continue;
      if (best == cands->size() || (*cands)[j].score > (*cands)[best].score) best = j;
    }
    if (best == cands->size()) continue;
    Json& list = (*cands)[best].evidence["victims"];
    if (!list.is_array()) list = Json::array();
    list.push_back({{"ranks", v.rank_set},
                    {"function", v.function},
                    {"category", v.category},
                    {"source", v.evidence.value("source", std::string())},
                    {"wait_s_per_iter", v.impact_s_per_iter}});
    folded[i] = true;
  }
  std::vector<Candidate> kept;
  for (size_t i = 0; i < cands->size(); ++i) {
    if (!folded[i]) kept.push_back(std::move((*cands)[i]));
  }
  *cands = std::move(kept);
}
}  // namespace

// A cost that its rank paid only in start-up (imports, a process group's rendezvous, the first
// allocations) cost the steady run nothing: the step the score is a share of is the steady
// step, and the what-if of such a candidate says the job would be 0% faster. It stays in the
// list below the score bar. With few windows a start-up finding persists in half of them:
// the benchmark's sim_pp.2s GC pauses (start-up and one steady window) put rank 3's
// rendezvous first at 0.029, a claim on a job its masked dose did not slow.
namespace {
void StartUpOnly(std::vector<Candidate>* cands) {
  for (Candidate& c : *cands) {
    if (c.steady_iterations != 0 || c.score <= 0) continue;
    c.score = 0;
    c.evidence["start_up_only"] = true;
  }
}
}  // namespace

std::vector<Candidate> RankCandidates(const Frame& f, const std::vector<Finding>& findings,
                                      const std::vector<Hang>& hangs, double iteration_s) {
  std::vector<Candidate> cands;
  for (const Finding& x : findings) {
    if (!IsLoopFrame(f, x.function)) cands.push_back(ToCandidate(f, x));
  }
  ApplyArrival(findings, &cands);
  DemoteVictims(f, findings, &cands);
  DemoteCommunicationGrowth(&cands);
  FoldAggregates(f, &cands);
  LiftToUserDepth(f, &cands);
  AttachRunQueue(f, &cands);
  MergeDuplicates(&cands);
  ChargeCriticalPath(f, &cands);
  FoldCallees(f, &cands);
  FoldSiblings(f, &cands);
  FoldCallees(f, &cands);  // the caller siblings folded into may hold, or be held by, another
  StartUpOnly(&cands);
  FoldVictims(&cands);
  std::erase_if(cands, [&](const Candidate& c) {
    return c.score < f.th.min_score || !Material(f, c);
  });
  for (const Hang& h : hangs) cands.push_back(HangCandidate(h, iteration_s));
  OrderCandidates(&cands);
  return cands;
}

void OrderCandidates(std::vector<Candidate>* cands) {
  std::stable_sort(cands->begin(), cands->end(), [](const Candidate& a, const Candidate& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.function != b.function ? a.function < b.function : a.rank_set < b.rank_set;
  });
}

}  // namespace perftracker::analyzer
