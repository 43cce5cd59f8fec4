#include "analyzer/commands/preload_check.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <vector>

extern char** environ;

namespace perftracker::analyzer {
namespace {

constexpr int kCannotAsk = 126;  // no probe could start: the job will tell

// The loader's message about the library: the first line of the probe's stderr that names it,
// LD_PRELOAD or a library that could not be loaded; without one, the first line (exit != 0).
std::string LoaderLine(std::string_view text, const std::string& library, bool any) {
  std::string first;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    if (line.find(library) != std::string_view::npos ||
        line.find("LD_PRELOAD") != std::string_view::npos ||
        line.find("loading shared libraries") != std::string_view::npos) {
      return std::string(line);
    }
    if (first.empty()) first = line;
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return any ? first : std::string();
}

}  // namespace

std::string PreloadRefusal(const std::string& library) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view var(*e);
    if (!var.starts_with("LD_PRELOAD=") && !var.starts_with("PERFTRACKER_")) env.emplace_back(var);
  }
  env.push_back("LD_PRELOAD=" + library);
  env.push_back("PERFTRACKER_ENABLE=0");
  std::vector<char*> envp;
  for (std::string& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  char name[] = "perftracker", version[] = "--version", sh[] = "sh", c[] = "-c", noop[] = ":";
  char* argv[] = {name, version, nullptr};  // where there is no /bin/sh (a bare chroot)
  // Any program shows whether the loader takes the library; the shell does nothing else, while
  // this process's own image may be another program than the CLI (the analyzer's tests run
  // `run` in-process, and their binary has no --version).
  char* sh_argv[] = {sh, c, noop, nullptr};

  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return {};  // cannot ask: let the job tell
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDOUT_FILENO);
    dup2(out[1], STDERR_FILENO);
    execve("/bin/sh", sh_argv, envp.data());
    execve("/proc/self/exe", argv, envp.data());
    _exit(kCannotAsk);
  }
  close(out[1]);
  std::string err;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(out[0], buf, sizeof buf);
    if (n > 0 && err.size() < 65536) err.append(buf, static_cast<size_t>(n));
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  close(out[0]);
  if (pid < 0) return {};
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return {};
  }
  // The loader says why on stderr, and goes on without the library (exit 0) or stops the
  // program (127: a library it needs is missing).
  if (WIFEXITED(status) && WEXITSTATUS(status) == kCannotAsk && err.empty()) return {};
  const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::string reason = LoaderLine(err, library, !clean);
  if (clean || !reason.empty()) return reason;
  return "the dynamic loader stopped a test program (status " + std::to_string(status) + ")";
}

}  // namespace perftracker::analyzer
