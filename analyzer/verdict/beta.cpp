// Each candidate's share of its ranks' critical path (beta) against its peers', measured as the
// critical-path detector measures it (detect/critical.h).
#include <vector>

#include "analyzer/base/stats.h"
#include "analyzer/detect/critical.h"
#include "analyzer/detect/detect.h"
#include "analyzer/verdict/verdict.h"

namespace perftracker::analyzer {

using format::FunctionKind;

// beta on the candidate's ranks and their peers, over the windows its function ran in: of its
// subtree for a Python function (the verdict may be a caller whose own time is nil), of its own
// critical time otherwise.
void AttachBeta(const Frame& f, std::vector<Candidate>* cands) {
  const auto& fns = f.ds->catalog.functions();
  const std::vector<int32_t> parent = ParentIndex(f.ds->catalog);
  for (Candidate& c : *cands) {
    if (c.catalog_function < 0 || c.group < 0 || c.evidence.contains("beta")) continue;
    // Another thread's function is never on the loop's critical path: a share of 0 would say
    // nothing of what it cost (its peers' wait does).
    if (c.evidence.contains("host_critical_path") &&
        c.evidence["host_critical_path"].value("off_the_training_loop", false)) {
      continue;
    }
    const auto fn = static_cast<size_t>(c.catalog_function);
    const bool subtree = fns[fn].kind == FunctionKind::kPython;
    const auto& members = (*f.groups)[static_cast<size_t>(c.group)].members;
    std::vector<size_t> culprit_members;
    for (const size_t m : members) {
      if (OnCandidateRanks(f, c, m)) culprit_members.push_back(m);
    }
    const std::vector<bool> ran = SlotsWhereRan(f, culprit_members, c.catalog_function);
    const std::vector<size_t> members_of_subtree =
        subtree ? SubtreeOf(f, parent, fn) : std::vector<size_t>{};
    std::vector<double> culprits, peers;
    for (const size_t m : members) {
      double critical = 0, iteration = 0;
      bool known = false;
      for (size_t k = 0; k < f.slots[m].size(); ++k) {
        const Slot* s = SlotAt(f, m, k);
        if (s == nullptr || !ran[k] || s->critical_windows < s->windows || s->windows == 0) {
          continue;
        }
        known = true;
        iteration += s->iteration_ns;
        if (subtree) {
          critical += SubtreeCriticalNs(*s, members_of_subtree);
        } else if (fn < s->functions.size()) {
          critical += s->functions[fn].critical_ns;
        }
      }
      if (!known || iteration <= 0) continue;
      (OnCandidateRanks(f, c, m) ? culprits : peers).push_back(critical / iteration);
    }
    if (culprits.empty()) continue;
    double sum = 0;
    for (const double b : culprits) sum += b;
    c.evidence["beta"] = sum / static_cast<double>(culprits.size());
    if (!peers.empty()) c.evidence["peer_beta"] = Median(peers);
  }
}

}  // namespace perftracker::analyzer
