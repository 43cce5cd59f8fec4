// An event: a zero-duration marker recorded on a stream. It completes when the work before it on
// that stream has, and its timestamp is the device time of that point.
//
// Record may race with Query/Synchronize/elapsed-time from other host threads: the latest record
// is held under mu_, and each observer works on the item it read.
#ifndef SIMGPU_CORE_EVENT_H_
#define SIMGPU_CORE_EVENT_H_

#include <mutex>

#include "core/device.h"
#include "core/work.h"

namespace simgpu {

class Event {
 public:
  explicit Event(bool timing) : timing_(timing) {}

  void Record(Device* device, Stream* stream);
  // The latest record, or null if never recorded (a null event counts as complete).
  WorkRef Latest();
  bool Query();
  void Synchronize();
  bool timing() const { return timing_; }

 private:
  const bool timing_;
  std::mutex mu_;
  WorkRef latest_;
};

}  // namespace simgpu

#endif  // SIMGPU_CORE_EVENT_H_
