// Stream capture: how many capture sequences may be open, so that the launch hooks ask the
// runtime whether their stream is capturing only while one is (a launch on a capturing stream is
// recorded into a graph, not run: it counts as captured, cuda_hook.h). Streams joined into a
// capture through events capture without a begin of their own; the count covers them, since
// their capture ends with the origin's.
#include "preload/core/versioned_entry.h"
#include "preload/cuda/cuda_hook.h"

namespace perftracker::preload {
namespace {

using BeginFn = cudaError_t (*)(cudaStream_t, cudaStreamCaptureMode);
using EndFn = cudaError_t (*)(cudaStream_t, cudaGraph_t*);

constinit RealSymbols g_real{Library::kCudart,
                             {"cudaStreamBeginCapture", "cudaStreamBeginCapture_ptsz",
                              "cudaStreamEndCapture", "cudaStreamEndCapture_ptsz"}};
enum Real { kBegin, kBeginPtsz, kEnd, kEndPtsz };

[[gnu::constructor]] void ResolveCapture() { ResolveAll(g_real); }

// Counted before the call returns to the application: its first captured launch sees it.
cudaError_t Begun(cudaError_t rc) {
  if (rc == cudaSuccess) g_open_captures.fetch_add(1, std::memory_order_relaxed);
  return rc;
}

// An end ends the sequence when the stream no longer captures afterwards, whatever it returned
// (an invalidated capture ends with an error); a refused end (wrong thread) leaves it open.
template <typename Call>
cudaError_t End(cudaStream_t stream, Call call) {
  HookScope scope;
  const bool was = StreamCapturing(stream);
  const cudaError_t rc = call();
  if (was && !StreamCapturing(stream)) {
    uint32_t open = g_open_captures.load(std::memory_order_relaxed);
    while (open > 0 && !g_open_captures.compare_exchange_weak(open, open - 1)) {
    }
  }
  return rc;
}

}  // namespace
}  // namespace perftracker::preload

namespace perftracker::preload::versioned {

template <int kNode>
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  const auto real = g_real(kNode, kBegin).Need<BeginFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  return Begun(real(stream, mode));
}

template <int kNode>
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, cudaStreamCaptureMode mode) {
  const auto real = g_real(kNode, kBeginPtsz).Need<BeginFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  return Begun(real(stream, mode));
}

template <int kNode>
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  const auto real = g_real(kNode, kEnd).Need<EndFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (t_in_hook) return real(stream, graph);
  return End(stream, [&] { return real(stream, graph); });
}

template <int kNode>
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t* graph) {
  const auto real = g_real(kNode, kEndPtsz).Need<EndFn>(__builtin_return_address(0));
  if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;
  if (t_in_hook) return real(stream, graph);
  return End(PerThread(stream), [&] { return real(stream, graph); });
}

}  // namespace perftracker::preload::versioned

PERFTRACKER_VERSIONED_HOOK(CUDART, cudaStreamBeginCapture)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaStreamBeginCapture_ptsz)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaStreamEndCapture)
PERFTRACKER_VERSIONED_HOOK(CUDART, cudaStreamEndCapture_ptsz)
