// Every call reaches the library it was bound for (preload/core/symbols.h): two CUDA runtimes in
// one process, and frameworks that carry their own NCCL loaded RTLD_LOCAL, each get exactly
// their own callers' calls under the library, as without it, and the calls are recorded.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "test/preload/cuda/ring_summary.h"

using namespace perftracker::test;  // NOLINT

namespace {

Env Plain() { return {{"LD_LIBRARY_PATH", PT_BINDING_DIR}}; }

Env Passive() { return {{"LD_LIBRARY_PATH", PT_BINDING_DIR}, {"LD_PRELOAD", PT_LIBRARY}}; }

Env Recording(const std::string& dir) {
  return {{"LD_LIBRARY_PATH", PT_BINDING_DIR},
          {"LD_PRELOAD", PT_LIBRARY},
          {"PERFTRACKER_DIR", dir},
          {"PERFTRACKER_JOB_ID", "binding"},
          {"PERFTRACKER_SAMPLE_EVERY", "1"},
          {"RANK", "0"},
          {"WORLD_SIZE", "1"}};
}

std::string Output(const std::vector<std::string>& argv, const Env& env) {
  std::string out;
  REQUIRE(Run(argv, env, 60, &out) == 0);
  return out;
}

}  // namespace

TEST_CASE("two CUDA runtimes in one process each receive their own callers' launches",
          "[binding]") {
  const std::string expected = "rt12 1000 rt13 700 ok 1700\n";
  for (const char* mode : {"local", "global"}) {
    INFO("clients loaded " << mode);
    const std::vector<std::string> argv = {PT_TWO_RUNTIMES, mode};
    REQUIRE(Output(argv, Plain()) == expected);
    REQUIRE(Output(argv, Passive()) == expected);
    const std::string dir = MakeTempDir();
    REQUIRE(Output(argv, Recording(dir)) == expected);
    const RankSummary rank = ReadRank(dir, 0);
    REQUIRE(rank.found);
    CHECK(rank.top.at("cudaLaunchKernel").count == 1700);
    // Calls came through the entries of libcudart.so.12 (bit 2) and .13 (bit 3) only.
    CHECK(rank.cuda_runtimes == ((1u << 2) | (1u << 3)));
  }
}

TEST_CASE("frameworks with their own NCCL loaded RTLD_LOCAL lose no call and are recorded",
          "[binding]") {
  const std::string expected = "failed 0 a 101 b 57\n";
  REQUIRE(Output({PT_FRAMEWORK_MAIN}, Plain()) == expected);
  REQUIRE(Output({PT_FRAMEWORK_MAIN}, Passive()) == expected);
  const std::string dir = MakeTempDir();
  REQUIRE(Output({PT_FRAMEWORK_MAIN}, Recording(dir)) == expected);
  const RankSummary rank = ReadRank(dir, 0);
  REQUIRE(rank.found);
  // Two communicators, one per copy, each with its own calls.
  CHECK(rank.CollectiveCount("ncclAllReduce") == 158);
  size_t comms = 0;
  for (const auto& [key, totals] : rank.collectives) {
    if (key.second != "ncclAllReduce") continue;
    ++comms;
    CHECK((totals.count == 101 || totals.count == 57));
    CHECK(totals.comm_size == 1);
  }
  CHECK(comms == 2);
}
