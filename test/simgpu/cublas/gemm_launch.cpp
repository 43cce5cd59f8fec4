#include "cublas/gemm_launch.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <string>

#include "core/driver_loader.h"
#include "core/module_image.h"

namespace simgpu::blas {
namespace {

// One 256-thread block does this much work per simulated wave: ~0.38 TFLOP/s of bf16 tensor
// math per block slot (an H100-class device holds 1056), less for wider types.
double FlopsPerBlock(cublasComputeType_t compute, cudaDataType a_type) {
  if (a_type == CUDA_R_8F_E4M3 || a_type == CUDA_R_8F_E5M2) return 3.0e6;
  switch (compute) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
      return 1.5e6;
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      return 0.75e6;
    case CUBLAS_COMPUTE_64F:
      return 0.2e6;
    default:  // 32F: tensor cores when the inputs are half precision
      return (a_type == CUDA_R_16F || a_type == CUDA_R_16BF) ? 1.5e6 : 0.15e6;
  }
}

const char* TypeName(cudaDataType t) {
  switch (t) {
    case CUDA_R_16F: return "f16";
    case CUDA_R_16BF: return "bf16";
    case CUDA_R_32F: return "f32";
    case CUDA_R_64F: return "f64";
    case CUDA_R_8I: return "i8";
    case CUDA_R_32I: return "i32";
    case CUDA_R_8F_E4M3: return "e4m3";
    case CUDA_R_8F_E5M2: return "e5m2";
    default: return "x";
  }
}

const char* ComputeName(cublasComputeType_t c) {
  switch (c) {
    case CUBLAS_COMPUTE_16F: return "f16";
    case CUBLAS_COMPUTE_32F_FAST_TF32: return "tf32";
    case CUBLAS_COMPUTE_64F: return "f64";
    case CUBLAS_COMPUTE_32I: return "i32";
    default: return "f32";
  }
}

// e.g. sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas. cuBLAS's heuristics
// pick a kernel by the problem's shape; here a wide output (n at least twice m: an MLP's up
// projection, a weight gradient) gets a wider tile, so one kernel can be slowed on its own
// (SIMGPU_KERNEL_SLOWDOWN=tilesize128x256=F), the GEMMs of other shapes as they were.
std::string KernelName(const Gemm& g) {
  std::string name = "sm90_xmma_gemm_";
  name += TypeName(g.a_type);
  name += TypeName(g.b_type);
  name += '_';
  name += TypeName(g.c_type);
  name += ComputeName(g.compute);
  name += "_f32_";
  name += g.op_a == CUBLAS_OP_N ? 'n' : 't';
  name += g.op_b == CUBLAS_OP_N ? 'n' : 't';
  name += g.n >= 2 * g.m ? "_n_tilesize128x256x64_cublas" : "_n_tilesize128x128x64_cublas";
  return name;
}

constexpr ModuleKernel kKernels[] = {{"sm90_xmma_gemm_*", false, WorkKind::kKernel}};
constexpr ModuleImage kImage{kModuleMagic, kKernels, 1};

struct Loaded {
  DriverApi api;
  CUmodule module = nullptr;
  std::mutex mu;
  std::map<std::string, CUfunction> functions;
};

Loaded* Load() {
  static Loaded* loaded = [] {
    auto* l = new Loaded;
    l->api = LoadDriverApi("cuBLAS", CUDA_VERSION);
    if (l->api.ok && l->api.module_load_data(&l->module, &kImage) != CUDA_SUCCESS) {
      l->api.ok = false;
    }
    return l;
  }();
  return loaded->api.ok ? loaded : nullptr;
}

CUfunction FunctionFor(Loaded* l, const Gemm& g) {
  const std::string name = KernelName(g);
  std::lock_guard<std::mutex> lock(l->mu);
  auto it = l->functions.find(name);
  if (it != l->functions.end()) return it->second;
  CUfunction f = nullptr;
  if (l->api.module_get_function(&f, l->module, name.c_str()) != CUDA_SUCCESS) return nullptr;
  l->functions.emplace(name, f);
  return f;
}

}  // namespace

bool ValidDims(const Gemm& g, int64_t lda, int64_t ldb, int64_t ldc) {
  if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 0) return false;
  const int64_t rows_a = g.op_a == CUBLAS_OP_N ? g.m : g.k;
  const int64_t rows_b = g.op_b == CUBLAS_OP_N ? g.k : g.n;
  return lda >= std::max<int64_t>(1, rows_a) && ldb >= std::max<int64_t>(1, rows_b) &&
         ldc >= std::max<int64_t>(1, g.m);
}

cublasStatus_t LaunchGemm(const Gemm& g, cudaStream_t stream) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return CUBLAS_STATUS_SUCCESS;
  Loaded* l = Load();
  if (l == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  CUfunction f = FunctionFor(l, g);
  if (f == nullptr) return CUBLAS_STATUS_NOT_SUPPORTED;
  const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) *
                       static_cast<double>(std::max<int64_t>(g.k, 1)) *
                       static_cast<double>(g.batch);
  const auto blocks =
      static_cast<unsigned>(std::clamp(flops / FlopsPerBlock(g.compute, g.a_type), 1.0, 2.0e9));
  const CUresult rc = l->api.launch_kernel(f, blocks, 1, 1, 256, 1, 1, 0,
                                           reinterpret_cast<CUstream>(stream), nullptr, nullptr);
  return rc == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

}  // namespace simgpu::blas
