// A rank's life cycle with libperftracker.so preloaded (lifecycle_workload.cpp on simgpu): the
// CUDA runtime loaded by dlopen after start-up, a forked worker, SIGTERM from torchrun, a full
// disk and an unwritable directory. What is recorded is exact; what goes wrong costs the job
// nothing but one warning line.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "test/preload/cuda/ring_summary.h"

using namespace perftracker::test;  // NOLINT

namespace {

Env RankEnv(const std::string& dir) {
  return {{"LD_PRELOAD", PT_LIBRARY},
          {"LD_LIBRARY_PATH", PT_SIMGPU_LIB},
          {"PERFTRACKER_DIR", dir},
          {"PERFTRACKER_JOB_ID", "lifecycle"},
          {"SIMGPU_TIME_SCALE", "0.05"},
          {"RANK", "0"},
          {"WORLD_SIZE", "1"}};
}

// For a wrapper (unshare, sh) that execs the rank at the end of `script`: only the rank may be
// preloaded, or the wrapper would record (and warn) as rank 0 too.
std::vector<std::string> Wrapped(std::vector<std::string> wrapper, const std::string& script,
                                 const std::vector<std::string>& rank_argv) {
  wrapper.push_back(script + "; exec env LD_PRELOAD=\"$PT_PRELOAD\" RANK=0 \"$@\" 2>&1");
  wrapper.push_back("sh");
  wrapper.insert(wrapper.end(), rank_argv.begin(), rank_argv.end());
  return wrapper;
}

Env WrapperEnv(const std::string& dir) {
  Env env = RankEnv(dir);
  env.push_back({"PT_PRELOAD", PT_LIBRARY});
  env.push_back({"LD_PRELOAD", "\x01"});
  env.push_back({"RANK", "\x01"});
  return env;
}

int RingFiles(const std::string& dir) {
  int n = 0;
  for (const std::string& f : FilesUnder(dir)) n += f.ends_with(".ptr");
  return n;
}

// Lines of `text` that start with "perftracker:" (our warnings), and all of its lines.
std::pair<int, int> WarningLines(const std::string& text) {
  std::istringstream in(text);
  int ours = 0, all = 0;
  for (std::string line; std::getline(in, line); ++all) ours += line.starts_with("perftracker:");
  return {ours, all};
}

}  // namespace

TEST_CASE("a runtime loaded by dlopen after start-up is recorded exactly", "[preload][life]") {
  const std::string dir = MakeTempDir();
  REQUIRE(Run({PT_LIFECYCLE, PT_DLOPEN_EXT, "launch", "50"}, RankEnv(dir)) == 0);
  const RankSummary s = ReadRank(dir, 0);
  REQUIRE(s.found);
  CHECK(s.top.at("cudaLaunchKernel").count == 50);
  CHECK(s.kernels.at("elementwise_kernel").count == 50);
  CHECK(s.top.at("cudaDeviceSynchronize").count == 1);
}

TEST_CASE("a forked worker stays passive and the parent's ring file stays whole",
          "[preload][life]") {
  const std::string dir = MakeTempDir();
  REQUIRE(Run({PT_LIFECYCLE, PT_DLOPEN_EXT, "fork", "40"}, RankEnv(dir)) == 0);
  const RankSummary s = ReadRank(dir, 0);
  REQUIRE(s.found);
  // The parent's 40 + 40 launches; none of the child's 80 allocations, though it ran the same
  // hooks and its atexit flush with the parent's ring file open.
  CHECK(s.top.at("cudaLaunchKernel").count == 80);
  CHECK(s.top.at("cudaDeviceSynchronize").count == 2);
  CHECK(s.top.count("cudaMalloc") == 0);
  CHECK(s.top.count("cudaFree") == 0);
  CHECK(s.records_skipped == 0);
  CHECK(RingFiles(dir) == 1);
  REQUIRE(s.live);
  CHECK(s.live->exit_state == perftracker::format::ExitState::kNormalExit);
}

TEST_CASE("SIGTERM flushes what was recorded, then ends the process as SIGTERM does",
          "[preload][life]") {
  const std::string dir = MakeTempDir();
  const std::string ready = dir + "/ready";
  const int pid = Spawn({PT_LIFECYCLE, PT_DLOPEN_EXT, "sigterm", "30", ready}, RankEnv(dir));
  REQUIRE(pid > 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(ready) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(std::filesystem::exists(ready));
  REQUIRE(kill(pid, SIGTERM) == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  // Windows close every 10 iterations or 20 s, so these were still in the thread's buffer and
  // the aggregator: only the flush can have written them.
  const RankSummary s = ReadRank(dir, 0);
  REQUIRE(s.found);
  CHECK(s.top.at("cudaLaunchKernel").count == 30);
  REQUIRE(s.live);
  CHECK(s.live->exit_state == perftracker::format::ExitState::kSigterm);
}

TEST_CASE("a full disk costs one warning and nothing else", "[preload][life]") {
  // A 1 MiB tmpfs in a mount namespace of its own, for a 4 MiB ring file.
  const std::string dir = MakeTempDir();
  const auto argv = Wrapped({"/usr/bin/unshare", "-m", "/bin/sh", "-c"},
                            "mount -t tmpfs -o size=1m perftracker-full '" + dir + "' || exit 97",
                            {PT_LIFECYCLE, PT_DLOPEN_EXT, "launch", "20"});
  Env env = WrapperEnv(dir);
  env.push_back({"PERFTRACKER_RING_MB", "4"});
  std::string out;
  const int rc = Run(argv, env, 120, &out);
  if (rc == 97) {  // no mount namespaces for us here (not root): nothing to judge
    WARN("cannot mount a small tmpfs here; full-disk case not exercised");
    return;
  }
  INFO(out);
  CHECK(rc == 0);
  const auto [ours, all] = WarningLines(out);
  CHECK(ours == 1);
  CHECK(all == 1);
  CHECK(out.find("not recording") != std::string::npos);
}

TEST_CASE("an output directory that cannot be created costs one warning", "[preload][life]") {
  // A regular file where a directory has to be: mkdir fails even for root.
  const std::string dir = MakeTempDir();
  const std::string file = dir + "/not-a-directory";
  std::ofstream(file) << "x";
  const Env env = WrapperEnv(file + "/out");
  const auto argv =
      Wrapped({"/bin/sh", "-c"}, "true", {PT_LIFECYCLE, PT_DLOPEN_EXT, "launch", "20"});
  std::string out;
  REQUIRE(Run(argv, env, 120, &out) == 0);
  INFO(out);
  const auto [ours, all] = WarningLines(out);
  CHECK(ours == 1);
  CHECK(all == 1);
}

namespace {

// exit_workload (the do-nothing runtime) as rank 0 with every launch timed, so the device-timer
// thread runs; stdout and stderr in *out, the run's wall time in *seconds.
int RunExitWorkload(const char* program, const std::vector<std::string>& args, Env extra,
                    std::string* out, double* seconds) {
  const std::string dir = MakeTempDir();
  Env env = WrapperEnv(dir);
  env.push_back({"PERFTRACKER_SAMPLE_EVERY", "1"});
  // The exit paths alone: these tests count warnings, and the stand-in runtimes have no NVML
  // beside them (hardware signals warn once about that: test/preload/hw).
  env.push_back({"PERFTRACKER_SIGNAL_MS", "0"});
  env.insert(env.end(), extra.begin(), extra.end());
  std::vector<std::string> rank{program};
  rank.insert(rank.end(), args.begin(), args.end());
  const auto start = std::chrono::steady_clock::now();
  const int rc = Run(Wrapped({"/bin/sh", "-c"}, "true", rank), env, 60, out);
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return rc;
}

}  // namespace

TEST_CASE("a forked child that leaves through exit() ends at once", "[preload][life]") {
  // The child inherits the device-timer thread's atexit handler but not the thread: joining it
  // there would wait forever.
  std::string out;
  double seconds = 0;
  const int rc = RunExitWorkload(PT_EXIT_WORKLOAD, {"fork-exit", "5"}, {}, &out, &seconds);
  INFO(out);
  CHECK(rc == 0);
  CHECK(WarningLines(out).first == 0);
}

TEST_CASE("a device-timer thread stuck in a CUDA call does not keep the process from exiting",
          "[preload][life]") {
  std::string out;
  double seconds = 0;
  const int rc = RunExitWorkload(PT_HANG_WORKLOAD, {"poller-exit"},
                                 {{"PERFTRACKER_EXIT_WAIT_MS", "300"}}, &out, &seconds);
  INFO(out);
  CHECK(rc == 0);
  CHECK(seconds < 20);  // without the bound: never (the run is killed at 60 s)
  const auto [ours, all] = WarningLines(out);
  CHECK(ours == 1);
  CHECK(all == 1);
  CHECK(out.find("device-timer thread did not stop") != std::string::npos);
}

TEST_CASE("exit waits a bounded time for a stalled disk and says so once", "[preload][life]") {
  // Every ring-file write takes 20 s: the final flush cannot finish; exit leaves after 300 ms.
  std::string out;
  double seconds = 0;
  const int rc = RunExitWorkload(
      PT_EXIT_WORKLOAD, {"poller-exit"},
      {{"PERFTRACKER_TEST_WRITE_DELAY_MS", "20000"}, {"PERFTRACKER_EXIT_WAIT_MS", "300"}}, &out,
      &seconds);
  INFO(out);
  CHECK(rc == 0);
  CHECK(seconds < 15);
  const auto [ours, all] = WarningLines(out);
  CHECK(ours == 1);
  CHECK(all == 1);
  CHECK(out.find("last window was not written") != std::string::npos);
}

TEST_CASE("fork() does not wait for the writer's ring-file writes", "[preload][life]") {
  // With every write taking 4 s, a fork that waited on the writer (its lock was held for a
  // whole round) took up to that long; now it takes what fork takes. Judged against forks of the
  // same machine at the same time with a normal disk, with a quarter of a write as the margin: a
  // loaded machine slows both, and no fork of a few threads takes a second.
  const auto fork_ms = [](const std::string& delay_ms) {
    std::string out;
    double seconds = 0;
    const int rc = RunExitWorkload(
        PT_EXIT_WORKLOAD, {"fork-latency", "12"},
        {{"PERFTRACKER_TEST_WRITE_DELAY_MS", delay_ms}, {"PERFTRACKER_EXIT_WAIT_MS", "10000"}},
        &out, &seconds);
    INFO(out);
    REQUIRE(rc == 0);
    double median = -1, max = -1;
    const size_t at = out.find("fork_ms ");
    REQUIRE(at != std::string::npos);
    REQUIRE(std::sscanf(out.c_str() + at, "fork_ms %lf %lf", &median, &max) == 2);
    return std::make_pair(median, max);
  };
  const auto normal = fork_ms("0");
  const auto slow = fork_ms("4000");
  INFO("fork ms, normal disk: median " << normal.first << " max " << normal.second
                                       << "; slow disk: median " << slow.first << " max "
                                       << slow.second);
  CHECK(slow.second < normal.second + 1000);
  CHECK(slow.first < normal.first + 1000);
}
