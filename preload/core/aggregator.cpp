#include "preload/core/aggregator.h"

#include <algorithm>

#include "preload/core/py_mode.h"

namespace perftracker::preload {

Aggregator::Aggregator(uint64_t block_iters, uint64_t window_ns, uint64_t start_ns)
    : schedule_(block_iters, window_ns),
      window_ns_(window_ns),
      window_start_ns_(start_ns),
      iteration_start_ns_(start_ns) {}

void Aggregator::Add(const Event& e, const Tables& tables) {
  switch (e.type) {
    case EventType::kCall:
      AddCall(e);
      break;
    case EventType::kNativeCall:
      AddNativeCall(e, tables);
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
    case EventType::kCritical:
      critical_path_ = true;
      if (e.slot == kNoSlot) {
        device_idle_ns_ += e.a;
      } else {
        if (e.slot >= functions_.size()) functions_.resize(e.slot + 1);
        ((e.flags[0] & kCallSlice) != 0 ? functions_[e.slot].critical_slice
                                        : functions_[e.slot].critical) += e.a;
      }
      break;
  }
}

void Aggregator::AddCall(const Event& e) {
  if ((e.flags[0] & kCallUntimed) != 0) {
    FunctionAcc& f = Touch(e.slot);
    f.count += e.a;
    f.iter_count += e.a;
    return;
  }
  if ((e.flags[0] & kCallSlice) == 0) {
    AddSample(e.slot, true, e.a, e.b, e.c, e.d);
    return;
  }
  FunctionAcc& f = Touch(e.slot);
  f.slice_total += e.a;
  f.slice_self += e.b;
  f.iter_slice_ns += std::max<uint64_t>(e.a, 1);
}

void Aggregator::AddNativeCall(const Event& e, const Tables& tables) {
  if ((e.flags[0] & kNativeCaptured) != 0) {
    // Recorded into a graph, not run: apart from the calls that ran, in no iteration's total.
    for (const Slot slot : {e.slot, static_cast<Slot>(e.a), static_cast<Slot>(e.a >> 32)}) {
      if (slot == kNoSlot) continue;
      if (slot >= functions_.size()) functions_.resize(slot + 1);
      ++functions_[slot].captured;
    }
    return;
  }
  const bool timed = (e.flags[0] & kNativeTimed) != 0;
  const uint64_t wait = (e.flags[0] & kNativeBlocking) != 0 ? e.b : 0;
  const auto site = static_cast<Slot>(e.a);
  const auto extra = static_cast<Slot>(e.a >> 32);
  AddSample(e.slot, timed, e.b, e.b, wait, e.d);
  if (site != kNoSlot) AddSample(site, timed, e.b, e.b, wait, e.d);
  if (extra != kNoSlot) AddSample(extra, timed, e.b, e.b, wait, e.d);
  const auto python = static_cast<Slot>(e.c);
  if (python != kNoSlot) {
    const Slot attributed = PyNativeSlot(python, extra != kNoSlot ? extra : e.slot, tables);
    if (attributed != kNoSlot) AddSample(attributed, timed, e.b, e.b, wait, e.d);
  }
}

Aggregator::FunctionAcc& Aggregator::Touch(Slot slot) {
  if (slot >= functions_.size()) functions_.resize(slot + 1);
  FunctionAcc& f = functions_[slot];
  if (f.iter_count == 0 && f.iter_slice_ns == 0) touched_.push_back(slot);
  return f;
}

void Aggregator::AddSample(Slot slot, bool timed, uint64_t ns, uint64_t self_ns, uint64_t wait_ns,
                           uint64_t bytes) {
  FunctionAcc& f = Touch(slot);
  ++f.count;
  f.bytes += bytes;
  ++f.iter_count;
  if (!timed) return;
  f.min = f.timed == 0 ? ns : std::min(f.min, ns);
  f.max = std::max(f.max, ns);
  ++f.timed;
  f.total += ns;
  f.self += self_ns;
  f.wait += wait_ns;
  if (self_ns != ns && !f.self_differs) {
    f.self_differs = true;
    f.self_duration = f.duration;
  }
  if (f.self_differs) f.self_duration.Add(self_ns);
  f.duration.Add(ns);
  ++f.iter_timed;
  f.iter_ns += std::max<uint64_t>(ns, 1);
}

// The pattern "calls of `target` made from Python function `python`", interned on first sight.
// The writer holds its own lock here, and fork handlers take the tables' lock before it: only
// try the tables' lock, and skip the attribution this once when it is busy.
Slot Aggregator::PyNativeSlot(Slot python, Slot target, const Tables& tables) {
  const uint64_t key = uint64_t{python} << 32 | target;
  if (auto it = py_native_.find(key); it != py_native_.end()) return it->second;
  const uint32_t known = tables.function_count.load(std::memory_order_acquire);
  if (python >= known || target >= known) return kNoSlot;
  bool busy = false;
  const Slot slot = TryInternFunction(format::FunctionKind::kPyNative,
                                      tables.functions[target].name, python, &busy);
  if (!busy) py_native_.emplace(key, slot);
  return slot;
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
    }
    // A host that runs ahead of its device (a loss read every 10 steps) keeps calls queued for
    // many steps, and completions are seen only for the sampled calls (1 in 64): a communicator
    // is waiting since it last moved -- a launch, or a completion -- not since its oldest call.
    // Where it hangs, its hosts stop launching within their run-ahead.
    comm.inflight_since = std::max(comm.inflight_since, e.t);
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
  if (comm.completed >= comm.launched) {
    comm.inflight_op = 0;
  } else {
    comm.inflight_since = std::max(comm.inflight_since, e.t);  // it moved: see the launch
  }
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
    FunctionAcc& f = functions_[slot];
    uint64_t ns = f.iter_ns;
    if (f.iter_timed < f.iter_count) {
      const uint64_t mean = f.iter_timed > 0 ? f.iter_ns / f.iter_timed : f.mean_ns;
      ns += (f.iter_count - f.iter_timed) * std::max<uint64_t>(mean, 1);
    }
    if (f.iter_timed > 0) f.mean_ns = f.iter_ns / f.iter_timed;
    f.per_iteration.Add(ns + f.iter_slice_ns);
    f.iter_count = f.iter_timed = f.iter_ns = f.iter_slice_ns = 0;
  }
  touched_.clear();
  ++iterations_;
  iteration_start_ns_ = end_ns;
  if (iterations_ % schedule_.block() != 0) return;
  // A window ends where a detailed period begins and ends, even if its length says otherwise:
  // a window is recorded in one mode throughout.
  const uint64_t block = iterations_ / schedule_.block();
  if (iterations_ < schedule_.end() && !DetailedPeriodBoundary(block)) return;
  const uint64_t mean_ns = s.count > 0 ? s.total_ns / s.count : 0;
  finished_.push_back(Build(end_ns, tables));
  schedule_.Closed(iterations_, mean_ns);
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

void Aggregator::AddThreadCpu(Slot slot, uint64_t cpu_ns) {
  if (slot == kNoSlot) return;
  if (slot >= functions_.size()) functions_.resize(slot + 1);
  functions_[slot].thread_cpu += cpu_ns;
}

void Aggregator::AddSchedStat(uint64_t cpu_ns, uint64_t run_delay_ns) {
  thread_cpu_ns_ += cpu_ns;
  run_delay_ns_ += run_delay_ns;
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
