#include "core/stream.h"

#include <pthread.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cstdio>

#include "core/activity.h"
#include "core/clock.h"
#include "core/cost_model.h"

namespace simgpu {

Stream::Stream(int device, uint32_t id, bool blocking, int priority)
    : device_(device), id_(id), blocking_(blocking), priority_(priority) {}

WorkRef Stream::Push(WorkSpec spec, std::vector<WorkRef> deps) {
  auto item = std::make_shared<WorkItem>();
  item->spec = std::move(spec);
  item->stream = this;
  item->deps = std::move(deps);
  item->submit_ns = DeviceNowNs();
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    item->index = next_index_++;
    queue_.push_back(item);
    last_ = item;
    wake = thread_idle_;
    if (!thread_started_) {
      thread_started_ = true;
      // Detached: a device thread blocked in a hung collective must not keep exit() waiting.
      std::thread([this] { Loop(); }).detach();
    }
  }
  if (wake) work_cv_.notify_one();
  return item;
}

WorkRef Stream::Last() {
  std::lock_guard<std::mutex> lock(mu_);
  return last_;
}

void Stream::WaitRun(const WorkRef& item) {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return item->done; });
}

bool Stream::HasRun(const WorkRef& item) {
  std::lock_guard<std::mutex> lock(mu_);
  return item->done;
}

void Stream::WaitComplete(const WorkRef& item) {
  WaitRun(item);
  SleepUntilDeviceNs(item->end_ns);
}

bool Stream::IsComplete(const WorkRef& item) {
  return HasRun(item) && DeviceNowNs() >= item->end_ns;
}

void Stream::Retire() {
  std::lock_guard<std::mutex> lock(mu_);
  retired_ = true;
  work_cv_.notify_one();
}

void Stream::Loop() {
  char name[16];
  std::snprintf(name, sizeof(name), "simgpu-d%d-s%u", device_, id_);
  pthread_setname_np(pthread_self(), name);
  // Device threads wait for far-off device times; keep their wake-ups precise.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  for (;;) {
    WorkRef item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      thread_idle_ = true;
      work_cv_.wait(lock, [&] { return !queue_.empty() || retired_; });
      thread_idle_ = false;
      if (queue_.empty()) return;  // retired and drained
      item = queue_.front();
    }
    Run(item);
  }
}

int64_t Stream::Duration(const WorkItem& item) const {
  if (item.spec.kind == WorkKind::kMarker) return item.spec.duration_ns;
  return static_cast<int64_t>(static_cast<double>(item.spec.duration_ns) *
                              JitterFactor(id_, item.index));
}

void Stream::Run(const WorkRef& item) {
  int64_t ready = std::max(item->submit_ns, tail_end_ns_);
  for (const WorkRef& dep : item->deps) {
    dep->stream->WaitRun(dep);
    ready = std::max(ready, dep->end_ns);
  }
  int64_t end = item->spec.exec ? item->spec.exec(ready) : ready + Duration(*item);
  if (item->spec.effect) item->spec.effect();
  tail_end_ns_ = std::max(tail_end_ns_, end);
  // NCCL work shows up as the kernel that real NCCL would have launched. Recorded before the
  // item is marked done: a flush after a synchronization must see every record of the work it
  // waited for, as with real CUPTI.
  WorkKind activity_kind = item->spec.kind == WorkKind::kComm ? WorkKind::kKernel : item->spec.kind;
  if (item->spec.kind != WorkKind::kMarker && ActivityEnabled(activity_kind)) {
    ActivityRecord record;
    record.kind = activity_kind;
    record.device = device_;
    record.stream_id = id_;
    record.correlation_id = item->spec.correlation_id;
    record.start_ns = ready;
    record.end_ns = end;
    record.kernel = item->spec.kernel;
    record.copy = item->spec.copy;
    RecordActivity(record);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    item->start_ns = ready;
    item->end_ns = end;
    item->done = true;
    item->deps.clear();  // break chains of items keeping each other alive
    item->spec.exec = nullptr;
    item->spec.effect = nullptr;
    queue_.pop_front();
  }
  done_cv_.notify_all();
}

}  // namespace simgpu
