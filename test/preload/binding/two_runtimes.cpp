// Two CUDA runtimes in one process: a client of libcudart.so.12 and one of libcudart.so.13,
// dlopened (RTLD_LOCAL as Python loads extensions, or RTLD_GLOBAL with argv[1] "global"), launch
// 1000 and 700 kernels. Prints how many launches each runtime received and how many succeeded:
//   rt12 <n> rt13 <n> ok <n>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

namespace {

void* Open(const char* name, int mode) {
  void* h = dlopen(name, RTLD_NOW | mode);
  if (h == nullptr) std::fprintf(stderr, "two_runtimes: %s\n", dlerror());
  return h;
}

template <typename Fn>
Fn Find(void* handle, const char* name) {
  return handle != nullptr ? reinterpret_cast<Fn>(dlsym(handle, name)) : nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const int mode = argc > 1 && std::strcmp(argv[1], "global") == 0 ? RTLD_GLOBAL : RTLD_LOCAL;
  void* c12 = Open("libpt_client12.so", mode);
  void* c13 = Open("libpt_client13.so", mode);
  auto launch12 = Find<int (*)(int)>(c12, "client12_launch");
  auto launch13 = Find<int (*)(int)>(c13, "client13_launch");
  if (launch12 == nullptr || launch13 == nullptr) return 2;
  int ok = 0;
  for (int round = 0; round < 100; ++round) {  // interleaved, as two libraries would call
    ok += launch12(10);
    ok += launch13(7);
  }
  auto count12 = Find<long (*)()>(Open("libcudart.so.12", RTLD_NOLOAD), "standin_launches");
  auto count13 = Find<long (*)()>(Open("libcudart.so.13", RTLD_NOLOAD), "standin_launches");
  if (count12 == nullptr || count13 == nullptr) return 2;
  std::printf("rt12 %ld rt13 %ld ok %d\n", count12(), count13(), ok);
  return 0;
}
