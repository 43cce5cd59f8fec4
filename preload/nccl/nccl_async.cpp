// Non-blocking communicators (ncclConfig_t.blocking = 0): a launch that returned ncclInProgress
// is enqueued later by NCCL's own thread, and the application polls ncclCommGetAsyncError until
// it stops reporting ncclInProgress. Once it reports ncclSuccess the work is on its stream, so
// events recorded there now complete after it: they tell when the op completed (live progress,
// hang detection), never how long it took (other work of the application may sit between).
#include "preload/cuda/cuda_hook.h"
#include "preload/nccl/nccl_comms.h"

namespace perftracker::preload {
namespace {

RealSymbol g_get_async_error{"ncclCommGetAsyncError", Library::kNccl};

[[gnu::constructor]] void ResolveNcclAsync() { ResolveAll(&g_get_async_error, 1); }

// The launch of `entry` reported done: a completion marker on its stream.
void MarkEnqueued(CommEntry* entry) {
  const uint64_t seq_plus_one = entry->pending_seq.exchange(0, std::memory_order_acq_rel);
  if (seq_plus_one == 0) return;
  const Slot slot = entry->pending_slot.load(std::memory_order_relaxed);
  const auto stream =
      reinterpret_cast<cudaStream_t>(entry->pending_stream.load(std::memory_order_relaxed));
  const int32_t timer = TimerStart(stream);
  TimerEnd(timer, stream, {TimerTarget::Kind::kCollectiveProgress, slot, seq_plus_one - 1});
}

}  // namespace

void NotePending(CommEntry* entry, Slot slot, uint64_t seq, cudaStream_t stream) {
  if (entry == nullptr) return;
  entry->pending_slot.store(slot, std::memory_order_relaxed);
  entry->pending_stream.store(reinterpret_cast<uintptr_t>(stream), std::memory_order_relaxed);
  uint64_t old = entry->pending_seq.load(std::memory_order_relaxed);
  while (old < seq + 1 &&
         !entry->pending_seq.compare_exchange_weak(old, seq + 1, std::memory_order_release)) {
  }
}

}  // namespace perftracker::preload

using namespace perftracker::preload;  // NOLINT: the hooks are extern "C" at global scope

// Not timed: watchdogs poll it continuously. One load when no launch is pending.
PERFTRACKER_HOOK ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  const auto real =
      g_get_async_error.Need<decltype(&ncclCommGetAsyncError)>(__builtin_return_address(0));
  if (real == nullptr) return ncclSystemError;
  const ncclResult_t rc = real(comm, async_error);
  if (rc != ncclSuccess || async_error == nullptr || *async_error != ncclSuccess ||
      !NcclTracing()) {
    return rc;
  }
  HookScope scope;
  CommEntry* entry = KnownComm(comm);
  if (entry != nullptr && entry->pending_seq.load(std::memory_order_relaxed) != 0) {
    MarkEnqueued(entry);
  }
  return rc;
}
