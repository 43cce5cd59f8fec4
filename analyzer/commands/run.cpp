// perftracker run [--dir D] -- COMMAND...: runs COMMAND with libperftracker.so preloaded (found
// beside the binary as installed, <prefix>/bin/perftracker -> <prefix>/lib/libperftracker.so),
// waits for it, then says where the ring files are and what to run next, or why there are none
// (run_report.cpp).
//
// COMMAND is a child, not an exec in place: `run` outlives it to report. The child stays in our
// process group, so a terminal's Ctrl-C reaches it directly; SIGINT, SIGTERM and SIGHUP sent to
// `run` alone (kill, a batch scheduler, a supervisor) are passed on, and signals we ignore (nohup)
// stay ignored for it. The exit status is COMMAND's, or 128 + N when signal N ended it.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "analyzer/commands/cli.h"
#include "analyzer/commands/command_line.h"
#include "analyzer/commands/preload_check.h"
#include "analyzer/commands/run_report.h"

extern char** environ;

namespace perftracker::analyzer {
namespace {

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP};
std::atomic<pid_t> g_child{0};
static_assert(std::atomic<pid_t>::is_always_lock_free);

// A terminal's signals (SI_KERNEL) went to the whole foreground group, the child included.
void Forward(int sig, siginfo_t* info, void*) {
  const pid_t child = g_child.load();
  if (child > 0 && info->si_code != SI_KERNEL) kill(child, sig);
}

// The child's environment: ours, with the library preloaded and the run's mark
// (preload/core/run_session.h: "<our pid>:<registry>").
std::vector<std::string> ChildEnvironment(const std::string& library, const std::string& dir,
                                          const std::string& registry) {
  std::string preload = library;
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view var(*e);
    if (var.starts_with("LD_PRELOAD=")) {
      if (var.size() > 11) (preload += ':') += var.substr(11);
    } else if (!var.starts_with("PERFTRACKER_RUN=") &&
               !(var.starts_with("PERFTRACKER_DIR=") && !dir.empty())) {
      env.emplace_back(var);
    }
  }
  env.push_back("LD_PRELOAD=" + preload);
  if (!dir.empty()) env.push_back("PERFTRACKER_DIR=" + dir);
  if (!registry.empty()) {
    env.push_back("PERFTRACKER_RUN=" + std::to_string(getpid()) + ":" + registry);
  }
  return env;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

struct Launch {
  pid_t pid = -1;
  int exec_errno = 0;
};

// Forks and execs; the child reports a failed exec through a close-on-exec pipe. Our forwarding
// handlers are installed first and the signals blocked across fork, so none is lost or handled in
// the child before its exec.
Launch Start(std::vector<std::string> argv, std::vector<std::string> env,
             struct sigaction (&previous)[3]) {
  std::vector<char*> args = Pointers(argv), envp = Pointers(env);
  sigset_t block, old;
  sigemptyset(&block);
  for (const int sig : kForwarded) sigaddset(&block, sig);
  sigprocmask(SIG_BLOCK, &block, &old);
  struct sigaction forward {};
  forward.sa_sigaction = Forward;
  forward.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&forward.sa_mask);
  for (size_t i = 0; i < std::size(kForwarded); ++i) {
    sigaction(kForwarded[i], nullptr, &previous[i]);
    if (previous[i].sa_handler != SIG_IGN) sigaction(kForwarded[i], &forward, nullptr);
  }
  Launch launch;
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    launch.exec_errno = errno;
  } else if ((launch.pid = fork()) == 0) {
    for (size_t i = 0; i < std::size(kForwarded); ++i)
      sigaction(kForwarded[i], &previous[i], nullptr);
    sigprocmask(SIG_SETMASK, &old, nullptr);
    close(report[0]);
    execvpe(args[0], args.data(), envp.data());
    const int e = errno;
    (void)!write(report[1], &e, sizeof e);
    _exit(127);
  } else {
    if (launch.pid < 0) launch.exec_errno = errno;
    g_child.store(launch.pid);
    close(report[1]);
    if (launch.pid > 0) {
      while (read(report[0], &launch.exec_errno, sizeof launch.exec_errno) < 0 && errno == EINTR) {
      }
    }
    close(report[0]);
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  return launch;
}

int WaitFor(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 127;
  }
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

}  // namespace

std::string FindPreloadLibrary() {
  if (const char* explicit_path = std::getenv("PERFTRACKER_LIBRARY")) return explicit_path;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  for (const char* rel : {"../lib/libperftracker.so", "../preload/libperftracker.so"}) {
    const auto candidate = exe.parent_path() / rel;
    if (std::filesystem::exists(candidate, ec)) {
      return std::filesystem::weakly_canonical(candidate, ec).string();
    }
  }
  return {};
}

int RunCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  std::string dir;
  // Everything after the first "--" is COMMAND, untouched: its own options are not ours.
  const auto dashes = std::find(args.begin(), args.end(), std::string("--"));
  const size_t i = static_cast<size_t>(dashes - args.begin());
  CommandLine cl("run",
                 "Run COMMAND (given after --) with libperftracker.so preloaded and wait for it; "
                 "then say where the ring files are. Usage: perftracker run [--dir D] -- "
                 "COMMAND...");
  cl.Option("--dir", &dir, "PERFTRACKER_DIR for COMMAND (default: the library's own)");
  if (const auto code = cl.Parse(args.first(i), out, err)) return *code;
  if (i + 1 >= args.size()) {
    err << "perftracker run: missing -- COMMAND... (see perftracker run --help)\n";
    return kExitUsage;
  }
  const std::string library = FindPreloadLibrary();
  if (library.empty()) {
    err << "perftracker: cannot find libperftracker.so next to this binary "
           "(set PERFTRACKER_LIBRARY)\n";
    return kExitUsage;
  }
  if (const std::string refusal = PreloadRefusal(library); !refusal.empty()) {
    err << "perftracker: the dynamic loader refuses " << library << " (" << refusal
        << "); not starting the command, which would run unrecorded\n";
    return kExitUsage;
  }
  RunRegistry registry;
  const std::vector<std::string> command(args.begin() + static_cast<ptrdiff_t>(i) + 1, args.end());
  struct sigaction previous[3];
  err.flush();
  const Launch launch = Start(command, ChildEnvironment(library, dir, registry.path()), previous);
  const int status = launch.pid > 0 ? WaitFor(launch.pid) : 0;
  g_child.store(0);
  for (size_t s = 0; s < std::size(kForwarded); ++s)
    sigaction(kForwarded[s], &previous[s], nullptr);
  if (launch.exec_errno != 0) {
    err << "perftracker: cannot run " << command[0] << ": " << std::strerror(launch.exec_errno)
        << "\n";
    return kExitUsage;
  }
  registry.Report(command[0], err);
  return status;
}

}  // namespace perftracker::analyzer
