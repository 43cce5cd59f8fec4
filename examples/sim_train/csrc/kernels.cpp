#include "kernels.h"

#include <cublas_v2.h>

#include <algorithm>
#include <cstring>

// The fat-binary registration entry points that nvcc-generated host code calls (declared in the
// nvcc-internal crt/host_runtime.h, which a host compiler cannot include).
extern "C" {
void** __cudaRegisterFatBinary(void* fat_cubin);
void __cudaRegisterFatBinaryEnd(void** handle);
void __cudaRegisterFunction(void** handle, const char* host_fun, char* device_fun,
                            const char* device_name, int thread_limit, uint3* tid, uint3* bid,
                            dim3* block_dim, dim3* grid_dim, int* warp_size);
}

namespace simtorch {
namespace {

// One H100-class SM slot (a 256-thread block) sustains ~1/1056 of the device: ~0.38 TFLOP/s of
// bf16 tensor math or ~1.9 GB/s of HBM traffic; the simulator charges 4 us per wave of blocks.
constexpr double kFlopsPerBlock = 1.5e6;
constexpr double kBytesPerBlock = 7.6e3;
constexpr unsigned kThreads = 256;

struct KernelInfo {
  const char* short_name;
  const char* device_name;  // what cudaFuncGetName / CUPTI report, like torch's kernels
};

constexpr KernelInfo kKernels[] = {
    {"gemm", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas"},
    {"flash_fwd", "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, bf16>>"},
    {"flash_bwd", "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128>>"},
    {"layer_norm", "at::native::vectorized_layer_norm_kernel<c10::BFloat16, float>"},
    {"gelu", "at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>"},
    {"add", "at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<c10::BFloat16>>"},
    {"embedding", "at::native::indexSelectLargeIndex<c10::BFloat16, long>"},
    {"softmax_xent", "at::native::cunn_SoftMaxForward<8, c10::BFloat16, float>"},
    {"adamw", "at::native::multi_tensor_apply_kernel<FusedAdamWMathFunctor<float>>"},
    {"fill", "at::native::vectorized_elementwise_kernel<4, FillFunctor<c10::BFloat16>>"},
};
static_assert(sizeof(kKernels) / sizeof(kKernels[0]) == static_cast<int>(Kernel::kCount));

// Host stubs: one distinct function per kernel (distinct bodies: no identical-code folding).
volatile int g_sink;
template <int N>
void Stub() {
  g_sink = N;
}

constexpr void (*kStubs[])() = {Stub<0>, Stub<1>, Stub<2>, Stub<3>, Stub<4>,
                                Stub<5>, Stub<6>, Stub<7>, Stub<8>, Stub<9>};

char g_fatbin[64];

const void* StubOf(Kernel k) { return reinterpret_cast<const void*>(kStubs[static_cast<int>(k)]); }

unsigned Blocks(double work, double per_block) {
  return static_cast<unsigned>(std::clamp(work / per_block, 1.0, 2.0e9));
}

cudaError_t Launch(Kernel k, unsigned blocks, cudaStream_t stream) {
  return cudaLaunchKernel(StubOf(k), dim3(blocks), dim3(kThreads), nullptr, 0, stream);
}

}  // namespace

void RegisterKernels() {
  static bool done = [] {
    void** handle = __cudaRegisterFatBinary(g_fatbin);
    for (int i = 0; i < static_cast<int>(Kernel::kCount); ++i) {
      __cudaRegisterFunction(handle, reinterpret_cast<const char*>(kStubs[i]), nullptr,
                             kKernels[i].device_name, -1, nullptr, nullptr, nullptr, nullptr,
                             nullptr);
    }
    __cudaRegisterFatBinaryEnd(handle);
    return true;
  }();
  (void)done;
}

bool KernelByName(const char* name, Kernel* out) {
  for (int i = 0; i < static_cast<int>(Kernel::kCount); ++i) {
    if (std::strcmp(kKernels[i].short_name, name) == 0) {
      *out = static_cast<Kernel>(i);
      return true;
    }
  }
  return false;
}

// Through cuBLAS, as torch's matmuls are: bf16 in and out, f32 accumulation, weights
// transposed (y = x W^T). cuBLAS launches its kernel through the driver, not the runtime.
cudaError_t LaunchGemm(int64_t m, int64_t n, int64_t k, cudaStream_t stream) {
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    return cublasCreate(&h) == CUBLAS_STATUS_SUCCESS ? h : nullptr;
  }();
  if (handle == nullptr) return cudaErrorInitializationError;
  if (cublasSetStream(handle, stream) != CUBLAS_STATUS_SUCCESS) return cudaErrorUnknown;
  const float alpha = 1.0f;
  const float beta = 0.0f;
  const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
  // Buffers are not simulated: only the shape and the data types decide the kernel's time.
  const cublasStatus_t rc =
      cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, mi, ni, ki, &alpha, nullptr, CUDA_R_16BF,
                   ki, nullptr, CUDA_R_16BF, ki, &beta, nullptr, CUDA_R_16BF, mi,
                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return rc == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorLaunchFailure;
}

cudaError_t LaunchAttention(int64_t batch, int64_t heads, int64_t seq, int64_t head_dim,
                            bool backward, cudaStream_t stream) {
  // Causal attention: QK^T and PV, half of the square; backward does ~2.5x the forward.
  double flops = 2.0 * 2.0 * batch * heads * static_cast<double>(seq) * seq * head_dim / 2;
  if (backward) flops *= 2.5;
  return Launch(backward ? Kernel::kFlashBwd : Kernel::kFlashFwd, Blocks(flops, kFlopsPerBlock),
                stream);
}

cudaError_t LaunchMemoryBound(Kernel kernel, int64_t bytes, cudaStream_t stream) {
  return Launch(kernel, Blocks(static_cast<double>(bytes), kBytesPerBlock), stream);
}

}  // namespace simtorch
