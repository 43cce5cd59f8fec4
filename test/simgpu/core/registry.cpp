#include "core/registry.h"

#include <sys/mman.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace simgpu {
namespace {

struct Allocation {
  size_t bytes = 0;
  int device = -1;  // -1: pinned host
};

// Leaked on purpose: device threads and atexit handlers of the host program may use them late.
struct Tables {
  std::mutex mu;
  std::unordered_set<std::string> names;
  std::unordered_map<const void*, const char*> kernels;
  std::map<uintptr_t, Allocation> allocations;
  std::unordered_map<int, size_t> device_bytes;
};

Tables& T() {
  static Tables* tables = new Tables;
  return *tables;
}

void* MapBytes(size_t bytes) {
  void* p = mmap(nullptr, bytes ? bytes : 1, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void* Alloc(int device, size_t bytes) {
  void* p = MapBytes(bytes);
  if (!p) return nullptr;
  std::lock_guard<std::mutex> lock(T().mu);
  T().allocations[reinterpret_cast<uintptr_t>(p)] = Allocation{bytes, device};
  if (device >= 0) T().device_bytes[device] += bytes;
  return p;
}

bool Free(void* ptr, bool device) {
  size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(T().mu);
    auto it = T().allocations.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == T().allocations.end() || (it->second.device >= 0) != device) return false;
    bytes = it->second.bytes;
    if (device) T().device_bytes[it->second.device] -= bytes;
    T().allocations.erase(it);
  }
  munmap(ptr, bytes ? bytes : 1);
  return true;
}

}  // namespace

const char* InternName(std::string_view name) {
  std::lock_guard<std::mutex> lock(T().mu);
  return T().names.emplace(name).first->c_str();
}

void RegisterKernel(const void* host_stub, const char* name) {
  const char* interned = InternName(name ? name : "");
  std::lock_guard<std::mutex> lock(T().mu);
  T().kernels[host_stub] = interned;
}

void UnregisterKernel(const void* host_stub) {
  std::lock_guard<std::mutex> lock(T().mu);
  T().kernels.erase(host_stub);
}

const char* KernelName(const void* host_stub) {
  std::lock_guard<std::mutex> lock(T().mu);
  auto it = T().kernels.find(host_stub);
  return it == T().kernels.end() ? nullptr : it->second;
}

void* AllocDeviceMemory(int device, size_t bytes) { return Alloc(device, bytes); }
void* AllocPinnedHostMemory(size_t bytes) { return Alloc(-1, bytes); }
bool FreeDeviceMemory(void* ptr) { return Free(ptr, true); }
bool FreePinnedHostMemory(void* ptr) { return Free(ptr, false); }

MemoryKind ClassifyPointer(const void* ptr, int* device) {
  auto address = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(T().mu);
  auto it = T().allocations.upper_bound(address);
  if (it == T().allocations.begin()) return MemoryKind::kPageable;
  --it;
  if (address >= it->first + std::max<size_t>(it->second.bytes, 1)) return MemoryKind::kPageable;
  if (device) *device = it->second.device;
  return it->second.device >= 0 ? MemoryKind::kDevice : MemoryKind::kPinnedHost;
}

size_t DeviceBytesInUse(int device) {
  std::lock_guard<std::mutex> lock(T().mu);
  return T().device_bytes[device];
}

}  // namespace simgpu
