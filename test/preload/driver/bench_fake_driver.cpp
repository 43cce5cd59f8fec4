// A driver whose launch returns at once, for driver_bench: what remains of a launch's time is
// the cost of whatever sits between the caller and the driver.
#include <cuda.h>

#include <cstring>

extern "C" {

CUresult cuDriverGetVersion(int* version) {
  *version = 13000;
  return CUDA_SUCCESS;
}

CUresult cuFuncGetName(const char** name, CUfunction) {
  *name = "bench_kernel";
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, CUstream, void**, void**) {
  return CUDA_SUCCESS;
}

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int, cuuint64_t,
                             CUdriverProcAddressQueryResult* status) {
  *pfn = nullptr;
  if (std::strcmp(symbol, "cuLaunchKernel") == 0) *pfn = reinterpret_cast<void*>(&cuLaunchKernel);
  if (std::strcmp(symbol, "cuDriverGetVersion") == 0) {
    *pfn = reinterpret_cast<void*>(&cuDriverGetVersion);
  }
  if (status != nullptr) *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

}  // extern "C"
