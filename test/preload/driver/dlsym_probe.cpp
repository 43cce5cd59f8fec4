// Prints what glibc's dlsym answers for lookups whose result depends on the caller: RTLD_NEXT
// from the executable and from a library, RTLD_DEFAULT from the executable and from a library
// loaded RTLD_LOCAL. driver_test.cpp runs it without libperftracker.so, with it (tier off) and
// with the driver tier on, and requires the same lines every time.
#include <dlfcn.h>

#include <cstdio>

extern "C" {
int probe_target() { return 1; }  // exported (ENABLE_EXPORTS): first in the search order
int probe_a_next();
}

namespace {

int Call(void* p) { return p != nullptr ? reinterpret_cast<int (*)()>(p)() : -1; }

}  // namespace

int main(int argc, char** argv) {
  std::printf("exe RTLD_DEFAULT probe_target %d\n", Call(dlsym(RTLD_DEFAULT, "probe_target")));
  std::printf("exe RTLD_NEXT probe_target %d\n", Call(dlsym(RTLD_NEXT, "probe_target")));
  std::printf("lib RTLD_NEXT probe_target %d\n", probe_a_next());
  void* local = dlopen(argc > 1 ? argv[1] : "libdriver_probe_local.so", RTLD_NOW | RTLD_LOCAL);
  std::printf("local loaded %d\n", local != nullptr);
  if (local != nullptr) {
    std::printf("local RTLD_DEFAULT probe_local_only %d\n",
                Call(dlsym(local, "probe_local_default")));
    std::printf("exe RTLD_DEFAULT probe_local_only %s\n",
                dlsym(RTLD_DEFAULT, "probe_local_only") != nullptr ? "found" : "missing");
  }
  std::printf("missing symbol %s\n", dlsym(RTLD_DEFAULT, "no_such_symbol_xyz") ? "found" : "null");
  std::printf("dlerror set %d\n", dlerror() != nullptr);
  return 0;
}
