#include "preload/core/run_session.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

namespace perftracker::preload {
namespace {

struct RunMark {
  pid_t run_pid = 0;
  std::string registry;  // empty: not started by `run`
};

// Read once, in the constructor (the first caller): later callers run on the writer thread,
// where reading the environment would race with the application's setenv.
const RunMark& Mark() {
  static const RunMark mark = [] {
    RunMark m;
    const char* v = std::getenv(kRunVariable);
    if (v == nullptr) return m;
    char* rest = nullptr;
    const long pid = std::strtol(v, &rest, 10);
    if (pid <= 0 || *rest != ':' || rest[1] != '/') return m;
    m.run_pid = static_cast<pid_t>(pid);
    m.registry = rest + 1;
    return m;
  }();
  return mark;
}

std::vector<std::string> CommandLine() {
  std::vector<std::string> args;
  const int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return args;
  std::string all;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) all.append(buf, static_cast<size_t>(n));
  close(fd);
  for (size_t at = 0; at < all.size();) {
    const size_t end = all.find('\0', at);
    args.push_back(all.substr(at, end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return args;
}

std::string_view BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Executables and console scripts that start ranks, and the modules `python -m` runs for them.
constexpr const char* kLauncherNames[] = {"torchrun",  "srun",       "mpirun",
                                          "mpiexec",   "orterun",    "prterun",
                                          "deepspeed", "accelerate", "horovodrun"};
constexpr const char* kLauncherModules[] = {
    "torch.distributed.run",      "torch.distributed.launch",
    "deepspeed.launcher.runner",  "deepspeed",
    "accelerate.commands.launch", "horovod.runner.launch"};

const char* Named(std::string_view name, std::span<const char* const> list) {
  for (const char* n : list) {
    if (name == n) return n;
  }
  return nullptr;
}

// An interpreter's script or module: the first argument that is not an option (-W and -X take
// a value); -c runs code given inline, never a launcher.
const char* PythonLauncher(const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-c") return nullptr;
    if (a == "-m" && i + 1 < args.size()) return Named(args[i + 1], kLauncherModules);
    if (a.starts_with("-m") && a.size() > 2) return Named(a.substr(2), kLauncherModules);
    if (a == "-W" || a == "-X") {
      ++i;
      continue;
    }
    if (a.starts_with("-")) continue;
    return Named(BaseName(a), kLauncherNames);
  }
  return nullptr;
}

}  // namespace

bool IsRunTopProcess() { return Mark().run_pid != 0 && getppid() == Mark().run_pid; }

const char* KnownLauncher() {
  const std::vector<std::string> args = CommandLine();
  if (args.empty()) return nullptr;
  const std::string_view program = BaseName(args[0]);
  if (const char* name = Named(program, kLauncherNames)) return name;
  return program.starts_with("python") ? PythonLauncher(args) : nullptr;
}

void RegisterRun(const char* role, const std::string& detail) {
  if (Mark().registry.empty()) return;
  const std::string name = std::string(role) + "." + std::to_string(getpid());
  const std::string aside = Mark().registry + "/." + name;
  const int fd = open(aside.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;  // `run` is gone or its directory with it: nobody to tell
  const bool whole = write(fd, detail.data(), detail.size()) == ssize_t(detail.size());
  close(fd);
  if (!whole || rename(aside.c_str(), (Mark().registry + "/" + name).c_str()) != 0) {
    unlink(aside.c_str());
  }
}

void UnregisterRun(const char* role) {
  if (Mark().registry.empty()) return;
  unlink((Mark().registry + "/" + role + "." + std::to_string(getpid())).c_str());
}

bool RunHasRanks() {
  if (Mark().registry.empty()) return false;
  DIR* dir = opendir(Mark().registry.c_str());
  if (dir == nullptr) return false;
  bool found = false;
  while (const dirent* e = readdir(dir)) {
    if (std::strncmp(e->d_name, "rank.", 5) == 0) {
      found = true;
      break;
    }
  }
  closedir(dir);
  return found;
}

bool IsRunLoneProcess(int pid) {
  if (Mark().registry.empty()) return false;
  return access((Mark().registry + "/candidate." + std::to_string(pid)).c_str(), F_OK) == 0;
}

}  // namespace perftracker::preload
