#include "core/device.h"

#include <algorithm>
#include <array>

#include "core/config.h"

namespace simgpu {
namespace {

constexpr int kMaxDevices = 16;
thread_local int t_current_device = 0;

}  // namespace

Device::Device(int ordinal) : ordinal_(ordinal) {}

int Device::Count() {
  return static_cast<int>(std::clamp<int64_t>(GetConfig().device_count, 1, kMaxDevices));
}

int Device::CurrentOrdinal() { return t_current_device; }
void Device::SetCurrentOrdinal(int ordinal) { t_current_device = ordinal; }

Device* Device::Get(int ordinal) {
  static std::mutex mu;
  static std::array<Device*, kMaxDevices> devices{};  // leaked: device threads outlive exit
  if (ordinal < 0 || ordinal >= Count()) return nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (!devices[ordinal]) devices[ordinal] = new Device(ordinal);
  return devices[ordinal];
}

Stream* Device::Legacy() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!legacy_) {
    legacy_ = new Stream(ordinal_, next_stream_id_++, /*blocking=*/true, /*priority=*/0);
    streams_.push_back(legacy_);
  }
  return legacy_;
}

Stream* Device::PerThread() {
  // One per (host thread, device); a thread rarely touches more than a couple of devices.
  thread_local std::array<Stream*, kMaxDevices> per_thread{};
  Stream*& stream = per_thread[ordinal_];
  if (!stream) stream = CreateStream(/*blocking=*/true, /*priority=*/0);
  return stream;
}

Stream* Device::CreateStream(bool blocking, int priority) {
  Legacy();  // the legacy stream gets the first id, as in CUDA
  std::lock_guard<std::mutex> lock(mu_);
  auto* stream = new Stream(ordinal_, next_stream_id_++, blocking, priority);
  streams_.push_back(stream);
  return stream;
}

void Device::DestroyStream(Stream* stream) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    streams_.erase(std::remove(streams_.begin(), streams_.end(), stream), streams_.end());
  }
  stream->Retire();
}

std::vector<WorkRef> Device::ImplicitDeps(Stream* stream) {
  std::vector<Stream*> others;
  Stream* legacy = Legacy();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stream == legacy) {
      for (Stream* s : streams_) {
        if (s != legacy && s->blocking()) others.push_back(s);
      }
    } else if (stream->blocking()) {
      others.push_back(legacy);
    }
  }
  std::vector<WorkRef> deps;
  for (Stream* s : others) {
    // Work that has completed cannot delay new work (it is submitted later than it ended).
    WorkRef last = s->Last();
    if (last && !s->IsComplete(last)) deps.push_back(std::move(last));
  }
  return deps;
}

WorkRef Device::Enqueue(Stream* stream, WorkSpec spec, std::vector<WorkRef> deps) {
  if (Graph* graph = stream->capture()) {
    graph->nodes.push_back(std::move(spec));
    return nullptr;
  }
  std::vector<WorkRef> implicit = ImplicitDeps(stream);
  deps.insert(deps.end(), implicit.begin(), implicit.end());
  return stream->Push(std::move(spec), std::move(deps));
}

void Device::Synchronize() {
  std::vector<Stream*> streams;
  {
    std::lock_guard<std::mutex> lock(mu_);
    streams = streams_;
  }
  for (Stream* s : streams) {
    if (WorkRef last = s->Last()) s->WaitComplete(last);
  }
}

Stream* ResolveStreamHandle(int device, const void* handle, bool per_thread_default) {
  constexpr uintptr_t kLegacy = 0x1;
  constexpr uintptr_t kPerThread = 0x2;
  auto value = reinterpret_cast<uintptr_t>(handle);
  Device* dev = Device::Get(device);
  if (value == kLegacy || (value == 0 && !per_thread_default)) return dev->Legacy();
  if (value == kPerThread || value == 0) return dev->PerThread();
  return static_cast<Stream*>(const_cast<void*>(handle));
}

}  // namespace simgpu
