// Verdicts at the user's depth. The differential detector flags the frame whose own time
// deviates, which is often deep inside a library: a checkpoint's cost sits in torch's
// serialization internals (split over several leaves), a slow loader's wait in a selector. The
// user wants the frame they can act on. Walking up the call path, an ancestor whose inclusive
// time deviates at least 80% as much as the flagged frame's still explains the deviation; the
// verdict names the first such frame in the user's own code (an absolute path: the collector
// makes site-packages, dist-packages and standard-library files relative), else the highest
// one, with the call path and the largest deviating parts beneath it. Several flagged leaves of
// one cause are lifted to the same frame and merge into one candidate with its whole impact.
#include <algorithm>
#include <vector>

#include "analyzer/verdict/verdict.h"
#include "analyzer/base/stats.h"

namespace perftracker::analyzer {
namespace {

constexpr double kParentExplains = 0.8;
constexpr int kMaxDepth = 64;

bool IsUserCode(const FunctionInfo& info) { return UserCode(info.name); }

bool Liftable(format::FunctionKind k) {
  return k == format::FunctionKind::kPython || k == format::FunctionKind::kDataLoader;
}

// Inclusive ns per iteration of `fn` on one rank, over the slots it has among `slots`.
double InclusivePerIteration(const Frame& f, size_t r, int32_t fn, const std::vector<bool>& slots) {
  double ns = 0, iterations = 0;
  for (size_t k = 0; k < f.slots[r].size(); ++k) {
    const Slot* s = SlotAt(f, r, k);
    if (s == nullptr || !slots[k]) continue;
    iterations += s->iterations;
    if (static_cast<size_t>(fn) < s->functions.size()) {
      ns += s->functions[static_cast<size_t>(fn)].total_ns;
    }
  }
  return iterations > 0 ? ns / iterations : 0;
}

struct Sides {
  std::vector<size_t> culprits, peers;  // rank indices
  std::vector<bool> slots;              // where the flagged frame ran on the culprits
};

// Culprits' mean inclusive time per iteration minus the peers' median.
double Excess(const Frame& f, const Sides& s, int32_t fn, double* value, double* peer) {
  std::vector<double> c, p;
  for (const size_t r : s.culprits) c.push_back(InclusivePerIteration(f, r, fn, s.slots));
  for (const size_t r : s.peers) p.push_back(InclusivePerIteration(f, r, fn, s.slots));
  double sum = 0;
  for (const double v : c) sum += v;
  *value = c.empty() ? 0 : sum / static_cast<double>(c.size());
  *peer = Median(p);
  return *value - *peer;
}

Sides SidesOf(const Frame& f, const Candidate& c) {
  Sides s;
  for (const size_t m : (*f.groups)[static_cast<size_t>(c.group)].members) {
    (OnCandidateRanks(f, c, m) ? s.culprits : s.peers).push_back(m);
  }
  s.slots = SlotsWhereRan(f, s.culprits, c.catalog_function);
  return s;
}

// The call path from the outermost recorded frame down to `fn`.
Json FramePath(const Frame& f, int32_t fn) {
  const auto& fns = f.ds->catalog.functions();
  Json path = Json::array();
  for (int32_t a = fn, depth = 0; a >= 0 && depth < kMaxDepth; ++depth) {
    path.insert(path.begin(), fns[static_cast<size_t>(a)].name);
    a = fns[static_cast<size_t>(a)].parent_id
            ? f.ds->catalog.IndexOf(fns[static_cast<size_t>(a)].parent_id)
            : -1;
  }
  return path;
}

// Names `c`, flagged at frame `flagged`, at frame `at` instead: `largest` its parts, `value` and
// `peer` its inclusive time a step and its peers', charged at least `at_least_s` and the
// frame's excess (`excess_ns` a step), its score scaled alike.
void NameAt(const Frame& f, int32_t flagged, int32_t at, Json largest, double value, double peer,
            double excess_ns, double at_least_s, Candidate* c) {
  const auto& fns = f.ds->catalog.functions();
  c->evidence["flagged_frame"] = fns[static_cast<size_t>(flagged)].name;
  c->evidence["largest_parts"] = std::move(largest);
  c->evidence["inclusive_value"] = value * 1e-9;
  c->evidence["inclusive_peer_median"] = peer * 1e-9;
  const double impact = std::max(at_least_s, excess_ns * 1e-9);
  if (c->impact_s_per_iter > 0) c->score *= impact / c->impact_s_per_iter;
  c->impact_s_per_iter = impact;
  c->function = fns[static_cast<size_t>(at)].name;
  c->kind = std::string(format::KindName(fns[static_cast<size_t>(at)].kind));
  c->catalog_function = at;
}

void Lift(const Frame& f, Candidate* c) {
  const auto& fns = f.ds->catalog.functions();
  const int32_t leaf = c->catalog_function;
  if (IsUserCode(fns[static_cast<size_t>(leaf)])) {
    // Named where its time is; the path says who called it (a helper of the user's, busy()
    // or decode(), is called from several places).
    if (fns[static_cast<size_t>(leaf)].parent_id != 0) c->evidence["call_path"] = FramePath(f, leaf);
    return;
  }
  const Sides sides = SidesOf(f, *c);
  if (sides.culprits.empty() || sides.peers.empty()) return;
  double value = 0, peer = 0;
  const double leaf_excess = Excess(f, sides, leaf, &value, &peer);
  if (leaf_excess <= 0) return;
  std::vector<int32_t> qualifying;
  int32_t fn = leaf;
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    const FunctionInfo& info = fns[static_cast<size_t>(fn)];
    if (info.parent_id == 0) break;
    const int32_t parent = f.ds->catalog.IndexOf(info.parent_id);
    if (parent < 0 || !Liftable(fns[static_cast<size_t>(parent)].kind) ||
        IsLoopFrame(f, parent)) {
      break;  // the loop itself holds every cause: never the verdict
    }
    double v = 0, p = 0;
    if (Excess(f, sides, parent, &v, &p) < kParentExplains * leaf_excess) break;
    qualifying.push_back(parent);
    fn = parent;
  }
  if (qualifying.empty()) return;
  const auto user = std::find_if(qualifying.begin(), qualifying.end(), [&](int32_t a) {
    return IsUserCode(fns[static_cast<size_t>(a)]);
  });
  const int32_t chosen = user != qualifying.end() ? *user : qualifying.back();
  const double chosen_excess = Excess(f, sides, chosen, &value, &peer);

  const Json path = FramePath(f, chosen);
  // Its largest deviating parts: the direct callees, by excess.
  std::vector<std::pair<double, int32_t>> parts;
  const uint64_t chosen_id = fns[static_cast<size_t>(chosen)].id;
  for (size_t i = 0; i < fns.size(); ++i) {
    if (fns[i].parent_id != chosen_id) continue;
    double v = 0, p = 0;
    const double e = Excess(f, sides, static_cast<int32_t>(i), &v, &p);
    if (e > 0.05 * chosen_excess) parts.push_back({e, static_cast<int32_t>(i)});
  }
  std::sort(parts.rbegin(), parts.rend());
  Json largest = Json::array();
  for (size_t i = 0; i < std::min<size_t>(parts.size(), 3); ++i) {
    largest.push_back({{"function", fns[static_cast<size_t>(parts[i].second)].name},
                       {"excess_s_per_iter", parts[i].first * 1e-9}});
  }

  c->evidence["call_path"] = path;
  NameAt(f, leaf, chosen, std::move(largest), value, peer, chosen_excess, c->impact_s_per_iter, c);
}

// The frames above `fn` in the call tree, nearest first.
std::vector<int32_t> Callers(const Frame& f, int32_t fn) {
  const auto& fns = f.ds->catalog.functions();
  std::vector<int32_t> out;
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    const uint64_t parent_id = fns[static_cast<size_t>(fn)].parent_id;
    if (parent_id == 0) break;
    fn = f.ds->catalog.IndexOf(parent_id);
    if (fn < 0) break;
    out.push_back(fn);
  }
  return out;
}

bool OneFrame(const Candidate& c) {
  return c.catalog_function >= 0 && c.aggregate == Aggregate::kNone && c.group >= 0;
}

// Which of a caller's and its callee's candidates names their one cost: the callee where it is
// the user's own code and explains >= 80% of the caller's impact (the rule Lift walks up by),
// else the caller, which holds the callee's time and more.
bool CalleeNames(const Frame& f, const Candidate& caller, const Candidate& callee) {
  const auto& fns = f.ds->catalog.functions();
  return IsUserCode(fns[static_cast<size_t>(callee.catalog_function)]) &&
         callee.impact_s_per_iter >= kParentExplains * caller.impact_s_per_iter;
}

void Fold(const Candidate& part, const char* depth, Candidate* keeper) {
  keeper->evidence["same_cost"].push_back({{"function", part.function},
                                           {"depth", depth},
                                           {"source", part.evidence.value("source", "")},
                                           {"score", part.score}});
  if (part.score > keeper->score) {
    keeper->score = part.score;
    keeper->impact_s_per_iter = std::max(keeper->impact_s_per_iter, part.impact_s_per_iter);
  }
}

}  // namespace

void FoldCallees(const Frame& f, std::vector<Candidate>* cands) {
  std::vector<bool> gone(cands->size(), false);
  for (size_t i = 0; i < cands->size(); ++i) {
    if (gone[i] || !OneFrame((*cands)[i])) continue;
    const std::vector<int32_t> callers = Callers(f, (*cands)[i].catalog_function);
    for (size_t j = 0; j < cands->size() && !gone[i]; ++j) {
      Candidate& callee = (*cands)[i];
      Candidate& caller = (*cands)[j];
      if (i == j || gone[j] || !OneFrame(caller) || caller.group != callee.group ||
          caller.rank_set != callee.rank_set ||
          std::find(callers.begin(), callers.end(), caller.catalog_function) == callers.end()) {
        continue;
      }
      if (CalleeNames(f, caller, callee)) {
        Fold(caller, "caller", &callee);
        gone[j] = true;
      } else {
        Fold(callee, "callee", &caller);
        gone[i] = true;
      }
    }
  }
  std::vector<Candidate> kept;
  for (size_t i = 0; i < cands->size(); ++i) {
    if (!gone[i]) kept.push_back(std::move((*cands)[i]));
  }
  *cands = std::move(kept);
}

void FoldSiblings(const Frame& f, std::vector<Candidate>* cands) {
  const auto& fns = f.ds->catalog.functions();
  std::vector<bool> gone(cands->size(), false), merged(cands->size(), false);
  for (size_t i = 0; i < cands->size(); ++i) {
    if (gone[i] || !OneFrame((*cands)[i])) continue;
    std::vector<int32_t> above_i = Callers(f, (*cands)[i].catalog_function);
    for (size_t j = i + 1; j < cands->size() && !gone[i]; ++j) {
      const Candidate& a = (*cands)[i];
      const Candidate& b = (*cands)[j];
      if (gone[j] || !OneFrame(b) || a.group != b.group || a.rank_set != b.rank_set ||
          a.source != Source::kDifferential || b.source != Source::kDifferential ||
          !Liftable(fns[static_cast<size_t>(a.catalog_function)].kind) ||
          !Liftable(fns[static_cast<size_t>(b.catalog_function)].kind)) {
        continue;
      }
      // Their nearest common caller: a frame of the job's code, not the loop that holds every
      // cause, and neither of them (a caller and its callee are FoldCallees').
      int32_t common = -1;
      const bool b_above = std::find(above_i.begin(), above_i.end(), b.catalog_function) !=
                           above_i.end();
      for (const int32_t c : b_above ? std::vector<int32_t>{} : Callers(f, b.catalog_function)) {
        if (c == a.catalog_function) break;
        if (std::find(above_i.begin(), above_i.end(), c) != above_i.end()) {
          common = c;
          break;
        }
      }
      if (common < 0 || !Liftable(fns[static_cast<size_t>(common)].kind) ||
          IsLoopFrame(f, common)) {
        continue;
      }
      const bool keep_i = a.score >= b.score;
      Candidate& keeper = (*cands)[keep_i ? i : j];
      const Candidate& part = keep_i ? b : a;
      const Sides sides = SidesOf(f, keeper);
      if (sides.culprits.empty() || sides.peers.empty()) continue;
      double v = 0, p = 0;
      const double keeper_ns = Excess(f, sides, keeper.catalog_function, &v, &p);
      const double part_ns = Excess(f, sides, part.catalog_function, &v, &p);
      const double parts_ns = std::max(0.0, keeper_ns) + std::max(0.0, part_ns);
      const double common_ns = Excess(f, sides, common, &v, &p);
      if (parts_ns <= 0 || common_ns < kParentExplains * parts_ns) continue;
      Json largest = Json::array();
      largest.push_back({{"function", keeper.function}, {"excess_s_per_iter", keeper_ns * 1e-9}});
      largest.push_back({{"function", part.function}, {"excess_s_per_iter", part_ns * 1e-9}});
      Fold(part, "sibling", &keeper);
      NameAt(f, keeper.catalog_function, common, std::move(largest), v, p, common_ns,
             keeper.impact_s_per_iter + part.impact_s_per_iter, &keeper);
      merged[keep_i ? i : j] = true;
      gone[keep_i ? j : i] = true;  // folded into j: later pairs meet it as j
      above_i = Callers(f, common);
    }
  }
  std::vector<Candidate> kept;
  for (size_t i = 0; i < cands->size(); ++i) {
    if (gone[i]) continue;
    // The common frame may be a library's (a module's __call__): named at the user's depth.
    if (merged[i]) Lift(f, &(*cands)[i]);
    kept.push_back(std::move((*cands)[i]));
  }
  *cands = std::move(kept);
}

void LiftToUserDepth(const Frame& f, std::vector<Candidate>* cands) {
  for (Candidate& c : *cands) {
    if (c.source != Source::kDifferential || c.aggregate != Aggregate::kNone ||
        c.catalog_function < 0 || c.group < 0) {
      continue;
    }
    if (!Liftable(f.ds->catalog.functions()[static_cast<size_t>(c.catalog_function)].kind)) {
      continue;
    }
    Lift(f, &c);
  }
}

}  // namespace perftracker::analyzer
