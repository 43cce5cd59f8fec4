// The simulated devices of this process and their streams: the one entry point every stand-in
// library (cudart, NCCL, CUPTI, later libcuda and cuBLAS) uses to run work.
//
//   simgpu::Device* dev = simgpu::Device::Get(ordinal);
//   simgpu::WorkRef item = dev->Enqueue(stream, spec);   // asynchronous
//   stream->WaitComplete(item);                           // host synchronization
//
// Streams are created by the device and never freed (see Stream::Retire). The legacy default
// stream synchronizes with every blocking stream of its device, as CUDA's does.
#ifndef SIMGPU_CORE_DEVICE_H_
#define SIMGPU_CORE_DEVICE_H_

#include <mutex>
#include <vector>

#include "core/stream.h"
#include "core/work.h"

namespace simgpu {

class Device {
 public:
  // The device with this ordinal (created on first use), or null when out of range.
  static Device* Get(int ordinal);
  static int Count();
  // The calling host thread's current device (cudaSetDevice), shared by every stand-in library
  // so that e.g. NCCL never has to call an exported cudart function to learn it.
  static int CurrentOrdinal();
  static void SetCurrentOrdinal(int ordinal);

  int ordinal() const { return ordinal_; }

  Stream* Legacy();
  // The calling host thread's per-thread default stream (cudaStreamPerThread).
  Stream* PerThread();
  Stream* CreateStream(bool blocking, int priority);
  void DestroyStream(Stream* stream);

  // Appends work to `stream` after `deps` (plus the legacy stream's implicit ordering). Returns
  // null when the stream is capturing: the spec went into its graph instead.
  WorkRef Enqueue(Stream* stream, WorkSpec spec, std::vector<WorkRef> deps = {});

  // Waits until all work on every stream of the device has completed.
  void Synchronize();

 private:
  explicit Device(int ordinal);
  std::vector<WorkRef> ImplicitDeps(Stream* stream);

  const int ordinal_;
  std::mutex mu_;
  Stream* legacy_ = nullptr;
  std::vector<Stream*> streams_;  // live streams, legacy included
  uint32_t next_stream_id_ = 0;
};

// CUDA stream handles as the runtime and driver define them: null (the legacy stream, or the
// per-thread stream for _ptsz entry points), 0x1 (cudaStreamLegacy), 0x2 (cudaStreamPerThread),
// else a Stream*. Null/legacy/per-thread resolve on `device`.
Stream* ResolveStreamHandle(int device, const void* handle, bool per_thread_default);

}  // namespace simgpu

#endif  // SIMGPU_CORE_DEVICE_H_
