// Aggregator::Build and Snapshot: the accumulated patterns of the open window as a
// format::Window, ending it or not.
#include "preload/core/aggregator.h"
#include "preload/core/unrecorded_spans.h"

namespace perftracker::preload {
namespace {

// Slots in the window: every function called in it, plus its callers up the path (a caller
// still running has no completed call yet, but the path needs it). Ascending slot order puts
// every caller before its callees, since a caller is always interned first.
std::vector<uint32_t> WindowSlots(const std::vector<uint8_t>& called, const Tables& tables) {
  std::vector<uint8_t> keep = called;
  for (size_t slot = keep.size(); slot-- > 0;) {
    if (!keep[slot]) continue;
    const Slot parent = tables.functions[slot].parent;
    if (parent != kNoSlot && parent < keep.size()) keep[parent] = 1;
  }
  std::vector<uint32_t> slots;
  for (size_t slot = 0; slot < keep.size(); ++slot) {
    if (keep[slot]) slots.push_back(static_cast<uint32_t>(slot));
  }
  return slots;
}

// A sum over the `timed` calls of `count`, scaled to all of them (`mean` when none was timed).
uint64_t ScaleToCount(uint64_t sum, uint64_t timed, uint64_t count, uint64_t mean) {
  if (timed == count) return sum;
  if (timed == 0) return count * mean;
  return static_cast<uint64_t>(static_cast<unsigned __int128>(sum) * count / timed);
}

// Moved out of the accumulator when the window ends (`take`), copied for a snapshot.
template <class T>
T Take(T& from, bool take) {
  return take ? std::move(from) : from;
}

}  // namespace

format::Window Aggregator::Build(uint64_t end_ns, const Tables& tables) {
  return Describe(end_ns, tables, true);
}

format::Window Aggregator::Snapshot(uint64_t now_ns, const Tables& tables) {
  return Describe(now_ns, tables, false);
}

format::Window Aggregator::Describe(uint64_t end_ns, const Tables& tables, bool take) {
  format::Window w;
  w.window_seq = take ? window_seq_++ : window_seq_;
  w.iter_begin = window_first_iter_;
  w.iter_end = iterations_;
  w.start_mono_ns = window_start_ns_;
  w.end_mono_ns = end_ns;

  const uint32_t known = tables.function_count.load(std::memory_order_acquire);
  std::vector<uint8_t> called(std::min<size_t>(functions_.size(), known), 0);
  for (size_t slot = 0; slot < called.size(); ++slot) {
    const FunctionAcc& f = functions_[slot];
    called[slot] = f.count > 0 || f.device_samples > 0 || f.slice_total > 0 || f.captured > 0 ||
                   f.thread_cpu > 0;
  }
  const std::vector<uint32_t> slots = WindowSlots(called, tables);
  std::vector<int32_t> index(called.size(), -1);
  for (uint32_t slot : slots) {
    const FunctionEntry& entry = tables.functions[slot];
    FunctionAcc& f = functions_[slot];
    format::FunctionPattern p;
    p.kind = entry.kind;
    p.name = entry.name;
    p.parent = entry.parent == kNoSlot || entry.parent >= index.size() ? -1 : index[entry.parent];
    p.count = f.count;
    p.total_ns = ScaleToCount(f.total, f.timed, f.count, f.mean_ns) + f.slice_total;
    p.self_ns = ScaleToCount(f.self, f.timed, f.count, f.mean_ns) + f.slice_self;
    p.min_ns = f.min;
    p.max_ns = f.max;
    p.wait_ns = f.wait;
    p.bytes = f.bytes;
    p.device_samples = f.device_samples;
    p.device_ns = f.device_ns;
    p.captured = f.captured;
    p.thread_cpu_ns = f.thread_cpu;
    p.duration = Take(f.duration, take);
    p.device = Take(f.device, take);
    p.per_iteration = Take(f.per_iteration, take);
    if (f.self_differs) p.self_duration = Take(f.self_duration, take);
    // Like the time, the critical time of the timed calls stands for all of them.
    p.critical_ns = (f.timed > 0 ? static_cast<uint64_t>(static_cast<double>(f.critical) *
                                                         static_cast<double>(f.count) /
                                                         static_cast<double>(f.timed))
                                 : 0) +
                    f.critical_slice;
    index[slot] = static_cast<int32_t>(w.functions.size());
    w.functions.push_back(std::move(p));
    if (!take) continue;
    // An iteration in progress continues into the next window.
    FunctionAcc carried;
    carried.iter_count = f.iter_count;
    carried.iter_timed = f.iter_timed;
    carried.iter_ns = f.iter_ns;
    carried.iter_slice_ns = f.iter_slice_ns;
    carried.mean_ns = f.timed > 0 ? f.total / f.timed : f.mean_ns;
    f = std::move(carried);
  }
  format::FillFunctionIds(&w.functions);

  for (size_t slot = 0; slot < collectives_.size(); ++slot) {
    CollectiveAcc& c = collectives_[slot];
    if (!c.launched && !c.completed) continue;
    const CollectiveEntry& entry = tables.collectives[slot];
    format::CollectivePattern p;
    p.comm_id = entry.comm_id;
    p.comm_size = entry.comm_size;
    p.comm_rank = entry.comm_rank;
    p.op = entry.op;
    p.peer = entry.peer;
    p.name = entry.name;
    p.bytes = entry.bytes;
    p.count = c.count;
    p.host_ns = c.host_ns;
    p.device_samples = c.device_samples;
    p.device_ns = c.device_ns;
    p.device = Take(c.device, take);
    p.launch_offset = Take(c.launch_offset, take);
    p.first_seq = c.first_seq;
    p.last_seq_launched = c.last_launched;
    p.last_seq_completed = c.last_completed;
    w.collectives.push_back(std::move(p));
    if (take) c = CollectiveAcc{};
  }

  w.critical_path = critical_path_;
  w.device_idle_ns = device_idle_ns_;
  w.python_unrecorded = g_python_unrecorded.Overlaps(window_start_ns_, end_ns);
  w.thread_cpu_ns = thread_cpu_ns_;
  w.run_delay_ns = run_delay_ns_;
  const uint64_t dropped_functions = tables.dropped_functions.load(std::memory_order_relaxed);
  w.health = health_;
  w.health.dropped_functions = dropped_functions - dropped_functions_seen_;
  if (!take) {
    w.cuda_runtimes = g_cuda_runtime_nodes.load(std::memory_order_relaxed);
    signals_.PeekWindow(&w.signals);
    w.iterations = iteration_stats_;
    return w;
  }
  w.cuda_runtimes = g_cuda_runtime_nodes.exchange(0, std::memory_order_relaxed);
  g_cuda_runtime_nodes_ever.fetch_or(w.cuda_runtimes, std::memory_order_relaxed);
  signals_.TakeWindow(&w.signals);
  critical_path_ = false;
  device_idle_ns_ = 0;
  thread_cpu_ns_ = run_delay_ns_ = 0;
  w.iterations = std::move(iteration_stats_);
  iteration_stats_ = format::IterationStats{};
  dropped_functions_seen_ = dropped_functions;
  health_ = format::Health{};
  window_first_iter_ = iterations_;
  window_start_ns_ = end_ns;
  return w;
}

}  // namespace perftracker::preload
