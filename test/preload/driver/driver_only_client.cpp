// A program whose CUDA runtime the hooks cannot see: it drives the GPU through libcuda.so.1 alone,
// as one linked with cudart_static does (its runtime calls stay inside the executable). Launches
// 100 kernels, stays alive `argv[1]` milliseconds (the writer's checks run meanwhile), prints how
// many launches succeeded. With `argv[2]` FILE and `argv[3]` TEXT (its own stderr and a warning
// expected there) it leaves as soon as TEXT is in FILE: the writer's check runs on its own
// schedule, which a loaded machine delays.
#include <cuda.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "core/module_image.h"

int main(int argc, char** argv) {
  const long run_ms = argc > 1 ? std::atol(argv[1]) : 300;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return 2;
  auto init = reinterpret_cast<CUresult (*)(unsigned)>(dlsym(lib, "cuInit"));
  auto load = reinterpret_cast<CUresult (*)(CUmodule*, const void*)>(dlsym(lib, "cuModuleLoadData"));
  auto get_fn = reinterpret_cast<CUresult (*)(CUfunction*, CUmodule, const char*)>(
      dlsym(lib, "cuModuleGetFunction"));
  auto launch = reinterpret_cast<CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                              unsigned, unsigned, unsigned, CUstream, void**,
                                              void**)>(dlsym(lib, "cuLaunchKernel"));
  if (!init || !load || !get_fn || !launch || init(0) != CUDA_SUCCESS) return 3;
  static const simgpu::ModuleKernel kKernels[] = {{"static_*", false, simgpu::WorkKind::kKernel}};
  static const simgpu::ModuleImage kImage{simgpu::kModuleMagic, kKernels, 1};
  CUmodule module = nullptr;
  CUfunction f = nullptr;
  if (load(&module, &kImage) != CUDA_SUCCESS || get_fn(&f, module, "static_kernel") != CUDA_SUCCESS) {
    return 4;
  }
  long ok = 0;
  for (int i = 0; i < 100; ++i) {
    ok += launch(f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr) == CUDA_SUCCESS;
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(run_ms);
  const auto said = [&] {
    if (argc < 4 || argv[3][0] == '\0') return false;
    std::ifstream is(argv[2]);
    const std::string text((std::istreambuf_iterator<char>(is)), std::istreambuf_iterator<char>());
    return text.find(argv[3]) != std::string::npos;
  };
  while (std::chrono::steady_clock::now() < until && !said()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::printf("launched %ld\n", ok);
  return 0;
}
