// A process whose kernels the runtime hooks cannot see: its CUDA runtime is linked statically
// (cudart_static: the hooked functions are internal calls) or it drives the GPU through the driver
// API alone. Both load libcuda.so.1 without any libcudart.so; with the driver tier off, nothing of
// their GPU work is recorded. The writer asks about once a second and the user gets one warning
// naming PERFTRACKER_DRIVER=1, which records their launches at the driver (preload/driver/).
#pragma once

namespace perftracker::preload {

// The writer thread, about once a second (walks the loaded objects: the loader's lock).
void CheckCudaRuntimeVisible();

}  // namespace perftracker::preload
