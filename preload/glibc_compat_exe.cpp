// The part of glibc_compat.cpp that only executables need (cmake/Portable.cmake links it into
// perftracker, perftracker-gen and the selftest workload, not into libperftracker.so, which
// defines dlopen and dlsym itself as hooks).
#include <dlfcn.h>
#include <stddef.h>

#include "preload/glibc_forward.h"

PT_FORWARD(dlopen, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(dlsym, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
__asm__(".symver perftracker_old___libc_start_main, __libc_start_main@" PT_V("GLIBC_2.2.5",
                                                                               "GLIBC_2.17"));

extern "C" {

// Our executables' start (crt1, from glibc >= 2.34) asks for __libc_start_main@GLIBC_2.34 and
// passes no init function: that glibc runs the program's constructors itself, an older one only
// calls `init`. The old entry with our own `init` works on both (new ones keep it for programs
// linked before 2.34, and then run `init` instead of the constructors).
extern void (*__init_array_start[])(int, char**, char**) __attribute__((weak, visibility("hidden")));
extern void (*__init_array_end[])(int, char**, char**) __attribute__((weak, visibility("hidden")));
void _init();
using StartMain = int (*)(int, char**, char**);
int perftracker_old___libc_start_main(StartMain main, int argc, char** argv,
                                      void (*init)(int, char**, char**), void (*fini)(),
                                      void (*rtld_fini)(), void* stack_end);
namespace {
void RunConstructors(int argc, char** argv, char** envp) {
  _init();
  const size_t n = static_cast<size_t>(__init_array_end - __init_array_start);
  for (size_t i = 0; i < n; ++i) __init_array_start[i](argc, argv, envp);
}
}  // namespace
[[gnu::visibility("hidden")]] int __libc_start_main(StartMain main, int argc, char** argv,
                                                    void (*init)(int, char**, char**),
                                                    void (*fini)(), void (*rtld_fini)(),
                                                    void* stack_end) {
  return perftracker_old___libc_start_main(main, argc, argv, init ? init : RunConstructors, fini,
                                           rtld_fini, stack_end);
}

}  // extern "C"
