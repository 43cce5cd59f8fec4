// Side threads (analyzer/verdict/threads.cpp): a rank's thread other than its training loop
// that keeps a CPU busy is named by its function, from the collector's thread_cpu column; one
// asleep for the whole window is not; one that drives the device is the step's own work.
#include <catch2/catch.hpp>

#include "test/analyzer/fixture.h"

namespace perftracker::testing {
namespace {

constexpr char kBootstrap[] = "threading.py:981:Thread._bootstrap";
constexpr char kRun[] = "threading.py:964:Thread.run";
constexpr char kExporter[] = "/home/user/metrics.py:212:encode_metrics";
constexpr char kEngine[] = "/home/user/engine.py:40:backward_worker";

struct Threads {
  std::function<double(int)> cores;  // the side thread's time on a CPU, a share of the window
  const char* body = kExporter;
  bool drives_device = false;        // the body launches device work
  double run_delay_share = 0.6;      // of each step, every loop thread
  std::function<double(int)> loop_off_cpu = [](int) { return 0.1; };  // share of each step
};

// Every rank runs one side thread whose body never returns (its self time is the window's
// length, computing or not); its CPU time is thread_cpu.
JobSpec ThreadsJob(const Threads& k) {
  JobSpec spec;
  spec.shape = SmallShape();
  spec.windows = 6;
  spec.edit = [&](int rank, format::Window* w) {
    const uint64_t length = format::WindowLengthNs(*w);
    const double step = static_cast<double>(w->iterations.total_ns);
    const double delay = k.run_delay_share * step;
    w->run_delay_ns = static_cast<uint64_t>(delay);
    w->thread_cpu_ns =
        static_cast<uint64_t>(std::max(0.0, step - delay - k.loop_off_cpu(rank) * step));
    w->signals.push_back({"host.cpus", "", format::SignalKind::kGauge, 1, 2, 2, 2, 0});
    const int32_t boot = AddCallFrame(w, kBootstrap, -1, 0, 0, length, false);
    const int32_t run = AddCallFrame(w, kRun, boot, 0, 0, length, false);
    const int32_t body = AddCallFrame(w, k.body, run, 0, length, length, false);
    w->functions[static_cast<size_t>(body)].thread_cpu_ns =
        static_cast<uint64_t>(k.cores(rank) * static_cast<double>(length));
    if (k.drives_device) {
      format::FunctionPattern launch =
          LeafFunction(format::FunctionKind::kCudaApi, "cudaLaunchKernel", 10, 5000);
      launch.parent = body;
      w->functions.push_back(launch);
    }
    REQUIRE(format::FillFunctionIds(&w->functions));
  };
  return spec;
}

Json AnalyzeThreads(const Threads& k) { return AnalyzeJob(ThreadsJob(k)); }

const Json* ThreadCandidate(const Json& j) {
  for (const Json& c : j["candidates"]) {
    if (c["evidence"]["source"] == "threads") return &c;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("a rank whose side thread keeps a CPU busy is named by the thread's function",
          "[analyzer][threads]") {
  // Rank 3's exporter computes 60% of the time; the other ranks run none. The loops wait 60%
  // of each step for one of their node's 2 CPUs.
  Threads k;
  k.cores = [](int rank) { return rank == 3 ? 0.6 : 0.0; };
  const Json j = AnalyzeThreads(k);
  INFO(j["candidates"].dump(2));
  const Json* c = ThreadCandidate(j);
  REQUIRE(c != nullptr);
  CHECK(j["candidates"][0] == *c);
  CHECK((*c)["rank_set"] == Json::array({3}));
  CHECK((*c)["category"] == "host_cpu");
  CHECK((*c)["function"] == kExporter);
  CHECK((*c)["evidence"]["unit"] == "cores");
  CHECK((*c)["evidence"]["value"].get<double>() == Approx(0.6).epsilon(0.05));
  // 0.6 of the node's 2 CPUs: 30% of a CPU-bound step, within the 60% the loops waited.
  const double step = (*c)["evidence"]["iteration_s"].get<double>();
  CHECK((*c)["impact_s_per_iter"].get<double>() == Approx(0.3 * step).epsilon(0.05));
  CHECK((*c)["evidence"]["threads"]["function_share"].get<double>() == Approx(1.0));
  // Its node's four loops need 0.3 of a step each on a CPU and the thread 0.6: 1.8 steps of
  // CPU over 2 CPUs, 1.2 without it. In that proportion the step shrinks by a third, more than
  // the 30% its cores' share of the CPUs says.
  CHECK((*c)["evidence"]["what_if"]["faster_pct"].get<double>() == Approx(100.0 / 3).epsilon(0.05));
  // The text report says what the cores were and what the loops waited.
  const std::string dir = MakeTempDir();
  WriteJob(dir, ThreadsJob(k));
  const CliResult text = Cli({"analyze", dir});
  RemoveTree(dir);
  CHECK_THAT(text.out, Catch::Contains("threads beside the training loop: 0.60 cores busy"));

  // The same thread asleep in a queue's get: the same self time, no CPU, nothing to name.
  k.cores = [](int rank) { return rank == 3 ? 0.004 : 0.0; };
  const Json asleep = AnalyzeThreads(k);
  INFO(asleep["candidates"].dump(2));
  CHECK(ThreadCandidate(asleep) == nullptr);

  // A fifth of a core where the node's other ranks have none is still that rank's: never a
  // verdict on the node's ranks together.
  k.cores = [](int rank) { return rank == 3 ? 0.2 : 0.0; };
  const Json light = AnalyzeThreads(k);
  INFO(light["candidates"].dump(2));
  REQUIRE(ThreadCandidate(light) != nullptr);
  CHECK((*ThreadCandidate(light))["rank_set"] == Json::array({3}));

  // A thread that launches the device's work is the step's (autograd's backward thread).
  k.cores = [](int rank) { return rank == 3 ? 0.6 : 0.0; };
  k.body = kEngine;
  k.drives_device = true;
  const Json device = AnalyzeThreads(k);
  INFO(device["candidates"].dump(2));
  CHECK(ThreadCandidate(device) == nullptr);
}

TEST_CASE("a side thread that holds the GIL is charged what its loop waited off a CPU",
          "[analyzer][threads]") {
  // CPUs to spare (no run-queue wait), but rank 3's loop waits 40% of its step off a CPU
  // against its peers' 10%: the exporter's 0.6 cores of Python held the interpreter.
  Threads k;
  k.cores = [](int rank) { return rank == 3 ? 0.6 : 0.0; };
  k.run_delay_share = 0.01;
  k.loop_off_cpu = [](int rank) { return rank == 3 ? 0.4 : 0.1; };
  const Json j = AnalyzeThreads(k);
  INFO(j["candidates"].dump(2));
  const Json* c = ThreadCandidate(j);
  REQUIRE(c != nullptr);
  CHECK((*c)["rank_set"] == Json::array({3}));
  const double step = (*c)["evidence"]["iteration_s"].get<double>();
  CHECK((*c)["impact_s_per_iter"].get<double>() == Approx(0.3 * step).epsilon(0.05));
  CHECK((*c)["evidence"]["threads"]["loop_off_cpu_excess_s_per_iter"].get<double>() ==
        Approx(0.3 * step).epsilon(0.05));
}

TEST_CASE("every rank's side threads holding the node's CPUs are one verdict on every rank",
          "[analyzer][threads]") {
  // Each rank's exporter keeps 0.4 of a CPU busy: 1.6 of each node's 2, while the loops wait
  // 60% of a step for a CPU. No rank stands out; together they cost the step what the loops
  // waited.
  Threads k;
  k.cores = [](int) { return 0.4; };
  const Json j = AnalyzeThreads(k);
  INFO(j["candidates"].dump(2));
  const Json* c = ThreadCandidate(j);
  REQUIRE(c != nullptr);
  CHECK((*c)["rank_set"].size() == 8);
  CHECK((*c)["function"] == kExporter);
  const double step = (*c)["evidence"]["iteration_s"].get<double>();
  CHECK((*c)["impact_s_per_iter"].get<double>() == Approx(0.6 * step).epsilon(0.05));
  CHECK((*c)["evidence"]["threads"]["node_cpus_held"].get<double>() == Approx(0.8).epsilon(0.05));

  // A thread that idles (a twentieth of a core each, a tenth of each node's CPUs held) costs
  // less than a material share of the step: no claim.
  k.cores = [](int) { return 0.01; };
  const Json idle = AnalyzeThreads(k);
  INFO(idle["candidates"].dump(2));
  CHECK(ThreadCandidate(idle) == nullptr);
}

}  // namespace perftracker::testing
