// perftracker-selftest-workload [--cupti] [--launches N]: the program `perftracker selftest`
// runs once plain and once per library configuration. It drives whatever libcudart, libcublas
// and libnccl the node has, as PyTorch does (kernels from a loaded library through
// cudaLaunchKernel, copies, events, a captured graph, an SGEMM, an all-reduce), and prints a
// transcript (transcript.h) that every run must reproduce.
//
// Exit: 0 ran (whatever the calls returned: the transcript says), 3 no usable CUDA runtime or
// device (the `fatal` line says why).
//
// PERFTRACKER_SELFTEST_DRILL=bypass-launch makes one kernel launch go past any interposer, as a
// hook that lost a call would: results stay the same, the profile is one launch short. The
// negative test uses it to prove the count check fails.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "analyzer/selftest/cuda_api.h"
#include "analyzer/selftest/cupti_count.h"
#include "analyzer/selftest/saxpy_ptx.h"
#include "analyzer/selftest/transcript.h"

namespace perftracker::selftest {
namespace {

constexpr int kExitNoRuntime = 3;
constexpr unsigned kN = 1 << 16;  // elements of the saxpy vectors
constexpr int kSaxpyLaunches = 10;
constexpr int kGraphLaunches = 3;
constexpr int kGemmDim = 64;
constexpr int kAllReduces = 3;

[[noreturn]] void Fatal(const std::string& why) {
  std::printf("perftracker-selftest-workload 1\nfatal %s\n", why.c_str());
  std::fflush(stdout);
  std::exit(kExitNoRuntime);
}

struct Workload {
  Cudart& rt;
  Transcript& t;
  cudaStream_t stream = nullptr;
  cudaKernel_t saxpy = nullptr;
  bool drill_bypass = false;
  long ran_saxpy = 0;  // kernels the device ran (CUPTI's count to match)
  std::map<std::string, long> copies_ran;

  int Copy(const char* api, void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
           bool async, bool captured = false) {
    static const char* const kDir[] = {"HtoH", "HtoD", "DtoH", "DtoD", "Default"};
    const std::string name = std::string(api) + " " + kDir[kind] + (captured ? " (captured)" : "");
    const int rc =
        async ? rt.memcpy_async(dst, src, bytes, kind, stream) : rt.memcpy(dst, src, bytes, kind);
    if (rc == 0 && !captured) ++copies_ran[kDir[kind]];
    return t.Call(name, rc);
  }

  int Saxpy(unsigned n, float a, float* x, float* y, bool captured = false) {
    void* args[] = {&n, &a, &x, &y};
    const dim3 block(256), grid((n + 255) / 256);
    Cudart::LaunchFn launch = rt.launch;
    if (drill_bypass && !captured) {
      launch = rt.launch_bypass;
      drill_bypass = false;
    }
    const int rc = launch(reinterpret_cast<const void*>(saxpy), grid, block, args, 0, stream);
    if (rc == 0 && !captured) ++ran_saxpy;
    return t.Call(captured ? "cudaLaunchKernel (captured)" : "cudaLaunchKernel", rc);
  }
};

std::string Ptx(int major, int minor) {
  std::string ptx = kSaxpyPtx;
  ptx.replace(ptx.find("@TARGET@"), 8, major * 10 + minor < 75 ? "sm_50" : "sm_75");
  return ptx;
}

void CublasPart(Workload& w, float* da, float* db, float* dc) {
  Cublas b = LoadCublas();
  if (b.lib.handle == nullptr) return w.t.Line("skip cublas: " + b.lib.tried + " not found");
  if (!b.missing.empty()) return w.t.Line("skip cublas: " + b.missing + " missing");
  w.t.Info("library " + b.lib.path);
  cublasHandle_t h = nullptr;
  if (w.t.Call("cublasCreate_v2", b.create(&h)) != 0) return;
  w.t.Call("cublasSetStream_v2", b.set_stream(h, w.stream));
  const float alpha = 1.0f, beta = 0.5f;
  const int n = kGemmDim;
  w.t.Call("cublasSgemm_v2",
           b.sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, da, n, db, n, &beta, dc, n));
  std::vector<float> c(n * n);
  w.Copy("cudaMemcpyAsync", c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost, true);
  w.t.Call("cudaStreamSynchronize", w.rt.stream_sync(w.stream));
  w.t.Result("sgemm", c.data(), c.size() * 4);
  w.t.Call("cublasDestroy_v2", b.destroy(h));
}

void NcclPart(Workload& w, float* d) {
  Nccl nc = LoadNccl();
  if (nc.lib.handle == nullptr) return w.t.Line("skip nccl: " + nc.lib.tried + " not found");
  if (!nc.missing.empty()) return w.t.Line("skip nccl: " + nc.missing + " missing");
  w.t.Info("library " + nc.lib.path);
  ncclUniqueId id;
  if (w.t.Call("ncclGetUniqueId", nc.unique_id(&id)) != 0) return;
  ncclComm_t comm = nullptr;
  if (w.t.Call("ncclCommInitRank", nc.init_rank(&comm, 1, id, 0)) != 0) return;
  for (int i = 0; i < kAllReduces; ++i) {
    w.t.Call("ncclAllReduce", nc.all_reduce(d, d, kN, ncclFloat, ncclSum, comm, w.stream));
  }
  std::vector<float> out(kN);
  w.Copy("cudaMemcpyAsync", out.data(), d, kN * 4, cudaMemcpyDeviceToHost, true);
  w.t.Call("cudaStreamSynchronize", w.rt.stream_sync(w.stream));
  w.t.Result("allreduce", out.data(), kN * 4);
  w.t.Call("ncclCommDestroy", nc.destroy(comm));
}

// Launch cost: the fastest of ten batches, so a preempted batch on a shared node does not count.
void TimeLaunches(Workload& w, float* x, float* y, long launches) {
  const long batch = std::max(1L, launches / 10);
  double best = 1e300;
  for (int b = 0; b < 10; ++b) {
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < batch; ++i) w.Saxpy(256, 0.0f, x, y);
    const auto end = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(end - start).count() / batch);
    w.t.Call("cudaStreamSynchronize", w.rt.stream_sync(w.stream));
  }
  w.t.Info("launch_ns " + std::to_string(static_cast<long>(best)));
}

int Main(int argc, char** argv) {
  bool cupti = false;
  long timed_launches = 20000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--cupti") == 0) {
      cupti = true;
    } else if (std::strcmp(argv[i], "--launches") == 0 && i + 1 < argc) {
      timed_launches = std::atol(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: perftracker-selftest-workload [--cupti] [--launches N]\n");
      return 2;
    }
  }
  Cudart rt = LoadCudart();
  if (rt.lib.handle == nullptr) Fatal("no CUDA runtime: " + rt.lib.tried + " not found");
  if (!rt.missing.empty()) Fatal("CUDA runtime " + rt.lib.path + " lacks " + rt.missing);
  Transcript t;
  t.Info("library " + rt.lib.path);
  // CUPTI must subscribe before the first call that creates the context.
  std::string cupti_soname, why;
  const bool counting = cupti && StartCuptiCount(&cupti_soname, &why);
  if (cupti) t.Info(counting ? "cupti counting " + cupti_soname : "cupti skip " + why);

  int version = 0, devices = 0;
  t.Call("cudaRuntimeGetVersion", rt.runtime_version(&version));
  if (const int rc = rt.device_count(&devices); rc != 0 || devices == 0) {
    Fatal("no CUDA device: cudaGetDeviceCount returned " +
          std::string(rt.error_name(cudaError_t(rc))) + ", " + std::to_string(devices) +
          " devices");
  }
  t.Line("runtime " + std::to_string(version));
  t.Call("cudaSetDevice", rt.set_device(0));
  int major = 0, minor = 0;
  t.Call("cudaDeviceGetAttribute",
         rt.device_attribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  t.Call("cudaDeviceGetAttribute",
         rt.device_attribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));

  Workload w{rt, t, nullptr, nullptr, false, 0, {}};
  const char* drill = std::getenv("PERFTRACKER_SELFTEST_DRILL");
  w.drill_bypass = drill != nullptr && std::strcmp(drill, "bypass-launch") == 0;
  if (t.Call("cudaStreamCreateWithFlags", rt.stream_create(&w.stream, cudaStreamNonBlocking)) !=
      0) {
    Fatal("cudaStreamCreateWithFlags failed: nothing else can run");
  }
  cudaStream_t side = nullptr;
  t.Call("cudaStreamCreateWithFlags", rt.stream_create(&side, cudaStreamNonBlocking));

  const size_t bytes = kN * sizeof(float);
  float *hx = nullptr, *hy = nullptr, *dx = nullptr, *dy = nullptr, *dz = nullptr;
  t.Call("cudaMallocHost", rt.malloc_host(reinterpret_cast<void**>(&hx), bytes));
  t.Call("cudaMallocHost", rt.malloc_host(reinterpret_cast<void**>(&hy), bytes));
  for (float** d : {&dx, &dy, &dz})
    t.Call("cudaMalloc", rt.malloc(reinterpret_cast<void**>(d), bytes));
  if (hx == nullptr || hy == nullptr || dx == nullptr || dy == nullptr || dz == nullptr) {
    Fatal("allocations failed: nothing else can run");
  }
  for (unsigned i = 0; i < kN; ++i) {
    hx[i] = static_cast<float>(i % 1000) * 0.25f;
    hy[i] = 1.0f - static_cast<float>(i % 777) * 0.5f;
  }
  w.Copy("cudaMemcpy", dx, hx, bytes, cudaMemcpyHostToDevice, false);
  w.Copy("cudaMemcpyAsync", dy, hy, bytes, cudaMemcpyHostToDevice, true);
  w.Copy("cudaMemcpyAsync", dz, dy, bytes, cudaMemcpyDeviceToDevice, true);
  // A non-blocking stream does not order with the legacy stream a plain cudaMemcpy runs on.
  t.Call("cudaStreamSynchronize", rt.stream_sync(w.stream));
  w.Copy("cudaMemcpy", hy, dz, bytes, cudaMemcpyDeviceToHost, false);
  t.Result("copies", hy, bytes);

  cudaLibrary_t library = nullptr;
  if (rt.library_load == nullptr || rt.library_get_kernel == nullptr) {
    t.Line("skip kernels: cudaLibraryLoadData needs CUDA 12 or later");
  } else {
    const std::string ptx = Ptx(major, minor);
    t.Call("cudaLibraryLoadData",
           rt.library_load(&library, ptx.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    t.Call("cudaLibraryGetKernel", rt.library_get_kernel(&w.saxpy, library, kSaxpyEntry));
  }
  if (w.saxpy != nullptr) {
    cudaEvent_t start = nullptr, stop = nullptr, done = nullptr;
    for (cudaEvent_t* e : {&start, &stop, &done}) t.Call("cudaEventCreate", rt.event_create(e));
    t.Call("cudaEventRecord", rt.event_record(start, w.stream));
    for (int i = 0; i < kSaxpyLaunches; ++i) w.Saxpy(kN, 0.5f, dx, dy);
    t.Call("cudaEventRecord", rt.event_record(stop, w.stream));
    t.Call("cudaEventSynchronize", rt.event_sync(stop));
    float ms = 0;
    t.Call("cudaEventElapsedTime", rt.event_elapsed(&ms, start, stop));
    t.Info("saxpy_ms " + std::to_string(ms));

    // A graph: two launches and a copy captured, the graph run three times.
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    t.Call("cudaStreamBeginCapture", rt.begin_capture(w.stream, cudaStreamCaptureModeGlobal));
    w.Saxpy(kN, 2.0f, dx, dy, true);
    w.Saxpy(kN, -1.0f, dx, dy, true);
    w.Copy("cudaMemcpyAsync", dz, dy, bytes, cudaMemcpyDeviceToDevice, true, true);
    t.Call("cudaStreamEndCapture", rt.end_capture(w.stream, &graph));
    t.Call("cudaGraphInstantiate", rt.graph_instantiate(&exec, graph, 0));
    for (int i = 0; exec != nullptr && i < kGraphLaunches; ++i) {
      if (t.Call("cudaGraphLaunch", rt.graph_launch(exec, w.stream)) == 0) {
        w.ran_saxpy += 2;
        ++w.copies_ran["DtoD"];
      }
    }
    // A second stream ordered after the first by an event.
    t.Call("cudaEventRecord", rt.event_record(done, w.stream));
    t.Call("cudaStreamWaitEvent", rt.stream_wait_event(side, done, 0));
    t.Call("cudaMemsetAsync", rt.memset_async(dx, 0, 256, side));
    t.Call("cudaStreamSynchronize", rt.stream_sync(side));
    w.Copy("cudaMemcpyAsync", hy, dy, bytes, cudaMemcpyDeviceToHost, true);
    w.Copy("cudaMemcpyAsync", hx, dz, bytes, cudaMemcpyDeviceToHost, true);
    t.Call("cudaStreamSynchronize", rt.stream_sync(w.stream));
    t.Result("saxpy", hy, bytes);
    t.Result("graph", hx, bytes);
    if (exec != nullptr) t.Call("cudaGraphExecDestroy", rt.graph_exec_destroy(exec));
    if (graph != nullptr) t.Call("cudaGraphDestroy", rt.graph_destroy(graph));
    TimeLaunches(w, dx, dz, timed_launches);
    for (cudaEvent_t e : {start, stop, done}) t.Call("cudaEventDestroy", rt.event_destroy(e));
  }
  t.Call("cudaDeviceSynchronize", rt.device_sync());
  // What the device ran, for the CUPTI comparison (cuBLAS and NCCL may run kernels and copies of
  // their own, so the count stops here).
  t.Line("ran selftest_saxpy " + std::to_string(w.ran_saxpy));
  for (const auto& [dir, n] : w.copies_ran) t.Line("ran copy " + dir + " " + std::to_string(n));
  if (counting) {
    const CuptiCounts c = FinishCuptiCount();
    for (const auto& [name, n] : c.kernels)
      t.Info("cupti kernel " + name + " " + std::to_string(n));
    for (const auto& [dir, n] : c.copies) t.Info("cupti copy " + dir + " " + std::to_string(n));
    t.Info("cupti dropped " + std::to_string(c.dropped));
  }

  // GEMM inputs: x and y as 64x64 matrices (whatever the saxpy left there).
  CublasPart(w, dx, dy, dz);
  NcclPart(w, dy);

  if (library != nullptr) t.Call("cudaLibraryUnload", rt.library_unload(library));
  for (float* d : {dx, dy, dz}) t.Call("cudaFree", rt.free(d));
  for (float* h : {hx, hy}) t.Call("cudaFreeHost", rt.free_host(h));
  t.Call("cudaStreamDestroy", rt.stream_destroy(side));
  t.Call("cudaStreamDestroy", rt.stream_destroy(w.stream));
  t.Print(stdout);
  return 0;
}

}  // namespace
}  // namespace perftracker::selftest

int main(int argc, char** argv) { return perftracker::selftest::Main(argc, argv); }
