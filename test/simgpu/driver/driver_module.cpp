// Initialization, versions, errors, modules and functions of the driver API. A module is a
// simgpu ModuleImage (core/module_image.h); its functions are created on first lookup and stay
// valid for the life of the process, as handles a poller or a cache may still hold.
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/device.h"
#include "core/registry.h"
#include "driver/driver_state.h"

namespace simgpu::driver {
namespace {

const ModuleKernel* FindKernel(const ModuleImage& image, std::string_view name) {
  for (uint32_t i = 0; i < image.count; ++i) {
    std::string_view pattern = image.kernels[i].name;
    if (!pattern.empty() && pattern.back() == '*') {
      pattern.remove_suffix(1);
      if (name.substr(0, pattern.size()) == pattern) return &image.kernels[i];
    } else if (pattern == name) {
      return &image.kernels[i];
    }
  }
  return nullptr;
}

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};
constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};

}  // namespace
}  // namespace simgpu::driver

namespace sd = simgpu::driver;

extern "C" {

CUresult cuInit(unsigned flags) { return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }

CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // SIMGPU_DRIVER_VERSION: pretend to be another driver (tests of version checks).
  static const int reported = [] {
    const char* env = std::getenv("SIMGPU_DRIVER_VERSION");
    return env != nullptr && std::atoi(env) > 0 ? std::atoi(env) : sd::kDriverVersion;
  }();
  *version = reported;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = simgpu::Device::Count();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (device == nullptr || ordinal < 0 || ordinal >= simgpu::Device::Count()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char** name) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& e : sd::kErrors) {
    if (e.code == error) {
      *name = e.name;
      return CUDA_SUCCESS;
    }
  }
  *name = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char** text) {
  if (text == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& e : sd::kErrors) {
    if (e.code == error) {
      *text = e.text;
      return CUDA_SUCCESS;
    }
  }
  *text = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto* img = static_cast<const simgpu::ModuleImage*>(image);
  if (img->magic != simgpu::kModuleMagic) return CUDA_ERROR_INVALID_IMAGE;
  auto* mod = new CUmod_st;
  mod->image = img;
  *module = mod;
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule module) {
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  // The module object stays: its functions may still be queued on a stream.
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  if (function == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(module->mu);
  auto it = module->functions.find(std::string_view(name));
  if (it == module->functions.end()) {
    const simgpu::ModuleKernel* kernel = sd::FindKernel(*module->image, name);
    if (kernel == nullptr) return CUDA_ERROR_NOT_FOUND;
    auto* f = new CUfunc_st{simgpu::InternName(name), kernel->program, kernel->kind};
    it = module->functions.emplace(name, f).first;
  }
  *function = it->second;
  return CUDA_SUCCESS;
}

CUresult cuFuncGetName(const char** name, CUfunction function) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (function == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *name = function->name;
  return CUDA_SUCCESS;
}

// Private tables of the real driver (used by the runtime and NVIDIA's libraries); none exist
// here. Exported so that a caller can see an interposer hand it through untouched.
CUresult cuGetExportTable(const void** table, const CUuuid* id) {
  if (table == nullptr || id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *table = nullptr;
  return CUDA_ERROR_NOT_FOUND;
}

}  // extern "C"
