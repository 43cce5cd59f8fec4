// What a rank's extra host time cost the job, and why it was spent. Host time (Python, CUDA API
// calls, allocations) is measured on the host: a rank can spend more of it without slowing
// anyone (its device still had work queued: the host only ran less far ahead), and a rank can be
// slower without its code doing more (its scheduler held the training loop back). Two signals
// the collector records per window decide which:
//   - the critical path (FORMAT.md critical_ns): of the rank's host time, only what ran while
//     its device had nothing queued cost the job;
//   - the run-queue delay of the training loop's thread (FORMAT.md run_delay_ns): time it was
//     runnable but waited for a CPU. When that explains most of the excess, the verdict is the
//     host's CPU (host_cpu), never the code, a GPU or PCIe.
#include <algorithm>
#include <cmath>

#include "analyzer/detect/detect.h"
#include "analyzer/verdict/verdict.h"
#include "analyzer/base/stats.h"

namespace perftracker::analyzer {
namespace {

// Share of a host-time excess the rank's extra run-queue delay must explain for the verdict to
// be its scheduler's.
constexpr double kDescheduled = 0.5;

// Share of a host-time excess the peers' extra waiting must reach to confirm that the excess
// held them up (ArrivalWait): below it, the difference is the peers' noise.
constexpr double kConfirms = 0.25;
// How many standard errors from 0 a slot-by-slot difference must be to count where a size
// cannot confirm it (Compared::consistency): the peers' extra wait for other threads' time,
// a CPU rank's loop excess.
constexpr double kConsistent = 3;
// Peers sampled for the arrival comparison: a median needs no more, and a 16,384-rank group
// must not cost a pass over every member per candidate.
constexpr size_t kPeersSampled = 64;

// A collector's pause is the host's time as much as a Python function's: while the device has
// work queued it costs nothing (the benchmark's sim_tp gc pauses, 0.41 s a step on rank 2's
// host, cost the job 0.21).
bool HostTimedKind(const Candidate& c) {
  return c.kind == "python" || c.kind == "py_native" || c.kind == "cuda_api" || c.kind == "alloc" ||
         c.kind == "gc" || c.kind == "unknown";
}

bool Applies(const Candidate& c) {
  return c.source == Source::kDifferential && c.group >= 0 &&
         (HostTimedKind(c) || c.kind == "sync");
}

// Member m's slot k where it holds iterations, else null.
const Slot* StepSlot(const Frame& f, size_t m, size_t k) {
  const Slot* s = SlotAt(f, m, k);
  return s != nullptr && s->windows != 0 && s->iterations > 0 ? s : nullptr;
}

struct Compared {
  double culprit_ns = 0, peer_ns = 0;  // per iteration
  double iteration_ns = 0;             // the group's step over the same slots
  // The slot-by-slot difference (the ranks' mean less the peers' median): its mean over its
  // standard error. Far from 0 where the ranks differ in slot after slot; near 0 where they
  // merely happened to in some. 0 with fewer than 3 slots.
  double consistency = 0;
};

double Consistency(const std::vector<double>& culprits, const std::vector<double>& peers) {
  const size_t n = culprits.size();
  if (n < 3) return 0;
  double mean = 0, var = 0;
  for (size_t i = 0; i < n; ++i) mean += culprits[i] - peers[i];
  mean /= static_cast<double>(n);
  for (size_t i = 0; i < n; ++i) {
    const double d = culprits[i] - peers[i] - mean;
    var += d * d;
  }
  const double se = std::sqrt(var / static_cast<double>(n - 1) / static_cast<double>(n));
  if (se > 0) return mean / se;
  return mean > 0 ? 1e9 : mean < 0 ? -1e9 : 0;
}

// A per-slot number (ns per iteration; < 0 where unknown), asked as per_slot(rank index, slot
// index, slot), on the candidate's ranks (mean) and
// its peers (median), slot by slot, then the median over slots of each: one odd slot (start-up,
// a checkpoint) does not decide. False when no slot has both sides.
template <class PerSlot>
bool CulpritsAndPeers(const Frame& f, const Candidate& c, PerSlot per_slot, Compared* out) {
  const auto& members = (*f.groups)[static_cast<size_t>(c.group)].members;
  std::vector<double> culprit_by_slot, peer_by_slot, step_by_slot, culprits, peers, steps;
  for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) {
    culprits.clear();
    peers.clear();
    steps.clear();
    for (const size_t m : members) {
      const Slot* s = StepSlot(f, m, k);
      if (s == nullptr) continue;
      const double v = per_slot(m, k, *s);
      if (v < 0) continue;
      steps.push_back(s->MeanIterationNs());
      (OnCandidateRanks(f, c, m) ? culprits : peers).push_back(v);
    }
    if (culprits.empty() || peers.empty()) continue;
    double sum = 0;
    for (const double v : culprits) sum += v;
    culprit_by_slot.push_back(sum / static_cast<double>(culprits.size()));
    peer_by_slot.push_back(Median(peers));
    step_by_slot.push_back(Median(steps));
  }
  if (culprit_by_slot.empty()) return false;
  const double consistency = Consistency(culprit_by_slot, peer_by_slot);
  *out = {Median(culprit_by_slot), Median(peer_by_slot), Median(step_by_slot), consistency};
  return true;
}

double RunDelay(size_t, size_t, const Slot& s) { return s.RunDelayPerIteration(); }

bool InSpans(const Json& spans, const Slot& s) {
  for (const Json& span : spans) {
    if (span.is_array() && span.size() == 2 && s.iter_begin < span[1].get<uint64_t>() &&
        s.iter_end > span[0].get<uint64_t>()) {
      return true;
    }
  }
  return false;
}

// Whether the candidate's ranks waited for a CPU beyond their peers' spread (the differential
// test's median + z robust sigmas) in the slots the candidate was flagged in, as persistently as
// any finding must be flagged (NeededWindows). On a host with fewer free cores than the job's
// threads every rank waits, a different one each window, and where one such wait lands (a
// function on one rank, a few windows) passes for that function's fault; a rank whose own run
// queue stood out was held back by its host. One slot of it is that host's noise: the
// roles_clean scenario's rank 0, 8 ranks on 2 CPUs, stood out in one window and was claimed
// at 3.7% of the step. True where it cannot be told (no flagged spans, no scheduler data): the
// excess then stands as measured.
bool OwnRunQueue(const Frame& f, const Candidate& c) {
  const Json* spans = c.evidence.contains("iterations") ? &c.evidence["iterations"] : nullptr;
  if (spans == nullptr || !spans->is_array() || spans->empty()) return true;
  const auto& members = (*f.groups)[static_cast<size_t>(c.group)].members;
  int compared = 0, stood_out = 0;
  std::vector<double> peers;
  for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) {
    peers.clear();
    for (const size_t m : members) {
      const Slot* s = StepSlot(f, m, k);
      if (s == nullptr || OnCandidateRanks(f, c, m)) continue;
      if (const double v = RunDelay(m, k, *s); v >= 0) peers.push_back(v);
    }
    if (peers.size() < 2) continue;
    const double med = Median(peers);
    const double sigma = std::max(RobustSigma(peers, med), f.th.relative_floor * med);
    bool any = false, out = false;
    for (const size_t m : members) {
      const Slot* s = StepSlot(f, m, k);
      if (s == nullptr || !OnCandidateRanks(f, c, m) || !InSpans(*spans, *s)) continue;
      const double v = RunDelay(m, k, *s);
      if (v < 0) continue;
      any = true;
      out = out || v - med > f.th.z * sigma;
    }
    compared += any, stood_out += out;
  }
  return compared == 0 || (stood_out > 0 && stood_out >= NeededWindows(compared, f.th));
}

// A Python function that never ran on the training loop's thread (no critical time in any of
// its ranks' windows, all of which carried it) while it took host time: another thread's (a
// queue's feeder, a loader's helper thread), mostly waiting. On a CPU rank that time is not the
// step's; what another thread takes from the loop (the GIL, a core) shows in the loop's own
// functions.
bool OffTheLoop(const Frame& f, const Candidate& c) {
  if (c.kind != "python" || c.catalog_function < 0) return false;
  const auto fn = static_cast<size_t>(c.catalog_function);
  double self = 0, critical = 0;
  for (const size_t m : (*f.groups)[static_cast<size_t>(c.group)].members) {
    if (std::find(c.rank_set.begin(), c.rank_set.end(), f.ds->ranks[m].rank()) ==
        c.rank_set.end()) {
      continue;
    }
    for (size_t k = 0; k < f.slots[m].size(); ++k) {
      const Slot* s = SlotAt(f, m, k);
      if (s == nullptr || s->windows == 0) continue;
      if (s->critical_windows < s->windows || s->device_windows > 0) return false;
      if (fn < s->functions.size()) {
        self += s->functions[fn].self_ns;
        critical += s->functions[fn].critical_ns;
      }
    }
  }
  return self > 0 && critical == 0;
}

// A kind's time on the training loop's thread, ns per iteration, on a rank without a device
// (FORMAT.md: there a function's critical time is its own time on that thread); < 0 elsewhere.
// The rest of the kind's time is other threads'.
double LoopTime(const Frame& f, Aggregate kind, const Slot& s) {
  if (s.critical_windows < s.windows || s.device_windows > 0) return -1;
  double ns = 0;
  for (size_t i = 0; i < s.functions.size() && i < f.summed_in.size(); ++i) {
    if (f.summed_in[i] == kind) ns += s.functions[i].critical_ns;
  }
  return PerIteration(s, ns);
}

// Where the peers waited for the candidate's ranks. A rank that spends longer on its own work
// reaches the next collective last and waits there least, while its peers wait the difference.
// With visible collectives arrival order says so (detect/arrival.cpp, rank.cpp ApplyArrival);
// when they are not (DDP over gloo: the all-reduce runs inside backward), the wait shows in the
// Python frame that holds it:
// the largest function whose critical time on the peers (median) exceeds the candidate's
// ranks' (mean), outside the candidate's own call path. Critical time, not its own time: a rank
// that waits for another leaves its device idle, while one that waits for its own device (in a
// sync, or in backward for autograd's thread) does not, and a rank that arrived later at such a
// wait waits less without anyone waiting for it. Per iteration, over the slots it ran in.
struct Wait {
  int32_t function = -1;
  double peer_ns = 0, rank_ns = 0;
  // How steadily the peers waited longer there, slot by slot (Compared::consistency, turned).
  double consistency = 0;
};

bool OnCallPath(const Catalog& catalog, int32_t a, int32_t b) {
  const auto& fns = catalog.functions();
  for (const auto& [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
    for (int32_t x = from, depth = 0; x >= 0 && depth < 64; ++depth) {
      if (x == to) return true;
      const uint64_t parent = fns[static_cast<size_t>(x)].parent_id;
      x = parent != 0 ? catalog.IndexOf(parent) : -1;
    }
  }
  return false;
}

Wait ArrivalWait(const Frame& f, const Candidate& c) {
  const auto& fns = f.ds->catalog.functions();
  std::vector<size_t> culprits, peers;
  for (const size_t m : (*f.groups)[static_cast<size_t>(c.group)].members) {
    (OnCandidateRanks(f, c, m) ? culprits : peers).push_back(m);
  }
  if (culprits.empty() || peers.empty()) return {};
  if (peers.size() > kPeersSampled) {
    std::vector<size_t> sample;
    for (size_t i = 0; i < kPeersSampled; ++i) sample.push_back(peers[i * peers.size() / kPeersSampled]);
    peers = std::move(sample);
  }
  const std::vector<bool> ran = SlotsWhereRan(f, culprits, c.catalog_function);
  // Each rank's own time per iteration of every function that can hold a wait for other ranks.
  const auto own_times = [&](size_t m) {
    std::vector<double> ns(fns.size(), 0);
    double iterations = 0;
    for (size_t k = 0; k < f.slots[m].size(); ++k) {
      const Slot* s = SlotAt(f, m, k);
      if (s == nullptr || !ran[k]) continue;
      iterations += s->iterations;
      for (size_t i = 0; i < fns.size() && i < s->functions.size(); ++i) {
        // Visible collectives have arrival order of their own (arrival.cpp): the Python frames
        // are where an invisible one's wait shows.
        if (fns[i].kind != format::FunctionKind::kPython) continue;
        ns[i] += s->functions[i].critical_ns;
      }
    }
    for (double& v : ns) v = iterations > 0 ? v / iterations : 0;
    return ns;
  };
  std::vector<std::vector<double>> culprit_ns, peer_ns;
  for (const size_t m : culprits) culprit_ns.push_back(own_times(m));
  for (const size_t m : peers) peer_ns.push_back(own_times(m));
  Wait best;
  std::vector<double> v;
  for (size_t i = 0; i < fns.size(); ++i) {
    if (IsLoopFrame(f, static_cast<int32_t>(i))) continue;
    double rank = 0;
    for (const auto& ns : culprit_ns) rank += ns[i];
    rank /= static_cast<double>(culprit_ns.size());
    v.clear();
    for (const auto& ns : peer_ns) v.push_back(ns[i]);
    const double peer = Median(v);
    if (peer - rank <= best.peer_ns - best.rank_ns) continue;
    if (c.catalog_function >= 0 &&
        OnCallPath(f.ds->catalog, c.catalog_function, static_cast<int32_t>(i))) {
      continue;
    }
    best = {static_cast<int32_t>(i), peer, rank};
  }
  const auto fn = static_cast<size_t>(best.function);
  const auto waited = [&](size_t, size_t k, const Slot& s) {
    return ran[k] && fn < s.functions.size() ? s.functions[fn].critical_ns / s.iterations : -1.0;
  };
  if (Compared x; best.function >= 0 && CulpritsAndPeers(f, c, waited, &x)) {
    best.consistency = -x.consistency;
  }
  return best;
}

// Who answers for the time a host excess is made of: the training loop's own functions, or
// other threads (a logger, a metrics exporter) whose time is no measure of what they cost.
enum class Spent { kOnTheLoop, kOtherThreads };

// The part of a host excess that the peers' waiting confirms reached them (0 when it does not).
// The loop's own excess is confirmed by a wait of a good part of it. Other threads' time says
// nothing of the wait they cause (a thread that holds the GIL a fifth of the time can stretch
// the step by half; one that sleeps in a queue by nothing): their wait is confirmed by the
// peers waiting longer slot after slot.
double ConfirmedByArrival(const Frame& f, const Candidate& c, double excess_s, Spent spent,
                          Json* evidence) {
  if (excess_s <= 0) return 0;  // a sync never gets here: ChargeCriticalPath charges it nothing
  const Wait w = ArrivalWait(f, c);
  const double waited_s = (w.peer_ns - w.rank_ns) * 1e-9;
  const bool confirmed = spent == Spent::kOnTheLoop ? waited_s >= kConfirms * excess_s
                                                    : waited_s > 0 && w.consistency >= kConsistent;
  if (w.function < 0 || !confirmed) return 0;
  (*evidence)["peers_wait_in"] = {
      {"function", f.ds->catalog.functions()[static_cast<size_t>(w.function)].name},
      {"peers_s_per_iter", w.peer_ns * 1e-9},
      {"rank_s_per_iter", w.rank_ns * 1e-9}};
  return std::min(excess_s, waited_s);
}

// What the peers measurably waited for the candidate's rank at visible collectives, per
// iteration (ApplyArrival attached it: the rank arrived last, persistently), where no candidate
// of another kind on that rank explains the lateness; 0 otherwise. A host excess of X cost the
// job min(X, this): its peers waited no longer than that, and with nothing else on the rank to
// answer for it, the lateness is the host code's, whatever share of it the estimate of the
// device's queue puts on the critical path (a loop held back for the GIL by another thread, a
// descheduled launcher: the estimate sees a busy device, the peers see a late rank).
double MeasuredWait(const Candidate& c, const std::vector<Candidate>& all) {
  if (!c.evidence.value("culprit", false) || !c.evidence.contains("arrival")) return 0;
  for (const Candidate& other : all) {
    if (&other == &c || Applies(other) || other.score <= 0) continue;
    if (other.group == c.group && other.rank_set == c.rank_set &&
        other.evidence.value("culprit", false)) {
      return 0;  // its slower GPU, link, collective or data loader: the host waited for it
    }
  }
  return std::max(0.0, c.evidence["arrival"].value("peers_wait_s_per_iter", 0.0));
}

// The group's step, median over the slots the candidate's ranks ran in: one slot (start-up)
// does not set it, however few slots carried the measure compared.
double Step(const Frame& f, const Candidate& c) {
  Compared step;
  const auto iteration = [](size_t, size_t, const Slot& s) { return s.MeanIterationNs(); };
  return CulpritsAndPeers(f, c, iteration, &step) ? step.iteration_ns : 0;
}

// Charges a candidate `reached_s` per iteration, scored on the group's step.
void Charge(Candidate* c, double reached_s, double iteration_ns) {
  c->score = Score(reached_s * 1e9, iteration_ns, c->evidence.value("windows_seen", 0.0),
                   c->evidence.value("windows_total", 0.0));
  c->impact_s_per_iter = reached_s;
  if (iteration_ns > 0) c->evidence["iteration_s"] = iteration_ns * 1e-9;
}

// What the peers were seen to wait for other threads' time on the candidate's ranks, per
// iteration (0 when unconfirmed), `step_ns` the group's step: a thread that runs throughout takes
// more than a step per step, and the peers can wait no more than a step.
double OtherThreadsWait(const Frame& f, const Candidate& c, double step_ns, double measured_s,
                        Json* arrival) {
  const double excess_s = c.impact_s_per_iter;
  const double payable_s = step_ns > 0 ? std::min(excess_s, step_ns * 1e-9) : excess_s;
  return std::max(ConfirmedByArrival(f, c, payable_s, Spent::kOtherThreads, arrival), measured_s);
}

// A kind's excess on a rank without a device, `loop` its time on the training loop's thread:
// what the loop steadily spent beyond its peers was the step's, and the rest, other threads'
// time (a logger, a metrics exporter holding the GIL), cost the job only where the peers waited
// for the rank, as for one such thread's function (OffTheLoop). Unconfirmed, it cost nothing.
void ChargeOtherThreads(const Frame& f, const Compared& loop, double measured_s, Candidate* c) {
  const double excess_s = c->impact_s_per_iter;
  // On a CPU rank in step with its peers, the loop's time is the step's on every rank: a loop
  // excess that is not there slot after slot is noise.
  const double loop_s = loop.consistency >= kConsistent
                            ? std::clamp((loop.culprit_ns - loop.peer_ns) * 1e-9, 0.0, excess_s)
                            : 0;
  if (loop_s >= excess_s) return;
  const double step_ns = Step(f, *c);
  Json arrival = Json::object();
  const double confirmed = OtherThreadsWait(f, *c, step_ns, measured_s, &arrival);
  const double reached_s = std::max(loop_s, confirmed);
  c->evidence["host_critical_path"] = {{"host_excess_s_per_iter", excess_s},
                                       {"loop_excess_s_per_iter", loop_s},
                                       {"reached_s_per_iter", reached_s}};
  if (confirmed > loop_s) {
    c->evidence.update(arrival);
    c->evidence["decided_by"] = "arrival";
  } else {
    c->evidence["decided_by"] = "loop_thread";
  }
  Charge(c, reached_s, step_ns);
}

}  // namespace

void AttachRunQueue(const Frame& f, std::vector<Candidate>* cands) {
  for (Candidate& c : *cands) {
    if (!Applies(c)) continue;
    Compared x;
    if (!CulpritsAndPeers(f, c, RunDelay, &x)) continue;
    const double excess_s = std::max(0.0, x.culprit_ns - x.peer_ns) * 1e-9;
    const double explains =
        c.impact_s_per_iter > 0 ? std::min(1.0, excess_s / c.impact_s_per_iter) : 0;
    c.evidence["run_queue"] = {{"rank_s_per_iter", x.culprit_ns * 1e-9},
                               {"peers_s_per_iter", x.peer_ns * 1e-9},
                               {"explains_share", explains}};
    if (explains < kDescheduled) continue;
    c.category = "host_cpu";
    if (OwnRunQueue(f, c)) {
      c.evidence["decided_by"] = "run_queue_delay";
    } else {
      // The host's contention, shared by every rank: no rank of its own to blame.
      c.evidence["decided_by"] = "shared_run_queue";
      c.score = 0;
      c.impact_s_per_iter = 0;
    }
  }
}

void ChargeCriticalPath(const Frame& f, std::vector<Candidate>* cands) {
  for (Candidate& c : *cands) {
    if (!Applies(c) || c.evidence.value("decided_by", std::string()) == "shared_run_queue") {
      continue;
    }
    // A sync's wait is the device's time, critical path or not (a sync is a wait, never the
    // rank's own work): the queue model marks it critical where the device waited too (a
    // receive from a late peer), and the cause is that peer's or the device's own, which their
    // findings carry. The benchmark's sim_pp.2s GC pauses: rank 3's loss read, 82 ms a step
    // behind its pair's, was a host_cpu claim on the rank that waited for rank 2's activations.
    if (c.kind == "sync") {
      c.evidence["decided_by"] = "device_wait";
      c.score = 0;
      c.impact_s_per_iter = 0;
      continue;
    }
    const double measured_s = std::min(MeasuredWait(c, *cands), c.impact_s_per_iter);
    if (OffTheLoop(f, c)) {
      // Another thread's time. It cost the job only where the peers waited for this rank: the
      // training loop's own functions got slower (the GIL, a core), and the verdict names the
      // thread's function that took the time.
      Json arrival = Json::object();
      const double step_ns = Step(f, c);
      const double confirmed = OtherThreadsWait(f, c, step_ns, measured_s, &arrival);
      c.evidence["host_critical_path"] = {{"host_excess_s_per_iter", c.impact_s_per_iter},
                                          {"reached_s_per_iter", confirmed},
                                          {"off_the_training_loop", true}};
      if (confirmed > 0) {
        c.evidence.update(arrival);
        c.evidence["decided_by"] = "arrival";
        Charge(&c, confirmed, step_ns);
      } else {
        c.evidence["decided_by"] = "host_critical_path";
        c.score = 0;
        c.impact_s_per_iter = 0;
      }
      continue;
    }
    Compared x;
    // The rank's host time on its critical path (Frame::host_critical: every function's
    // critical time, where every window carried it and the rank drove a device).
    const auto host_critical = [&](size_t m, size_t k, const Slot&) {
      return f.host_critical[m][k];
    };
    const auto loop_time = [&](size_t, size_t, const Slot& s) {
      return LoopTime(f, c.aggregate, s);
    };
    if (!CulpritsAndPeers(f, c, host_critical, &x) || x.iteration_ns <= 0) {
      // No critical path: what the rank's host did beyond its peers is judged by the host
      // time, up to what the peers were measured to wait for it where they were. On a CPU rank
      // a kind's sum holds other threads' time too.
      Compared loop;
      if (c.aggregate != Aggregate::kNone && CulpritsAndPeers(f, c, loop_time, &loop)) {
        ChargeOtherThreads(f, loop, measured_s, &c);
      } else if (measured_s > 0 && measured_s < c.impact_s_per_iter) {
        c.evidence["decided_by"] = "arrival";
        Charge(&c, measured_s, Step(f, c));
      } else {
        // The loop's own function on a CPU rank: its excess is the rank's, and what it cost the
        // job is what the peers waited for it (in the frame that holds gloo's all-reduce), the
        // what-if's bound. Peers on the node's shared cores ran faster meanwhile: the benchmark's
        // torch_lm slow reads, 510 ms a step on rank 2, cost the job 334 ms against its twin.
        Json arrival = Json::object();
        if (ConfirmedByArrival(f, c, c.impact_s_per_iter, Spent::kOnTheLoop, &arrival) > 0) {
          c.evidence.update(arrival);
        }
      }
      continue;
    }
    const double excess_s = c.impact_s_per_iter;
    double reached_s = std::clamp((x.culprit_ns - x.peer_ns) * 1e-9, 0.0, excess_s);
    // The estimate of the device's queue is an estimate; peers that waited for this rank are a
    // measurement. No estimated share may hide what the arrival evidence confirms.
    Json arrival = Json::object();
    const double confirmed = ConfirmedByArrival(f, c, excess_s, Spent::kOnTheLoop, &arrival);
    c.evidence["host_critical_path"] = {{"rank_s_per_iter", x.culprit_ns * 1e-9},
                                        {"peers_s_per_iter", x.peer_ns * 1e-9},
                                        {"host_excess_s_per_iter", excess_s},
                                        {"reached_s_per_iter", reached_s}};
    if (confirmed > reached_s) {
      reached_s = confirmed;
      c.evidence.update(arrival);
      c.evidence["decided_by"] = "arrival";
    } else if (measured_s > reached_s) {
      reached_s = measured_s;
      c.evidence["decided_by"] = "arrival";
    } else if (c.evidence.value("decided_by", std::string()) != "run_queue_delay") {
      c.evidence["decided_by"] = "host_critical_path";
    }
    // Scored like any candidate, on the group's steady step: the flagged windows' mean step may
    // hold the start-up.
    Charge(&c, reached_s, Step(f, c));
  }
}

}  // namespace perftracker::analyzer
