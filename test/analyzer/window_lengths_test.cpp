// Windows of different lengths (preload/core/window_schedule.h): a rank that sized its windows
// otherwise than its peers is compared with them over the boundaries they share, and the
// verdict does not change.
#include <catch2/catch.hpp>

#include "test/analyzer/fixture.h"

namespace perftracker::testing {
namespace {

constexpr int kWindowsPerRank = 8;

// Rank 5 doubled its windows from window 2 on: [16, 32), [32, 48), [48, 64) where its peers
// ended windows every 8 iterations. Its long window holds one window's worth of data (the
// analysis compares per iteration).
JobSpec Spec(bool doubled) {
  JobSpec spec;
  spec.shape = SmallShape();
  spec.windows = kWindowsPerRank;
  spec.shape.fault = synthetic::Fault::kSlowGpu;
  spec.shape.fault_rank = 3;
  spec.shape.fault_factor = 1.3;
  if (doubled) {
    spec.keep = [](int rank, int w) { return rank != 5 || w < 2 || w % 2 == 0; };
    spec.edit = [](int rank, format::Window* w) {
      if (rank == 5 && w->iter_begin >= 16) w->iter_end += w->iter_end - w->iter_begin;
    };
  }
  return spec;
}

}  // namespace

TEST_CASE("a rank with longer windows is compared over the boundaries every rank shares",
          "[analyzer][windows]") {
  const Json even = AnalyzeJob(Spec(false));
  const Json mixed = AnalyzeJob(Spec(true));
  CHECK(even["iterations"]["aligned_slots"] == kWindowsPerRank);
  // Slots 0 and 8 as before; 16+24, 32+40 and 48+56 merged on every rank.
  CHECK(mixed["iterations"]["aligned_slots"] == 5);
  CHECK(mixed["iterations"]["end"] == even["iterations"]["end"]);
  REQUIRE(even["candidates"].size() >= 1);
  REQUIRE(mixed["candidates"].size() >= 1);
  for (const Json* j : {&even, &mixed}) {
    const Json& top = (*j)["candidates"][0];
    INFO(top.dump(2));
    CHECK(top["category"] == "gpu_compute");
    CHECK(top["rank_set"] == Json::array({3}));
  }
  // Rank 5 is no suspect for being compared over longer slots.
  for (const Json& c : mixed["candidates"]) {
    CHECK(c["rank_set"] != Json::array({5}));
  }
}

TEST_CASE("slots widened for a long run keep their boundaries: windows of 5 iterations, 24 of them",
          "[analyzer][windows]") {
  // More windows than kMaxSlots: slot keys become window starts shifted right, and a slot then
  // reaches past the next key's value in iterations without spanning any window of the next
  // slot. That is no reason to merge it with the next (every slot did, into one).
  JobSpec spec;
  spec.shape = SmallShape();
  spec.shape.iterations = 5;
  spec.windows = 24;
  spec.shape.fault = synthetic::Fault::kSlowGpu;
  spec.shape.fault_rank = 3;
  spec.shape.fault_factor = 1.3;
  const Json j = AnalyzeJob(spec);
  // Starts 0, 5, ..., 115 shifted right by 3 bits: 15 distinct keys, 16 at most.
  CHECK(j["iterations"]["aligned_slots"] == 15);
  REQUIRE(j["candidates"].size() >= 1);
  CHECK(j["candidates"][0]["rank_set"] == Json::array({3}));
}

}  // namespace perftracker::testing
