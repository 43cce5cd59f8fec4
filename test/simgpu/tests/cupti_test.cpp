// CUPTI stand-in: activity records describe exactly what the simulated device ran, in the real
// record layouts, and a second subscriber is refused.
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <nccl.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/test_kernels.h"

namespace {

constexpr int64_t kMs = 1000000;

std::vector<std::vector<uint8_t>> g_completed;

void CUPTIAPI Request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 16 * 1024;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI Complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  g_completed.emplace_back(buffer, buffer + valid);
  std::free(buffer);
}

struct Seen {
  std::vector<CUpti_ActivityKernel10> kernels;
  std::vector<CUpti_ActivityMemcpy6> copies;
  std::vector<CUpti_ActivityMemset4> sets;
};

Seen Parse() {
  Seen seen;
  for (auto& buffer : g_completed) {
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer.data(), buffer.size(), &record) == CUPTI_SUCCESS) {
      if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        seen.kernels.push_back(*reinterpret_cast<CUpti_ActivityKernel10*>(record));
      } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        seen.copies.push_back(*reinterpret_cast<CUpti_ActivityMemcpy6*>(record));
      } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
        seen.sets.push_back(*reinterpret_cast<CUpti_ActivityMemset4*>(record));
      }
    }
  }
  g_completed.clear();
  return seen;
}

}  // namespace

TEST_CASE("a second CUPTI subscriber is refused", "[simgpu][cupti]") {
  CUpti_SubscriberHandle first = nullptr, second = nullptr;
  REQUIRE(cuptiSubscribe(&first, nullptr, nullptr) == CUPTI_SUCCESS);
  CHECK(cuptiSubscribe(&second, nullptr, nullptr) ==
        CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  REQUIRE(cuptiUnsubscribe(first) == CUPTI_SUCCESS);
  REQUIRE(cuptiSubscribe(&second, nullptr, nullptr) == CUPTI_SUCCESS);
  REQUIRE(cuptiUnsubscribe(second) == CUPTI_SUCCESS);
}

TEST_CASE("activity records match what the device ran", "[simgpu][cupti]") {
  simgpu_test::RegisterTestKernels();
  REQUIRE(cuptiActivityRegisterCallbacks(Request, Complete) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET) == CUPTI_SUCCESS);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  unsigned long long stream_id = 0;
  REQUIRE(cudaStreamGetId(s, &stream_id) == cudaSuccess);
  void* dev = nullptr;
  std::vector<char> host(1 << 20);
  REQUIRE(cudaMalloc(&dev, host.size()) == cudaSuccess);
  uint64_t before = 0;
  REQUIRE(cuptiGetTimestamp(&before) == CUPTI_SUCCESS);
  simgpu_test::Gate gate(s);
  REQUIRE(cudaLaunchKernel(simgpu_test::GemmKernel(), simgpu_test::GridForNs(4 * kMs + 2000),
                           dim3(256), nullptr, 0, s) == cudaSuccess);
  REQUIRE(cudaLaunchKernel(simgpu_test::ElementwiseKernel(), simgpu_test::GridForNs(2 * kMs + 2000),
                           dim3(256), nullptr, 0, s) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(dev, host.data(), host.size(), cudaMemcpyHostToDevice, s) == cudaSuccess);
  REQUIRE(cudaMemsetAsync(dev, 0, host.size(), s) == cudaSuccess);
  ncclUniqueId id;
  ncclComm_t comm;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  REQUIRE(ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess);
  REQUIRE(ncclAllReduce(dev, dev, 1024, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
  gate.Open();
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  uint64_t after = 0;
  REQUIRE(cuptiGetTimestamp(&after) == CUPTI_SUCCESS);

  Seen seen = Parse();
  REQUIRE(seen.kernels.size() == 3);
  REQUIRE(seen.copies.size() == 1);
  REQUIRE(seen.sets.size() == 1);
  const auto& gemm = seen.kernels[0];
  const auto& elementwise = seen.kernels[1];
  CHECK(std::string(gemm.name) == "gemm_kernel");
  CHECK(std::string(elementwise.name) == "elementwise_kernel");
  CHECK(std::string(seen.kernels[2].name).rfind("ncclDevKernel_AllReduce", 0) == 0);
  CHECK(gemm.end - gemm.start == 4 * kMs + 2000);
  CHECK(elementwise.start == gemm.end);  // stream order, back to back behind the gate
  CHECK(elementwise.end - elementwise.start == 2 * kMs + 2000);
  CHECK(gemm.streamId == stream_id);
  CHECK(gemm.blockX == 256);
  CHECK(gemm.gridX == static_cast<int32_t>(simgpu_test::GridForNs(4 * kMs + 2000).x));
  CHECK(gemm.correlationId < elementwise.correlationId);
  CHECK(gemm.start >= before);
  CHECK(seen.kernels[2].end <= after);
  const auto& copy = seen.copies[0];
  CHECK(copy.copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
  CHECK(copy.bytes == host.size());
  CHECK(copy.start == elementwise.end);
  CHECK(copy.end - copy.start == static_cast<uint64_t>(host.size() / 25.0));
  CHECK(seen.sets[0].start == copy.end);
  CHECK(seen.sets[0].bytes == host.size());

  // Disabled kinds are no longer recorded.
  REQUIRE(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  REQUIRE(cudaLaunchKernel(simgpu_test::GemmKernel(), dim3(1), dim3(32), nullptr, 0, s) ==
          cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  REQUIRE(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  CHECK(Parse().kernels.empty());
  ncclCommDestroy(comm);
  cudaFree(dev);
  cudaStreamDestroy(s);
}
