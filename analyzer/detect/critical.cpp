// The paper's expected range for host code (research/perftracker.md §7, §12.5): a Python
// function's share of the iteration on the rank's critical path (beta) is expected in
// [0, 0.01]. Above it on the median rank of a peer group, in enough windows, it is a problem
// every rank shares -- which comparing ranks cannot see: a pure-Python routine after every step
// that leaves the GPU idle, a slow per-step routine in a CPU job.
//
// beta of a function counts its whole subtree's critical time (a routine's time may sit in the
// library calls it makes). The collector charges only host time during which the device had
// nothing queued (preload/core/critical_path.h). The framework's own frames are left out, with
// a device or without: without one (CPU training) their time is the compute itself, and so is
// the user's code they call back into (a module's forward, a custom backward: the model); with one,
// the entry points (backward, DDP's forward, the optimizer's step) hold the device's work and
// the waits for it -- autograd's threads launching, a gloo all-reduce on the host -- which is
// the device's time or the communication's, never overhead of theirs. The user's code and other
// libraries' is what the range judges. The loop itself (the module body or function that holds
// the step loop, detect.h LoopFrames) holds everything: it is never flagged, nor named for a
// frame beneath it.
//
// Of nested flagged functions the deepest that explain their caller are kept (a function whose
// flagged callees hold >= 80% of its beta is only their container); a library frame is then
// named at the first frame of the user's own code above it that it explains >= 80% of, or that
// was dropped as such a container (the chain between them is that frame's cost).
#include <algorithm>

#include "analyzer/detect/critical.h"
#include "analyzer/detect/detect.h"
#include "analyzer/base/stats.h"

namespace perftracker::analyzer {
namespace {

using format::FunctionKind;

constexpr double kCalleesExplain = 0.8;

// Files of the framework (site-packages-relative names, as the collector writes them).
bool Framework(const std::string& name) { return name.starts_with("torch/"); }

// Whether a framework frame is above each function: on a CPU rank the framework's frames are
// the compute, and so is the user's code they call back into -- an nn.Module's forward that
// Module._call_impl dispatches, a custom autograd Function's backward -- which is the model
// itself, written in the user's files (the user's attention does its matmuls there). Parents
// precede their children in the catalog.
std::vector<bool> UnderFramework(const Catalog& catalog, const std::vector<int32_t>& parent) {
  const auto& fns = catalog.functions();
  std::vector<bool> under(fns.size(), false);
  for (size_t i = 0; i < fns.size(); ++i) {
    const int32_t p = parent[i];
    if (p >= 0 && static_cast<size_t>(p) < i) {
      under[i] = Framework(fns[static_cast<size_t>(p)].name) || under[static_cast<size_t>(p)];
    }
  }
  return under;
}

// Critical ns per iteration of each Python function's subtree on one rank in one slot; empty
// when the slot lacks critical-path data in any of its windows.
std::vector<double> SubtreeCritical(const Frame& f, const Slot& s,
                                    const std::vector<int32_t>& parent,
                                    const std::vector<bool>& under_framework) {
  if (s.critical_windows == 0 || s.critical_windows < s.windows || s.iterations <= 0) return {};
  const auto& fns = f.ds->catalog.functions();
  const bool cpu = s.device_windows == 0;
  std::vector<double> sub(s.functions.size(), 0);
  for (size_t i = s.functions.size(); i-- > 0;) {
    const FunctionInfo& info = fns[i];
    if (info.kind != FunctionKind::kPython) continue;
    if (!Framework(info.name) && !IsLoopFrame(f, static_cast<int32_t>(i)) &&
        !(cpu && under_framework[i])) {
      sub[i] += s.functions[i].critical_ns / s.iterations;
    }
    const int32_t p = parent[i];
    if (p >= 0 && static_cast<size_t>(p) < i &&
        fns[static_cast<size_t>(p)].kind == FunctionKind::kPython) {
      sub[static_cast<size_t>(p)] += sub[i];
    }
  }
  return sub;
}

}  // namespace

// Each catalog function's caller (catalog index), -1 at the root.
std::vector<int32_t> ParentIndex(const Catalog& catalog) {
  const auto& fns = catalog.functions();
  std::vector<int32_t> parent(fns.size(), -1);
  for (size_t i = 0; i < fns.size(); ++i) {
    if (fns[i].parent_id != 0) parent[i] = catalog.IndexOf(fns[i].parent_id);
  }
  return parent;
}

// `fn` and the Python functions beneath it through Python callers only: the functions whose
// critical time adds up into fn's (as in SubtreeCritical). Parents precede their children in
// the catalog.
std::vector<size_t> SubtreeOf(const Frame& f, const std::vector<int32_t>& parent, size_t fn) {
  const auto& fns = f.ds->catalog.functions();
  std::vector<bool> in(fns.size(), false);
  std::vector<size_t> out;
  for (size_t i = fn; i < fns.size(); ++i) {
    const int32_t p = parent[i];
    in[i] = i == fn || (fns[i].kind == FunctionKind::kPython && p >= 0 &&
                        static_cast<size_t>(p) < i && in[static_cast<size_t>(p)]);
    if (in[i]) out.push_back(i);
  }
  return out;
}

// The critical ns of a subtree in one slot. Unlike the range's sums, the framework's frames
// count on a CPU rank too: the question is how long the function held the critical path, and a
// user function's torch.save is on it however the range judges torch's own frames.
double SubtreeCriticalNs(const Slot& s, const std::vector<size_t>& subtree) {
  double ns = 0;
  for (const size_t i : subtree) {
    if (i < s.functions.size()) ns += s.functions[i].critical_ns;
  }
  return ns;
}

std::vector<Finding> DetectCriticalPath(const Frame& f) {
  std::vector<Finding> out;
  const auto& fns = f.ds->catalog.functions();
  const std::vector<int32_t> parent = ParentIndex(f.ds->catalog);
  const std::vector<bool> under_framework = UnderFramework(f.ds->catalog, parent);
  const double bound = f.th.blocking_expected;
  for (size_t gi = 0; gi < f.groups->size(); ++gi) {
    const PeerGroup& g = (*f.groups)[gi];
    // Per slot above the range: the median rank's critical ns and share, and the step. Judged by
    // their medians over the slots: the start-up slot is no measure of the steady state.
    struct Acc {
      int seen = 0;
      std::vector<double> values, iterations, shares;
      std::vector<int> ranks;
      double Share() const { return MedianOf(shares); }
    };
    std::vector<Acc> acc(fns.size());
    int present = 0;
    for (size_t k = 0; k < f.ds->slot_keys.size(); ++k) {
      std::vector<std::pair<size_t, std::vector<double>>> subs;  // member, subtree ns/iter
      std::vector<double> iters;
      size_t ran = 0;
      for (const size_t m : g.members) {
        const Slot* s = SlotAt(f, m, k);
        if (s == nullptr) continue;
        ++ran;
        std::vector<double> sub = SubtreeCritical(f, *s, parent, under_framework);
        if (sub.empty()) continue;
        subs.push_back({m, std::move(sub)});
        iters.push_back(s->MeanIterationNs());
      }
      // What the group shares is its median rank's: where most of its ranks have no timeline,
      // the few that do are no median (one straggler's own time would pass for everyone's).
      if (subs.empty() || subs.size() * 2 <= ran) continue;
      ++present;
      const double iter = Median(iters);
      if (iter <= 0) continue;
      for (size_t fn = 0; fn < fns.size(); ++fn) {
        if (fns[fn].kind != FunctionKind::kPython || IsLoopFrame(f, static_cast<int32_t>(fn))) {
          continue;
        }
        std::vector<double> v;
        for (const auto& [m, sub] : subs) v.push_back(fn < sub.size() ? sub[fn] : 0);
        const double med = MedianOf(v);
        if (med / iter <= bound) continue;
        Acc& a = acc[fn];
        ++a.seen;
        a.values.push_back(med), a.iterations.push_back(iter), a.shares.push_back(med / iter);
        for (const auto& [m, sub] : subs) {
          if (fn < sub.size() && sub[fn] / iter > bound) a.ranks.push_back(f.ds->ranks[m].rank());
        }
      }
    }
    std::vector<bool> flagged(fns.size(), false);
    for (size_t fn = 0; fn < fns.size(); ++fn) {
      flagged[fn] = acc[fn].seen > 0 && acc[fn].seen >= NeededWindows(present, f.th);
    }
    // A flagged function whose flagged callees hold most of its time is only their container.
    std::vector<double> callees(fns.size(), 0);
    for (size_t fn = 0; fn < fns.size(); ++fn) {
      if (flagged[fn] && parent[fn] >= 0) {
        callees[static_cast<size_t>(parent[fn])] += acc[fn].Share();
      }
    }
    const auto container = [&](size_t fn) {
      return flagged[fn] && callees[fn] >= kCalleesExplain * acc[fn].Share();
    };
    std::vector<bool> named_already(fns.size(), false);
    for (size_t fn = 0; fn < fns.size(); ++fn) {
      if (!flagged[fn] || container(fn)) continue;
      // A library frame at the user's depth: the first user frame above that it explains, or
      // that was dropped as a container of flagged callees. The container test applies at each
      // level, so through a library frame between them (log_metrics > json.dumps > encode, each
      // 80-90% of its caller) the leaf may hold less than 80% of the user frame that the chain
      // stands for; the user frame is the finding then, the leaf its part.
      int32_t named = static_cast<int32_t>(fn);
      for (int32_t a = parent[fn], depth = 0;
           a >= 0 && depth < 64 && !UserCode(fns[static_cast<size_t>(named)].name);
           a = parent[static_cast<size_t>(a)], ++depth) {
        if (fns[static_cast<size_t>(a)].kind != FunctionKind::kPython || IsLoopFrame(f, a)) break;
        if (UserCode(fns[static_cast<size_t>(a)].name)) {
          const Acc& up = acc[static_cast<size_t>(a)];
          if (up.seen > 0 && (acc[fn].Share() >= kCalleesExplain * up.Share() ||
                              container(static_cast<size_t>(a)))) {
            named = a;
          }
          break;
        }
      }
      // Two leaves of one container are one finding at it: its value holds them both.
      if (named != static_cast<int32_t>(fn) && named_already[static_cast<size_t>(named)]) continue;
      named_already[static_cast<size_t>(named)] = true;
      const Acc& a = acc[static_cast<size_t>(named)];
      Finding x;
      x.source = Source::kExpectedRange;
      x.group = static_cast<int>(gi);
      x.function = named;
      const double share = a.Share();
      x.value_ns = MedianOf(a.values);
      x.iteration_ns = MedianOf(a.iterations);
      x.peer_median_ns = bound * x.iteration_ns;
      x.deviation = share - bound;
      x.excess_ns = x.value_ns - x.peer_median_ns;
      x.windows_seen = a.seen;
      x.windows_total = present;
      x.ranks = a.ranks;
      std::sort(x.ranks.begin(), x.ranks.end());
      x.ranks.erase(std::unique(x.ranks.begin(), x.ranks.end()), x.ranks.end());
      x.extra["metric"] = "critical_path";
      x.extra["beta"] = share;
      x.extra["expected_max_beta"] = bound;
      if (named != static_cast<int32_t>(fn)) x.extra["flagged_frame"] = fns[fn].name;
      out.push_back(std::move(x));
    }
  }
  return out;
}

}  // namespace perftracker::analyzer
