// Iterations without Python: collective_loop (a C++ trainer) on simgpu ranks under the preload
// library. Its windows must close on the same iteration multiples of PERFTRACKER_WINDOW_ITERS
// on every rank, count the iterations it ran, and its live slot must say it exited normally.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "schemas/format/ring_file.h"
#include "schemas/format/window.h"
#include "test/preload/cuda/ring_summary.h"

using namespace perftracker;        // NOLINT
using namespace perftracker::test;  // NOLINT

namespace {

constexpr int kWindowIters = 5;

struct RankRing {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [iter_begin, iter_end) per window
  uint64_t iterations = 0;                            // sum of window iteration counts
  std::optional<format::LiveState> live;
};

RankRing ReadRing(const std::string& dir, int rank) {
  RankRing out;
  const std::string want = "rank-" + std::to_string(rank) + ".ptr";
  for (const std::string& path : FilesUnder(dir)) {
    if (std::filesystem::path(path).filename() != want) continue;
    format::RingReader reader;
    std::string error;
    REQUIRE(reader.OpenFile(path, &error) == format::ReadStatus::kOk);
    out.live = reader.contents().live;
    reader.ForEachRecord([&](uint64_t, std::span<const uint8_t> bytes) {
      format::Window w;
      REQUIRE(format::DecodeWindow(bytes, &w));
      out.ranges.push_back({w.iter_begin, w.iter_end});
      out.iterations += w.iterations.count;
      return true;
    });
  }
  return out;
}

void RunLoop(int ranks, int iters, const std::string& mode, const std::string& out) {
  const std::string ids = MakeTempDir() + "/nccl.id";
  std::vector<int> pids;
  for (int r = 0; r < ranks; ++r) {
    const std::string rs = std::to_string(r);
    const Env env = {{"LD_PRELOAD", PT_LIBRARY},
                     {"LD_LIBRARY_PATH", PT_SIMGPU_LIB},
                     {"PERFTRACKER_DIR", out},
                     {"PERFTRACKER_JOB_ID", "period"},
                     {"PERFTRACKER_WINDOW_ITERS", std::to_string(kWindowIters)},
                     {"PERFTRACKER_WINDOW_S", "0"},
                     {"SIMGPU_TIME_SCALE", "0.2"},
                     {"RANK", rs},
                     {"LOCAL_RANK", rs},
                     {"SIMGPU_RANK", rs},
                     {"WORLD_SIZE", std::to_string(ranks)},
                     {"LOCAL_WORLD_SIZE", std::to_string(ranks)}};
    std::vector<std::string> argv = {PT_COLLECTIVE_LOOP, std::to_string(iters), ids};
    if (!mode.empty()) argv.push_back(mode);
    pids.push_back(Spawn(argv, env));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (int pid : pids) {
    const int status = WaitOrDump(pid, deadline);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}

void CheckWindows(int ranks, int iters, const std::string& out) {
  std::vector<std::pair<uint64_t, uint64_t>> reference;
  for (int r = 0; r < ranks; ++r) {
    INFO("rank " << r);
    const RankRing ring = ReadRing(out, r);
    REQUIRE(!ring.ranges.empty());
    // Every window but the exit's partial one closes on a multiple of the window length.
    std::vector<std::pair<uint64_t, uint64_t>> full(ring.ranges.begin(), ring.ranges.end() - 1);
    for (const auto& [begin, end] : ring.ranges) CHECK(begin % kWindowIters == 0);
    for (const auto& [begin, end] : full) CHECK(end % kWindowIters == 0);
    std::erase_if(full, [](const auto& range) { return range.first == range.second; });
    CHECK(full.size() >= 2);
    if (r == 0) reference = full;
    CHECK(full == reference);
    const uint64_t counted = ring.ranges.back().second;
    CHECK(counted >= uint64_t(iters - 1));
    CHECK(counted <= uint64_t(iters + 1));
    CHECK(ring.iterations == counted);
    REQUIRE(ring.live.has_value());
    CHECK(ring.live->iteration == counted);
    CHECK(ring.live->exit_state == format::ExitState::kNormalExit);
  }
}

}  // namespace

TEST_CASE("a C++ trainer's iterations come from its collective period, alike on every rank",
          "[preload][nccl][period]") {
  constexpr int kRanks = 3, kIters = 32;
  const std::string out = MakeTempDir();
  RunLoop(kRanks, kIters, "", out);
  CheckWindows(kRanks, kIters, out);
}

TEST_CASE("equal buckets: launch gaps tell the iterations apart, alike on every rank",
          "[preload][nccl][period]") {
  constexpr int kRanks = 2, kIters = 32;
  const std::string out = MakeTempDir();
  RunLoop(kRanks, kIters, "equal", out);
  CheckWindows(kRanks, kIters, out);
}
