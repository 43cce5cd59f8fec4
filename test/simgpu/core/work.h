// Units of device work and their lifetime.
//
// A WorkSpec describes work (it is a value: CUDA-graph capture stores specs and replays them).
// Enqueueing a spec on a stream creates a WorkItem, shared between the stream's device thread,
// events recorded after it and host threads that wait for it.
#ifndef SIMGPU_CORE_WORK_H_
#define SIMGPU_CORE_WORK_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace simgpu {

class Stream;

enum class WorkKind : uint8_t {
  kKernel,
  kMemcpy,
  kMemset,
  kMarker,  // zero-duration ordering point: event records, stream waits
  kComm,    // NCCL work: its end depends on other processes
};

// Direction of a copy; values match cudaMemcpyKind so the runtime can pass them through.
enum class CopyDir : uint8_t {
  kHostToHost = 0,
  kHostToDevice = 1,
  kDeviceToHost = 2,
  kDeviceToDevice = 3,
};

struct KernelInfo {
  const char* name = nullptr;  // interned: lives until exit
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t dynamic_shared_bytes = 0;
};

struct CopyInfo {
  uint64_t bytes = 0;
  CopyDir dir = CopyDir::kDeviceToDevice;
  uint8_t memset_value = 0;
};

// Runs on the device thread once the work reaches the head of its stream at device time
// `ready_ns`; returns the device time at which the work ends. May block (a rendezvous).
using ExecFn = std::function<int64_t(int64_t ready_ns)>;

struct WorkSpec {
  WorkKind kind = WorkKind::kMarker;
  int64_t duration_ns = 0;  // for work without `exec`
  KernelInfo kernel;
  CopyInfo copy;
  uint32_t correlation_id = 0;
  ExecFn exec;                   // optional
  std::function<void()> effect;  // optional: data movement, run when the work runs
};

// One enqueued instance. Fields below `deps` are written by the owning stream's device thread
// under that stream's mutex and read by waiters under the same mutex (or after `done`).
struct WorkItem {
  WorkSpec spec;
  Stream* stream = nullptr;
  uint64_t index = 0;     // position in its stream, for deterministic jitter
  int64_t submit_ns = 0;  // device time at enqueue
  std::vector<std::shared_ptr<WorkItem>> deps;
  bool done = false;  // the device thread has run it (its times are final)
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

using WorkRef = std::shared_ptr<WorkItem>;

// A captured sequence of work (CUDA-graph stand-in): replayed in order on the launch stream.
struct Graph {
  std::vector<WorkSpec> nodes;
};

}  // namespace simgpu

#endif  // SIMGPU_CORE_WORK_H_
