// CUDA runtime hooks: host synchronization (all of its time is waiting), and events recorded
// and waited on by streams (no host wait; counted so that a changed dependency pattern shows).
#include "preload/cuda/cuda_hook.h"

namespace perftracker::preload {
namespace {

using StreamWaitFn = cudaError_t (*)(cudaStream_t, cudaEvent_t, unsigned int);
using EventRecordFn = cudaError_t (*)(cudaEvent_t, cudaStream_t);
using EventRecordFlagsFn = cudaError_t (*)(cudaEvent_t, cudaStream_t, unsigned int);

RealSymbol g_real[] = {
    {"cudaStreamSynchronize", Library::kCudart},
    {"cudaStreamSynchronize_ptsz", Library::kCudart},
    {"cudaEventSynchronize", Library::kCudart},
    {"cudaDeviceSynchronize", Library::kCudart},
    {"cudaStreamWaitEvent", Library::kCudart},
    {"cudaStreamWaitEvent_ptsz", Library::kCudart},
    {"cudaEventRecord", Library::kCudart},
    {"cudaEventRecord_ptsz", Library::kCudart},
    {"cudaEventRecordWithFlags", Library::kCudart},
    {"cudaEventRecordWithFlags_ptsz", Library::kCudart},
};
enum Real {
  kStreamSync,
  kStreamSyncPtsz,
  kEventSync,
  kDeviceSync,
  kWaitEvent,
  kWaitEventPtsz,
  kEventRecord,
  kEventRecordPtsz,
  kEventRecordFlags,
  kEventRecordFlagsPtsz
};

ApiSlot g_api_stream_sync{"cudaStreamSynchronize", format::FunctionKind::kSync};
ApiSlot g_api_event_sync{"cudaEventSynchronize", format::FunctionKind::kSync};
ApiSlot g_api_device_sync{"cudaDeviceSynchronize", format::FunctionKind::kSync};
ApiSlot g_api_wait_event{"cudaStreamWaitEvent", format::FunctionKind::kCudaApi};
ApiSlot g_api_event_record{"cudaEventRecord", format::FunctionKind::kCudaApi};

[[gnu::constructor]] void ResolveSync() { ResolveAll(g_real, std::size(g_real)); }

template <typename Call>
cudaError_t Record(ApiSlot& api, void* ret, bool blocking, Call call) {
  CudaCall record(api, ret, /*device_timed=*/false, nullptr,
                  blocking ? HostTiming::kBlocking : HostTiming::kSampled);
  const cudaError_t rc = call();
  record.Finish(rc == cudaSuccess);
  return rc;
}

}  // namespace
}  // namespace perftracker::preload

using namespace perftracker::preload;  // NOLINT: the hooks are extern "C" at global scope

PERFTRACKER_HOOK cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  const auto real = g_real[kStreamSync].Get<decltype(&cudaStreamSynchronize)>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(stream);
  return Record(g_api_stream_sync, __builtin_return_address(0), true, [&] { return real(stream); });
}

PERFTRACKER_HOOK cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  const auto real = g_real[kStreamSyncPtsz].Get<decltype(&cudaStreamSynchronize)>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(stream);
  return Record(g_api_stream_sync, __builtin_return_address(0), true, [&] { return real(stream); });
}

PERFTRACKER_HOOK cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  const auto real = g_real[kEventSync].Get<decltype(&cudaEventSynchronize)>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(event);
  return Record(g_api_event_sync, __builtin_return_address(0), true, [&] { return real(event); });
}

PERFTRACKER_HOOK cudaError_t cudaDeviceSynchronize() {
  const auto real = g_real[kDeviceSync].Get<decltype(&cudaDeviceSynchronize)>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real();
  return Record(g_api_device_sync, __builtin_return_address(0), true, [&] { return real(); });
}

PERFTRACKER_HOOK cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                                 unsigned int flags) {
  const auto real = g_real[kWaitEvent].Get<StreamWaitFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(stream, event, flags);
  return Record(g_api_wait_event, __builtin_return_address(0), false,
                [&] { return real(stream, event, flags); });
}

PERFTRACKER_HOOK cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event,
                                                      unsigned int flags) {
  const auto real = g_real[kWaitEventPtsz].Get<StreamWaitFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(stream, event, flags);
  return Record(g_api_wait_event, __builtin_return_address(0), false,
                [&] { return real(stream, event, flags); });
}

PERFTRACKER_HOOK cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  const auto real = g_real[kEventRecord].Get<EventRecordFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(event, stream);
  return Record(g_api_event_record, __builtin_return_address(0), false,
                [&] { return real(event, stream); });
}

PERFTRACKER_HOOK cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) {
  const auto real = g_real[kEventRecordPtsz].Get<EventRecordFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(event, stream);
  return Record(g_api_event_record, __builtin_return_address(0), false,
                [&] { return real(event, stream); });
}

PERFTRACKER_HOOK cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                                      unsigned int flags) {
  const auto real = g_real[kEventRecordFlags].Get<EventRecordFlagsFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(event, stream, flags);
  return Record(g_api_event_record, __builtin_return_address(0), false,
                [&] { return real(event, stream, flags); });
}

PERFTRACKER_HOOK cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream,
                                                           unsigned int flags) {
  const auto real = g_real[kEventRecordFlagsPtsz].Get<EventRecordFlagsFn>();
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing()) return real(event, stream, flags);
  return Record(g_api_event_record, __builtin_return_address(0), false,
                [&] { return real(event, stream, flags); });
}
