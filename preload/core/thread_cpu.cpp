#include "preload/core/thread_cpu.h"

#include <algorithm>

namespace perftracker::preload {

void ThreadCpu::Charge(const ThreadRing* ring, pid_t tid, std::span<const Event> events,
                       const Tables& tables, Aggregator* aggregator) {
  if (tid <= 0) return;
  const uint32_t known = tables.function_count.load(std::memory_order_acquire);
  self_.clear();
  uint64_t total = 0;
  for (const Event& e : events) {
    if (e.type != EventType::kCall || (e.flags[0] & kCallUntimed) != 0 || e.b == 0 ||
        e.slot >= known || tables.functions[e.slot].kind != format::FunctionKind::kPython) {
      continue;
    }
    // A thread runs few distinct functions between two drains: a short list beats a map.
    auto it = std::find_if(self_.begin(), self_.end(), [&](const auto& p) { return p.first == e.slot; });
    if (it == self_.end()) {
      self_.emplace_back(e.slot, e.b);
    } else {
      it->second += e.b;
    }
    total += e.b;
  }
  if (total == 0) return;
  auto found = threads_.find(ring);
  if (found == threads_.end()) {
    if (threads_.size() >= kMaxThreads) return;
    found = threads_.emplace(ring, std::make_unique<SchedStat>()).first;
  }
  uint64_t cpu = 0, delay = 0;
  if (!found->second->Sample(tid, &cpu, &delay) || cpu == 0) return;
  for (const auto& [slot, ns] : self_) {
    const auto share = static_cast<uint64_t>(static_cast<double>(cpu) *
                                             static_cast<double>(ns) / static_cast<double>(total));
    aggregator->AddThreadCpu(slot, share);
  }
}

}  // namespace perftracker::preload
