// CUDA runtime hooks: host synchronization (all of its time is waiting), and events recorded
// and waited on by streams (no host wait; counted so that a changed dependency pattern shows).
#include "preload/core/versioned_entry.h"
#include "preload/cuda/cuda_hook.h"

namespace perftracker::preload {
namespace {

using StreamWaitFn = cudaError_t (*)(cudaStream_t, cudaEvent_t, unsigned int);
using EventRecordFn = cudaError_t (*)(cudaEvent_t, cudaStream_t);
using EventRecordFlagsFn = cudaError_t (*)(cudaEvent_t, cudaStream_t, unsigned int);

constinit RealSymbols g_real{
    Library::kCudart,
    {"cudaStreamSynchronize", "cudaStreamSynchronize_ptsz", "cudaEventSynchronize",
     "cudaDeviceSynchronize", "cudaStreamWaitEvent", "cudaStreamWaitEvent_ptsz", "cudaEventRecord",
     "cudaEventRecord_ptsz", "cudaEventRecordWithFlags", "cudaEventRecordWithFlags_ptsz"}};
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

[[gnu::constructor]] void ResolveSync() { ResolveAll(g_real); }

template <typename Call>
cudaError_t Record(ApiSlot& api, void* ret, bool blocking, Call call) {
  CudaCall record(api, ret, /*device_timed=*/false, nullptr,
                  blocking ? HostTiming::kBlocking : HostTiming::kSampled);
  return Recorded(record, call);
}

}  // namespace
}  // namespace perftracker::preload

namespace perftracker::preload::versioned {

template <int kNode>
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  const auto real = g_real(kNode, kStreamSync)
                        .Need<decltype(&::cudaStreamSynchronize)>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(stream);
  return Record(g_api_stream_sync, __builtin_return_address(0), true, [&] { return real(stream); });
}

template <int kNode>
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  const auto real = g_real(kNode, kStreamSyncPtsz)
                        .Need<decltype(&::cudaStreamSynchronize)>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(stream);
  return Record(g_api_stream_sync, __builtin_return_address(0), true, [&] { return real(stream); });
}

template <int kNode>
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  const auto real = g_real(kNode, kEventSync)
                        .Need<decltype(&::cudaEventSynchronize)>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(event);
  return Record(g_api_event_sync, __builtin_return_address(0), true, [&] { return real(event); });
}

template <int kNode>
cudaError_t cudaDeviceSynchronize() {
  const auto real = g_real(kNode, kDeviceSync)
                        .Need<decltype(&::cudaDeviceSynchronize)>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real();
  return Record(g_api_device_sync, __builtin_return_address(0), true, [&] { return real(); });
}

template <int kNode>
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  const auto real = g_real(kNode, kWaitEvent).Need<StreamWaitFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(stream, event, flags);
  return Record(g_api_wait_event, __builtin_return_address(0), false,
                [&] { return real(stream, event, flags); });
}

template <int kNode>
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  const auto real = g_real(kNode, kWaitEventPtsz).Need<StreamWaitFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(stream, event, flags);
  return Record(g_api_wait_event, __builtin_return_address(0), false,
                [&] { return real(stream, event, flags); });
}

template <int kNode>
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  const auto real = g_real(kNode, kEventRecord).Need<EventRecordFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(event, stream);
  return Record(g_api_event_record, __builtin_return_address(0), false,
                [&] { return real(event, stream); });
}

template <int kNode>
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) {
  const auto real =
      g_real(kNode, kEventRecordPtsz).Need<EventRecordFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(event, stream);
  return Record(g_api_event_record, __builtin_return_address(0), false,
                [&] { return real(event, stream); });
}

template <int kNode>
cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  const auto real =
      g_real(kNode, kEventRecordFlags).Need<EventRecordFlagsFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(event, stream, flags);
  return Record(g_api_event_record, __builtin_return_address(0), false,
                [&] { return real(event, stream, flags); });
}

template <int kNode>
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream,
                                          unsigned int flags) {
  const auto real =
      g_real(kNode, kEventRecordFlagsPtsz).Need<EventRecordFlagsFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (!Tracing<kNode>()) return real(event, stream, flags);
  return Record(g_api_event_record, __builtin_return_address(0), false,
                [&] { return real(event, stream, flags); });
}

}  // namespace perftracker::preload::versioned

PERFTRACKER_VERSIONED_HOOK(CUDART, cudaStreamSynchronize)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaStreamSynchronize_ptsz)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaEventSynchronize)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaDeviceSynchronize)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaStreamWaitEvent)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaStreamWaitEvent_ptsz)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaEventRecord)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaEventRecord_ptsz)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaEventRecordWithFlags)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaEventRecordWithFlags_ptsz)
