// diff names causes, not only victims: the cross-rank analysis of both runs, and the candidates
// new or grown in the current run, first in the text and the JSON.
#include <algorithm>
#include <catch2/catch.hpp>

#include "test/analyzer/fixture.h"

namespace perftracker::testing {
namespace {

JobSpec Clean(uint64_t seed) {
  JobSpec spec;
  spec.ranks = 16;
  spec.shape = SmallShape();
  spec.shape.run_seed = seed;
  return spec;
}

// GC pauses on rank 4, `factor` times the peers'.
JobSpec Gc(uint64_t seed, double factor) {
  JobSpec spec = Clean(seed);
  spec.shape.fault = synthetic::Fault::kGc;
  spec.shape.fault_rank = 4;
  spec.shape.fault_factor = factor;
  return spec;
}

TEST_CASE("diff: GC pauses on one rank are named first, as a new cause", "[analyzer][diff]") {
  const std::string dir = MakeTempDir();
  WriteJob(dir + "/base", Clean(1));
  WriteJob(dir + "/gc", Gc(3, 60));

  const CliResult j = Cli({"diff", dir + "/base", dir + "/gc", "--json", "-"});
  REQUIRE_FALSE(j.json.is_discarded());
  INFO(j.json.dump(2).substr(0, 4000));
  CHECK(j.json["schema"] == 2);
  REQUIRE(j.json["causes"].size() >= 1);
  const auto& top = j.json["causes"][0];
  CHECK(top["category"] == "gc");
  CHECK(top["rank_set"] == nlohmann::ordered_json::array({4}));
  CHECK(top["function"].get<std::string>().find("gc.collect") != std::string::npos);
  CHECK(top["change"] == "new");
  // Causes come before the per-function regressions, whose exit status they leave alone.
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.json.items()) keys.push_back(key);
  CHECK(std::find(keys.begin(), keys.end(), "causes") <
        std::find(keys.begin(), keys.end(), "regressions"));
  CHECK(j.code == (j.json["regressions"].empty() ? 0 : 1));

  const CliResult text = Cli({"diff", dir + "/base", dir + "/gc"});
  INFO(text.out);
  CHECK(text.code == j.code);
  const size_t cause = text.out.find("gc on rank 4: ");
  REQUIRE(cause != std::string::npos);
  if (j.code == 1) CHECK(cause < text.out.find("regression"));
  RemoveTree(dir);
}

TEST_CASE("diff: a cause in both runs is matched: reported only when it grew", "[analyzer][diff]") {
  const std::string dir = MakeTempDir();
  WriteJob(dir + "/mild", Gc(1, 20));
  WriteJob(dir + "/same", Gc(2, 20));
  WriteJob(dir + "/worse", Gc(3, 200));
  const CliResult same = Cli({"diff", dir + "/mild", dir + "/same", "--json", "-"});
  INFO(same.json.dump(2).substr(0, 3000));
  REQUIRE(same.json.contains("causes"));
  CHECK(same.json["causes"].empty());
  const CliResult worse = Cli({"diff", dir + "/mild", dir + "/worse", "--json", "-"});
  INFO(worse.json.dump(2).substr(0, 3000));
  REQUIRE(worse.json["causes"].size() >= 1);
  const auto& top = worse.json["causes"][0];
  CHECK(top["change"] == "grew");
  CHECK(top["category"] == "gc");
  CHECK(top["rank_set"] == nlohmann::ordered_json::array({4}));
  CHECK(top["score"].get<double>() > top["base_score"].get<double>() + 0.01);
  RemoveTree(dir);
}

TEST_CASE("diff: a clean rerun has no cause and passes", "[analyzer][diff]") {
  const std::string dir = MakeTempDir();
  WriteJob(dir + "/base", Clean(1));
  WriteJob(dir + "/rerun", Clean(2));
  const CliResult j = Cli({"diff", dir + "/base", dir + "/rerun", "--json", "-"});
  INFO(j.json.dump(2).substr(0, 4000));
  CHECK(j.code == 0);
  REQUIRE(j.json.contains("causes"));
  CHECK(j.json["causes"].empty());
  const CliResult text = Cli({"diff", dir + "/base", dir + "/rerun"});
  CHECK(text.code == 0);
  CHECK(text.out.find("cause") == std::string::npos);
  RemoveTree(dir);
}

// Clean(seed) where every rank spends `ms(window)` of each step in one Python function.
JobSpec Waiting(uint64_t seed, std::function<double(int)> ms) {
  JobSpec spec = Clean(seed);
  spec.edit = [ms](int, format::Window* w) {
    const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
    const auto per_iter = static_cast<uint64_t>(ms(static_cast<int>(w->iter_begin / 8)) * 1e6);
    w->functions.push_back(
        LeafFunction(format::FunctionKind::kPython, "train.py:20:wait_for_batch", n, per_iter));
    REQUIRE(format::FillFunctionIds(&w->functions));
  };
  return spec;
}

TEST_CASE("diff: a slowdown that comes and goes on every rank at once is the host's noise",
          "[analyzer][diff]") {
  const std::string dir = MakeTempDir();
  WriteJob(dir + "/base", Waiting(1, [](int) { return 20.0; }));
  // Every other window, every rank 30% slower in it (a loaded host): the runs' noise.
  WriteJob(dir + "/loaded", Waiting(2, [](int window) { return window % 2 ? 26.0 : 20.0; }));
  // Every window 30% slower: a regression.
  WriteJob(dir + "/slower", Waiting(3, [](int) { return 26.0; }));
  const CliResult loaded = Cli({"diff", dir + "/base", dir + "/loaded"});
  const CliResult slower = Cli({"diff", dir + "/base", dir + "/slower"});
  RemoveTree(dir);
  INFO(loaded.out);
  CHECK(loaded.code == 0);
  INFO(slower.out);
  CHECK(slower.code == 1);
  CHECK(slower.out.find("wait_for_batch") != std::string::npos);
}

// Clean(seed) where the first collective of every window takes `factor` times its device time:
// the same slowdown on every rank, as a collective's members finish together.
JobSpec SlowerCollective(uint64_t seed, double factor) {
  JobSpec spec = Clean(seed);
  spec.edit = [factor](int, format::Window* w) {
    REQUIRE_FALSE(w->collectives.empty());
    format::CollectivePattern& c = w->collectives[0];
    c.device_ns = static_cast<uint64_t>(static_cast<double>(c.device_ns) * factor);
  };
  return spec;
}

TEST_CASE("diff: a collective is a regression by what its change costs the step",
          "[analyzer][diff]") {
  const std::string dir = MakeTempDir();
  WriteJob(dir + "/base", Clean(1));
  // 8% more a call on every rank (the ranks agree to the nanosecond: no noise among them), a
  // sliver of the step: a loaded CI host does that.
  WriteJob(dir + "/sliver", SlowerCollective(2, 1.08));
  // 40 times as long a call: several percent of the step.
  WriteJob(dir + "/costly", SlowerCollective(3, 40));
  const CliResult sliver = Cli({"diff", dir + "/base", dir + "/sliver"});
  const CliResult costly = Cli({"diff", dir + "/base", dir + "/costly"});
  RemoveTree(dir);
  INFO(sliver.out);
  CHECK(sliver.code == 0);
  INFO(costly.out);
  CHECK(costly.code == 1);
  CHECK(costly.out.find("collective") != std::string::npos);
}

}  // namespace
namespace {

// Clean(seed) with every step `factor` times as long, each function and collective alike: a
// machine slower or loaded as a whole, no function of the job's own.
JobSpec Scaled(uint64_t seed, double factor) {
  JobSpec spec = Clean(seed);
  spec.edit = [factor](int, format::Window* w) {
    const auto scale = [factor](uint64_t& v) {
      v = static_cast<uint64_t>(static_cast<double>(v) * factor);
    };
    for (format::FunctionPattern& p : w->functions) {
      scale(p.self_ns), scale(p.total_ns), scale(p.critical_ns), scale(p.device_ns);
      scale(p.wait_ns);
    }
    for (format::CollectivePattern& c : w->collectives) scale(c.device_ns), scale(c.host_ns);
    scale(w->iterations.total_ns), scale(w->iterations.min_ns), scale(w->iterations.max_ns);
    for (uint32_t& n : w->iterations.duration.counts) (void)n;
    w->end_mono_ns = w->start_mono_ns + static_cast<uint64_t>(
        static_cast<double>(w->end_mono_ns - w->start_mono_ns) * factor);
  };
  return spec;
}

}  // namespace

TEST_CASE("diff: a whole job slower alike is the job's change, no function's",
          "[analyzer][diff]") {
  const std::string dir = MakeTempDir();
  WriteJob(dir + "/base", Clean(1));
  WriteJob(dir + "/noisy", Scaled(2, 1.07));   // within one machine's run-to-run noise
  WriteJob(dir + "/slower", Scaled(3, 1.3));   // beyond it
  WriteJob(dir + "/base2", Scaled(4, 1.35));   // a second baseline run as slow
  const CliResult noisy = Cli({"diff", dir + "/base", dir + "/noisy"});
  const CliResult slower = Cli({"diff", dir + "/base", dir + "/slower", "--json", "-"});
  const CliResult text = Cli({"diff", dir + "/base", dir + "/slower"});
  const CliResult two = Cli({"diff", dir + "/base", dir + "/base2", dir + "/slower"});
  RemoveTree(dir);
  INFO(noisy.out);
  CHECK(noisy.code == 0);
  // 30% slower, every function alike: one regression, the step's, and the text says so.
  INFO(slower.json.dump(2).substr(0, 3000));
  CHECK(slower.code == 1);
  REQUIRE(slower.json["regressions"].size() == 1);
  CHECK(slower.json["regressions"][0]["kind"] == "iteration");
  CHECK(slower.json["whole_job_only"] == true);
  INFO(text.out);
  CHECK_THAT(text.out, Catch::Contains("the whole job is") && Catch::Contains("no function stands out"));
  // Two baselines 35% apart: a current run between them is within the runs' own noise.
  INFO(two.out);
  CHECK(two.code == 0);
}

namespace {

// Every rank's `name` (a user's function, called once a step) takes `ms` of its own a step.
JobSpec WithFunction(uint64_t seed, const char* name, double ms) {
  JobSpec spec = Clean(seed);
  spec.edit = [name, ms](int, format::Window* w) {
    const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
    const auto ns = static_cast<uint64_t>(ms * 1e6) * n;
    AddCallFrame(w, name, -1, n, ns, ns);
    REQUIRE(format::FillFunctionIds(&w->functions));
  };
  return spec;
}

}  // namespace

TEST_CASE("diff: a function slower after lines were added above it is the same function",
          "[analyzer][diff]") {
  // The change that slows a function moves its line: the runs know it by file and name.
  const std::string dir = MakeTempDir();
  WriteJob(dir + "/base", WithFunction(1, "/home/user/model.py:118:MLP.forward", 20));
  WriteJob(dir + "/same", WithFunction(2, "/home/user/model.py:122:MLP.forward", 20));
  WriteJob(dir + "/slower", WithFunction(3, "/home/user/model.py:122:MLP.forward", 30));
  const CliResult same = Cli({"diff", dir + "/base", dir + "/same", "--json", "-"});
  const CliResult slower = Cli({"diff", dir + "/base", dir + "/slower", "--json", "-"});
  RemoveTree(dir);
  INFO(same.json.dump(2).substr(0, 2000));
  CHECK(same.code == 0);
  INFO(slower.json.dump(2).substr(0, 3000));
  CHECK(slower.code == 1);
  bool named = false;
  for (const Json& r : slower.json["regressions"]) {
    named = named || r["name"].get<std::string>().find("MLP.forward") != std::string::npos;
  }
  CHECK(named);
}

namespace {

// Clean(seed) with the reduction kernels' device time `slowed` times as long (the synthetic job's
// largest compute kernel), the other kernels' (NCCL's among them) `kernels` times, and the host's
// time and the step `host` times: a slower kernel whose waits grow the step with it (a
// pipeline's bubbles), or a throttled GPU.
JobSpec DeviceScaled(uint64_t seed, double slowed, double kernels, double host) {
  JobSpec spec = Clean(seed);
  spec.edit = [=](int, format::Window* w) {
    const auto scale = [](uint64_t& v, double f) {
      v = static_cast<uint64_t>(static_cast<double>(v) * f);
    };
    for (format::FunctionPattern& p : w->functions) {
      if (p.kind == format::FunctionKind::kKernel) {
        scale(p.device_ns, p.name.find("reduce_kernel") != std::string::npos ? slowed : kernels);
        continue;
      }
      scale(p.self_ns, host), scale(p.total_ns, host), scale(p.critical_ns, host);
      scale(p.wait_ns, host);
    }
    for (format::CollectivePattern& c : w->collectives) scale(c.host_ns, host);
    scale(w->iterations.total_ns, host), scale(w->iterations.min_ns, host);
    scale(w->iterations.max_ns, host);
    w->end_mono_ns =
        w->start_mono_ns +
        static_cast<uint64_t>(static_cast<double>(w->end_mono_ns - w->start_mono_ns) * host);
  };
  return spec;
}

}  // namespace

TEST_CASE("diff: a kernel is judged against the devices' other work, not the step it grew",
          "[analyzer][diff]") {
  const std::string dir = MakeTempDir();
  WriteJob(dir + "/base", Clean(1));
  WriteJob(dir + "/slowed", DeviceScaled(2, 1.1, 1.0, 1.1));     // one kernel, waits with it
  WriteJob(dir + "/throttled", DeviceScaled(3, 1.1, 1.1, 1.1));  // every kernel alike
  const CliResult slowed = Cli({"diff", dir + "/base", dir + "/slowed", "--json", "-"});
  const CliResult throttled = Cli({"diff", dir + "/base", dir + "/throttled", "--json", "-"});
  RemoveTree(dir);
  const auto kernels_named = [](const Json& j) {
    std::vector<std::string> names;
    for (const Json& r : j["regressions"]) {
      if (r["kind"] == "kernel") names.push_back(r["name"]);
    }
    return names;
  };
  INFO(slowed.json.dump(2).substr(0, 3000));
  CHECK(slowed.code == 1);
  const std::vector<std::string> named = kernels_named(slowed.json);
  REQUIRE_FALSE(named.empty());
  for (const std::string& n : named) CHECK(n.find("reduce_kernel") != std::string::npos);
  INFO(throttled.json.dump(2).substr(0, 3000));
  CHECK(kernels_named(throttled.json).empty());
}

}  // namespace perftracker::testing
