// Library management (CUDA 12+): cudaLibraryLoadData, cudaLibraryGetKernel, cudaLibraryUnload.
// The path a program built without nvcc takes (perftracker's selftest workload): load PTX text
// at run time, then launch its kernels with cudaLaunchKernel((const void*)kernel, ...), which
// the real runtime accepts wherever a host stub goes (cudaFuncGetName too).
//
// The simulated device cannot run PTX. A library holds the `.entry` names found in the text;
// each kernel handle is registered like an nvcc host stub, so cudaLaunchKernel and
// cudaFuncGetName treat it as the real runtime does, and the cost model times it. Entry names
// with a simulated body (kBodies) also do their work: the launch copies the arguments (as CUDA
// copies kernel parameters at launch) and the body runs on the device when the kernel does, so
// results read back match a real GPU's.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/registry.h"
#include "cudart/runtime_internal.h"
#include "cudart/runtime_state.h"

namespace simgpu::cudart {
namespace {

// y[i] = a * x[i] + y[i] for i < n, one element per thread; fma as PTX's fma.rn.f32.
std::function<void()> SaxpyBody(void** args, uint64_t threads) {
  uint32_t n;
  float a;
  float* x;
  float* y;
  std::memcpy(&n, args[0], sizeof n);
  std::memcpy(&a, args[1], sizeof a);
  std::memcpy(&x, args[2], sizeof x);
  std::memcpy(&y, args[3], sizeof y);
  const uint64_t count = std::min<uint64_t>(n, threads);
  return [count, a, x, y] {
    for (uint64_t i = 0; i < count; ++i) y[i] = std::fma(a, x[i], y[i]);
  };
}

struct Body {
  const char* entry;
  size_t params;
  std::function<void()> (*bind)(void** args, uint64_t threads);
};
constexpr Body kBodies[] = {
    {"selftest_saxpy", 4, SaxpyBody},  // analyzer/selftest/saxpy_ptx.h
};

struct Kernel {
  const char* name;  // interned
  const Body* body;  // null: timed only
};

struct Library {
  std::vector<Kernel*> kernels;
};

std::mutex g_mu;
// Live kernel handles, for the launch path (a host stub of nvcc code is not in here).
std::unordered_map<const void*, const Kernel*> g_kernels;

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || c == '.';
}

// The `.entry NAME` names of PTX text, in order.
std::vector<std::string> EntryNames(const char* ptx) {
  std::vector<std::string> names;
  for (const char* p = std::strstr(ptx, ".entry"); p != nullptr; p = std::strstr(p, ".entry")) {
    p += 6;
    if (*p != ' ' && *p != '\t' && *p != '\n') continue;
    while (*p == ' ' || *p == '\t' || *p == '\n') ++p;
    const char* start = p;
    while (IsNameChar(*p)) ++p;
    if (p > start) names.emplace_back(start, p);
  }
  return names;
}

const Body* FindBody(const std::string& name) {
  for (const Body& b : kBodies) {
    if (name == b.entry) return &b;
  }
  return nullptr;
}

}  // namespace

std::function<void()> BindKernelBody(const void* func, void** args, dim3 grid, dim3 block) {
  const Kernel* kernel = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_kernels.find(func);
    if (it != g_kernels.end()) kernel = it->second;
  }
  if (kernel == nullptr || kernel->body == nullptr || args == nullptr) return {};
  for (size_t i = 0; i < kernel->body->params; ++i) {
    if (args[i] == nullptr) return {};  // a real GPU would fault; we leave memory alone
  }
  const uint64_t threads = uint64_t{grid.x} * grid.y * grid.z * block.x * block.y * block.z;
  return kernel->body->bind(args, threads);
}

}  // namespace simgpu::cudart

namespace sc = simgpu::cudart;

extern "C" {

cudaError_t cudaLibraryLoadData(cudaLibrary_t* library, const void* code, cudaJitOption*, void**,
                                unsigned, cudaLibraryOption*, void**, unsigned) {
  if (library == nullptr || code == nullptr) return sc::Fail(cudaErrorInvalidValue);
  // Only PTX text: cubins and fatbins hold machine code the simulator has no use for.
  const auto* text = static_cast<const char*>(code);
  const std::vector<std::string> names = sc::EntryNames(text);
  if (names.empty()) return sc::Fail(cudaErrorInvalidPtx);
  auto* lib = new sc::Library;
  std::lock_guard<std::mutex> lock(sc::g_mu);
  for (const std::string& name : names) {
    auto* kernel = new sc::Kernel{simgpu::InternName(name), sc::FindBody(name)};
    simgpu::RegisterKernel(kernel, kernel->name);
    sc::g_kernels.emplace(kernel, kernel);
    lib->kernels.push_back(kernel);
  }
  *library = reinterpret_cast<cudaLibrary_t>(lib);
  return cudaSuccess;
}

cudaError_t cudaLibraryGetKernel(cudaKernel_t* kernel, cudaLibrary_t library, const char* name) {
  if (kernel == nullptr || name == nullptr) return sc::Fail(cudaErrorInvalidValue);
  if (library == nullptr) return sc::Fail(cudaErrorInvalidResourceHandle);
  auto* lib = reinterpret_cast<sc::Library*>(library);
  for (sc::Kernel* k : lib->kernels) {
    if (std::strcmp(k->name, name) == 0) {
      *kernel = reinterpret_cast<cudaKernel_t>(k);
      return cudaSuccess;
    }
  }
  return sc::Fail(cudaErrorSymbolNotFound);
}

cudaError_t cudaLibraryUnload(cudaLibrary_t library) {
  if (library == nullptr) return sc::Fail(cudaErrorInvalidResourceHandle);
  auto* lib = reinterpret_cast<sc::Library*>(library);
  {
    // Work already queued keeps what it needs (the interned name, the bound arguments).
    std::lock_guard<std::mutex> lock(sc::g_mu);
    for (sc::Kernel* k : lib->kernels) {
      simgpu::UnregisterKernel(k);
      sc::g_kernels.erase(k);
      delete k;
    }
  }
  delete lib;
  return cudaSuccess;
}

}  // extern "C"
