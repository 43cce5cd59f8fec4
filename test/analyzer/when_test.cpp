// Faults that do not last the whole run: one that begins mid-run, one that moves from rank to
// rank, and the fabric judged against the link's peak. The verdict says when, and its what-if
// counts only the windows the fault was in.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "analyzer/verdict/verdict.h"
#include "test/analyzer/fixture.h"

namespace perftracker::testing {
namespace {

using synthetic::Fault;

JobSpec SlowGpu(int rank, uint64_t from_window) {
  JobSpec spec;
  spec.windows = 6;
  spec.shape = SmallShape();
  spec.shape.fault = Fault::kSlowGpu;
  spec.shape.fault_rank = rank;
  spec.shape.fault_factor = 1.3;
  spec.shape.fault_from_window = from_window;
  return spec;
}

}  // namespace

TEST_CASE("a GPU that slows from the middle of the run is named with the iterations it was slow",
          "[analyzer][when]") {
  const JobSpec spec = SlowGpu(3, 3);
  const Json j = AnalyzeJob(spec);
  REQUIRE_FALSE(j["candidates"].empty());
  const Json& top = j["candidates"][0];
  INFO(top.dump(2));
  CHECK(top["category"] == "gpu_compute");
  CHECK(top["rank_set"] == Json::array({3}));
  const Json& e = top["evidence"];
  CHECK(e["windows_seen"] == 3);
  // Windows 3..5 of 8 iterations each.
  const uint64_t per_window = static_cast<uint64_t>(spec.shape.iterations);
  CHECK(e["iterations"] == Json::array({Json::array({3 * per_window, 6 * per_window})}));
  // The job loses the impact in the iterations it was seen in, out of those after start-up,
  // and the saving is the run's mean step's.
  const Json& steady = j["iterations"]["steady"];
  const auto run = static_cast<double>(steady["end"].get<uint64_t>() -
                                       steady["first"].get<uint64_t>());
  REQUIRE(run > 0);
  const double step = e["what_if"]["step_s"].get<double>();
  const double without = e["what_if"]["step_without_s"].get<double>();
  CHECK(step == Approx(steady["mean_s"].get<double>()));
  // The windows it was not flagged in add their own excess, which is the peers' noise: a few %.
  CHECK(step - without ==
        Approx(top["impact_s_per_iter"].get<double>() * 3.0 * per_window / run).epsilon(0.05));
}

TEST_CASE("a straggler that moves between ranks is one verdict, rank by rank",
          "[analyzer][when]") {
  // Rank 2's GPU is slow in windows 0-2, rank 5's in windows 3-5. Each rank's flags must not
  // count as the other's noise: both are named, and the job lost time in all six windows.
  JobSpec spec = SlowGpu(2, 0);
  spec.shape.fault_moves_to = 5;
  spec.shape.fault_move_window = 3;
  const Json j = AnalyzeJob(spec);
  REQUIRE_FALSE(j["candidates"].empty());
  const Json& top = j["candidates"][0];
  INFO(j["candidates"].dump(2));
  CHECK(top["category"] == "gpu_compute");
  CHECK(top["rank_set"] == Json::array({2, 5}));
  const Json& e = top["evidence"];
  CHECK(e["windows_seen"] == 6);
  REQUIRE(e["iterations_by_rank"].size() == 2);
  const uint64_t per_window = static_cast<uint64_t>(spec.shape.iterations);
  for (const Json& r : e["iterations_by_rank"]) {
    const uint64_t from = r["rank"] == 2 ? 0 : 3 * per_window;
    CHECK(r["iterations"] == Json::array({Json::array({from, from + 3 * per_window})}));
  }
  if (j["candidates"].size() > 1) {
    CHECK(j["candidates"][1]["score"].get<double>() < 0.5 * top["score"].get<double>());
  }
}

TEST_CASE("a periodic cost on every rank is not a trend, however its windows fall into thirds",
          "[analyzer][when]") {
  // Every rank evaluates in windows 2, 6 and 7 of 9 (a fifth of the window each time): once in
  // the earliest third, twice in the latest. The median of each third would read that as a cost
  // that grew; the level of each third (its lowest window) does not move.
  JobSpec spec;
  spec.windows = 9;
  spec.shape = SmallShape();
  spec.edit = [](int, format::Window* w) {
    if (w->window_seq != 2 && w->window_seq != 6 && w->window_seq != 7) return;
    const uint64_t ns = w->iterations.total_ns / 5;
    w->functions.push_back(
        LeafFunction(format::FunctionKind::kPython, "/home/user/train.py:80:evaluate", 1, ns));
    w->iterations.total_ns += ns;
    REQUIRE(format::FillFunctionIds(&w->functions));
  };
  const Json j = AnalyzeJob(spec);
  INFO(j["candidates"].dump(2));
  for (const Json& c : j["candidates"]) CHECK(c["evidence"]["source"] != "temporal");
}

// Every rank evaluates a function whose time per iteration moves from window to window as on a
// host shared with other work. In the noisy run the earliest third (windows 1-2) holds a lucky
// window and an ordinary one, and the latest third's level clears the ordinary one by a little:
// that is the noise, not a change (two windows show a third of it at most). In the changed run
// the same earliest third is steady and the latest windows sit far above it: a change.
TEST_CASE("a level change must clear the noise the earliest windows showed, judged by how few",
          "[analyzer][when]") {
  const auto run = [](std::vector<double> ms_by_window) {
    JobSpec spec;
    spec.windows = 8;
    spec.shape = SmallShape();
    spec.edit = [ms_by_window](int, format::Window* w) {
      const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
      const double ms = ms_by_window.at(static_cast<size_t>(w->window_seq));
      const auto each = static_cast<uint64_t>(ms * 1e6);
      w->functions.push_back(
          LeafFunction(format::FunctionKind::kPython, "/home/user/train.py:40:step_work", n, each));
      w->iterations.total_ns += each * n;
      REQUIRE(format::FillFunctionIds(&w->functions));
    };
    const Json j = AnalyzeJob(spec, {"--min-score", "0"});
    INFO(j["candidates"].dump(2));
    bool trend = false;
    for (const Json& c : j["candidates"]) trend |= c["evidence"]["source"] == "temporal";
    return trend;
  };
  CHECK_FALSE(run({40, 40, 59, 55, 70, 69, 61, 75}));
  CHECK(run({40, 40, 44, 45, 80, 82, 84, 88}));
}

// Host time holds its thread's waits for a CPU. Every rank's Python step work rises by 44 ms a
// step in the latest third, steady before and after: on a host whose loops wait 60 ms a step in
// the run queue that is within what scheduling alone moves, and no change of the code; where
// they wait 5 ms it is one.
TEST_CASE("a trend in host time must exceed the loops' wait for a CPU", "[analyzer][when]") {
  const auto trend = [](double run_queue_ms) {
    JobSpec spec;
    spec.windows = 8;
    spec.shape = SmallShape();
    spec.edit = [run_queue_ms](int, format::Window* w) {
      const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
      const auto each = static_cast<uint64_t>((w->window_seq >= 6 ? 84 : 40) * 1e6);
      w->functions.push_back(
          LeafFunction(format::FunctionKind::kPython, "/home/user/train.py:40:step_work", n, each));
      w->iterations.total_ns += each * n;
      w->run_delay_ns = static_cast<uint64_t>(run_queue_ms * 1e6) * n;
      w->thread_cpu_ns = w->iterations.total_ns - w->run_delay_ns;
      REQUIRE(format::FillFunctionIds(&w->functions));
    };
    const Json j = AnalyzeJob(spec, {"--min-score", "0"});
    INFO(j["candidates"].dump(2));
    bool found = false;
    for (const Json& c : j["candidates"]) {
      found |= c["evidence"]["source"] == "temporal" && c["kind"] == "python";
    }
    return found;
  };
  CHECK_FALSE(trend(60));
  CHECK(trend(5));
}

// A temporal change needs two windows a third to measure a spread against: with one, any level
// above the single baseline window "cleared its noise". A 4-window run (start-up and three
// steady windows, 80 s at the library's 20 s) whose last window holds the job's drain is no
// trend; the same step at 8 windows, changed in the latest third, is.
TEST_CASE("a trend needs two windows a third: a short run's last window is no trend",
          "[analyzer][when]") {
  const auto trend = [](int windows, std::vector<double> ms_by_window) {
    JobSpec spec;
    spec.windows = windows;
    spec.shape = SmallShape();
    spec.edit = [ms_by_window](int, format::Window* w) {
      const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
      const auto each = static_cast<uint64_t>(
          ms_by_window.at(static_cast<size_t>(w->window_seq)) * 1e6);
      w->functions.push_back(LeafFunction(format::FunctionKind::kSync,
                                          "/home/user/train.py:90:drain", n, each));
      w->iterations.total_ns += each * n;
      REQUIRE(format::FillFunctionIds(&w->functions));
    };
    const Json j = AnalyzeJob(spec, {"--min-score", "0"});
    INFO(j["candidates"].dump(2));
    bool found = false;
    for (const Json& c : j["candidates"]) found |= c["evidence"]["source"] == "temporal";
    return found;
  };
  CHECK_FALSE(trend(4, {1, 1, 1, 60}));
  CHECK(trend(8, {1, 1, 1, 1, 1, 60, 60, 60}));
}

// The collectives' expected range: bus bandwidth at least half the link's peak. The job's own
// bandwidth, measured once against an unreachable peak, then sits just inside the range of a
// peak 1.5x above it and outside the range of one 3x above it.
TEST_CASE("collectives under half the link's peak on every rank are the fabric's",
          "[analyzer][bandwidth]") {
  JobSpec spec;
  spec.shape = SmallShape();
  const auto fabric = [](const Json& j) {
    for (const Json& c : j["candidates"]) {
      if (c["category"] == "communication_fabric") return c;
    }
    return Json();
  };
  CHECK(fabric(AnalyzeJob(spec)).is_null());  // no peak given: not judged
  const Json probe = fabric(AnalyzeJob(spec, {"--link-gbps", "1000000"}));
  REQUIRE_FALSE(probe.is_null());
  CHECK(probe["evidence"]["source"] == "bus_bandwidth");
  CHECK(probe["rank_set"].size() == 8);
  const double achieved = probe["evidence"]["bus_gbps"].get<double>();
  REQUIRE(achieved > 0);
  const auto peak = [&](double times) {
    return std::to_string(achieved * times) + "," + std::to_string(achieved * times);
  };
  CHECK(fabric(AnalyzeJob(spec, {"--link-gbps", peak(1.5)})).is_null());
  const Json slow = fabric(AnalyzeJob(spec, {"--link-gbps", peak(3)}));
  REQUIRE_FALSE(slow.is_null());
  CHECK(slow["evidence"]["fraction_of_peak"].get<double>() == Approx(1.0 / 3).epsilon(0.05));
  CHECK(slow["evidence"]["windows_seen"] == slow["evidence"]["windows_total"]);
}

TEST_CASE("the link peak option wants one or two positive numbers", "[analyzer][bandwidth]") {
  for (const char* bad : {"fast", "0", "100,", "100,x", "-5"}) {
    INFO(bad);
    const CliResult r = Cli({"analyze", "/nonexistent", "--link-gbps", bad});
    CHECK(r.code == 2);
    CHECK(r.err.find("--link-gbps") != std::string::npos);
  }
}

TEST_CASE("a group-wide trend that a straggler's own excess explains is its delay passed on",
          "[analyzer][when]") {
  // Rank 3's GPU slows from window 5 of 9 on. Every rank's device thread (a Python frame of its own,
  // as a framework's engine thread may be) waits that much longer from then on: the peers' for
  // the collectives, rank 3's for its own slow GPU. The group's Python time grows on every rank,
  // the straggler's too, by what the straggler's GPU lost.
  JobSpec spec = SlowGpu(3, 5);
  spec.windows = 9;
  double excess_ms = 0;
  {
    const Json plain = AnalyzeJob(spec);
    REQUIRE_FALSE(plain["candidates"].empty());
    excess_ms = plain["candidates"][0]["impact_s_per_iter"].get<double>() * 1e3;
  }
  REQUIRE(excess_ms > 1);
  spec.edit = [&](int, format::Window* w) {
    const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
    const double each_ms = w->window_seq >= 5 ? 1 + excess_ms : 1;
    w->functions.push_back(LeafFunction(format::FunctionKind::kPython,
                                        "/home/user/engine.py:31:DeviceThread._serve", n,
                                        static_cast<uint64_t>(each_ms * 1e6)));
    REQUIRE(format::FillFunctionIds(&w->functions));
  };
  const Json j = AnalyzeJob(spec, {"--min-score", "0"});
  INFO(j["candidates"].dump(2));
  REQUIRE_FALSE(j["candidates"].empty());
  const Json& top = j["candidates"][0];
  CHECK(top["category"] == "gpu_compute");
  CHECK(top["rank_set"] == Json::array({3}));
  // The trend is the culprit's evidence (its victims), not a candidate beside it.
  for (const Json& c : j["candidates"]) {
    CHECK_FALSE((c["evidence"]["source"] == "temporal" && c["kind"] == "python"));
  }
  REQUIRE(top["evidence"].contains("victims"));
  bool trend_folded = false;
  for (const Json& v : top["evidence"]["victims"]) {
    if (v["source"] != "temporal" ||
        v["function"].get<std::string>().find("DeviceThread._serve") == std::string::npos) {
      continue;
    }
    trend_folded = true;
    CHECK(v["wait_s_per_iter"].get<double>() > 0);
  }
  CHECK(trend_folded);
}

TEST_CASE("a rank that waited on I/O saves the job no more than its node's CPUs allow",
          "[analyzer][what_if]") {
  // Four ranks a node of 2 CPUs, each loop 45% of a step on a CPU (waiting for one the rest);
  // rank 2 also sleeps in a read half of each step, its cores given to its peers meanwhile.
  // Without the read the node's loops need 4 x 0.45 / 2 = 0.9 of today's step: the job is 10%
  // faster, not the 50% the read's own time says.
  JobSpec spec;
  spec.shape = SmallShape();
  spec.windows = 6;
  spec.edit = [](int rank, format::Window* w) {
    const uint64_t n = std::max<uint64_t>(w->iterations.count, 1);
    const double step = static_cast<double>(w->iterations.total_ns);
    w->thread_cpu_ns = static_cast<uint64_t>(0.45 * step);
    w->run_delay_ns = static_cast<uint64_t>((rank == 2 ? 0.05 : 0.55) * step);
    w->signals.push_back({"host.cpus", "", format::SignalKind::kGauge, 1, 2, 2, 2, 0});
    if (rank == 2) {
      const auto read = static_cast<uint64_t>(0.5 * step);
      AddCallFrame(w, "/home/user/data.py:40:read_shard", -1, n, read, read);
      REQUIRE(format::FillFunctionIds(&w->functions));
    }
  };
  const Json j = AnalyzeJob(spec);
  REQUIRE_FALSE(j["candidates"].empty());
  const Json& top = j["candidates"][0];
  INFO(top.dump(2));
  CHECK(top["rank_set"] == Json::array({2}));
  CHECK(top["function"] == "/home/user/data.py:40:read_shard");
  const Json& w = top["evidence"]["what_if"];
  CHECK(w["bounded_by"] == "node_cpus");
  CHECK(w["faster_pct"].get<double>() == Approx(10).epsilon(0.1));
}

namespace {

analyzer::Candidate OnRank2(const char* category, double impact_s_per_iter) {
  analyzer::Candidate c;
  c.rank_set = {2};
  c.category = category;
  c.impact_s_per_iter = impact_s_per_iter;
  return c;
}

}  // namespace

TEST_CASE("a rank its peers were measured to wait for saves the job what they waited",
          "[analyzer][what_if]") {
  // 100 ms a step reached the rank's own critical path, but its peers waited 15 ms for it at the
  // collectives (the host had filled the device's queue ahead): the job is 15 ms faster without
  // it, not 100.
  analyzer::Candidate late = OnRank2("dataloader", 0.100);
  late.evidence = {{"iteration_s", 0.300},
                   {"culprit", true},
                   {"arrival", {{"peers_wait_s_per_iter", 0.015}}}};
  analyzer::Candidate alone = late;  // no wait measured: its own excess is the estimate
  alone.evidence.erase("arrival");
  analyzer::Candidate more = late;  // peers that waited longer do not raise it
  more.evidence["arrival"]["peers_wait_s_per_iter"] = 0.200;
  std::vector<analyzer::Candidate> cands = {late, alone, more};
  analyzer::AttachWhatIf({0.300, 0, 0}, {}, &cands);
  CHECK(cands[0].evidence["what_if"]["step_without_s"].get<double>() == Approx(0.285));
  CHECK(cands[0].evidence["what_if"]["bounded_by"] == "peers_wait");
  CHECK(cands[1].evidence["what_if"]["step_without_s"].get<double>() == Approx(0.200));
  CHECK(cands[2].evidence["what_if"]["step_without_s"].get<double>() == Approx(0.200));
  CHECK_FALSE(cands[2].evidence["what_if"].contains("bounded_by"));
}

TEST_CASE("on a node whose CPUs limit the step, a rank's extra CPU work saves its share of them",
          "[analyzer][what_if]") {
  // Rank 2's longer sequences: the part named at the user's depth (one module's forward) is
  // 10 ms of its step, but the rank asks the node's CPUs 40 ms a step more than its peers do,
  // where they are busy 93% of the 300 ms step: the step shrinks by that share of their work.
  std::vector<analyzer::Candidate> cands = {OnRank2("python", 0.010), OnRank2("python", 0.010)};
  // Busy 93% of the step, and 67% (CPUs to spare: the rank's work took from no one).
  analyzer::AttachWhatIf({0.300, 0, 0}, {{0.280, 0.240}, {0.200, 0.180}}, &cands);
  CHECK(cands[0].evidence["what_if"]["step_without_s"].get<double>() ==
        Approx(0.300 * 0.240 / 0.280));
  CHECK(cands[1].evidence["what_if"]["step_without_s"].get<double>() == Approx(0.290));
}

}  // namespace perftracker::testing
