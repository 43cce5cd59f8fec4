// Host time and the critical path (analyzer/detect/critical.cpp, ChargeCriticalPath): on ranks that
// drive a device, a rank's extra host work costs the job only the part that reached its critical
// path. Rank 0 logging more while its device is busy is no candidate; the same work starving
// its device is one, with the signal that decided it.
#include <catch2/catch.hpp>

#include "test/analyzer/fixture.h"

namespace perftracker::testing {
namespace {

constexpr char kLog[] = "/home/user/train.py:80:log_metrics";

// The small synthetic job over 8 windows: enough for a finding to persist in some and not others.
JobSpec EightWindows() {
  JobSpec spec;
  spec.shape = SmallShape();
  spec.windows = 8;
  return spec;
}

// Every window carries critical-path time (none of it on the peers: their host runs ahead);
// rank 0 runs kLog for 60 ms of its 500 ms step, of which `critical_share` starved its device.
void AddLogging(int rank, double critical_share, format::Window* w) {
  w->critical_path = true;
  // The collector's timeline: the device idles 1 ms a step, more where rank 0 starved it.
  w->device_idle_ns = 1'000'000 * std::max<uint64_t>(w->iterations.count, 1) *
                      (rank == 0 ? 1 + static_cast<uint64_t>(60 * critical_share) : 1);
  if (rank != 0) return;
  const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
  format::FunctionPattern f = LeafFunction(format::FunctionKind::kPython, kLog, n, 60'000'000);
  f.critical_ns = static_cast<uint64_t>(critical_share * static_cast<double>(f.self_ns));
  w->functions.push_back(f);
  REQUIRE(format::FillFunctionIds(&w->functions));
}

Json AnalyzeShare(double critical_share, const char* min_score = "0.01") {
  JobSpec spec;
  spec.shape = SmallShape();
  spec.edit = [&](int rank, format::Window* w) { AddLogging(rank, critical_share, w); };
  return AnalyzeJob(spec, {"--min-score", min_score});
}

const Json* Find(const Json& cands, const std::string& function) {
  for (const Json& c : cands) {
    if (c["function"] == function) return &c;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("extra host work hidden behind device work is no candidate", "[analyzer][critical]") {
  const Json j = AnalyzeShare(0.0);
  INFO(j["candidates"].dump(2));
  // Seen, and judged: with --min-score 0 it is there, costing nothing.
  const Json all = AnalyzeShare(0.0, "0");
  const Json* seen = Find(all["candidates"], kLog);
  REQUIRE(seen != nullptr);
  CHECK((*seen)["impact_s_per_iter"].get<double>() == 0);
  CHECK((*seen)["evidence"]["host_critical_path"]["host_excess_s_per_iter"].get<double>() > 0.05);
  CHECK(Find(j["candidates"], kLog) == nullptr);
  for (const Json& c : j["candidates"]) CHECK(c["rank_set"] != Json::array({0}));
}

TEST_CASE("extra host work that starves the device is charged what reached the critical path",
          "[analyzer][critical]") {
  const Json j = AnalyzeShare(0.5);
  INFO(j["candidates"].dump(2));
  const Json* c = Find(j["candidates"], kLog);
  REQUIRE(c != nullptr);
  CHECK((*c)["rank_set"] == Json::array({0}));
  CHECK((*c)["evidence"]["decided_by"] == "host_critical_path");
  const Json& h = (*c)["evidence"]["host_critical_path"];
  // 30 of the 60 ms a step reached the critical path; the impact is that, not the 60 ms.
  CHECK(h["reached_s_per_iter"].get<double>() == Approx(0.030).epsilon(0.05));
  CHECK(h["host_excess_s_per_iter"].get<double>() == Approx(0.060).epsilon(0.05));
  CHECK((*c)["impact_s_per_iter"].get<double>() == Approx(0.030).epsilon(0.05));
}

TEST_CASE("a host cost's what-if is what reached the critical path, whatever the devices' sum",
          "[analyzer][what_if]") {
  // All 60 ms of rank 0's logging reached its critical path (the device had nothing queued while
  // it ran): the step would be 60 ms shorter, with or without a kernel that adds up to 420 ms of
  // the 461 ms step. The devices' summed work is no floor: streams overlap, and it stood above
  // the clean step (the benchmark's sim_tp slow reads, once the collector's queue held the GEMMs
  // and was drained at syncs: 15 ms a step charged, 2.4% said by the sum, 8.9% measured).
  const auto analyze = [](bool busy_devices) {
    JobSpec spec;
    spec.shape = SmallShape();
    spec.edit = [=](int rank, format::Window* w) {
      // The synthetic job's kernels and collectives are not one device's timeline (their device
      // time exceeds its step): this job's device work is only the kernel below.
      AsCpuWindow(w);
      for (format::CollectivePattern& c : w->collectives) c.device_samples = c.device_ns = 0;
      AddLogging(rank, 1.0, w);
      if (!busy_devices) return;
      const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
      format::FunctionPattern k =
          LeafFunction(format::FunctionKind::kKernel, "big_gemm_kernel", n, 10'000);
      k.device_samples = n;
      k.device_ns = n * 420'000'000;
      w->functions.push_back(k);
      REQUIRE(format::FillFunctionIds(&w->functions));
    };
    const Json j = AnalyzeJob(spec);
    const Json* c = Find(j["candidates"], kLog);
    REQUIRE(c != nullptr);
    return (*c)["evidence"]["what_if"];
  };
  const Json free_devices = analyze(false);
  INFO(free_devices.dump(2));
  CHECK_FALSE(free_devices.contains("bounded_by"));
  CHECK(free_devices["step_s"].get<double>() - free_devices["step_without_s"].get<double>() ==
        Approx(0.060).epsilon(0.1));
  const Json busy = analyze(true);
  INFO(busy.dump(2));
  CHECK_FALSE(busy.contains("bounded_by"));
  CHECK(busy["step_s"].get<double>() - busy["step_without_s"].get<double>() ==
        Approx(0.060).epsilon(0.1));
}

TEST_CASE("device verdicts say device time decided them", "[analyzer][critical]") {
  JobSpec spec;
  spec.shape = SmallShape();
  spec.shape.fault = synthetic::Fault::kSlowGpu;
  spec.shape.fault_rank = 3;
  spec.shape.fault_factor = 1.3;
  const Json j = AnalyzeJob(spec);
  REQUIRE(j["candidates"].size() >= 1);
  CHECK(j["candidates"][0]["category"] == "gpu_compute");
  CHECK(j["candidates"][0]["evidence"]["decided_by"] == "device_time");
}

namespace {

// A 16-rank job with CPU contention on rank 13: its host code 1.6x slower.
JobSpec ContendedJob() {
  JobSpec spec;
  spec.ranks = 16;
  spec.shape = SmallShape();
  spec.shape.fault = synthetic::Fault::kCpuContention;
  spec.shape.fault_rank = 13;
  spec.shape.fault_factor = 1.6;
  return spec;
}

// ContendedJob, where every rank's training loop waits `peer_delay` of each iteration for a
// CPU, rank 13 `culprit_delay`.
Json AnalyzeContention(double peer_delay, double culprit_delay) {
  JobSpec spec = ContendedJob();
  spec.edit = [&](int rank, format::Window* w) {
    const double share = rank == 13 ? culprit_delay : peer_delay;
    w->run_delay_ns = static_cast<uint64_t>(share * static_cast<double>(w->iterations.total_ns));
    w->thread_cpu_ns = w->iterations.total_ns - w->run_delay_ns;
  };
  const Json j = AnalyzeJob(spec);
  REQUIRE(j["candidates"].size() >= 1);
  return j["candidates"][0];
}

}  // namespace

TEST_CASE("host time stretched by the rank's scheduler is a CPU verdict decided by it",
          "[analyzer][critical]") {
  const Json top = AnalyzeContention(0.02, 0.6);
  INFO(top.dump(2));
  CHECK(top["category"] == "host_cpu");
  CHECK(top["rank_set"] == Json::array({13}));
  CHECK(top["evidence"]["decided_by"] == "run_queue_delay");
  CHECK(top["evidence"]["run_queue"]["explains_share"].get<double>() >= 0.5);
  CHECK(top["evidence"]["run_queue"]["rank_s_per_iter"].get<double>() >
        10 * top["evidence"]["run_queue"]["peers_s_per_iter"].get<double>());
}

TEST_CASE("host time the scheduler does not explain is the rank's own", "[analyzer][critical]") {
  // Every rank waits alike (an oversubscribed host): the excess is rank 13's code.
  const Json top = AnalyzeContention(0.3, 0.3);
  INFO(top.dump(2));
  CHECK(top["category"] == "host_cpu");
  CHECK(top["rank_set"] == Json::array({13}));
  CHECK(top["evidence"]["decided_by"] == "host_time");
  CHECK(top["evidence"]["run_queue"]["explains_share"].get<double>() < 0.1);
}

namespace {

constexpr char kFeeder[] = "threading.py:981:Thread._bootstrap";

// CPU training (no kernels or copies; every window carries critical-path time): rank 2 spends
// 60 ms a step more in kFeeder, on the training loop's thread (critical time = its own time) or
// on another thread (none).
Json AnalyzeCpuJob(bool on_the_loop) {
  JobSpec spec;
  spec.shape = SmallShape();
  spec.edit = [&](int rank, format::Window* w) {
    AsCpuWindow(w);
    const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
    const uint64_t per_iter = rank == 2 ? 60'000'000 : 1'000'000;
    format::FunctionPattern f = LeafFunction(format::FunctionKind::kPython, kFeeder, n, per_iter);
    f.critical_ns = on_the_loop ? f.self_ns : 0;
    w->functions.push_back(f);
    REQUIRE(format::FillFunctionIds(&w->functions));
  };
  return AnalyzeJob(spec);
}

}  // namespace

TEST_CASE("on a CPU rank, another thread's extra time is not the step's", "[analyzer][critical]") {
  const Json off = AnalyzeCpuJob(false);
  INFO(off["candidates"].dump(2));
  CHECK(Find(off["candidates"], kFeeder) == nullptr);
  const Json on = AnalyzeCpuJob(true);
  INFO(on["candidates"].dump(2));
  const Json* c = Find(on["candidates"], kFeeder);
  REQUIRE(c != nullptr);
  CHECK((*c)["rank_set"] == Json::array({2}));
  CHECK((*c)["evidence"]["decided_by"] == "host_time");
}

namespace {

constexpr char kMetrics[] = "/home/user/train.py:60:encode_metrics";
constexpr char kBackward[] = "torch/autograd/__init__.py:103:backward";

// CPU training where only rank 2 runs a metrics thread, 60 ms of Python a step on a thread of its
// own (no critical time), in a body that never returns (open in every window: a slice of time
// and no call). With `parts` 1 the body holds the time itself; with more it calls that many
// functions, each taking its share. Every rank's loop runs backward (20 ms), in which the peers
// also wait `peers_wait_ns[window]` a step for rank 2 at the all-reduce they cannot see (gloo),
// and rank 2's own backward takes `own_ns[window]` longer (its noise; none when empty).
// `returns_at_end`: the thread's body completes its one call in the last window (the job stops
// it), as a real one does; otherwise it never returns.
JobSpec CpuThreadJob(std::vector<int64_t> peers_wait_ns, int parts = 1,
                     std::vector<int64_t> own_ns = {}, bool returns_at_end = false) {
  JobSpec spec;
  spec.shape = SmallShape();
  spec.windows = static_cast<int>(peers_wait_ns.size());
  spec.edit = [=](int rank, format::Window* w) {
    AsCpuWindow(w);
    const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
    const size_t k = w->window_seq % peers_wait_ns.size();
    const int64_t wait = rank != 2 ? peers_wait_ns[k] : own_ns.empty() ? 0 : own_ns[k];
    format::FunctionPattern b = LeafFunction(format::FunctionKind::kPython, kBackward, n,
                                             static_cast<uint64_t>(20'000'000 + wait));
    b.critical_ns = b.self_ns;
    w->functions.push_back(b);
    if (rank == 2) {
      format::FunctionPattern body =
          LeafFunction(format::FunctionKind::kPython, kMetrics, n, 60'000'000);
      body.count = returns_at_end && k + 1 == peers_wait_ns.size() ? 1 : 0;
      if (parts > 1) body.self_ns = 0;
      w->functions.push_back(body);
      const auto parent = static_cast<int64_t>(w->functions.size() - 1);
      for (int p = 0; parts > 1 && p < parts; ++p) {
        format::FunctionPattern part =
            LeafFunction(format::FunctionKind::kPython,
                         "/home/user/metrics.py:" + std::to_string(10 * (p + 1)) + ":part", n,
                         60'000'000 / static_cast<uint64_t>(parts));
        part.parent = parent;
        w->functions.push_back(part);
      }
    }
    REQUIRE(format::FillFunctionIds(&w->functions));
  };
  return spec;
}

bool ChargedOnRank(const Json& cands, int rank) {
  for (const Json& c : cands) {
    if (c["rank_set"] == Json::array({rank}) && c["score"].get<double>() > 0) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("on a CPU rank, another thread's time costs what the peers waited for the rank",
          "[analyzer][critical]") {
  const std::vector<int64_t> waits(4, 25'000'000);
  // The thread's body holds its 60 ms: it is named, a thread's function, not the loop.
  const JobSpec spec = CpuThreadJob(waits);
  const Json j = AnalyzeJob(spec, {"--min-score", "0"});
  INFO(j["candidates"].dump(2));
  REQUIRE(j["candidates"].size() >= 1);
  const Json& top = j["candidates"][0];
  CHECK(top["rank_set"] == Json::array({2}));
  CHECK(top["function"] == kMetrics);
  CHECK(top["evidence"]["decided_by"] == "arrival");
  CHECK(top["evidence"]["peers_wait_in"]["function"] == kBackward);
  // Its 60 ms a step is not the step's: the peers' 25 ms of waiting is.
  CHECK(top["evidence"]["host_critical_path"]["host_excess_s_per_iter"].get<double>() ==
        Approx(0.060).epsilon(0.05));
  CHECK(top["impact_s_per_iter"].get<double>() == Approx(0.025).epsilon(0.05));
  CHECK_FALSE(top["evidence"].contains("beta"));  // never on the loop's critical path
  // The text report says where the peers waited (not an arrival order nobody measured).
  const std::string dir = MakeTempDir();
  WriteJob(dir, spec);
  const CliResult text = Cli({"analyze", dir});
  RemoveTree(dir);
  INFO(text.out);
  CHECK(text.out.find("culprit: peers wait 25.0 ms more per iteration in") != std::string::npos);
  CHECK(text.out.find("arrives last") == std::string::npos);
  // A body that returns once, in the last window, ran in every window all the same: the peers'
  // wait is measured over all of them, not over the one where a call completed.
  const Json stopped = AnalyzeJob(CpuThreadJob(waits, 1, {}, true), {"--min-score", "0"});
  INFO(stopped["candidates"].dump(2));
  REQUIRE(!stopped["candidates"].empty());
  CHECK(stopped["candidates"][0]["function"] == kMetrics);
  CHECK(stopped["candidates"][0]["impact_s_per_iter"].get<double>() ==
        Approx(0.025).epsilon(0.05));

  // Spread over four functions, none of which stands for it: the rank's Python sum, 35 ms a
  // step above its peers' (the thread's 60, less the 25 its loop did not wait), charged 25.
  const Json spread = AnalyzeJob(CpuThreadJob(waits, 4), {"--min-score", "0"});
  INFO(spread["candidates"].dump(2));
  REQUIRE(spread["candidates"].size() >= 1);
  const Json& sum = spread["candidates"][0];
  CHECK(sum["rank_set"] == Json::array({2}));
  CHECK(sum["function"] == "all Python functions");
  CHECK(sum["evidence"]["decided_by"] == "arrival");
  CHECK(sum["evidence"]["host_critical_path"]["host_excess_s_per_iter"].get<double>() ==
        Approx(0.035).epsilon(0.05));
  CHECK(sum["impact_s_per_iter"].get<double>() == Approx(0.025).epsilon(0.05));

  // Nobody waited for it: it cost nothing, in either shape.
  for (const int parts : {1, 4}) {
    const Json idle = AnalyzeJob(CpuThreadJob({0, 0, 0, 0}, parts), {"--min-score", "0"});
    INFO(idle["candidates"].dump(2));
    CHECK_FALSE(ChargedOnRank(idle["candidates"], 2));
  }
}

TEST_CASE("another thread's cost is confirmed by how steadily the peers wait, not by its size",
          "[analyzer][critical]") {
  // 8 ms a step in every window: a seventh of the thread's time, and every bit of it paid.
  for (const int parts : {1, 4}) {
    const Json steady =
        AnalyzeJob(CpuThreadJob(std::vector<int64_t>(8, 8'000'000), parts), {"--min-score", "0"});
    INFO(steady["candidates"].dump(2));
    REQUIRE(steady["candidates"].size() >= 1);
    const Json& top = steady["candidates"][0];
    CHECK(top["rank_set"] == Json::array({2}));
    CHECK(top["evidence"]["decided_by"] == "arrival");
    CHECK(top["impact_s_per_iter"].get<double>() == Approx(0.008).epsilon(0.05));
  }

  // 4 ms a step on average, as 12 ms in one window and -4 in the next: the rank arrived late
  // in some windows and early in others, the peers' noise.
  std::vector<int64_t> noise;
  for (int i = 0; i < 8; ++i) noise.push_back(i % 2 == 0 ? 12'000'000 : -4'000'000);
  for (const int parts : {1, 4}) {
    const Json noisy = AnalyzeJob(CpuThreadJob(noise, parts), {"--min-score", "0"});
    INFO(noisy["candidates"].dump(2));
    CHECK_FALSE(ChargedOnRank(noisy["candidates"], 2));
  }

  // Nor is the rank's own loop 2 ms a step slower, as 6 ms in one window and -2 in the next
  // (the Python sum's part on the loop's thread).
  std::vector<int64_t> own;
  for (int i = 0; i < 8; ++i) own.push_back(i % 2 == 0 ? 6'000'000 : -2'000'000);
  const Json own_noise =
      AnalyzeJob(CpuThreadJob(std::vector<int64_t>(8, 0), 4, own), {"--min-score", "0"});
  INFO(own_noise["candidates"].dump(2));
  CHECK_FALSE(ChargedOnRank(own_noise["candidates"], 2));
}

namespace {

// ContendedJob (its loop held back: another thread's GIL, a stolen core) where every rank's
// device timeline says its host never reached the critical path: the estimate of the device's
// queue sees a busy device, the peers see a late rank.
Json AnalyzeLateHost() {
  JobSpec spec = ContendedJob();
  spec.edit = [&](int, format::Window* w) {
    w->critical_path = true;
    w->device_idle_ns = 1'000'000 * std::max<uint64_t>(w->iterations.count, 1);
    for (format::FunctionPattern& f : w->functions) f.critical_ns = 0;
  };
  return AnalyzeJob(spec, {"--min-score", "0"});
}

}  // namespace

TEST_CASE("a late rank's host excess is charged what its peers were measured to wait",
          "[analyzer][critical]") {
  const Json j = AnalyzeLateHost();
  INFO(j["candidates"].dump(2));
  REQUIRE(j["candidates"].size() >= 1);
  const Json& top = j["candidates"][0];
  CHECK(top["rank_set"] == Json::array({13}));
  CHECK(top["evidence"]["culprit"] == true);
  // Nothing reached the estimated critical path, yet the peers waited: that wait is charged.
  CHECK(top["evidence"]["host_critical_path"]["reached_s_per_iter"].get<double>() == 0);
  CHECK(top["evidence"]["decided_by"] == "arrival");
  const double waited = top["evidence"]["arrival"]["peers_wait_s_per_iter"].get<double>();
  REQUIRE(waited > 0);
  CHECK(top["impact_s_per_iter"].get<double>() ==
        Approx(std::min(waited, top["evidence"]["host_critical_path"]["host_excess_s_per_iter"]
                                    .get<double>())));
  CHECK(top["score"].get<double>() >= 0.01);
}

namespace {

constexpr char kWorker[] = "/home/user/train.py:40:DeviceWorker.run";

// From the second window on, rank 0's worker thread takes 30 ms of each 500 ms step (its peers'
// 1 ms), 10 ms of it while its device had nothing queued; its peers wait for rank 0 inside the
// collectives' kernels, so their devices never idle after the first window. With
// `peers_idle_once` false they never idle at all: the files of a collector that built no device
// timeline.
Json AnalyzeBusyPeers(bool peers_idle_once) {
  JobSpec spec = EightWindows();
  spec.edit = [&](int rank, format::Window* w) {
    const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
    w->critical_path = true;
    const bool idles = rank == 0 || (peers_idle_once && w->window_seq == 0);
    w->device_idle_ns = idles ? 1'000'000 * n : 0;
    const bool slow = rank == 0 && w->window_seq > 0;
    format::FunctionPattern f =
        LeafFunction(format::FunctionKind::kPython, kWorker, n, slow ? 30'000'000 : 1'000'000);
    f.critical_ns = slow ? 10'000'000 * n : 0;
    w->functions.push_back(f);
    REQUIRE(format::FillFunctionIds(&w->functions));
  };
  return AnalyzeJob(spec, {"--min-score", "0"});
}

}  // namespace

TEST_CASE("peers whose devices never idle while they wait for a straggler keep their timeline",
          "[analyzer][critical]") {
  // Their host time was rightly never critical: rank 0 is charged its own critical excess.
  const Json busy = AnalyzeBusyPeers(true);
  INFO(busy["candidates"].dump(2));
  const Json* c = Find(busy["candidates"], kWorker);
  REQUIRE(c != nullptr);
  CHECK((*c)["rank_set"] == Json::array({0}));
  const Json& path = (*c)["evidence"]["host_critical_path"];
  CHECK(path["peers_s_per_iter"].get<double>() == 0);
  CHECK(path["reached_s_per_iter"].get<double>() == Approx(0.010).epsilon(0.05));
  CHECK((*c)["impact_s_per_iter"].get<double>() == Approx(0.010).epsilon(0.05));
  // Nor is rank 0's critical time what the group shares: the median rank's is nil.
  for (const Json& x : busy["candidates"]) {
    CHECK_FALSE((x["function"] == kWorker && x["evidence"]["source"] == "expected_range"));
  }
  // No device of the peers ever idled: no timeline there, and rank 0's host time is judged as
  // host time.
  const Json unknown = AnalyzeBusyPeers(false);
  INFO(unknown["candidates"].dump(2));
  const Json* u = Find(unknown["candidates"], kWorker);
  REQUIRE(u != nullptr);
  CHECK_FALSE(u->at("evidence").contains("host_critical_path"));
  CHECK((*u)["impact_s_per_iter"].get<double>() == Approx(0.029).epsilon(0.05));
  // Rank 0 alone has a timeline: the median of one rank of eight is no group's.
  for (const Json& x : unknown["candidates"]) {
    CHECK_FALSE((x["function"] == kWorker && x["evidence"]["source"] == "expected_range"));
  }
}

namespace {

constexpr char kLoader[] = "torch/utils/data/dataloader.py:736:_BaseDataLoaderIter.__next__";

// Every rank's data loader takes `loader_ms` of its 500 ms step; of it, `critical_share` ran
// while the device had nothing queued. With `timeline` false the windows carry no device
// timeline (no critical path): the loader is judged on its host time.
Json AnalyzeCriticalLoader(double loader_ms, double critical_share, bool timeline) {
  JobSpec spec;
  spec.shape = SmallShape();
  spec.edit = [&](int, format::Window* w) {
    const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
    w->critical_path = timeline;
    w->device_idle_ns = timeline ? 1'000'000 * n : 0;
    format::FunctionPattern f;
    f.kind = format::FunctionKind::kDataLoader;
    f.name = kLoader;
    f.count = n;
    const auto per_iter = static_cast<uint64_t>(loader_ms * 1e6);
    f.self_ns = f.total_ns = per_iter * n;
    f.min_ns = f.max_ns = per_iter;
    f.critical_ns = timeline ? static_cast<uint64_t>(critical_share * double(f.self_ns)) : 0;
    w->functions.push_back(f);
    REQUIRE(format::FillFunctionIds(&w->functions));
  };
  return AnalyzeJob(spec);
}

}  // namespace

namespace {

constexpr char kCallImpl[] = "torch/nn/modules/module.py:1190:Module._call_impl";
constexpr char kAttention[] = "/home/user/model.py:40:Attention.forward";
constexpr char kLogEvery[] = "/home/user/train.py:90:log_every_step";

// CPU ranks (no device): every rank runs its attention, written in the user's file and called
// by nn.Module's dispatch, for 200 ms of its 500 ms step, and `log_ms` of its own logging from
// the loop; all of it on the loop's thread, so all of it critical.
Json AnalyzeCpuModel(double log_ms) {
  JobSpec spec;
  spec.shape = SmallShape();
  spec.edit = [log_ms](int, format::Window* w) {
    AsCpuWindow(w);
    const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
    const auto add = [&](const char* name, int32_t parent, uint64_t self, uint64_t total) {
      return AddCallFrame(w, name, parent, n, self, total, /*critical=*/true);
    };
    const int32_t dispatch = add(kCallImpl, -1, 1'000'000, 201'000'000);
    add(kAttention, dispatch, 200'000'000, 200'000'000);
    if (log_ms > 0) {
      const auto ns = static_cast<uint64_t>(log_ms * 1e6);
      add(kLogEvery, -1, ns, ns);
    }
    REQUIRE(format::FillFunctionIds(&w->functions));
  };
  return AnalyzeJob(spec);
}

}  // namespace

TEST_CASE("on CPU ranks the model's code the framework calls is the compute, not overhead",
          "[analyzer][critical]") {
  // The attention is 40% of the step on every rank: the model, not a routine above its range.
  const Json clean = AnalyzeCpuModel(0);
  INFO(clean["candidates"].dump(2));
  CHECK(Find(clean["candidates"], kAttention) == nullptr);
  CHECK(clean["candidates"].empty());
  // The user's own routine called from the loop is still held to the range.
  const Json logging = AnalyzeCpuModel(40);
  INFO(logging["candidates"].dump(2));
  const Json* c = Find(logging["candidates"], kLogEvery);
  REQUIRE(c != nullptr);
  CHECK((*c)["evidence"]["source"] == "expected_range");
  CHECK(Find(logging["candidates"], kAttention) == nullptr);
}

TEST_CASE("a data loader on a device rank costs what of it left the device idle",
          "[analyzer][critical]") {
  // 40 ms of a 500 ms step (8%: above the 1% expected, and material): fetched while the GPU
  // works through its queue it costs nothing; fetched while the GPU waits, it is the job's.
  const Json hidden = AnalyzeCriticalLoader(40, 0.0, true);
  INFO(hidden["candidates"].dump(2));
  CHECK(Find(hidden["candidates"], kLoader) == nullptr);
  const Json starving = AnalyzeCriticalLoader(40, 1.0, true);
  INFO(starving["candidates"].dump(2));
  const Json* c = Find(starving["candidates"], kLoader);
  REQUIRE(c != nullptr);
  CHECK((*c)["evidence"]["source"] == "expected_range");
  // No timeline: its host time is all there is to judge.
  const Json unknown = AnalyzeCriticalLoader(40, 0.0, false);
  INFO(unknown["candidates"].dump(2));
  CHECK(Find(unknown["candidates"], kLoader) != nullptr);
  // 20 ms (4%) on every rank is above the range but not material: no claim, starving or not.
  const Json small = AnalyzeCriticalLoader(20, 1.0, true);
  INFO(small["candidates"].dump(2));
  CHECK(Find(small["candidates"], kLoader) == nullptr);
}

namespace {

constexpr char kForward[] = "torch/nn/modules/module.py:1188:Module._call_impl";

// CPU training on a host with fewer cores than threads: every rank waits 26-34% of each step
// for a CPU, a different rank the most each window, and rank 0 always at the top of that range.
// In windows 2, 4 and 6 the wait lands in rank 0's kForward (20 ms a step more than its peers');
// there rank 0 waits `flagged_delay` of the step.
Json AnalyzeMovingWait(double flagged_delay) {
  JobSpec spec = EightWindows();
  spec.edit = [&](int rank, format::Window* w) {
    w->critical_path = true;
    const auto window = static_cast<int>(w->iter_begin / 8);
    const bool flagged = rank == 0 && window % 2 == 0 && window > 0;
    double share = 0.30 + 0.04 * ((rank + window) % 3 - 1);
    if (rank == 0) share = flagged ? flagged_delay : 0.34;
    w->run_delay_ns = static_cast<uint64_t>(share * static_cast<double>(w->iterations.total_ns));
    w->thread_cpu_ns = w->iterations.total_ns - w->run_delay_ns;
    const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
    const uint64_t per_iter = flagged ? 25'000'000 : 5'000'000;
    format::FunctionPattern f = LeafFunction(format::FunctionKind::kPython, kForward, n, per_iter);
    f.critical_ns = f.self_ns;
    w->functions.push_back(f);
    REQUIRE(format::FillFunctionIds(&w->functions));
  };
  return AnalyzeJob(spec, {"--min-score", "0"});
}

}  // namespace

TEST_CASE("a wait for a CPU within the peers' own is the host's, no rank's",
          "[analyzer][critical]") {
  const Json shared = AnalyzeMovingWait(0.34);
  INFO(shared["candidates"].dump(2));
  const Json* c = Find(shared["candidates"], kForward);
  REQUIRE(c != nullptr);  // seen: flagged and explained by the run queue
  CHECK((*c)["category"] == "host_cpu");
  CHECK((*c)["evidence"]["decided_by"] == "shared_run_queue");
  CHECK((*c)["score"].get<double>() == 0);
  CHECK((*c)["evidence"]["run_queue"]["explains_share"].get<double>() >= 0.5);

  // The same excess where rank 0 waited far beyond every peer: its host held it back.
  const Json own = AnalyzeMovingWait(0.8);
  INFO(own["candidates"].dump(2));
  const Json* o = Find(own["candidates"], kForward);
  REQUIRE(o != nullptr);
  CHECK((*o)["category"] == "host_cpu");
  CHECK((*o)["rank_set"] == Json::array({0}));
  CHECK((*o)["evidence"]["decided_by"] == "run_queue_delay");
  CHECK((*o)["score"].get<double>() >= 0.01);
}

namespace {

constexpr char kCopy[] = "cudaMemcpyAsync HtoD";
constexpr char kCopySite[] = "cudaMemcpyAsync HtoD @ loader.so+0x10";

// Every rank copies its batch once a step: 10 us on the device, every call timed at the copy's
// pattern, none at its call site (as the collector records them). On rank 5 the call itself
// blocks `blocked_ms` on the host (a pageable copy behind a queue that waits for a slow peer).
Json AnalyzeBlockedCopy(double blocked_ms) {
  JobSpec spec = EightWindows();
  spec.edit = [&](int rank, format::Window* w) {
    const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
    const auto host = static_cast<uint64_t>((rank == 5 ? blocked_ms : 0.01) * 1e6);
    format::FunctionPattern copy;
    copy.kind = format::FunctionKind::kMemcpy;
    copy.name = kCopy;
    copy.count = n;
    copy.self_ns = copy.total_ns = host * n;
    copy.device_samples = n;
    copy.device_ns = 10'000 * n;
    copy.bytes = 4096 * n;
    format::FunctionPattern site = copy;
    site.name = kCopySite;
    site.device_samples = site.device_ns = 0;
    site.parent = static_cast<int32_t>(w->functions.size());
    w->functions.push_back(copy);
    w->functions.push_back(site);
    REQUIRE(format::FillFunctionIds(&w->functions));
  };
  return AnalyzeJob(spec);
}

}  // namespace

TEST_CASE("a copy's call site is never priced above its pattern's timed device time",
          "[analyzer][critical]") {
  const Json j = AnalyzeBlockedCopy(26);
  INFO(j["candidates"].dump(2));
  CHECK(Find(j["candidates"], kCopySite) == nullptr);
  CHECK(Find(j["candidates"], kCopy) == nullptr);
}

TEST_CASE("a sync's longer wait on a device rank is its device's, never the host's own cost",
          "[analyzer][critical]") {
  // Rank 5 waits 30 ms a step longer in its loss read (a pipeline's last stage waiting for a
  // peer's activations), on its critical path by the collector's queue model: the wait is
  // for the device, whose own work or peers carry the cause; the sync is no candidate.
  JobSpec spec = EightWindows();
  spec.edit = [](int rank, format::Window* w) {
    const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
    w->critical_path = true;
    const uint64_t each = rank == 5 ? 50'000'000 : 20'000'000;
    w->device_idle_ns = (each + 1'000'000) * n;
    format::FunctionPattern f =
        LeafFunction(format::FunctionKind::kSync, "/home/user/cuda.py:61:Buffer.item", n, each);
    f.critical_ns = f.self_ns;
    w->functions.push_back(f);
    REQUIRE(format::FillFunctionIds(&w->functions));
  };
  const Json j = AnalyzeJob(spec);
  INFO(j["candidates"].dump(2).substr(0, 3000));
  for (const Json& c : j["candidates"]) CHECK(c["kind"] != "sync");
  const Json all = AnalyzeJob(spec, {"--min-score", "0"});
  const Json* seen = Find(all["candidates"], "/home/user/cuda.py:61:Buffer.item");
  REQUIRE(seen != nullptr);
  CHECK((*seen)["evidence"]["decided_by"] == "device_wait");
  CHECK((*seen)["impact_s_per_iter"].get<double>() == 0);
}

}  // namespace perftracker::testing
