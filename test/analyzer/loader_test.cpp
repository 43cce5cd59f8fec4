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

// The rank waits `ms` a step in the loader's __next__.
void AddNextWait(format::Window* w, double ms) {
  const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
  w->functions.push_back(
      LeafFunction(format::FunctionKind::kDataLoader, kNext, n, static_cast<uint64_t>(ms * 1e6)));
}

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
    AddNextWait(w, wait_ms(rank, static_cast<int>(w->window_seq)));
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
  // Every rank waits 40 ms a step (8% of 500 ms), and 2 s a step in the first window while the
  // workers start.
  const Json j = AnalyzeLoader([](int, int window) { return window == 0 ? 2000.0 : 40.0; },
                               [](int) { return 1.0; });
  INFO(j["candidates"].dump(2));
  const Json* loader = nullptr;
  for (const Json& c : j["candidates"]) {
    if (c["function"] == kNext) loader = &c;
  }
  REQUIRE(loader != nullptr);
  CHECK((*loader)["evidence"]["source"] == "expected_range");
  CHECK((*loader)["rank_set"].size() == 8);
  // 40 ms a step, not the first window's 2 s averaged in.
  CHECK((*loader)["evidence"]["value"].get<double>() == Approx(0.040).epsilon(0.1));
  // No peers' helpers to tell the workers' work from the tracker's idle loop.
  CHECK_FALSE((*loader)["evidence"].contains("helpers"));
}

}  // namespace perftracker::testing

namespace perftracker::testing {
namespace {

constexpr char kFetch[] = "torch/utils/data/_utils/fetch.py:53:_MapDatasetFetcher.fetch";
constexpr char kQueueGet[] = "multiprocessing/queues.py:98:Queue.get";
constexpr char kMain[] = "/home/user/train.py:300:main";

struct Workers {
  std::function<double(int)> busy;  // share of a worker's window in __getitem__
  std::function<double(int)> cpu;   // share of it on a CPU (-1: no scheduler account)
  double cpus = 2;                  // host.cpus (0: not recorded)
  std::function<double(int, int)> wait_ms = [](int, int) { return 0.1; };
  double run_delay_share = 0.6;     // of each step, every loop thread
};

// Two workers a rank, as torch's are: the loop waits for indices in the library's Queue.get,
// and the fetcher calls the user's __getitem__. A forked worker keeps the user's main above it
// (never returning: a frame with no library caller, which is no work).
Json AnalyzeWorkers(const Workers& k) {
  JobSpec spec;
  spec.shape = SmallShape();
  spec.windows = 6;
  spec.helpers = 2;
  spec.edit = [&](int rank, format::Window* w) {
    AddNextWait(w, k.wait_ms(rank, static_cast<int>(w->window_seq)));
    w->thread_cpu_ns = w->iterations.total_ns / 4;
    w->run_delay_ns = static_cast<uint64_t>(k.run_delay_share * w->iterations.total_ns);
    if (k.cpus > 0) {
      w->signals.push_back({"host.cpus", "", format::SignalKind::kGauge, 1, k.cpus, k.cpus,
                            k.cpus, 0});
    }
    REQUIRE(format::FillFunctionIds(&w->functions));
  };
  spec.edit_helper = [&](int rank, int, format::Window* w) {
    w->iterations = {};  // a helper marks none
    w->iter_begin = w->iter_end = 0;
    const uint64_t length = format::WindowLengthNs(*w);
    const auto busy = static_cast<uint64_t>(k.busy(rank) * static_cast<double>(length));
    const int32_t main = AddCallFrame(w, kMain, -1, 1, 0, length, false);
    AddCallFrame(w, kQueueGet, main, 10, (length - busy) / 10, (length - busy) / 10, false);
    const int32_t fetch = AddCallFrame(w, kFetch, main, 10, 0, busy / 10, false);
    AddCallFrame(w, kGetItem, fetch, 10, busy / 10, busy / 10, false);
    if (k.cpu(rank) >= 0) {
      w->thread_cpu_ns = static_cast<uint64_t>(k.cpu(rank) * static_cast<double>(length));
    }
    REQUIRE(format::FillFunctionIds(&w->functions));
  };
  return AnalyzeJob(spec);
}

const Json* WorkerCandidate(const Json& j) {
  for (const Json& c : j["candidates"]) {
    if (c["evidence"]["source"] == "workers") return &c;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("a rank whose workers burn its node's CPUs is named by their function",
          "[analyzer][loader]") {
  // Rank 3's two workers compute 90% of the time; its peers' idle. The loops never wait for a
  // batch, but wait 60% of each step for a CPU on a 2-CPU node.
  Workers k;
  k.busy = [](int rank) { return rank == 3 ? 0.9 : 0.02; };
  k.cpu = [](int rank) { return rank == 3 ? 0.9 : 0.02; };
  const Json j = AnalyzeWorkers(k);
  INFO(j["candidates"].dump(2));
  const Json* c = WorkerCandidate(j);
  REQUIRE(c != nullptr);
  CHECK((*c)["rank_set"] == Json::array({3}));
  CHECK((*c)["category"] == "dataloader");
  CHECK((*c)["function"] == kGetItem);
  CHECK(j["candidates"][0] == *c);
  const Json& w = (*c)["evidence"]["workers"];
  CHECK(w["processes"] == 2);
  CHECK(w["busy"].get<double>() == Approx(0.9).epsilon(0.05));
  CHECK(w["function_share"].get<double>() == Approx(1.0));
  // The workers held 1.76 cores beyond their peers' of the node's 2 (88% of a step given back),
  // but the loops waited only 60% of a step for a CPU: that is the most they gain.
  const double step = (*c)["evidence"]["iteration_s"].get<double>();
  CHECK((*c)["impact_s_per_iter"].get<double>() == Approx(0.6 * step).epsilon(0.05));
  CHECK((*c)["evidence"]["workers"]["node_cpus_held"].get<double>() ==
        Approx((1.8 - 0.04) / 2).epsilon(0.05));

  // Workers asleep (storage that answers late) take no CPU: nothing to name while the rank
  // does not wait.
  k.cpu = [](int) { return 0.005; };
  const Json asleep = AnalyzeWorkers(k);
  INFO(asleep["candidates"].dump(2));
  CHECK(WorkerCandidate(asleep) == nullptr);
  // Loops that never wait for a CPU lose nothing to them.
  k.cpu = [](int rank) { return rank == 3 ? 0.9 : 0.02; };
  k.run_delay_share = 0;
  const Json spare = AnalyzeWorkers(k);
  INFO(spare["candidates"].dump(2));
  CHECK(WorkerCandidate(spare) == nullptr);
  // Without the node's CPUs or the workers' scheduler account, the CPU taken is unknown.
  k.run_delay_share = 0.6;
  k.cpus = 0;
  CHECK(WorkerCandidate(AnalyzeWorkers(k)) == nullptr);
  k.cpus = 2;
  k.cpu = [](int) { return -1.0; };
  CHECK(WorkerCandidate(AnalyzeWorkers(k)) == nullptr);
}

TEST_CASE("a loader every rank waits for is named by its workers' function when they never idle",
          "[analyzer][loader]") {
  // Every rank waits 100 ms a step (20%); every rank's workers are in __getitem__ 95% of the time.
  Workers k;
  k.wait_ms = [](int, int) { return 100.0; };
  k.busy = [](int) { return 0.95; };
  k.cpu = [](int) { return 0.9; };
  const Json j = AnalyzeWorkers(k);
  INFO(j["candidates"].dump(2));
  REQUIRE(!j["candidates"].empty());
  const Json& top = j["candidates"][0];
  CHECK(top["rank_set"].size() == 8);
  CHECK(top["function"] == kGetItem);
  CHECK(top["evidence"]["waits_in"] == kNext);
  // Their CPU held the node's: that cost, more than the consumers' wait, is the verdict's.
  CHECK(top["evidence"]["decided_by"] == "workers_cpu");
  CHECK(top["evidence"]["workers"]["processes"] == 16);
  // Workers that never idle but take no CPU (asleep on storage): the consumers' wait, named
  // by the saturated workers' function.
  k.cpu = [](int) { return 0.005; };
  const Json asleep = AnalyzeWorkers(k);
  INFO(asleep["candidates"].dump(2));
  REQUIRE(!asleep["candidates"].empty());
  CHECK(asleep["candidates"][0]["function"] == kGetItem);
  CHECK(asleep["candidates"][0]["evidence"]["saturated_workers"]["ranks"].size() == 8);
  // Workers with slack (half idle) on nodes with CPUs to spare: the rank's own frame stays the
  // verdict.
  k.busy = [](int) { return 0.5; };
  k.cpu = [](int) { return 0.45; };
  k.run_delay_share = 0;
  const Json slack = AnalyzeWorkers(k);
  INFO(slack["candidates"].dump(2));
  REQUIRE(!slack["candidates"].empty());
  CHECK(slack["candidates"][0]["function"] == kNext);
}

TEST_CASE("every rank's workers holding the node's CPUs are one verdict on every rank",
          "[analyzer][loader]") {
  // No consumer waits for a batch; every rank's two workers run 40% of the time (0.8 cores a
  // rank, 3.2 a node of 4 ranks and 4 CPUs) while the loops wait 60% of each step for a CPU.
  Workers k;
  k.busy = [](int) { return 0.95; };
  k.cpu = [](int) { return 0.4; };
  k.cpus = 4;
  const Json j = AnalyzeWorkers(k);
  INFO(j["candidates"].dump(2));
  const Json* c = WorkerCandidate(j);
  REQUIRE(c != nullptr);
  CHECK((*c)["rank_set"].size() == 8);
  CHECK((*c)["function"] == kGetItem);
  const double step = (*c)["evidence"]["iteration_s"].get<double>();
  CHECK((*c)["impact_s_per_iter"].get<double>() == Approx(0.6 * step).epsilon(0.05));
  // The same workers on nodes of 64 CPUs: 5% of them, the loops' wait no longer theirs to
  // answer for beyond that share -- and under 5% of the step, no claim.
  k.cpus = 64;
  const Json spare = AnalyzeWorkers(k);
  INFO(spare["candidates"].dump(2));
  CHECK(WorkerCandidate(spare) == nullptr);
  // Idle workers (2% of their time in the user's code) taking the same CPU: the loader's own
  // queues and pickling, no function of the user's to name.
  k.cpus = 4;
  k.busy = [](int) { return 0.02; };
  const Json idle = AnalyzeWorkers(k);
  INFO(idle["candidates"].dump(2));
  CHECK(WorkerCandidate(idle) == nullptr);
}

}  // namespace perftracker::testing
