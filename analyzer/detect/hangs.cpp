#include "analyzer/detect/hangs.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>

namespace perftracker::analyzer {
namespace {

struct Member {
  int rank;
  const format::CommProgress* progress;
  const format::LiveState* live;
};

std::string CommLabel(uint8_t op, uint64_t comm_id) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(comm_id));
  return std::string(format::CollectiveOpName(static_cast<format::CollectiveOp>(op))) +
         " on comm " + hex;
}

std::string LastFrame(const format::LiveState& live) {
  return live.python_stack.empty() ? "(no Python frame)" : live.python_stack.back();
}

double StuckSeconds(const Member& m) {
  const format::CommProgress& p = *m.progress;
  if (p.inflight_op == 0 || m.live->update_mono_ns < p.inflight_since_mono_ns) return 0;
  return static_cast<double>(m.live->update_mono_ns - p.inflight_since_mono_ns) * 1e-9;
}

// How each member left; false when every one exited normally (a finished job: nothing hangs).
bool NoteExits(const std::vector<Member>& members, bool job_exited, Hang* h) {
  bool all_normal = true;
  for (const Member& m : members) {
    switch (m.live->exit_state) {
      case format::ExitState::kNormalExit:
        h->ranks_exited_normally.push_back(m.rank);
        continue;
      case format::ExitState::kSigterm:
        h->ranks_sigterm.push_back(m.rank);
        break;
      case format::ExitState::kRunning:
        if (job_exited) h->ranks_vanished.push_back(m.rank);
        break;
    }
    all_normal = false;
  }
  return !all_normal;
}

std::optional<Hang> JudgeComm(uint64_t comm_id, const std::vector<Member>& members,
                              double stuck_after_s, bool job_exited) {
  Hang h;
  if (!NoteExits(members, job_exited, &h)) return std::nullopt;
  h.comm_id = comm_id;
  uint8_t op = 0;
  uint64_t lo = UINT64_MAX, hi = 0, done = 0;
  for (const Member& m : members) {
    const double stuck = StuckSeconds(m);
    if (stuck > h.stuck_s) h.stuck_s = stuck, op = m.progress->inflight_op;
    lo = std::min(lo, m.progress->last_seq_launched);
    hi = std::max(hi, m.progress->last_seq_launched);
    done = std::max(done, m.progress->last_seq_completed);
    h.comm_size = std::max(h.comm_size, static_cast<int>(m.progress->comm_size));
  }
  if (h.stuck_s < stuck_after_s) return std::nullopt;
  // The hung collective is the first one no member completed: a collective completes only once
  // every member launched it, and ranks launch asynchronously, each as far ahead as its host got
  // before something blocked it. A rank that launched it is waiting in it, however much less far
  // ahead than its peers. Without completions (a collector that times no collective), the first
  // one some member never launched.
  h.sequence = done > 0 ? std::min(done + 1, hi) : (lo < hi ? lo + 1 : hi);
  h.collective = CommLabel(op, comm_id);
  bool any_completed = false;
  for (const Member& m : members) {
    if (m.progress->last_seq_launched < h.sequence) {
      h.ranks_missing.push_back(m.rank);
      h.last_python_frame.push_back({m.rank, LastFrame(*m.live)});
    } else {
      h.ranks_arrived.push_back(m.rank);
      any_completed |= m.progress->last_seq_completed >= h.sequence;
    }
  }
  h.ranks_without_file = std::max(0, h.comm_size - static_cast<int>(members.size()));
  h.communication = h.ranks_missing.empty() && !any_completed;
  if (h.ranks_missing.empty() && !h.communication) return std::nullopt;
  if (h.communication) {
    for (const Member& m : members) h.last_python_frame.push_back({m.rank, LastFrame(*m.live)});
  }
  return h;
}

}  // namespace

std::vector<Hang> DetectHangs(const Dataset& ds, double median_iteration_ns) {
  std::map<uint64_t, std::vector<Member>> comms;
  bool job_exited = false;  // some rank recorded its exit: a rank still "running" vanished
  for (const RankData& r : ds.ranks) {
    if (!r.live) continue;
    job_exited |= r.live->exit_state != format::ExitState::kRunning;
    for (const format::CommProgress& p : r.live->comms) {
      comms[p.comm_id].push_back({r.rank(), &p, &*r.live});
    }
  }
  // A communicator is stuck once it has not moved for 10 s and 5 steps, and for twice the
  // longest step any rank took after start-up: a host that reads its loss every 10 steps waits
  // there for the 10 steps its device has queued, its communicators not moving all along (their
  // completions are sampled; the host launches nothing while it waits). On the benchmark's
  // 1 s-step sim_dp, 65 false reports of 10-14 s in a 2-minute watch without it.
  double longest_s = 0;
  for (const RankData& r : ds.ranks) {
    const format::Histogram h = r.SteadyIterationHist();
    if (!h.empty()) longest_s = std::max(longest_s, static_cast<double>(h.Quantile(1)) * 1e-9);
  }
  const double stuck_after_s =
      std::max({10.0, 5 * median_iteration_ns * 1e-9, 2 * longest_s});
  std::vector<Hang> hangs;
  for (const auto& [comm_id, members] : comms) {
    if (auto h = JudgeComm(comm_id, members, stuck_after_s, job_exited)) {
      hangs.push_back(std::move(*h));
    }
  }
  std::sort(hangs.begin(), hangs.end(), [](const Hang& a, const Hang& b) {
    return a.stuck_s != b.stuck_s ? a.stuck_s > b.stuck_s : a.comm_id < b.comm_id;
  });
  return hangs;
}

}  // namespace perftracker::analyzer
