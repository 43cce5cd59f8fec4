// Runs under LD_PRELOAD=libsimgpu_test_interposer.so (set by CTest): every API call the program
// makes is seen exactly once, and calls the stand-ins make internally (cudaMemcpy's copy,
// cudaDeviceSynchronize's waits, cudaEventSynchronize, NCCL's stream work) are not seen at all.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <catch2/catch.hpp>
#include <vector>

#include "tests/test_kernels.h"

namespace {

int Count(int which) {
  using CountFn = int (*)(int);
  auto fn = reinterpret_cast<CountFn>(dlsym(RTLD_DEFAULT, "simgpu_interposer_count"));
  return fn ? fn(which) : -1;
}

}  // namespace

TEST_CASE("an LD_PRELOAD interposer sees each call once", "[simgpu][interpose]") {
  REQUIRE(Count(0) == 0);  // the interposer is loaded (and nothing ran yet)
  simgpu_test::RegisterTestKernels();
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  void* dev = nullptr;
  std::vector<char> host(4096);
  REQUIRE(cudaMalloc(&dev, host.size()) == cudaSuccess);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(cudaLaunchKernel(simgpu_test::GemmKernel(), dim3(8), dim3(256), nullptr, 0, s) ==
            cudaSuccess);
  }
  REQUIRE(cudaMemcpy(dev, host.data(), host.size(), cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(host.data(), dev, host.size(), cudaMemcpyDeviceToHost, s) == cudaSuccess);
  cudaEvent_t ev;
  REQUIRE(cudaEventCreate(&ev) == cudaSuccess);
  REQUIRE(cudaEventRecord(ev, s) == cudaSuccess);
  REQUIRE(cudaEventSynchronize(ev) == cudaSuccess);
  ncclUniqueId id;
  ncclComm_t comm;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  REQUIRE(ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess);
  REQUIRE(ncclGroupStart() == ncclSuccess);
  REQUIRE(ncclAllReduce(dev, dev, 16, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(Count(0) == 3);  // cudaLaunchKernel
  CHECK(Count(1) == 1);  // cudaMemcpy
  CHECK(Count(2) == 1);  // cudaMemcpyAsync: cudaMemcpy did not go through it
  CHECK(Count(3) == 1);  // cudaStreamSynchronize: not used by the device-wide sync
  CHECK(Count(4) == 1);  // cudaEventRecord
  CHECK(Count(5) == 1);  // ncclAllReduce
  CHECK(Count(6) == 1);  // ncclGroupEnd
  ncclCommDestroy(comm);
  cudaEventDestroy(ev);
  cudaFree(dev);
  cudaStreamDestroy(s);
}
