// CUDA runtime semantics of the stand-in, through the exported API only: errors, stream order,
// events and elapsed time, synchronization, copies, graphs. Run with SIMGPU_TIME_SCALE=0.05
// (CTest sets it): a 20 ms kernel then takes 1 ms of wall time.
#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/test_kernels.h"

extern "C" cudaError_t cudaLaunchKernel_ptsz(const void*, dim3, dim3, void**, size_t, cudaStream_t);
extern "C" cudaError_t cudaStreamQuery_ptsz(cudaStream_t);

namespace {

using simgpu_test::GridForNs;
using simgpu_test::kThreads;

constexpr int64_t kMs = 1000000;

double TimeScale() {
  const char* s = std::getenv("SIMGPU_TIME_SCALE");
  return s ? std::atof(s) : 1.0;
}

double WallMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Launch(const void* kernel, int64_t ns, cudaStream_t stream) {
  simgpu_test::RegisterTestKernels();
  REQUIRE(cudaLaunchKernel(kernel, GridForNs(ns), dim3(kThreads), nullptr, 0, stream) ==
          cudaSuccess);
}

float Elapsed(cudaEvent_t a, cudaEvent_t b) {
  float ms = -1;
  REQUIRE(cudaEventElapsedTime(&ms, a, b) == cudaSuccess);
  return ms;
}

struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  Events() {
    REQUIRE(cudaEventCreate(&start) == cudaSuccess);
    REQUIRE(cudaEventCreate(&stop) == cudaSuccess);
  }
  ~Events() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
};

}  // namespace

TEST_CASE("versions and device queries look like a CUDA 13 node", "[simgpu][runtime]") {
  int v = 0;
  REQUIRE(cudaRuntimeGetVersion(&v) == cudaSuccess);
  CHECK(v == CUDART_VERSION);
  REQUIRE(cudaDriverGetVersion(&v) == cudaSuccess);
  CHECK(v >= 13000);
  int count = 0;
  REQUIRE(cudaGetDeviceCount(&count) == cudaSuccess);
  CHECK(count == 8);
  cudaDeviceProp prop;
  REQUIRE(cudaGetDeviceProperties(&prop, 0) == cudaSuccess);
  CHECK(prop.multiProcessorCount == 132);
  CHECK(prop.major == 9);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
}

TEST_CASE("last error is per call and cleared by cudaGetLastError", "[simgpu][runtime]") {
  cudaGetLastError();
  CHECK(cudaSetDevice(99) == cudaErrorInvalidDevice);
  CHECK(cudaPeekAtLastError() == cudaErrorInvalidDevice);
  CHECK(cudaGetLastError() == cudaErrorInvalidDevice);
  CHECK(cudaGetLastError() == cudaSuccess);
  CHECK(std::strcmp(cudaGetErrorString(cudaErrorInvalidDevice), "invalid device ordinal") == 0);
  CHECK(std::strcmp(cudaGetErrorName(cudaErrorNotReady), "cudaErrorNotReady") == 0);
}

TEST_CASE("kernels are identified by their registered host stub", "[simgpu][runtime]") {
  simgpu_test::RegisterTestKernels();
  const char* name = nullptr;
  REQUIRE(cudaFuncGetName(&name, simgpu_test::GemmKernel()) == cudaSuccess);
  CHECK(std::strcmp(name, "gemm_kernel") == 0);
  CHECK(cudaFuncGetName(&name, simgpu_test::UnregisteredKernel()) ==
        cudaErrorInvalidDeviceFunction);
  CHECK(cudaLaunchKernel(simgpu_test::UnregisteredKernel(), dim3(1), dim3(1), nullptr, 0,
                         nullptr) == cudaErrorInvalidDeviceFunction);
  CHECK(cudaLaunchKernel(simgpu_test::GemmKernel(), dim3(1), dim3(2048), nullptr, 0, nullptr) ==
        cudaErrorInvalidConfiguration);
  cudaGetLastError();
}

TEST_CASE("elapsed time between events follows the kernel model", "[simgpu][runtime]") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  Events ev;
  simgpu_test::Gate gate(s);
  REQUIRE(cudaEventRecord(ev.start, s) == cudaSuccess);
  Launch(simgpu_test::GemmKernel(), 20 * kMs + 2000, s);
  Launch(simgpu_test::ElementwiseKernel(), 10 * kMs + 2000, s);
  REQUIRE(cudaEventRecord(ev.stop, s) == cudaSuccess);
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, ev.start, ev.stop) == cudaErrorNotReady);
  CHECK(cudaEventQuery(ev.stop) == cudaErrorNotReady);
  gate.Open();
  REQUIRE(cudaEventSynchronize(ev.stop) == cudaSuccess);
  CHECK(cudaEventQuery(ev.stop) == cudaSuccess);
  CHECK(Elapsed(ev.start, ev.stop) == Approx(30.004).margin(1e-3));
  CHECK(cudaGetLastError() == cudaSuccess);  // cudaErrorNotReady is not an error
  REQUIRE(cudaStreamDestroy(s) == cudaSuccess);
}

TEST_CASE("stream synchronization really waits, scaled", "[simgpu][runtime]") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  double t0 = WallMs();
  for (int i = 0; i < 3; ++i) Launch(simgpu_test::GemmKernel(), 20 * kMs + 2000, s);
  double launched = WallMs();
  CHECK(cudaStreamQuery(s) == cudaErrorNotReady);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  double waited = WallMs() - t0;
  CHECK(cudaStreamQuery(s) == cudaSuccess);
  // Launches are asynchronous; the synchronize waits for 60 simulated ms.
  CHECK(launched - t0 < waited);
  CHECK(waited >= 60 * TimeScale() * 0.99);
  REQUIRE(cudaStreamDestroy(s) == cudaSuccess);
}

TEST_CASE("cudaStreamWaitEvent orders work across streams", "[simgpu][runtime]") {
  cudaStream_t a, b;
  REQUIRE(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking) == cudaSuccess);
  Events ev;
  cudaEvent_t done_a;
  REQUIRE(cudaEventCreateWithFlags(&done_a, cudaEventDisableTiming) == cudaSuccess);
  simgpu_test::Gate gate(a);
  REQUIRE(cudaEventRecord(ev.start, a) == cudaSuccess);
  Launch(simgpu_test::GemmKernel(), 40 * kMs + 2000, a);
  REQUIRE(cudaEventRecord(done_a, a) == cudaSuccess);
  REQUIRE(cudaStreamWaitEvent(b, done_a, 0) == cudaSuccess);
  Launch(simgpu_test::ElementwiseKernel(), 8 * kMs + 2000, b);
  REQUIRE(cudaEventRecord(ev.stop, b) == cudaSuccess);
  gate.Open();
  REQUIRE(cudaStreamSynchronize(b) == cudaSuccess);
  // b's kernel ran after a's: 40 + 8 ms from the start of a.
  CHECK(Elapsed(ev.start, ev.stop) == Approx(48.004).margin(1e-3));
  float ms;
  CHECK(cudaEventElapsedTime(&ms, ev.start, done_a) == cudaErrorInvalidResourceHandle);
  cudaGetLastError();
  cudaEventDestroy(done_a);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
}

TEST_CASE("independent streams overlap, the legacy stream serializes", "[simgpu][runtime]") {
  cudaStream_t blocking, nonblocking;
  REQUIRE(cudaStreamCreate(&blocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking) == cudaSuccess);
  Events ev;
  cudaEvent_t mid;
  REQUIRE(cudaEventCreate(&mid) == cudaSuccess);
  simgpu_test::Gate hold(nullptr);
  REQUIRE(cudaEventRecord(ev.start, nullptr) == cudaSuccess);
  // Both kernels start at the start event: implicitly (blocking) and explicitly (non-blocking).
  REQUIRE(cudaStreamWaitEvent(nonblocking, ev.start, 0) == cudaSuccess);
  Launch(simgpu_test::GemmKernel(), 40 * kMs + 2000, blocking);
  Launch(simgpu_test::GemmKernel(), 40 * kMs + 2000, nonblocking);
  REQUIRE(cudaEventRecord(mid, nonblocking) == cudaSuccess);
  // The legacy stream waits for the blocking stream, not for the non-blocking one.
  Launch(simgpu_test::ElementwiseKernel(), 4 * kMs + 2000, nullptr);
  REQUIRE(cudaEventRecord(ev.stop, nullptr) == cudaSuccess);
  hold.Open();
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(Elapsed(ev.start, ev.stop) == Approx(44.004).margin(1e-3));  // serialized after blocking
  CHECK(Elapsed(ev.start, mid) == Approx(40.002).margin(1e-3));      // ran alongside it
  cudaEventDestroy(mid);
  cudaStreamDestroy(blocking);
  cudaStreamDestroy(nonblocking);
}

TEST_CASE("copies move bytes and take PCIe time", "[simgpu][runtime]") {
  constexpr size_t kBytes = 25 << 20;  // 26.2 MB at 25 GB/s = 1.048576 ms
  void* dev = nullptr;
  void* host = nullptr;
  REQUIRE(cudaMalloc(&dev, kBytes) == cudaSuccess);
  REQUIRE(cudaMallocHost(&host, kBytes) == cudaSuccess);
  std::vector<char> pageable(kBytes, 7);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  Events ev;
  simgpu_test::Gate gate(s);
  REQUIRE(cudaEventRecord(ev.start, s) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(dev, pageable.data(), kBytes, cudaMemcpyHostToDevice, s) == cudaSuccess);
  REQUIRE(cudaEventRecord(ev.stop, s) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(host, dev, kBytes, cudaMemcpyDefault, s) == cudaSuccess);
  gate.Open();
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(Elapsed(ev.start, ev.stop) == Approx(kBytes / 25.0 / 1e6).epsilon(1e-3));
  CHECK(static_cast<char*>(host)[kBytes - 1] == 7);
  REQUIRE(cudaMemsetAsync(dev, 3, kBytes, s) == cudaSuccess);
  REQUIRE(cudaMemcpy(pageable.data(), dev, 16, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(pageable[0] == 3);
  cudaPointerAttributes attr;
  REQUIRE(cudaPointerGetAttributes(&attr, static_cast<char*>(dev) + 5) == cudaSuccess);
  CHECK(attr.type == cudaMemoryTypeDevice);
  REQUIRE(cudaPointerGetAttributes(&attr, pageable.data()) == cudaSuccess);
  CHECK(attr.type == cudaMemoryTypeUnregistered);
  CHECK(cudaFree(dev) == cudaSuccess);
  CHECK(cudaFree(dev) == cudaErrorInvalidValue);
  cudaGetLastError();
  CHECK(cudaFreeHost(host) == cudaSuccess);
  cudaStreamDestroy(s);
}

TEST_CASE("capture modes: an unsafe call from another thread invalidates a global capture",
          "[simgpu][runtime]") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  cudaEvent_t ev;
  REQUIRE(cudaEventCreate(&ev) == cudaSuccess);
  void* dev = nullptr;
  REQUIRE(cudaMalloc(&dev, 4096) == cudaSuccess);
  // Returns (query result, end-of-capture result, node count) for a global capture during which
  // another thread in mode `other_mode` queries an event.
  const auto run = [&](cudaStreamCaptureMode other_mode) {
    REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    Launch(simgpu_test::GemmKernel(), kMs, s);
    REQUIRE(cudaMemsetAsync(dev, 0, 4096, s) == cudaSuccess);
    cudaError_t query = cudaSuccess;
    std::thread([&] {
      cudaStreamCaptureMode mode = other_mode;
      REQUIRE(cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess);
      CHECK(mode == cudaStreamCaptureModeGlobal);  // every thread starts in global mode
      query = cudaEventQuery(ev);
      cudaGetLastError();
    }).join();
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(s, &graph);
    cudaGetLastError();
    size_t nodes = 0;
    if (graph != nullptr) {
      REQUIRE(cudaGraphGetNodes(graph, nullptr, &nodes) == cudaSuccess);
      std::vector<cudaGraphNode_t> handles(nodes);
      REQUIRE(cudaGraphGetNodes(graph, handles.data(), &nodes) == cudaSuccess);
      cudaGraphNodeType type;
      REQUIRE(cudaGraphNodeGetType(handles[0], &type) == cudaSuccess);
      CHECK(type == cudaGraphNodeTypeKernel);
      REQUIRE(cudaGraphNodeGetType(handles[1], &type) == cudaSuccess);
      CHECK(type == cudaGraphNodeTypeMemset);
      cudaGraphDestroy(graph);
    }
    return std::tuple{query, end, nodes};
  };
  CHECK(run(cudaStreamCaptureModeGlobal) ==
        std::tuple{cudaErrorStreamCaptureUnsupported, cudaErrorStreamCaptureInvalidated,
                   size_t{0}});
  CHECK(run(cudaStreamCaptureModeThreadLocal) == std::tuple{cudaSuccess, cudaSuccess, size_t{2}});
  CHECK(run(cudaStreamCaptureModeRelaxed) == std::tuple{cudaSuccess, cudaSuccess, size_t{2}});
  cudaFree(dev);
  cudaEventDestroy(ev);
  cudaStreamDestroy(s);
}

TEST_CASE("a captured graph replays its kernels", "[simgpu][runtime]") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
  cudaStreamCaptureStatus status;
  REQUIRE(cudaStreamIsCapturing(s, &status) == cudaSuccess);
  CHECK(status == cudaStreamCaptureStatusActive);
  Launch(simgpu_test::GemmKernel(), 5 * kMs + 2000, s);
  Launch(simgpu_test::ElementwiseKernel(), 3 * kMs + 2000, s);
  cudaGraph_t graph;
  REQUIRE(cudaStreamEndCapture(s, &graph) == cudaSuccess);
  CHECK(cudaStreamQuery(s) == cudaSuccess);  // nothing ran while capturing
  cudaGraphExec_t exec;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  Events ev;
  simgpu_test::Gate gate(s);
  REQUIRE(cudaEventRecord(ev.start, s) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);
  REQUIRE(cudaEventRecord(ev.stop, s) == cudaSuccess);
  gate.Open();
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(Elapsed(ev.start, ev.stop) == Approx(16.008).margin(1e-3));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}

TEST_CASE("per-thread default streams are independent", "[simgpu][runtime]") {
  simgpu_test::RegisterTestKernels();
  REQUIRE(cudaLaunchKernel_ptsz(simgpu_test::GemmKernel(), GridForNs(2000 * kMs + 2000),
                                dim3(kThreads), nullptr, 0, nullptr) == cudaSuccess);
  CHECK(cudaStreamQuery_ptsz(nullptr) == cudaErrorNotReady);
  cudaError_t other = cudaErrorUnknown;
  std::thread([&] { other = cudaStreamQuery_ptsz(nullptr); }).join();
  CHECK(other == cudaSuccess);
  CHECK(cudaStreamQuery(cudaStreamLegacy) == cudaSuccess);  // per-thread work not on legacy
  REQUIRE(cudaStreamSynchronize(cudaStreamPerThread) == cudaSuccess);
  CHECK(cudaStreamQuery_ptsz(nullptr) == cudaSuccess);
}

TEST_CASE("host functions run in stream order", "[simgpu][runtime]") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  static int value = 0;
  value = 0;
  Launch(simgpu_test::GemmKernel(), 10 * kMs + 2000, s);
  REQUIRE(cudaLaunchHostFunc(
              s, [](void* p) { *static_cast<int*>(p) = 42; }, &value) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(value == 42);
  cudaStreamDestroy(s);
}

TEST_CASE("PTX libraries: entries are kernels, a simulated body does its work", "[simgpu][runtime]") {
  // The entry names are what counts; the body of selftest_saxpy is simulated, not JIT-compiled.
  const char* ptx =
      ".version 7.0\n.target sm_75\n.address_size 64\n"
      ".visible .entry selftest_saxpy(.param .u32 n, .param .f32 a, .param .u64 x, "
      ".param .u64 y)\n{\n ret;\n}\n"
      ".visible .entry\tother_kernel()\n{\n ret;\n}\n";
  cudaLibrary_t lib = nullptr;
  REQUIRE(cudaLibraryLoadData(&lib, ptx, nullptr, nullptr, 0, nullptr, nullptr, 0) ==
          cudaSuccess);
  CHECK(cudaLibraryLoadData(&lib, "\x7f" "ELF", nullptr, nullptr, 0, nullptr, nullptr, 0) ==
        cudaErrorInvalidPtx);
  cudaKernel_t saxpy = nullptr, other = nullptr, missing = nullptr;
  REQUIRE(cudaLibraryGetKernel(&saxpy, lib, "selftest_saxpy") == cudaSuccess);
  REQUIRE(cudaLibraryGetKernel(&other, lib, "other_kernel") == cudaSuccess);
  CHECK(cudaLibraryGetKernel(&missing, lib, "selftest") == cudaErrorSymbolNotFound);
  cudaGetLastError();
  const char* name = nullptr;
  REQUIRE(cudaFuncGetName(&name, reinterpret_cast<const void*>(saxpy)) == cudaSuccess);
  CHECK(std::string(name) == "selftest_saxpy");

  constexpr uint32_t kN = 1000;
  std::vector<float> host_x(kN), host_y(kN);
  for (uint32_t i = 0; i < kN; ++i) host_x[i] = float(i), host_y[i] = 1.0f;
  float *x = nullptr, *y = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&x), kN * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&y), kN * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMemcpy(x, host_x.data(), kN * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(y, host_y.data(), kN * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  cudaStream_t s;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  uint32_t n = kN;
  float a = 2.0f;
  void* args[] = {&n, &a, &x, &y};
  const auto* fn = reinterpret_cast<const void*>(saxpy);
  // 3 blocks of 256 threads cover 768 elements: the rest stays untouched, as on a GPU.
  REQUIRE(cudaLaunchKernel(fn, dim3(3), dim3(256), args, 0, s) == cudaSuccess);
  a = 100.0f;  // parameters are copied at launch
  REQUIRE(cudaLaunchKernel(reinterpret_cast<const void*>(other), dim3(1), dim3(1), nullptr, 0,
                           s) == cudaSuccess);
  // Captured once, replayed twice: the body runs on each replay.
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
  a = 1.0f;
  REQUIRE(cudaLaunchKernel(fn, dim3(4), dim3(256), args, 0, s) == cudaSuccess);
  cudaGraph_t graph;
  REQUIRE(cudaStreamEndCapture(s, &graph) == cudaSuccess);
  cudaGraphExec_t exec;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(host_y.data(), y, kN * sizeof(float), cudaMemcpyDeviceToHost, s) ==
          cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(host_y[10] == 1.0f + 2 * 10 + 2 * 10);  // 2x + 1, then + x twice
  CHECK(host_y[800] == 1.0f + 2 * 800);         // beyond the first grid
  CHECK(host_y[999] == 1.0f + 2 * 999);
  REQUIRE(cudaLibraryUnload(lib) == cudaSuccess);
  CHECK(cudaLaunchKernel(fn, dim3(1), dim3(1), args, 0, s) == cudaErrorInvalidDeviceFunction);
  cudaGetLastError();
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFree(x);
  cudaFree(y);
  cudaStreamDestroy(s);
}
