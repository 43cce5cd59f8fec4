// Process-wide tables the stand-in libraries share: kernel host stubs -> names, and the
// simulated memory allocations (so copies can infer their direction, as with cudaMemcpyDefault).
// Both are guarded by a mutex: registration is rare and lookups happen once per API call.
#ifndef SIMGPU_CORE_REGISTRY_H_
#define SIMGPU_CORE_REGISTRY_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace simgpu {

// Returns a copy of `name` that lives until exit (the same pointer for equal names).
const char* InternName(std::string_view name);

void RegisterKernel(const void* host_stub, const char* name);
void UnregisterKernel(const void* host_stub);
// The registered name of a host stub, or null.
const char* KernelName(const void* host_stub);

enum class MemoryKind : uint8_t { kPageable, kPinnedHost, kDevice };

// Device memory is host memory (mmap'ed without reserve, so a large caching allocator costs
// nothing until touched); kernels never touch it, copies really move the bytes.
void* AllocDeviceMemory(int device, size_t bytes);
void* AllocPinnedHostMemory(size_t bytes);
// False when `ptr` is not the start of a live allocation of that kind.
bool FreeDeviceMemory(void* ptr);
bool FreePinnedHostMemory(void* ptr);

// Kind of the allocation containing `ptr` (kPageable when not ours) and its device.
MemoryKind ClassifyPointer(const void* ptr, int* device);
size_t DeviceBytesInUse(int device);

}  // namespace simgpu

#endif  // SIMGPU_CORE_REGISTRY_H_
