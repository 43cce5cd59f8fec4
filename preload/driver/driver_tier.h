// The driver tier (opt-in, PERFTRACKER_DRIVER=1): kernel launches that never pass through the
// dynamically linked CUDA runtime -- NCCL >= 2.22, cuBLAS/cuDNN with their static runtimes,
// Triton -- reach the driver through pointers from dlsym(libcuda, ...) and cuGetProcAddress.
//
// driver/dlsym.cpp interposes dlsym. Its entry is a few instructions of assembly that tail-jump
// to glibc's dlsym, so glibc still sees the caller's return address (RTLD_NEXT and RTLD_DEFAULT
// resolve relative to the caller's object, research/interception.md §2). With the tier off --
// the default, and in every passive process -- that tail jump is all it does. With it on, a
// lookup of a handful of driver names (cuGetProcAddress[_v2], the launch entry points) returns
// our wrapper, which forwards to the real definition; everything else, RTLD_NEXT lookups and
// cuGetExportTable included, is untouched.
//
// driver/driver.cpp owns the wrappers: cuGetProcAddress[_v2] hands out wrapped launch entry
// points; a wrapped launch records the API call and its kernel (named once per CUfunction with
// cuFuncGetName) and samples device time with the runtime tier's pooled timing events.
//
// Anything unexpected (unknown driver version, a missing symbol, a second real definition for
// the same entry point) turns the tier off with one warning: wrappers already handed out keep
// forwarding, new lookups are not wrapped.
#pragma once

#include <atomic>

namespace perftracker::preload::driver {

// Hot: one relaxed load.
bool Enabled();
// Turns the tier off for good, with one warning naming `why` (first caller only).
void Disable(const char* why);

// glibc's dlsym as called from libperftracker.so (RTLD_NEXT = the object after ours).
void* RealDlsym(void* handle, const char* name);

// The result a dlsym caller gets for `name`, whose real definition is `real` (non-null): our
// wrapper when `name` is a driver entry point we wrap and the tier is on, else `real`.
void* WrapDriverSymbol(const char* name, void* real);
// True for the names WrapDriverSymbol may wrap (cheap: called on every dlsym with the tier on).
bool IsDriverSymbol(const char* name);

// Starts the interposition: dlsym starts looking at names (the constructor, tier on only).
void EnableDlsymInterposition();

}  // namespace perftracker::preload::driver
