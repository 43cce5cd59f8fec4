// Prototypes of the fat-binary registration entry points that nvcc-generated host code calls.
// They live in the nvcc-internal crt/host_runtime.h, which a host compiler cannot include, so
// they are restated here with the exact same signatures.
#ifndef SIMGPU_CUDART_REGISTRATION_H_
#define SIMGPU_CUDART_REGISTRATION_H_

#include <cuda_runtime_api.h>

extern "C" {
void** __cudaRegisterFatBinary(void* fat_cubin);
void __cudaRegisterFatBinaryEnd(void** fat_cubin_handle);
void __cudaUnregisterFatBinary(void** fat_cubin_handle);
void __cudaRegisterFunction(void** fat_cubin_handle, const char* host_fun, char* device_fun,
                            const char* device_name, int thread_limit, uint3* tid, uint3* bid,
                            dim3* block_dim, dim3* grid_dim, int* warp_size);
unsigned __cudaPushCallConfiguration(dim3 grid_dim, dim3 block_dim, size_t shared_mem,
                                     struct CUstream_st* stream);
cudaError_t __cudaPopCallConfiguration(dim3* grid_dim, dim3* block_dim, size_t* shared_mem,
                                       void* stream);
}

#endif  // SIMGPU_CUDART_REGISTRATION_H_
