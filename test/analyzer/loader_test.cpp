// Data-loader verdicts (analyzer/detect/expected_range.cpp, analyzer/verdict/helpers.cpp): a rank
// that waits for its loader's workers is named by what the workers spent the time on; a loader
// every rank shares is judged on its steady state, not on the start-up's first batches.
#include <catch2/catch.hpp>

#include "test/analyzer/fixture.h"

namespace perftracker::testing {
namespace {

constexpr char kNext[] = "torch/utils/data/dataloader.py:623:_BaseDataLoaderIter.__next__";
constexpr char kGetItem[] = "/home/user/data.py:30:ShardDataset.__getitem__";
constexpr char kTracker[] = "multiprocessing/resource_tracker.py:179:main";

// Every rank waits `wait_ms(rank, window)` a step in the loader's __next__. Each rank has two
// helpers: a worker that reads and decodes `item_ms(rank)` a step and a resource tracker
// blocked on its pipe for the whole window, as torch's workers and multiprocessing's tracker
// are.
Json AnalyzeLoader(std::function<double(int, int)> wait_ms, std::function<double(int)> item_ms) {
  JobSpec spec;
  spec.shape = SmallShape();
  spec.windows = 8;
  spec.helpers = 2;
  spec.edit = [&](int rank, format::Window* w) {
    const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
    const auto each = static_cast<uint64_t>(wait_ms(rank, static_cast<int>(w->window_seq)) * 1e6);
    w->functions.push_back(LeafFunction(format::FunctionKind::kDataLoader, kNext, n, each));
    REQUIRE(format::FillFunctionIds(&w->functions));
  };
  spec.edit_helper = [&](int rank, int helper, format::Window* w) {
    const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
    if (helper == 0) {
      const auto each = static_cast<uint64_t>(item_ms(rank) * 1e6);
      w->functions.push_back(LeafFunction(format::FunctionKind::kPython, kGetItem, n, each));
    } else {
      w->functions.push_back(
          LeafFunction(format::FunctionKind::kPython, kTracker, 1, format::WindowLengthNs(*w)));
    }
    REQUIRE(format::FillFunctionIds(&w->functions));
  };
  return AnalyzeJob(spec);
}

}  // namespace

TEST_CASE("a rank waiting for its loader's workers is named by what the workers did",
          "[analyzer][loader]") {
  // Rank 3's worker decodes 80 ms a batch where its peers' take 1 ms; rank 3 waits 60 ms a step.
  const Json j = AnalyzeLoader([](int rank, int) { return rank == 3 ? 60.0 : 0.1; },
                               [](int rank) { return rank == 3 ? 80.0 : 1.0; });
  INFO(j["candidates"].dump(2));
  REQUIRE(j["candidates"].size() >= 1);
  const Json& top = j["candidates"][0];
  CHECK(top["rank_set"] == Json::array({3}));
  CHECK(top["category"] == "dataloader");
  CHECK(top["function"] == kGetItem);
  CHECK(top["evidence"]["waits_in"] == kNext);
  const Json& busiest = top["evidence"]["helpers"]["ranks"][0]["busiest"][0];
  CHECK(busiest["function"] == kGetItem);
}

TEST_CASE("workers that do not hold the lost time leave the verdict on the rank's own frame",
          "[analyzer][loader]") {
  // Rank 3 waits 60 ms a step, its worker works 3 ms a batch beyond its peers': the wait is not
  // theirs to explain.
  const Json j = AnalyzeLoader([](int rank, int) { return rank == 3 ? 60.0 : 0.1; },
                               [](int rank) { return rank == 3 ? 4.0 : 1.0; });
  INFO(j["candidates"].dump(2));
  REQUIRE(j["candidates"].size() >= 1);
  const Json& top = j["candidates"][0];
  CHECK(top["rank_set"] == Json::array({3}));
  CHECK(top["function"] == kNext);
  CHECK_FALSE(top["evidence"].contains("waits_in"));
}

TEST_CASE("a loader every rank shares is judged on its steady state, without helper evidence",
          "[analyzer][loader]") {
  // Every rank waits 20 ms a step, and 2 s a step in the first window while the workers start.
  const Json j = AnalyzeLoader([](int, int window) { return window == 0 ? 2000.0 : 20.0; },
                               [](int) { return 1.0; });
  INFO(j["candidates"].dump(2));
  const Json* loader = nullptr;
  for (const Json& c : j["candidates"]) {
    if (c["function"] == kNext) loader = &c;
  }
  REQUIRE(loader != nullptr);
  CHECK((*loader)["evidence"]["source"] == "expected_range");
  CHECK((*loader)["rank_set"].size() == 8);
  // 20 ms a step, not the first window's 2 s averaged in.
  CHECK((*loader)["evidence"]["value"].get<double>() == Approx(0.020).epsilon(0.1));
  // No peers' helpers to tell the workers' work from the tracker's idle loop.
  CHECK_FALSE((*loader)["evidence"].contains("helpers"));
}

}  // namespace perftracker::testing
