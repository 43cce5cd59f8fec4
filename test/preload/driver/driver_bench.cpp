// Cost of the driver tier, measured against a driver that does nothing (bench_fake_driver.cpp):
//   - ns added per driver-level launch (cuLaunchKernel from cuGetProcAddress_v2, as NCCL and
//     cuBLAS call it), with PERFTRACKER_SAMPLE_EVERY=0 (no timing events: the steady state
//     between samples);
//   - ns per dlsym call (tier off: the tail-jump entry; tier on: the name check), the first
//     wrapped lookup (driver version check), and process start-up (exec to exit).
// `driver_bench` runs itself as a child in four set-ups and prints one table.
#include <cuda.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using GetProcFn = CUresult (*)(const char*, void**, int, cuuint64_t,
                               CUdriverProcAddressQueryResult*);
using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);

double NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// Best of `rounds` runs of `n` calls: the least disturbed by the other processes of the machine.
// A pause between rounds lets the writer thread drain the per-thread buffer (65536 events by
// default), so the steady state is measured rather than the drop path of a full buffer.
template <typename F>
double NsPerCall(int n, int rounds, F f) {
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    usleep(30000);
    const double t0 = NowNs();
    for (int i = 0; i < n; ++i) f(i);
    best = std::min(best, (NowNs() - t0) / n);
  }
  return best;
}

int Child() {
  void* lib = dlopen(FAKE_DRIVER, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return 2;
  volatile uintptr_t sink = 0;
  const double dlsym_ns = NsPerCall(20000, 10, [&](int) {
    sink = sink + reinterpret_cast<uintptr_t>(dlsym(lib, "cuDriverGetVersion"));
  });
  const double dlsym_driver_ns = NsPerCall(20000, 10, [&](int) {
    sink = sink + reinterpret_cast<uintptr_t>(dlsym(lib, "cuGetProcAddress_v2"));
  });
  auto get_proc = reinterpret_cast<GetProcFn>(dlsym(lib, "cuGetProcAddress_v2"));
  void* p = nullptr;
  CUdriverProcAddressQueryResult status{};
  const double t0 = NowNs();
  get_proc("cuLaunchKernel", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  const double first_lookup_ns = NowNs() - t0;
  auto launch = reinterpret_cast<LaunchFn>(p);
  auto f = reinterpret_cast<CUfunction>(0x1000);
  const double launch_ns = NsPerCall(20000, 40, [&](int) {
    sink = sink + launch(f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr);
  });
  // The recorder's clock (CLOCK_MONOTONIC); a launch reads it twice. Its cost is the machine's.
  const double clock_ns = NsPerCall(20000, 10, [&](int) {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    sink = sink + static_cast<uintptr_t>(ts.tv_nsec);
  });
  std::printf("%.1f %.1f %.1f %.0f %.1f\n", launch_ns, dlsym_ns, dlsym_driver_ns, first_lookup_ns,
              clock_ns);
  return 0;
}

std::string RunChild(const char* self, const std::vector<std::string>& env, double* exec_ns) {
  int fds[2];
  if (pipe(fds) != 0) return "";
  const double t0 = NowNs();
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    for (const std::string& kv : env) putenv(const_cast<char*>(kv.c_str()));
    execl(self, self, "child", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  char buf[256] = {};
  const ssize_t n = read(fds[0], buf, sizeof buf - 1);
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  *exec_ns = NowNs() - t0;
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// Start-up alone: a child that exits at once ("noop"), best of 20.
double StartupNs(const char* self, const std::vector<std::string>& env) {
  double best = 1e30;
  for (int i = 0; i < 20; ++i) {
    const double t0 = NowNs();
    const pid_t pid = fork();
    if (pid == 0) {
      for (const std::string& kv : env) putenv(const_cast<char*>(kv.c_str()));
      execl(self, self, "noop", static_cast<char*>(nullptr));
      _exit(127);
    }
    waitpid(pid, nullptr, 0);
    best = std::min(best, NowNs() - t0);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "noop") == 0) return 0;
  if (argc > 1 && std::strcmp(argv[1], "child") == 0) return Child();
  const std::string dir = "PERFTRACKER_DIR=" + std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/perftracker-driver-bench";
  const std::vector<std::string> preload = {std::string("LD_PRELOAD=") + PERFTRACKER_LIB, "RANK=0",
                                            dir, "PERFTRACKER_JOB_ID=bench",
                                            "PERFTRACKER_SAMPLE_EVERY=0"};
  struct Setup {
    const char* name;
    std::vector<std::string> env;
  };
  std::vector<std::string> off = preload, on = preload, passive = preload;
  off.push_back("PERFTRACKER_DRIVER=0");
  on.push_back("PERFTRACKER_DRIVER=1");
  passive.push_back("PERFTRACKER_DRIVER=1");
  passive.erase(passive.begin() + 1);
  const Setup setups[] = {{"no preload", {}},
                          {"preload, tier off", off},
                          {"preload, tier on", on},
                          {"preload, tier on, passive process", passive}};
  std::printf("%-34s %10s %10s %12s %14s %12s %9s\n", "set-up", "launch ns", "dlsym ns",
              "dlsym cu* ns", "1st lookup ns", "start-up us", "clock ns");
  for (const Setup& s : setups) {
    double exec_ns = 0;
    const std::string line = RunChild(argv[0], s.env, &exec_ns);
    double launch = 0, dl = 0, dl_cu = 0, first = 0, clock = 0;
    std::sscanf(line.c_str(), "%lf %lf %lf %lf %lf", &launch, &dl, &dl_cu, &first, &clock);
    std::printf("%-34s %10.1f %10.1f %12.1f %14.0f %12.0f %9.1f\n", s.name, launch, dl, dl_cu,
                first, StartupNs(argv[0], s.env) / 1000, clock);
  }
  return 0;
}
