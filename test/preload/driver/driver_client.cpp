// A cuBLAS-style driver client: reaches the driver the way cuBLAS, NCCL >= 2.22 and Triton do
// (dlopen("libcuda.so.1"), dlsym(h, "cuGetProcAddress_v2"), entry points from it), launches
// kernels, replays a graph, and runs cuBLAS / cuBLASLt GEMMs. It prints every result and
// return code; driver_test.cpp requires the same transcript with and without the driver tier.
// Lines starting with "info" describe the process (which object a pointer lives in) and are
// not part of the transcript.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <map>
#include <string>

#include "core/module_image.h"

namespace {

using GetProcFn = CUresult (*)(const char*, void**, int, cuuint64_t,
                               CUdriverProcAddressQueryResult*);
using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);
using LaunchExFn = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
using CoopFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, unsigned, CUstream, void**);
using GraphFn = CUresult (*)(CUgraphExec, CUstream);

// "name rc" -> how often; printed sorted, so the transcript does not depend on call order.
std::map<std::string, int> g_results;
void Note(const std::string& what, int rc) { ++g_results[what + " rc=" + std::to_string(rc)]; }

const char* ObjectOf(void* p) {
  Dl_info info{};
  return p != nullptr && dladdr(p, &info) != 0 && info.dli_fname ? info.dli_fname : "?";
}

void* Proc(GetProcFn get_proc, const char* name, cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult status{};
  const CUresult rc = get_proc(name, &p, 13000, flags, &status);
  std::printf("cuGetProcAddress_v2 %s flags=%llu rc=%d status=%d found=%d\n", name,
              static_cast<unsigned long long>(flags), rc, status, p != nullptr);
  std::printf("info %s -> %s\n", name, ObjectOf(p));
  return p;
}

void Gemms(cudaStream_t s) {
  cublasHandle_t h = nullptr;
  Note("cublasCreate", cublasCreate(&h));
  Note("cublasSetStream", cublasSetStream(h, s));
  const float one = 1.0f, zero = 0.0f;
  const __half hone = __float2half(1.0f), hzero = __float2half(0.0f);
  for (int i = 0; i < 30; ++i) {
    Note("cublasGemmEx", cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 4096, 4096, 4096, &one,
                                      nullptr, CUDA_R_16BF, 4096, nullptr, CUDA_R_16BF, 4096,
                                      &zero, nullptr, CUDA_R_16BF, 4096, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT));
  }
  // Bad leading dimension: cuBLAS refuses it, nothing runs.
  Note("cublasGemmEx-bad-lda",
       cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 512, 512, 512, &one, nullptr, CUDA_R_16BF, 10,
                    nullptr, CUDA_R_16BF, 512, &zero, nullptr, CUDA_R_16BF, 512,
                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  for (int i = 0; i < 10; ++i) {
    Note("cublasSgemm", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 1000, 1000, 1000, &one, nullptr,
                                    1000, nullptr, 1000, &zero, nullptr, 1000));
  }
  for (int i = 0; i < 5; ++i) {
    Note("cublasGemmStridedBatchedEx",
         cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_T, 128, 4096, 128, &one, nullptr,
                                    CUDA_R_16F, 128, 0, nullptr, CUDA_R_16F, 4096, 0, &zero,
                                    nullptr, CUDA_R_16F, 128, 0, 64, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT));
  }
  for (int i = 0; i < 3; ++i) {
    Note("cublasHgemm", cublasHgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 256, 256, 256, &hone, nullptr,
                                    256, nullptr, 256, &hzero, nullptr, 256));
  }
  for (int i = 0; i < 2; ++i) {
    Note("cublasSgemmStridedBatched",
         cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &one, nullptr, 64, 0,
                                   nullptr, 64, 0, &zero, nullptr, 64, 0, 16));
    Note("cublasHgemmStridedBatched",
         cublasHgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &hone, nullptr, 64,
                                   0, nullptr, 64, 0, &hzero, nullptr, 64, 0, 16));
  }
  Note("cublasDestroy", cublasDestroy(h));
}

void LtMatmuls(cudaStream_t s) {
  cublasLtHandle_t lt = nullptr;
  Note("cublasLtCreate", cublasLtCreate(&lt));
  cublasLtMatmulDesc_t desc = nullptr;
  Note("cublasLtMatmulDescCreate", cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const int32_t trans = CUBLAS_OP_T;
  Note("cublasLtMatmulDescSetAttribute",
       cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans));
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  Note("cublasLtMatrixLayoutCreate", cublasLtMatrixLayoutCreate(&a, CUDA_R_16F, 2048, 1024, 2048));
  Note("cublasLtMatrixLayoutCreate", cublasLtMatrixLayoutCreate(&b, CUDA_R_16F, 2048, 8192, 2048));
  Note("cublasLtMatrixLayoutCreate", cublasLtMatrixLayoutCreate(&d, CUDA_R_16F, 1024, 8192, 1024));
  const float one = 1.0f, zero = 0.0f;
  for (int i = 0; i < 7; ++i) {
    Note("cublasLtMatmul", cublasLtMatmul(lt, desc, &one, nullptr, a, nullptr, b, &zero, nullptr,
                                          d, nullptr, d, nullptr, nullptr, 0, s));
  }
  Note("cublasLtMatmul-null-desc", cublasLtMatmul(lt, nullptr, &one, nullptr, a, nullptr, b,
                                                  &zero, nullptr, d, nullptr, d, nullptr,
                                                  nullptr, 0, s));
  cublasLtMatrixLayoutDestroy(a);
  cublasLtMatrixLayoutDestroy(b);
  cublasLtMatrixLayoutDestroy(d);
  cublasLtMatmulDescDestroy(desc);
  Note("cublasLtDestroy", cublasLtDestroy(lt));
}

}  // namespace

int main() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return 2;
  auto get_proc = reinterpret_cast<GetProcFn>(dlsym(lib, "cuGetProcAddress_v2"));
  std::printf("dlsym cuGetProcAddress_v2 found=%d\n", get_proc != nullptr);
  std::printf("info cuGetProcAddress_v2 -> %s\n", ObjectOf(reinterpret_cast<void*>(get_proc)));
  if (get_proc == nullptr) return 2;
  auto init = reinterpret_cast<CUresult (*)(unsigned)>(Proc(get_proc, "cuInit"));
  auto load = reinterpret_cast<CUresult (*)(CUmodule*, const void*)>(Proc(get_proc, "cuModuleLoadData"));
  auto get_fn = reinterpret_cast<CUresult (*)(CUfunction*, CUmodule, const char*)>(
      Proc(get_proc, "cuModuleGetFunction"));
  auto launch = reinterpret_cast<LaunchFn>(Proc(get_proc, "cuLaunchKernel"));
  auto launch_ptsz = reinterpret_cast<LaunchFn>(
      Proc(get_proc, "cuLaunchKernel", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM));
  auto launch_ex = reinterpret_cast<LaunchExFn>(Proc(get_proc, "cuLaunchKernelEx"));
  auto coop = reinterpret_cast<CoopFn>(Proc(get_proc, "cuLaunchCooperativeKernel"));
  auto graph = reinterpret_cast<GraphFn>(Proc(get_proc, "cuGraphLaunch"));
  void* table_proc = Proc(get_proc, "cuGetExportTable");
  Proc(get_proc, "cuNoSuchFunction");
  // cuGetExportTable is handed out untouched, whichever way it is looked up.
  std::printf("cuGetExportTable same pointer both ways %d\n",
              table_proc == dlsym(lib, "cuGetExportTable"));
  auto self = reinterpret_cast<GetProcFn>(Proc(get_proc, "cuGetProcAddress"));
  std::printf("cuGetProcAddress via itself works %d\n", self != nullptr && Proc(self, "cuInit") != nullptr);

  Note("cuInit", init(0));
  static const simgpu::ModuleKernel kKernels[] = {{"client_kernel_*", false, simgpu::WorkKind::kKernel}};
  static const simgpu::ModuleImage kImage{simgpu::kModuleMagic, kKernels, 1};
  CUmodule module = nullptr;
  Note("cuModuleLoadData", load(&module, &kImage));
  CUfunction f = nullptr, g = nullptr, missing = nullptr;
  Note("cuModuleGetFunction", get_fn(&f, module, "client_kernel_gemm_like"));
  Note("cuModuleGetFunction", get_fn(&g, module, "client_kernel_small"));
  Note("cuModuleGetFunction-missing", get_fn(&missing, module, "other_kernel"));
  cudaStream_t s = nullptr;
  Note("cudaStreamCreate", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUstream cs = reinterpret_cast<CUstream>(s);
  for (int i = 0; i < 100; ++i) Note("cuLaunchKernel", launch(f, 4096, 1, 1, 256, 1, 1, 0, cs, nullptr, nullptr));
  for (int i = 0; i < 20; ++i) Note("cuLaunchKernel_ptsz", launch_ptsz(g, 8, 1, 1, 128, 1, 1, 0, nullptr, nullptr, nullptr));
  CUlaunchConfig config{};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 64;
  config.blockDimY = config.blockDimZ = 1;
  config.hStream = cs;
  for (int i = 0; i < 10; ++i) Note("cuLaunchKernelEx", launch_ex(&config, g, nullptr, nullptr));
  for (int i = 0; i < 5; ++i) Note("cuLaunchCooperativeKernel", coop(g, 2, 1, 1, 32, 1, 1, 0, cs, nullptr));
  Note("cuLaunchKernel-null-function", launch(nullptr, 1, 1, 1, 1, 1, 1, 0, cs, nullptr, nullptr));
  Note("cuLaunchKernel-bad-block", launch(g, 1, 1, 1, 2048, 1, 1, 0, cs, nullptr, nullptr));
  // A graph captured from driver launches, replayed with cuGraphLaunch.
  Note("cudaStreamBeginCapture", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < 2; ++i) Note("cuLaunchKernel-captured", launch(g, 1, 1, 1, 32, 1, 1, 0, cs, nullptr, nullptr));
  cudaGraph_t captured = nullptr;
  Note("cudaStreamEndCapture", cudaStreamEndCapture(s, &captured));
  cudaGraphExec_t exec = nullptr;
  Note("cudaGraphInstantiate", cudaGraphInstantiate(&exec, captured, 0));
  for (int i = 0; i < 3; ++i) Note("cuGraphLaunch", graph(reinterpret_cast<CUgraphExec>(exec), cs));
  Gemms(s);
  LtMatmuls(s);
  Note("cudaDeviceSynchronize", cudaDeviceSynchronize());
  for (const auto& [what, n] : g_results) std::printf("%s x%d\n", what.c_str(), n);
  return 0;
}
