// Linked to the real libcudart.so.13 and libnccl.so.2 (no GPU, no driver here): calls hooked
// entry points and prints every return code. cuda_hooks_test.cpp runs it with and without
// libperftracker.so preloaded and compares the output: the hooks must be transparent.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdio>

namespace {

// Real libraries without a GPU: print every return code; the test compares the lines.
int Real() {
  int count = -1;
  std::printf("cudaGetDeviceCount %d\n", cudaGetDeviceCount(&count));
  void* p = nullptr;
  std::printf("cudaMalloc %d\n", cudaMalloc(&p, 1024));
  std::printf("cudaFree %d\n", cudaFree(nullptr));
  std::printf("cudaMemcpy %d\n", cudaMemcpy(&count, &count, 4, cudaMemcpyHostToHost));
  std::printf("cudaMemcpyAsync %d\n", cudaMemcpyAsync(&count, &count, 4, cudaMemcpyDefault, 0));
  std::printf("cudaMemsetAsync %d\n", cudaMemsetAsync(nullptr, 0, 4, 0));
  std::printf("cudaLaunchKernel %d\n", cudaLaunchKernel(reinterpret_cast<const void*>(&Real),
                                                        dim3(1), dim3(1), nullptr, 0, 0));
  std::printf("cudaStreamSynchronize %d\n", cudaStreamSynchronize(0));
  std::printf("cudaDeviceSynchronize %d\n", cudaDeviceSynchronize());
  std::printf("cudaGetLastError %d\n", cudaGetLastError());
  int version = 0;
  const ncclResult_t version_rc = ncclGetVersion(&version);
  std::printf("ncclGetVersion %d %d\n", version_rc, version);
  ncclUniqueId id;
  std::printf("ncclGetUniqueId %d\n", ncclGetUniqueId(&id));
  std::printf("ncclAllReduce %d\n",
              ncclAllReduce(nullptr, nullptr, 1, ncclFloat, ncclSum, nullptr, 0));
  std::printf("ncclGroupStart %d\n", ncclGroupStart());
  std::printf("ncclGroupEnd %d\n", ncclGroupEnd());
  std::printf("ncclCommDestroy %d\n", ncclCommDestroy(nullptr));
  return 0;
}

}  // namespace

int main() { return Real(); }
