// A C++ "trainer" without Python: nothing marks its iterations, so perftracker must find them
// from the period of its collective sequence (preload/core/iteration_period.h). Run by
// period_test.cpp on simgpu, one process per rank (RANK, WORLD_SIZE).
//   collective_loop ITERS IDFILE [equal]
// Start-up broadcasts its parameters (the warm-up prefix), then each iteration runs a forward
// pass (gemm kernels), a backward pass that all-reduces three gradient buckets between
// elementwise kernels, and a synchronizing optimizer step. `equal`: every bucket the same size,
// so only launch gaps tell where an iteration ends.
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "nccl_id_file.h"
#include "tests/test_kernels.h"

namespace {

bool Ok(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return true;
  std::fprintf(stderr, "collective_loop: %s failed: %d\n", what, static_cast<int>(rc));
  return false;
}
bool Ok(ncclResult_t rc, const char* what) {
  if (rc == ncclSuccess) return true;
  std::fprintf(stderr, "collective_loop: %s failed: %d\n", what, static_cast<int>(rc));
  return false;
}
#define TRY(call) \
  if (!Ok((call), #call)) return 3

void Kernel(const void* kernel, int64_t ns, cudaStream_t s) {
  cudaLaunchKernel(kernel, simgpu_test::GridForNs(ns), dim3(simgpu_test::kThreads), nullptr, 0, s);
}

int Train(int iters, const std::string& id_path, bool equal) {
  const int rank = std::atoi(std::getenv("RANK"));
  const int n = std::atoi(std::getenv("WORLD_SIZE"));
  simgpu_test::RegisterTestKernels();
  const ncclUniqueId id = ExchangeNcclId(rank, id_path);
  ncclComm_t comm;
  TRY(ncclCommInitRank(&comm, n, id, rank));
  cudaStream_t s;
  TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* buf = nullptr;
  TRY(cudaMalloc(&buf, 16 << 20));
  TRY(ncclBroadcast(buf, buf, 8 << 20, ncclInt8, 0, comm, s));
  TRY(ncclBroadcast(buf, buf, 1 << 10, ncclInt8, 0, comm, s));
  TRY(cudaStreamSynchronize(s));
  const size_t buckets[3] = {equal ? 1u << 20 : 2u << 20, 1u << 20, equal ? 1u << 20 : 256u << 10};
  for (int i = 0; i < iters; ++i) {
    for (int k = 0; k < 6; ++k) Kernel(simgpu_test::GemmKernel(), 2'002'000, s);
    for (size_t bytes : buckets) {
      Kernel(simgpu_test::ElementwiseKernel(), 202'000, s);
      TRY(ncclAllReduce(buf, buf, bytes / 4, ncclFloat32, ncclSum, comm, s));
    }
    TRY(cudaStreamSynchronize(s));
  }
  TRY(ncclCommDestroy(comm));
  std::printf("collective_loop: rank %d done\n", rank);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: collective_loop ITERS IDFILE [equal]\n");
    return 2;
  }
  return Train(std::atoi(argv[1]), argv[2], argc > 3 && std::strcmp(argv[3], "equal") == 0);
}
