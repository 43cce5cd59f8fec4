#include "preload/core/critical_path.h"

#include <algorithm>

namespace perftracker::preload {
namespace {

// A blocking call that waited longer than this proves the device busy until it returned.
constexpr uint64_t kWaitedNs = 20'000;
// Other threads' launches kept for the iteration thread's next walks.
constexpr size_t kMaxOthers = 1 << 16;
// An other thread's launch that only says the device was busy until then (a blocking call).
constexpr uint64_t kBusyUntil = UINT64_MAX;
// Finished host intervals kept for callers still running; a frame that never returns (an outer
// loop reported in slices) claims its callees at each slice, so this bound is rarely reached.
constexpr size_t kMaxFinished = 8192;

void Remember(std::unordered_map<Slot, uint64_t>* means, Slot slot, uint64_t ns) {
  auto [it, fresh] = means->try_emplace(slot, ns);
  if (!fresh) it->second += (static_cast<int64_t>(ns) - static_cast<int64_t>(it->second)) / 8;
}

uint64_t Lookup(const std::unordered_map<Slot, uint64_t>& means, Slot slot) {
  const auto it = means.find(slot);
  return it == means.end() ? 0 : it->second;
}

// The time of an event for the walk; 0 when it has none (untimed calls, device results).
uint64_t TimeOf(const Event& e) {
  switch (e.type) {
    case EventType::kCall:
      return (e.flags[0] & kCallUntimed) != 0 ? 0 : e.t;
    case EventType::kNativeCall:
      return (e.flags[0] & kNativeTimed) != 0 ? e.t : 0;
    case EventType::kCollLaunch:
    case EventType::kIteration:
      return e.t;
    default:
      return 0;
  }
}

bool Placed(const Event& e) {
  return e.type == EventType::kNativeCall || e.type == EventType::kCollLaunch;
}

// Each event's time (`times`): its own, or for an untimed native call a place spread evenly
// between the timed events around it, from `before` on. Returns the latest time placed.
uint64_t PlaceTimes(std::span<const Event> events, uint64_t before, std::vector<uint64_t>* times) {
  times->assign(events.size(), 0);
  size_t gap_begin = 0;
  for (size_t i = 0; i <= events.size(); ++i) {
    const uint64_t t = i < events.size() ? TimeOf(events[i]) : 0;
    if (i < events.size() && t == 0) continue;
    const uint64_t after = i < events.size() ? std::max(t, before) : before;
    size_t untimed = 0;
    for (size_t j = gap_begin; j < i; ++j) untimed += Placed(events[j]);
    size_t k = 0;
    for (size_t j = gap_begin; j < i; ++j) {
      if (!Placed(events[j])) continue;
      (*times)[j] = before + (after - before) * ++k / (untimed + 1);
    }
    if (i < events.size()) (*times)[i] = t;
    before = after;
    gap_begin = i + 1;
  }
  return before;
}

}  // namespace

uint64_t CriticalPath::DeviceNs(const Event& e) const {
  if (e.type == EventType::kCollLaunch) return Lookup(collective_ns_, e.slot);
  // A cuBLAS GEMM is a timed call of its shape's slot (cuBLAS launches through its own static
  // runtime, past the launch hooks), its sampled device time learned under that slot. Python
  // frames never have one.
  if (e.type == EventType::kCall) {
    return (e.flags[0] & (kCallUntimed | kCallSlice)) == 0 ? Lookup(kernel_ns_, e.slot) : 0;
  }
  if (e.type != EventType::kNativeCall) return 0;
  const auto site = static_cast<Slot>(e.a);
  const auto work = static_cast<Slot>(e.a >> 32);
  uint64_t device = work != kNoSlot ? Lookup(kernel_ns_, work) : 0;
  if (device == 0 && site != kNoSlot) device = Lookup(kernel_ns_, site);
  return device;
}

void CriticalPath::Feed(const void* thread, std::span<const Event> events) {
  auto [last, fresh] = other_last_.try_emplace(thread, 0);
  if (fresh) {  // a thread's first batch: its untimed launches start at its first timed event
    for (const Event& e : events) {
      if (const uint64_t t = TimeOf(e)) {
        last->second = t;
        break;
      }
    }
  }
  last->second = PlaceTimes(events, last->second, &other_times_);
  // Without an iteration thread walking them, nothing consumes these: keep the newest.
  if (others_.size() > kMaxOthers) {
    others_.erase(others_.begin(), others_.begin() + static_cast<ptrdiff_t>(kMaxOthers / 2));
  }
  const size_t before = others_.size();
  for (size_t i = 0; i < events.size(); ++i) {
    const uint64_t t = other_times_[i];
    const Event& e = events[i];
    // A launch, a collective, or a GEMM's timed call (DeviceNs says which have device work).
    if (t == 0) continue;
    // A blocking call that waited on another thread proves the device busy just as well.
    if (e.type == EventType::kNativeCall && (e.flags[0] & kNativeTimed) != 0 &&
        (e.flags[0] & kNativeBlocking) != 0 && e.b > kWaitedNs) {
      others_.push_back({t, kBusyUntil});
    }
    if (const uint64_t device = DeviceNs(e)) others_.push_back({t, device});
  }
  std::inplace_merge(others_.begin(), others_.begin() + static_cast<ptrdiff_t>(before),
                     others_.end(), [](const Launch& a, const Launch& b) { return a.at < b.at; });
}

void CriticalPath::EnqueueOthers(uint64_t t) {
  size_t n = 0;
  for (; n < others_.size() && others_[n].at <= t; ++n) {
    const Launch& l = others_[n];
    if (l.device_ns == kBusyUntil) {
      queue_end_ = std::max(queue_end_, l.at);
    } else if (l.device_ns > 0) {
      Enqueue(l.at, l.device_ns);
    }
  }
  others_.erase(others_.begin(), others_.begin() + static_cast<ptrdiff_t>(n));
}

void CriticalPath::Learn(const Event& e) {
  if (e.type == EventType::kDeviceTime && e.a > 0) Remember(&kernel_ns_, e.slot, e.a);
  if (e.type == EventType::kCollDone && e.b > 0) Remember(&collective_ns_, e.slot, e.b);
}

void CriticalPath::Walk(std::span<const Event> events, std::vector<Event>* out) {
  // The walk starts where the thread's first batch starts: the device had nothing before.
  if (!started_) {
    uint64_t first = UINT64_MAX;
    for (const Event& e : events) {
      const uint64_t t = TimeOf(e);
      const uint64_t host = e.type == EventType::kCall         ? e.a
                            : e.type == EventType::kNativeCall ? e.b
                                                               : 0;
      if (t != 0 || e.type == EventType::kIteration) first = std::min(first, t - std::min(t, host));
    }
    if (first == UINT64_MAX) return;
    started_ = true;
    last_time_ = queue_end_ = iteration_start_ = previous_iteration_start_ = first;
  }
  // Timestamps, with untimed native calls spread evenly between the timed events around them.
  PlaceTimes(events, last_time_, &times_);

  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    const uint64_t t = times_[i];
    // A host call is charged over [t - duration, t): the other threads' work enqueued before
    // its end must be in the queue first.
    EnqueueOthers(t);
    switch (e.type) {
      case EventType::kNativeCall: {
        // A synchronization the loop waited in drained the queue: the device was busy until it
        // returned and had nothing of it left after. The estimate runs long where streams overlap
        // (DDP's all-reduce beside the backward); without this anchor it drifts further ahead
        // every step, and a host delay after a sync (a batch read) was never charged (sim_dp's
        // 150 ms read, a sync every 10 steps: 0 ms a step over a 250-step run, the job 15 ms
        // a step slower than its twin).
        const bool timed = (e.flags[0] & kNativeTimed) != 0;
        if (timed && (e.flags[0] & kNativeBlocking) != 0 && e.b > kWaitedNs) queue_end_ = t;
        if (const uint64_t device = DeviceNs(e)) Enqueue(t, device);
        break;
      }
      case EventType::kCollLaunch:
        if (const uint64_t device = DeviceNs(e)) Enqueue(t, device);
        break;
      case EventType::kCall:
        if ((e.flags[0] & kCallUntimed) == 0) HostCall(e, t, out);
        if (const uint64_t device = DeviceNs(e)) Enqueue(t, device);  // a GEMM's work
        break;
      case EventType::kIteration:
        EndIteration(t, out);
        break;
      default:
        break;
    }
    last_time_ = std::max(last_time_, t);
  }
}

void CriticalPath::Enqueue(uint64_t at, uint64_t device_ns) {
  if (at > queue_end_) {
    idle_.push_back({queue_end_, at});
    queue_end_ = at;
  }
  queue_end_ += device_ns;
  device_seen_ = true;
}

uint64_t CriticalPath::IdleWithin(uint64_t begin, uint64_t end) const {
  if (end <= begin) return 0;
  uint64_t idle = 0;
  auto it = std::lower_bound(idle_.begin(), idle_.end(), begin,
                             [](const Interval& gap, uint64_t t) { return gap.end <= t; });
  for (; it != idle_.end() && it->begin < end; ++it) {
    idle += std::min(end, it->end) - std::max(begin, it->begin);
  }
  // After the queue's end the device has had nothing to do.
  const uint64_t open = std::max(begin, queue_end_);
  if (open < end) idle += end - open;
  return idle;
}

void CriticalPath::HostCall(const Event& e, uint64_t end, std::vector<Event>* out) {
  const uint64_t begin = end > e.a ? end - e.a : 0;
  // Callees finished first and lie inside [begin, end): this call's own time is the rest.
  size_t first_child = finished_.size();
  while (first_child > 0 && finished_[first_child - 1].begin >= begin) --first_child;
  uint64_t cursor = begin, critical = 0;
  for (size_t i = first_child; i < finished_.size(); ++i) {
    critical += IdleWithin(cursor, std::min(finished_[i].begin, end));
    cursor = std::max(cursor, finished_[i].end);
  }
  critical += IdleWithin(cursor, end);
  finished_.resize(first_child);
  if (finished_.size() >= kMaxFinished) {
    finished_.erase(finished_.begin(), finished_.begin() + kMaxFinished / 2);
  }
  finished_.push_back({begin, end});
  // Callees counted but not timed (cheap Python functions) leave their time in the gaps: never
  // charge more than the call's own time.
  critical = std::min(critical, e.b);
  if (critical > 0) {
    const uint8_t slice = e.flags[0] & kCallSlice;  // a slice's time is added unscaled
    out->push_back(Event{e.slot, EventType::kCritical, {slice, 0, 0}, end, critical, 0, 0, 0});
  }
}

void CriticalPath::EndIteration(uint64_t t, std::vector<Event>* out) {
  if (device_seen_) {
    out->push_back(
        Event{kNoSlot, EventType::kCritical, {}, t, IdleWithin(iteration_start_, t), 0, 0, 0});
  }
  previous_iteration_start_ = iteration_start_;
  iteration_start_ = t;
  // Frames open across a boundary report slices that reach back into the previous iteration.
  while (!idle_.empty() && idle_.front().end < previous_iteration_start_) idle_.pop_front();
}

}  // namespace perftracker::preload
