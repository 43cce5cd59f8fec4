// Activity records of what the simulated device ran, for the CUPTI stand-in.
//
// Writers: device threads append a record when they run a kernel/memcpy/memset of an enabled
// kind. Reader: the CUPTI flush path takes completed records. When more than kMaxPending records
// wait, new ones are dropped and counted (like CUPTI without buffers).
#ifndef SIMGPU_CORE_ACTIVITY_H_
#define SIMGPU_CORE_ACTIVITY_H_

#include <cstdint>
#include <vector>

#include "core/work.h"

namespace simgpu {

struct ActivityRecord {
  WorkKind kind = WorkKind::kKernel;
  int device = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  KernelInfo kernel;
  CopyInfo copy;
};

inline constexpr size_t kMaxPendingActivity = 1 << 20;

void SetActivityEnabled(WorkKind kind, bool enabled);
bool ActivityEnabled(WorkKind kind);

void RecordActivity(const ActivityRecord& record);

// Moves into `out` the records whose work ended by device time `now_ns` (all when `all`).
void TakeActivity(int64_t now_ns, bool all, std::vector<ActivityRecord>* out);

uint64_t DroppedActivityCount();

// A process-wide correlation id, as the runtime assigns to every API call that creates work.
uint32_t NextCorrelationId();

}  // namespace simgpu

#endif  // SIMGPU_CORE_ACTIVITY_H_
