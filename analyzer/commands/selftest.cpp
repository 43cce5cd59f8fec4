// perftracker selftest [--lib PATH] [--workload PATH] [--launches N] [--keep]: runs
// perftracker-selftest-workload (installed beside this binary) plain, with CUPTI counting, and
// under libperftracker.so in three configurations, and checks that the library changed nothing
// the program sees and recorded exactly what it did (selftest/checks.h). Exit 0 all checks
// passed, 1 a mismatch, 2 no workload, no library or no usable GPU stack.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <vector>

#include "analyzer/commands/cli.h"
#include "analyzer/commands/command_line.h"
#include "analyzer/selftest/checks.h"

extern char** environ;

namespace perftracker::analyzer {
namespace {

namespace fs = std::filesystem;
using selftest::RunResult;

constexpr int kWorkloadNoRuntime = 3;  // workload.cpp
constexpr int kTimeoutS = 300;         // a first CUDA context on a big node can take a while
constexpr long kWarnNsPerCall = 2000;

// The caller's environment without the library's variables and preloads (each run sets its own),
// plus `set`. PERFTRACKER_SELFTEST_* are the workload's and pass.
std::vector<std::string> ChildEnv(const std::vector<std::string>& set) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    if ((kv.starts_with("PERFTRACKER_") && !kv.starts_with("PERFTRACKER_SELFTEST_")) ||
        kv.starts_with("LD_PRELOAD=")) {
      continue;
    }
    env.push_back(kv);
  }
  env.insert(env.end(), set.begin(), set.end());
  return env;
}

// Runs the workload with `env`, stdout captured, stderr into `err_path`.
RunResult RunWorkload(const std::string& label, const std::vector<std::string>& argv,
                      const std::vector<std::string>& env, const std::string& err_path) {
  RunResult r{label, "", false, "", "", err_path};
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    r.status = "pipe failed";
    return r;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0640);
    dup2(out[1], 1);
    if (err >= 0) dup2(err, 2);
    std::vector<char*> a, e;
    for (const std::string& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    for (const std::string& s : env) e.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    e.push_back(nullptr);
    execve(a[0], a.data(), e.data());
    _exit(127);
  }
  close(out[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kTimeoutS);
  bool timed_out = false;
  char buf[65536];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{out[0], POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, int(left.count())) == 0) {
      timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    const ssize_t got = read(out[0], buf, sizeof buf);
    if (got > 0) {
      r.out.append(buf, size_t(got));
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    r.status = "timeout";
  } else if (WIFEXITED(status)) {
    r.ok = WEXITSTATUS(status) == 0;
    r.status = r.ok ? "0" : "exit " + std::to_string(WEXITSTATUS(status));
  } else {
    r.status = "signal " + std::to_string(WTERMSIG(status));
  }
  return r;
}

}  // namespace

int SelftestCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  std::string library, workload;
  size_t launch_count = 20000;
  bool keep = false;
  CommandLine cl("selftest", "Check the library against this node's CUDA stack.");
  cl.Option("--lib", &library, "libperftracker.so to check (default: the one beside this binary)");
  cl.Option("--workload", &workload,
            "the workload to run (default: perftracker-selftest-workload beside this binary)");
  cl.Option("--launches", &launch_count, "kernel launches timed for the cost per launch");
  cl.Positive("--launches");
  cl.Flag("--keep", &keep, "keep the runs' directory for a look after");
  if (const auto code = cl.Parse(args, out, err)) return *code;
  const std::string launches = std::to_string(launch_count);
  std::error_code ec;
  if (library.empty()) library = FindPreloadLibrary();
  if (library.empty() || !fs::exists(library, ec)) {
    err << "perftracker: selftest: cannot find libperftracker.so "
        << (library.empty() ? "next to this binary" : library) << " (use --lib PATH)\n";
    return kExitUsage;
  }
  library = fs::absolute(library, ec).string();
  if (workload.empty()) {
    workload =
        (fs::read_symlink("/proc/self/exe", ec).parent_path() / "perftracker-selftest-workload")
            .string();
  }
  if (access(workload.c_str(), X_OK) != 0) {
    err << "perftracker: selftest: cannot run " << workload << " (installed beside perftracker)\n";
    return kExitUsage;
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/perftracker-selftest-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    err << "perftracker: selftest: cannot create " << dir << ": " << std::strerror(errno) << "\n";
    return kExitUsage;
  }

  std::string preload = library;
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  const std::vector<std::string> plain_env =
      ChildEnv({std::getenv("LD_PRELOAD") ? std::string("LD_PRELOAD=") + std::getenv("LD_PRELOAD")
                                          : "LD_PRELOAD="});
  auto under_library = [&](const std::string& name, const std::vector<std::string>& extra) {
    std::vector<std::string> set = {"LD_PRELOAD=" + preload,
                                    "RANK=0",
                                    "LOCAL_RANK=0",
                                    "WORLD_SIZE=1",
                                    "LOCAL_WORLD_SIZE=1",
                                    "PERFTRACKER_DIR=" + dir + "/" + name,
                                    "PERFTRACKER_JOB_ID=selftest",
                                    "PERFTRACKER_SAMPLE_EVERY=1"};
    set.insert(set.end(), extra.begin(), extra.end());
    return ChildEnv(set);
  };
  struct Config {
    std::string label;
    std::vector<std::string> env;
  };
  const std::vector<Config> configs = {
      {"library", under_library("library", {})},
      {"library+cupti", under_library("library+cupti", {"PERFTRACKER_CUPTI=1"})},
      {"library+driver", under_library("library+driver", {"PERFTRACKER_DRIVER=1"})},
  };
  const std::vector<std::string> argv = {workload, "--launches", launches};
  auto run = [&](const std::string& label, const std::vector<std::string>& a,
                 const std::vector<std::string>& env) {
    const auto start = std::chrono::steady_clock::now();
    RunResult r = RunWorkload(label, a, env, dir + "/" + label + ".stderr");
    // A plain run that failed gets the one line below, not this one.
    if (r.ok || label != "plain") {
      err << "selftest: " << label << " run: " << r.status << " ("
          << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
          << " s)\n";
    }
    return r;
  };

  std::vector<RunResult> runs = {run("plain", argv, plain_env)};
  const selftest::ParsedTranscript plain = selftest::ParseTranscript(runs[0].out);
  if (!plain.fatal.empty() || !runs[0].ok) {
    if (!plain.fatal.empty()) {
      err << "perftracker: selftest: " << plain.fatal << "\n";
    } else {
      err << "perftracker: selftest: the workload failed without the library (" << runs[0].status
          << "), see " << runs[0].err_path << "\n";
    }
    if (!keep && runs[0].status == "exit " + std::to_string(kWorkloadNoRuntime))
      fs::remove_all(dir, ec);
    return kExitUsage;
  }
  std::vector<std::string> cupti_argv = argv;
  cupti_argv.push_back("--cupti");
  const RunResult cupti = run("plain+cupti-count", cupti_argv, plain_env);
  for (const Config& c : configs) {
    runs.push_back(run(c.label, argv, c.env));
    runs.back().ring_dir = dir + "/" + c.label;
  }
  const selftest::Report report = selftest::Check(runs, &cupti, kWarnNsPerCall);
  out << "perftracker selftest: " << library << "\n";
  selftest::PrintReport(report, out);
  if (keep || report.failed) {
    out << "runs kept in " << dir << "\n";
  } else {
    fs::remove_all(dir, ec);
  }
  return report.failed ? kExitRegression : kExitOk;
}

}  // namespace perftracker::analyzer
