#include "preload/aggregator.h"

#include <algorithm>

namespace perftracker::preload {

Aggregator::Aggregator(uint64_t window_iters, uint64_t window_ns, uint64_t start_ns)
    : window_iters_(std::max<uint64_t>(window_iters, 1)),
      window_ns_(window_ns),
      window_start_ns_(start_ns),
      iteration_start_ns_(start_ns) {}

void Aggregator::Add(const Event& e, const Tables& tables) {
  switch (e.type) {
    case EventType::kCall:
      AddCall(e);
      break;
    case EventType::kDeviceTime: {
      if (e.slot >= functions_.size()) functions_.resize(e.slot + 1);
      FunctionAcc& f = functions_[e.slot];
      ++f.device_samples;
      f.device_ns += e.a;
      f.device.Add(e.a);
      break;
    }
    case EventType::kCollLaunch:
    case EventType::kCollDone:
      AddCollective(e, tables);
      break;
    case EventType::kIteration:
      EndIteration(e.t, tables);
      break;
  }
}

void Aggregator::AddCall(const Event& e) {
  if (e.slot >= functions_.size()) functions_.resize(e.slot + 1);
  FunctionAcc& f = functions_[e.slot];
  f.min = f.count == 0 ? e.a : std::min(f.min, e.a);
  f.max = std::max(f.max, e.a);
  ++f.count;
  f.total += e.a;
  f.self += e.b;
  f.wait += e.c;
  f.bytes += e.d;
  f.duration.Add(e.a);
  if (f.iter_total == 0) touched_.push_back(e.slot);
  f.iter_total += std::max<uint64_t>(e.a, 1);
}

Aggregator::CommState& Aggregator::Comm(const CollectiveEntry& entry) {
  for (CommState& c : comms_) {
    if (c.comm_id == entry.comm_id) return c;
  }
  comms_.push_back(CommState{entry.comm_id, entry.comm_size, entry.comm_rank});
  return comms_.back();
}

void Aggregator::AddCollective(const Event& e, const Tables& tables) {
  if (e.slot >= tables.collective_count.load(std::memory_order_acquire)) return;
  if (e.slot >= collectives_.size()) collectives_.resize(e.slot + 1);
  CollectiveAcc& c = collectives_[e.slot];
  CommState& comm = Comm(tables.collectives[e.slot]);
  const uint64_t seq = e.a;
  if (e.type == EventType::kCollLaunch) {
    if (!c.launched) c.first_seq = seq;
    c.launched = true;
    c.last_launched = std::max(c.last_launched, seq);
    ++c.count;
    c.host_ns += e.b;
    c.launch_offset.Add(e.t >= iteration_start_ns_ ? e.t - iteration_start_ns_ : 0);
    if (!comm.any_launched || seq > comm.launched) comm.launched = seq;
    if (comm.inflight_op == 0) {
      comm.inflight_op = static_cast<uint8_t>(tables.collectives[e.slot].op);
      comm.inflight_since = e.t;
    }
    comm.any_launched = true;
    return;
  }
  c.completed = true;
  c.last_completed = std::max(c.last_completed, seq);
  if (e.b > 0) {
    ++c.device_samples;
    c.device_ns += e.b;
    c.device.Add(e.b);
  }
  if (!comm.any_completed || seq > comm.completed) comm.completed = seq;
  comm.any_completed = true;
  if (comm.completed >= comm.launched) comm.inflight_op = 0;
}

void Aggregator::EndIteration(uint64_t end_ns, const Tables& tables) {
  const uint64_t d = end_ns > iteration_start_ns_ ? end_ns - iteration_start_ns_ : 0;
  format::IterationStats& s = iteration_stats_;
  if (s.count == 0) s.first = iterations_;
  s.min_ns = s.count == 0 ? d : std::min(s.min_ns, d);
  s.max_ns = std::max(s.max_ns, d);
  ++s.count;
  s.total_ns += d;
  s.duration.Add(d);
  for (uint32_t slot : touched_) {
    functions_[slot].per_iteration.Add(functions_[slot].iter_total);
    functions_[slot].iter_total = 0;
  }
  touched_.clear();
  ++iterations_;
  iteration_start_ns_ = end_ns;
  if (iterations_ % window_iters_ == 0) finished_.push_back(Build(end_ns, tables));
}

std::optional<format::Window> Aggregator::TakeFinished(uint64_t now_ns, const Tables& tables) {
  if (finished_.empty() && iterations_ == 0 && window_ns_ > 0 &&
      now_ns - window_start_ns_ >= window_ns_) {
    finished_.push_back(Build(now_ns, tables));
  }
  if (finished_.empty()) return std::nullopt;
  format::Window w = std::move(finished_.front());
  finished_.erase(finished_.begin());
  return w;
}

format::Window Aggregator::TakePartial(uint64_t now_ns, const Tables& tables) {
  return Build(now_ns, tables);
}

void Aggregator::AddHealth(uint64_t dropped_events, uint64_t hook_ns, uint64_t hook_calls) {
  health_.dropped_events += dropped_events;
  health_.hook_ns += hook_ns;
  health_.hook_calls += hook_calls;
}

format::LiveState Aggregator::Live(uint64_t now_ns) const {
  format::LiveState s;
  s.update_mono_ns = now_ns;
  s.iteration = iterations_;
  s.windows_written = window_seq_;
  for (const CommState& c : comms_) {
    s.comms.push_back(format::CommProgress{c.comm_id, c.size, c.rank, c.launched, c.completed,
                                           c.inflight_op, c.inflight_since});
  }
  return s;
}

}  // namespace perftracker::preload
