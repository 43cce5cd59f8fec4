// Loads two framework libraries, each with its own NCCL copy, RTLD_LOCAL (the way Python loads
// extension modules), and runs 101 and 57 all-reduces through them. Prints
//   failed <n> a <received by a's copy> b <received by b's copy>
#include <dlfcn.h>

#include <cstdio>

int main() {
  void* a = dlopen("libpt_framework_a.so", RTLD_NOW | RTLD_LOCAL);
  void* b = dlopen("libpt_framework_b.so", RTLD_NOW | RTLD_LOCAL);
  if (a == nullptr || b == nullptr) {
    std::fprintf(stderr, "framework_main: %s\n", dlerror());
    return 2;
  }
  auto run_a = reinterpret_cast<int (*)(int)>(dlsym(a, "framework_a_allreduce"));
  auto run_b = reinterpret_cast<int (*)(int)>(dlsym(b, "framework_b_allreduce"));
  auto got_a = reinterpret_cast<long (*)()>(dlsym(a, "framework_a_received"));
  auto got_b = reinterpret_cast<long (*)()>(dlsym(b, "framework_b_received"));
  if (!run_a || !run_b || !got_a || !got_b) return 2;
  const int failed = run_a(101) + run_b(57);
  std::printf("failed %d a %ld b %ld\n", failed, got_a(), got_b());
  return 0;
}
