// A program with a known number of CUDA runtime and NCCL calls, run under LD_PRELOAD by
// cuda_hooks_test.cpp against simgpu (or, in `real` mode, against the real CUDA libraries).
//   workload runtime            kernels, copies, memsets, syncs, a captured graph
//   workload cupti-first        subscribes to CUPTI itself, then runs `runtime`
//   workload graphs             global-mode captures on two threads during a timed kernel
//   workload nccl ITERS IDFILE  a rank (RANK, WORLD_SIZE): kernels + one all-reduce per
//                               iteration and a send/recv ring in a group; a split child
//   workload nccl-nonblocking ITERS IDFILE  the same on a non-blocking communicator, polled;
//                               prints the return codes
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nccl_id_file.h"
#include "tests/test_kernels.h"

namespace {

#define CHECK_CUDA(call)                                                               \
  do {                                                                                 \
    const cudaError_t rc_ = (call);                                                    \
    if (rc_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "workload: %s failed: %d\n", #call, static_cast<int>(rc_)); \
      std::exit(3);                                                                    \
    }                                                                                  \
  } while (0)
#define CHECK_NCCL(call)                                                               \
  do {                                                                                 \
    const ncclResult_t rc_ = (call);                                                   \
    if (rc_ != ncclSuccess) {                                                          \
      std::fprintf(stderr, "workload: %s failed: %d\n", #call, static_cast<int>(rc_)); \
      std::exit(4);                                                                    \
    }                                                                                  \
  } while (0)

// The counts cuda_hooks_test.cpp expects (keep in step with kExpected there).
constexpr int kGemm = 100, kElementwise = 50, kCaptured = 20, kGraphLaunches = 2;
constexpr int kH2D = 10, kD2H = 5, kMemsets = 7, kSyncCopies = 3, kStreamSyncs = 4;
constexpr int kDeviceSyncs = 2, kWaits = 6;
constexpr int kCopies2D = 3, kSyncCopies2D = 2, kCopies3D = 2;  // pitched: 64 x 32 (x 2) bytes
constexpr int64_t kGemmNs =
    2'002'000;  // 2 us + 500 waves of 4 us: the host never starves the stream
constexpr int64_t kElementwiseNs = 402'000;

// One call site for every launch, so sampling counts are predictable: not inlined, and under
// GCC not cloned either (at -O3 its constant propagation makes a copy per kernel, each a call
// site of its own; clang has no noipa and does not clone this).
#if defined(__clang__)
[[gnu::noinline]]
#else
[[gnu::noipa]]
#endif
void Launch(const void* kernel, int64_t ns, cudaStream_t s) {
  CHECK_CUDA(cudaLaunchKernel(kernel, simgpu_test::GridForNs(ns), dim3(simgpu_test::kThreads),
                              nullptr, 0, s));
}

// 64-byte rows out of 128-byte pitched rows, 2D and 3D; the bytes must land where they belong.
bool PitchedCopies(void* dev, void* host, cudaStream_t s) {
  auto* h = static_cast<unsigned char*>(host);
  for (int i = 0; i < 8192; ++i) h[i] = static_cast<unsigned char>(i * 7);
  for (int i = 0; i < kCopies2D; ++i) {
    CHECK_CUDA(cudaMemcpy2DAsync(dev, 64, host, 128, 64, 32, cudaMemcpyHostToDevice, s));
  }
  for (int i = 0; i < kSyncCopies2D; ++i) {
    CHECK_CUDA(cudaMemcpy2D(dev, 64, host, 128, 64, 32, cudaMemcpyHostToDevice));
  }
  auto* d = static_cast<unsigned char*>(dev);
  cudaMemcpy3DParms p{};
  p.srcPtr = make_cudaPitchedPtr(d, 64, 64, 32);
  p.dstPtr = make_cudaPitchedPtr(d + 4096, 64, 64, 16);
  p.extent = make_cudaExtent(64, 16, 2);
  p.kind = cudaMemcpyDeviceToDevice;
  for (int i = 0; i < kCopies3D; ++i) CHECK_CUDA(cudaMemcpy3DAsync(&p, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  // Row 5 of the 2D copy came from host row 5 (pitch 128); slice 1 row 3 of the 3D copy from
  // device row 16 + 3 (the source box has 32 rows a slice).
  for (int x = 0; x < 64; ++x) {
    if (d[5 * 64 + x] != h[5 * 128 + x]) return false;
    if (d[4096 + (16 + 3) * 64 + x] != d[(32 + 3) * 64 + x]) return false;
  }
  return true;
}

int Runtime() {
  simgpu_test::RegisterTestKernels();
  cudaStream_t s, side;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  void* dev = nullptr;
  void* host = nullptr;
  CHECK_CUDA(cudaMalloc(&dev, 1 << 20));
  CHECK_CUDA(cudaMallocHost(&host, 1 << 20));
  // Held until everything is enqueued: the work then runs back to back, so sampled device
  // times are exactly the modelled ones however slowly this (loaded) host enqueues.
  auto gate = std::make_unique<simgpu_test::Gate>(s);
  for (int i = 0; i < kGemm; ++i) Launch(simgpu_test::GemmKernel(), kGemmNs, s);
  for (int i = 0; i < kElementwise; ++i)
    Launch(simgpu_test::ElementwiseKernel(), kElementwiseNs, s);
  for (int i = 0; i < kH2D; ++i)
    CHECK_CUDA(cudaMemcpyAsync(dev, host, 4096, cudaMemcpyHostToDevice, s));
  for (int i = 0; i < kD2H; ++i)
    CHECK_CUDA(cudaMemcpyAsync(host, dev, 4096, cudaMemcpyDeviceToHost, s));
  for (int i = 0; i < kMemsets; ++i) CHECK_CUDA(cudaMemsetAsync(dev, 0, 4096, s));
  gate->Open();
  for (int i = 0; i < kSyncCopies; ++i)
    CHECK_CUDA(cudaMemcpy(dev, host, 4096, cudaMemcpyHostToDevice));
  if (!PitchedCopies(dev, host, s)) return 6;
  cudaEvent_t ev;
  CHECK_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  for (int i = 0; i < kWaits; ++i) {
    CHECK_CUDA(cudaEventRecord(ev, s));
    CHECK_CUDA(cudaStreamWaitEvent(side, ev, 0));
  }
  CHECK_CUDA(cudaEventSynchronize(ev));
  for (int i = 0; i < kStreamSyncs; ++i) CHECK_CUDA(cudaStreamSynchronize(s));
  // A captured graph: its launches are counted, but no timing event may join the capture.
  CHECK_CUDA(cudaStreamBeginCapture(side, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < kCaptured; ++i) Launch(simgpu_test::GemmKernel(), kGemmNs, side);
  cudaGraph_t graph;
  CHECK_CUDA(cudaStreamEndCapture(side, &graph));
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < kGraphLaunches; ++i) CHECK_CUDA(cudaGraphLaunch(exec, side));
  for (int i = 0; i < kDeviceSyncs; ++i) CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaFree(dev));
  CHECK_CUDA(cudaFreeHost(host));
  std::printf("workload: runtime done\n");
  return 0;
}

void CUPTIAPI NoCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

int CuptiFirst() {
  CUpti_SubscriberHandle subscriber;
  if (cuptiSubscribe(&subscriber, &NoCallback, nullptr) != CUPTI_SUCCESS) return 5;
  return Runtime();
}

int Nccl(int iters, const std::string& id_path) {
  const int rank = std::atoi(std::getenv("RANK"));
  const int n = std::atoi(std::getenv("WORLD_SIZE"));
  simgpu_test::RegisterTestKernels();
  const ncclUniqueId id = ExchangeNcclId(rank, id_path);
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, n, id, rank));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* buf = nullptr;
  CHECK_CUDA(cudaMalloc(&buf, 8 << 20));
  char* half = static_cast<char*>(buf) + (4 << 20);
  for (int i = 0; i < iters; ++i) {
    for (int k = 0; k < 4; ++k) Launch(simgpu_test::GemmKernel(), 1'002'000, s);
    CHECK_NCCL(ncclAllReduce(buf, buf, 1 << 20, ncclFloat32, ncclSum, comm, s));
    if (std::getenv("WORKLOAD_NO_P2P") == nullptr) {
      CHECK_NCCL(ncclGroupStart());
      CHECK_NCCL(ncclSend(buf, 1024, ncclFloat32, (rank + 1) % n, comm, s));
      CHECK_NCCL(ncclRecv(half, 1024, ncclFloat32, (rank + n - 1) % n, comm, s));
      CHECK_NCCL(ncclGroupEnd());
    }
    CHECK_CUDA(cudaStreamSynchronize(s));
  }
  if (std::getenv("WORKLOAD_NO_P2P") == nullptr) {
    ncclComm_t child;
    CHECK_NCCL(ncclCommSplit(comm, rank % 2, rank, &child, nullptr));
    for (int i = 0; i < 3; ++i) CHECK_NCCL(ncclAllGather(buf, half, 1024, ncclInt8, child, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_NCCL(ncclCommDestroy(child));
  }
  CHECK_NCCL(ncclCommDestroy(comm));
  std::printf("workload: rank %d done\n", rank);
  return 0;
}

// Polls a non-blocking communicator until its last call is done, as NCCL asks; its final state.
ncclResult_t WaitDone(ncclComm_t comm) {
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) {
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return ncclInternalError;
    if (state == ncclInProgress) usleep(200);
  }
  return state;
}

// A rank on a non-blocking communicator: per iteration kernels, an all-reduce and a send/recv
// ring in a group, each polled until enqueued. Prints every return code it got (the polls'
// final states included), for comparison with a run without the library.
int NcclNonBlocking(int iters, const std::string& id_path) {
  const int rank = std::atoi(std::getenv("RANK"));
  const int n = std::atoi(std::getenv("WORLD_SIZE"));
  simgpu_test::RegisterTestKernels();
  const ncclUniqueId id = ExchangeNcclId(rank, id_path);
  std::string codes;
  const auto note = [&codes](const char* what, ncclResult_t rc) {
    codes += std::string(what) + "=" + std::to_string(static_cast<int>(rc)) + " ";
  };
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm;
  note("init", ncclCommInitRankConfig(&comm, n, id, rank, &config));
  note("init_done", WaitDone(comm));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* buf = nullptr;
  CHECK_CUDA(cudaMalloc(&buf, 8 << 20));
  char* half = static_cast<char*>(buf) + (4 << 20);
  for (int i = 0; i < iters; ++i) {
    Launch(simgpu_test::GemmKernel(), 1'002'000, s);
    note("allreduce", ncclAllReduce(buf, buf, 1 << 20, ncclFloat32, ncclSum, comm, s));
    note("allreduce_done", WaitDone(comm));
    note("group", ncclGroupStart());
    note("send", ncclSend(buf, 1024, ncclFloat32, (rank + 1) % n, comm, s));
    note("recv", ncclRecv(half, 1024, ncclFloat32, (rank + n - 1) % n, comm, s));
    note("group_end", ncclGroupEnd());
    note("group_done", WaitDone(comm));
    CHECK_CUDA(cudaStreamSynchronize(s));
  }
  CHECK_CUDA(cudaGetLastError());
  note("destroy", ncclCommDestroy(comm));
  std::printf("codes: %s\n", codes.c_str());
  return 0;
}

// The node kinds of `graph`, in order, e.g. "K K M"; "error" if the runtime refused.
std::string Describe(cudaGraph_t graph) {
  size_t n = 0;
  if (cudaGraphGetNodes(graph, nullptr, &n) != cudaSuccess) return "error";
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0 && cudaGraphGetNodes(graph, nodes.data(), &n) != cudaSuccess) return "error";
  std::string out = std::to_string(n) + ":";
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    if (cudaGraphNodeGetType(node, &type) != cudaSuccess) return "error";
    (out += ' ') += std::to_string(static_cast<int>(type));  // GCC bug 105329 if prepended
  }
  return out;
}

// Graphs captured in global mode: one on this thread, one on another thread started while a
// timed kernel (PERFTRACKER_SAMPLE_EVERY=1: its timing events pending) runs on a third stream.
// Prints each graph's nodes and the return codes, then launches each graph kGraphLaunches times.
int Graphs() {
  simgpu_test::RegisterTestKernels();
  cudaStream_t s, side, busy;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&busy, cudaStreamNonBlocking));
  void* dev = nullptr;
  CHECK_CUDA(cudaMalloc(&dev, 1 << 20));
  const auto capture = [&](cudaStream_t stream, cudaGraph_t* graph) {
    std::string codes = "begin=" + std::to_string(cudaStreamBeginCapture(stream,
                                                   cudaStreamCaptureModeGlobal));
    for (int i = 0; i < kCaptured; ++i) Launch(simgpu_test::GemmKernel(), kGemmNs, stream);
    codes += " memset=" + std::to_string(cudaMemsetAsync(dev, 0, 4096, stream));
    // Long enough for the device-timer thread to poll the pending events many times.
    usleep(300'000);
    codes += " end=" + std::to_string(cudaStreamEndCapture(stream, graph));
    return codes;
  };
  // A long kernel: its timing events stay pending through both captures.
  Launch(simgpu_test::GemmKernel(), 2'000'000'000, busy);
  cudaGraph_t here = nullptr, there = nullptr;
  const std::string codes_here = capture(s, &here);
  std::string codes_there;
  std::thread other([&] { codes_there = capture(side, &there); });
  other.join();
  std::printf("here: %s | %s\n", codes_here.c_str(), here ? Describe(here).c_str() : "none");
  std::printf("there: %s | %s\n", codes_there.c_str(), there ? Describe(there).c_str() : "none");
  for (cudaGraph_t graph : {here, there}) {
    if (graph == nullptr) continue;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < kGraphLaunches; ++i) CHECK_CUDA(cudaGraphLaunch(exec, s));
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "runtime") return Runtime();
  if (mode == "cupti-first") return CuptiFirst();
  if (mode == "graphs") return Graphs();
  if (mode == "nccl" && argc > 3) return Nccl(std::atoi(argv[2]), argv[3]);
  if (mode == "nccl-nonblocking" && argc > 3) return NcclNonBlocking(std::atoi(argv[2]), argv[3]);
  std::fprintf(stderr, "usage: workload runtime|cupti-first|nccl ITERS IDFILE\n");
  return 2;
}
