// Added cost of one hooked cudaLaunchKernel over the un-hooked call (target: <= 25 ns,
// research/interception.md §7), and of one hooked collective (target: <= 5 us). Runs itself
// under LD_PRELOAD=libperftracker.so (re-executing if needed) against bench_stub_cudart and
// bench_stub_nccl, whose calls return at once:
//   BM_LaunchDirect     the stub called through its own address (no hook)
//   BM_LaunchHooked     the exported cudaLaunchKernel: our hook, then the stub
//   BM_AllReduceDirect  ncclAllReduce of the stub, through its own address
//   BM_AllReduceHooked  the exported ncclAllReduce: sequence number, communicator, event pair
//   BM_Rdtsc            one read of the time-stamp counter (x86-64): the launch hook's target
//                       (issue 32) is LaunchHooked - LaunchDirect <= this, on the same machine
// The difference is the hook's cost. PERFTRACKER_SAMPLE_EVERY picks the device sampling rate
// (the re-exec sets 0 unless given: timing events are a separate, sampled cost);
// PERFTRACKER_HOST_SAMPLE_EVERY the host timing rate (1: every call timed, the slow path;
// 1000000: the untimed path alone; default 8: the mix a job pays).
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace {

using LaunchFn = cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t);

void Kernel() {}

void BM_LaunchDirect(benchmark::State& state) {
  // The stub's own definition, whatever LD_PRELOAD puts in front of it.
  void* stub = dlopen(PT_BENCH_STUB, RTLD_NOW | RTLD_NOLOAD);
  auto direct = reinterpret_cast<LaunchFn>(dlsym(stub, "cudaLaunchKernel"));
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        direct(reinterpret_cast<const void*>(&Kernel), dim3(1), dim3(1), nullptr, 0, nullptr));
  }
}
BENCHMARK(BM_LaunchDirect);

#if defined(__x86_64__)
void BM_Rdtsc(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(__rdtsc());
}
BENCHMARK(BM_Rdtsc);
#endif

// Hooked calls in bursts of `burst` that fit the thread's event buffer, with a pause (not timed)
// in which the writer drains it: a full buffer would measure the cheaper drop path, and a writer
// draining 20 million events a second on the other hyperthread slows the calling thread in a way
// a real job (at most a few hundred thousand launches a second) never sees.
template <typename Call>
void InBursts(benchmark::State& state, int64_t burst, Call call) {
  int64_t in_burst = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(call());
    if (++in_burst == burst) {
      state.PauseTiming();
      usleep(6000);
      state.ResumeTiming();
      in_burst = 0;
    }
  }
}

void BM_LaunchHooked(benchmark::State& state) {
  InBursts(state, 8192, [] {
    return cudaLaunchKernel(reinterpret_cast<const void*>(&Kernel), dim3(1), dim3(1), nullptr, 0,
                            nullptr);
  });
}
BENCHMARK(BM_LaunchHooked);

using AllReduceFn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                     ncclComm_t, cudaStream_t);

// One communicator for both: created through the hooked init, as a job creates it.
ncclComm_t Comm() {
  static ncclComm_t comm = [] {
    ncclUniqueId id;
    ncclGetUniqueId(&id);
    ncclComm_t c = nullptr;
    ncclCommInitRank(&c, 1, id, 0);
    return c;
  }();
  return comm;
}

float g_buffer[256];

void BM_AllReduceDirect(benchmark::State& state) {
  void* stub = dlopen(PT_BENCH_NCCL_STUB, RTLD_NOW | RTLD_NOLOAD);
  auto direct = reinterpret_cast<AllReduceFn>(dlsym(stub, "ncclAllReduce"));
  ncclComm_t comm = Comm();
  for (auto _ : state) {
    benchmark::DoNotOptimize(direct(g_buffer, g_buffer, 256, ncclFloat32, ncclSum, comm, nullptr));
  }
}
BENCHMARK(BM_AllReduceDirect);

// Half the launches' bursts: each collective is two events.
void BM_AllReduceHooked(benchmark::State& state) {
  ncclComm_t comm = Comm();
  InBursts(state, 4096, [comm] {
    return ncclAllReduce(g_buffer, g_buffer, 256, ncclFloat32, ncclSum, comm, nullptr);
  });
}
BENCHMARK(BM_AllReduceHooked);

}  // namespace

int main(int argc, char** argv) {
  const char* preload = std::getenv("LD_PRELOAD");
  if (preload == nullptr || std::strstr(preload, "libperftracker") == nullptr) {
    setenv("LD_PRELOAD", PT_LIBRARY, 1);
    setenv("RANK", "0", 0);
    setenv("PERFTRACKER_SAMPLE_EVERY", "0", 0);
    setenv("PERFTRACKER_DRAIN_MS", "2", 0);
    if (std::getenv("PERFTRACKER_DIR") == nullptr) {
      static char dir[] = "/tmp/perftracker-bench-XXXXXX";
      setenv("PERFTRACKER_DIR", mkdtemp(dir), 1);
    }
    execv("/proc/self/exe", argv);
    return 127;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
