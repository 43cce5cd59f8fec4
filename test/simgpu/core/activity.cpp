#include "core/activity.h"

#include <atomic>
#include <mutex>

namespace simgpu {
namespace {

constexpr int kKinds = 5;

std::atomic<bool> g_enabled[kKinds];
std::atomic<uint64_t> g_dropped{0};
std::atomic<uint32_t> g_correlation{0};

struct Pending {
  std::mutex mu;
  std::vector<ActivityRecord> records;
};

Pending& GetPending() {
  static Pending* pending = new Pending;  // leaked: device threads may record during exit
  return *pending;
}

}  // namespace

void SetActivityEnabled(WorkKind kind, bool enabled) {
  g_enabled[static_cast<int>(kind)].store(enabled, std::memory_order_relaxed);
}

bool ActivityEnabled(WorkKind kind) {
  return g_enabled[static_cast<int>(kind)].load(std::memory_order_relaxed);
}

void RecordActivity(const ActivityRecord& record) {
  Pending& p = GetPending();
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.records.size() >= kMaxPendingActivity) {
    g_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  p.records.push_back(record);
}

void TakeActivity(int64_t now_ns, bool all, std::vector<ActivityRecord>* out) {
  Pending& p = GetPending();
  std::lock_guard<std::mutex> lock(p.mu);
  size_t kept = 0;
  for (ActivityRecord& r : p.records) {
    if (all || r.end_ns <= now_ns) {
      out->push_back(r);
    } else {
      p.records[kept++] = r;
    }
  }
  p.records.resize(kept);
}

uint64_t DroppedActivityCount() { return g_dropped.load(std::memory_order_relaxed); }

uint32_t NextCorrelationId() { return g_correlation.fetch_add(1, std::memory_order_relaxed) + 1; }

}  // namespace simgpu
