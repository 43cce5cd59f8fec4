// A rank's life cycle around the hooks, on simgpu, the way a Python job meets CUDA: the program
// itself does not link libcudart; it dlopens an extension (dlopen_ext.cpp, RTLD_LOCAL, DT_NEEDED
// on libcudart.so.13), so the runtime arrives after libperftracker.so started. Modes (run by
// lifecycle_test.cpp):
//   lifecycle_workload EXT launch N      N launches
//   lifecycle_workload EXT fork N        N launches, fork a child (a DataLoader worker) that
//                                        makes 2N allocations (hooked calls that need no device
//                                        thread: a forked child has no GPU context) and leaves
//                                        through exit(), atexit and all; then N more launches
//   lifecycle_workload EXT sigterm N F   N launches, create file F, then wait for SIGTERM
// Exit 0 when every CUDA call succeeded (the child's too).
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using LaunchN = int (*)(int);

int Fork(LaunchN launch, LaunchN alloc, int n) {
  if (launch(n) != 0) return 3;
  const pid_t child = fork();
  if (child < 0) return 4;
  if (child == 0) exit(alloc(2 * n) == 0 ? 0 : 5);
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return 6;
  }
  return launch(n) == 0 ? 0 : 7;
}

int Sigterm(LaunchN launch, int n, const char* ready_file) {
  if (launch(n) != 0) return 3;
  const int fd = open(ready_file, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return 4;
  close(fd);
  for (;;) pause();  // SIGTERM's default action ends us, after the library's flush
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: lifecycle_workload EXT launch|fork N | EXT sigterm N FILE\n");
    return 2;
  }
  void* ext = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (ext == nullptr) {
    std::fprintf(stderr, "lifecycle_workload: %s\n", dlerror());
    return 2;
  }
  const auto launch = reinterpret_cast<LaunchN>(dlsym(ext, "pt_ext_launch"));
  const auto alloc = reinterpret_cast<LaunchN>(dlsym(ext, "pt_ext_alloc"));
  if (launch == nullptr || alloc == nullptr) return 2;
  const std::string mode = argv[2];
  const int n = std::atoi(argv[3]);
  if (mode == "launch") return launch(n) == 0 ? 0 : 3;
  if (mode == "fork") return Fork(launch, alloc, n);
  if (mode == "sigterm" && argc > 4) return Sigterm(launch, n, argv[4]);
  return 2;
}
