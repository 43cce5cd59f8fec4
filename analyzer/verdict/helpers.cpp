// Helper processes (a rank's spawned DataLoader workers, compile workers, subprocesses) are
// not ranks: they record into files of their own and are kept out of the peer comparison. A
// data-loader verdict is where they explain something: the rank waits for its loader, and its
// workers show what took the time. The functions its helpers spent most on beyond what the
// peers' helpers spent on the same functions become the candidate's evidence (a verdict on
// every rank with helpers has no peers to measure them by), and where they hold the time the
// rank lost, the verdict's function. Without peers, workers busy in the user's code nearly all
// the time (workers.h) are the proof: a pool that never idles is what the rank waits for.
#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "analyzer/verdict/verdict.h"
#include "analyzer/base/stats.h"

namespace perftracker::analyzer {
namespace {

struct HelperTime {
  int processes = 0;
  double self_s = 0;                        // all functions of all its helpers
  std::map<int32_t, double> by_function_s;  // catalog index -> self seconds
};

std::map<int, HelperTime> TimeByRank(const Dataset& ds) {
  std::map<int, HelperTime> out;
  for (const RankData& h : ds.helpers) {
    HelperTime& t = out[h.rank()];
    ++t.processes;
    for (const Slot& s : h.slots) {
      for (size_t i = 0; i < s.functions.size(); ++i) {
        const double self_s = s.functions[i].self_ns * 1e-9;
        if (self_s <= 0) continue;
        t.self_s += self_s;
        t.by_function_s[static_cast<int32_t>(i)] += self_s;
      }
    }
  }
  return out;
}

// The verdict names what the workers spent the time on (a dataset's __getitem__, a collate
// function) where every culprit rank's helpers agree on it and it holds at least half the time
// the rank lost: the rank's own frame (the loader's __next__) only waits for it, and stays in
// the evidence as where the rank waits. Named at the user's depth: the user's frame the loader
// called that holds it (`entry`, WorkEntryOf), its busiest part in the evidence.
void NameWorkersFunction(const Json& ranks, const std::string& entry, Candidate* c) {
  std::string top;
  double least_s = std::numeric_limits<double>::infinity();
  for (const Json& r : ranks) {
    if (r["busiest"].empty()) return;
    const Json& b = r["busiest"][0];
    const std::string fn = b.value("function", std::string());
    if (!top.empty() && fn != top) return;
    top = fn;
    const double beyond = b.value("self_s", 0.0) - b.value("peer_median_s", 0.0);
    least_s = std::min(least_s, beyond);
  }
  const double lost_s =
      c->impact_s_per_iter *
      static_cast<double>(SpansLength(c->evidence.value("iterations", Json::array())));
  if (top.empty() || lost_s <= 0 || least_s < 0.5 * lost_s) return;
  c->evidence["waits_in"] = c->function;
  c->function = entry.empty() ? top : entry;
}

// A worker pool busy at least this share of its time has no slack left to refill the loader's
// prefetch queue: the consumer waits for it. Below it, a pool keeps ahead on average, and a
// verdict on every rank cannot tell its work from the loader's own wait.
constexpr double kSaturated = 0.9;

// A whole-group loader verdict names the workers' function where every rank's workers are busy
// in the same function nearly all the time; the rank's own frame stays as where it waits.
void NameSaturatedWorkers(const std::map<int, WorkerLoad>& loads, const Dataset& ds,
                          Candidate* c) {
  int32_t top = -1;
  Json ranks = Json::array();
  for (const int r : c->rank_set) {
    const auto it = loads.find(r);
    if (it == loads.end() || it->second.Busy() < kSaturated) return;
    const WorkerLoad& w = it->second;
    if (top >= 0 && w.Top() != top) return;
    top = w.Top();
    ranks.push_back({{"rank", r},
                     {"processes", w.workers},
                     {"busy", w.Busy()},
                     {"cpu", w.Cpu()},
                     {"function_share", w.work_by_function.at(top) / w.work_ns}});
  }
  if (top < 0) return;
  c->evidence["saturated_workers"] = {{"ranks", ranks}, {"saturated_at", kSaturated}};
  c->evidence["waits_in"] = c->function;
  c->function = ds.catalog.functions()[static_cast<size_t>(top)].name;
}

}  // namespace

void AttachHelperEvidence(const Dataset& ds, const std::map<int, WorkerLoad>& loads,
                          std::vector<Candidate>* candidates) {
  if (ds.helpers.empty()) return;
  const std::map<int, HelperTime> by_rank = TimeByRank(ds);
  const auto& functions = ds.catalog.functions();
  for (Candidate& c : *candidates) {
    // A worker candidate (workers.cpp), or one it named, is the helpers' verdict already.
    if (c.category != "dataloader" || c.source == Source::kWorkers ||
        c.evidence.contains("waits_in")) {
      continue;
    }
    const auto culprit = [&](int r) {
      return std::find(c.rank_set.begin(), c.rank_set.end(), r) != c.rank_set.end();
    };
    std::vector<const HelperTime*> peers;
    for (const auto& [r, t] : by_rank) {
      if (!culprit(r)) peers.push_back(&t);
    }
    // Without peers' helpers, self time cannot tell work from an idle loop (a resource tracker
    // blocked on its pipe all run long would read as the busiest helper of every rank); the
    // time in the user's code can.
    if (peers.empty()) {
      NameSaturatedWorkers(loads, ds, &c);
      continue;
    }
    // A peer's helpers, for one function: what the culprit's are compared with. Idle loops
    // (a worker waiting for indices, a resource tracker) cost every rank's helpers alike; what
    // a culprit's helpers spend beyond their peers' is what made it wait.
    const auto peer_median = [&](int32_t fn) {
      std::vector<double> v;
      for (const HelperTime* p : peers) {
        const auto it = p->by_function_s.find(fn);
        v.push_back(it == p->by_function_s.end() ? 0.0 : it->second);
      }
      return Median(v);
    };
    Json ranks = Json::array();
    int32_t busiest_fn = -1;  // the first culprit rank's
    for (const int r : c.rank_set) {
      const auto it = by_rank.find(r);
      if (it == by_rank.end()) continue;
      std::vector<std::tuple<double, int32_t, double>> excess;  // (beyond peers, fn, peers')
      for (const auto& [fn, s] : it->second.by_function_s) {
        const double peer = peer_median(fn);
        excess.push_back({s - peer, fn, peer});
      }
      std::sort(excess.rbegin(), excess.rend());
      if (busiest_fn < 0 && !excess.empty()) busiest_fn = std::get<1>(excess[0]);
      Json busiest = Json::array();
      for (size_t i = 0; i < std::min<size_t>(excess.size(), 3); ++i) {
        const auto& [beyond, fn, peer] = excess[i];
        if (beyond <= 0) break;
        busiest.push_back({{"function", functions[static_cast<size_t>(fn)].name},
                           {"self_s", beyond + peer},
                           {"peer_median_s", peer}});
      }
      ranks.push_back({{"rank", r},
                       {"processes", it->second.processes},
                       {"self_s", it->second.self_s},
                       {"busiest", busiest}});
    }
    if (ranks.empty()) continue;
    c.evidence["helpers"] = {{"ranks", ranks}, {"peers_with_helpers", peers.size()}};
    const int32_t entry = busiest_fn < 0 ? -1 : WorkEntryOf(ds.catalog, busiest_fn);
    const std::string named = entry < 0 ? std::string() : functions[static_cast<size_t>(entry)].name;
    NameWorkersFunction(ranks, named, &c);
  }
}

}  // namespace perftracker::analyzer
