// perftracker watch: the event diffing between rounds (appear / change / clear, hangs once), the
// Prometheus writer's escaping and series, and the command on synthetic jobs (a throttled GPU
// appears as a candidate; a hang ends the watch with exit 3 under --exit-on hang).
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "analyzer/base/atomic_file.h"
#include "analyzer/commands/cli.h"
#include "analyzer/report/prometheus.h"
#include "analyzer/report/watch_events.h"
#include "test/analyzer/fixture.h"

using namespace perftracker;           // NOLINT
using namespace perftracker::testing;  // NOLINT
using analyzer::WatchCandidate;
using analyzer::WatchEvent;
using analyzer::WatchEventType;
using analyzer::WatchHang;
using analyzer::WatchState;

namespace {

WatchCandidate Cand(std::vector<int> ranks, std::string category, std::string function,
                    double score) {
  return {std::move(ranks), std::move(category), std::move(function), score};
}

// Diffs `now` against `*reported` and moves the reported state on, as the watcher does.
std::vector<WatchEvent> Step(WatchState* reported, const WatchState& now) {
  WatchState next;
  auto events = analyzer::DiffWatchStates(*reported, now, &next);
  *reported = next;
  return events;
}

}  // namespace

TEST_CASE("watch: a candidate appears once, and clears", "[analyzer][watch]") {
  WatchState reported;
  const WatchState gpu{{Cand({3}, "gpu_compute", "compute kernels", 0.2)}, {}};
  auto e = Step(&reported, gpu);
  REQUIRE(e.size() == 1);
  CHECK(e[0].type == WatchEventType::kCandidateAppeared);
  CHECK(e[0].candidate.rank_set == std::vector<int>{3});
  CHECK(Step(&reported, gpu).empty());  // the same verdict again is not news
  e = Step(&reported, WatchState{});
  REQUIRE(e.size() == 1);
  CHECK(e[0].type == WatchEventType::kCandidateCleared);
  CHECK(e[0].candidate.category == "gpu_compute");
  CHECK(Step(&reported, WatchState{}).empty());
}

TEST_CASE("watch: rank set, category and large score moves are changes", "[analyzer][watch]") {
  WatchState reported;
  Step(&reported, {{Cand({3}, "gpu_compute", "compute kernels", 0.2)}, {}});
  auto e = Step(&reported, {{Cand({3, 5}, "gpu_compute", "compute kernels", 0.2)}, {}});
  REQUIRE(e.size() == 1);
  CHECK(e[0].type == WatchEventType::kCandidateChanged);
  CHECK(e[0].what_changed == "rank_set");
  CHECK(e[0].previous.rank_set == std::vector<int>{3});
  CHECK(e[0].candidate.rank_set == std::vector<int>{3, 5});

  e = Step(&reported, {{Cand({3, 5}, "host_cpu", "compute kernels", 0.2)}, {}});
  REQUIRE(e.size() == 1);
  CHECK(e[0].what_changed == "category");

  // Small moves are the noise of a sliding set of windows...
  CHECK(Step(&reported, {{Cand({3, 5}, "host_cpu", "compute kernels", 0.25)}, {}}).empty());
  CHECK(Step(&reported, {{Cand({3, 5}, "host_cpu", "compute kernels", 0.28)}, {}}).empty());
  // ...but they add up against the score last reported (0.2), not the last seen.
  e = Step(&reported, {{Cand({3, 5}, "host_cpu", "compute kernels", 0.31)}, {}});
  REQUIRE(e.size() == 1);
  CHECK(e[0].what_changed == "score");
  CHECK(e[0].previous.score == Approx(0.2));
  CHECK(Step(&reported, {{Cand({3, 5}, "host_cpu", "compute kernels", 0.22)}, {}}).empty());
  e = Step(&reported, {{Cand({3, 5}, "host_cpu", "compute kernels", 0.1)}, {}});
  REQUIRE(e.size() == 1);
  CHECK(e[0].what_changed == "score");
}

TEST_CASE("watch: two candidates are paired with their own, not swapped", "[analyzer][watch]") {
  WatchState reported;
  Step(&reported, {{Cand({3}, "gpu_compute", "compute kernels", 0.2),
                    Cand({5}, "gpu_compute", "compute kernels", 0.1)},
                   {}});
  // Order changed, rank 3 gone, rank 7 new: one clear, one appear, rank 5 unchanged.
  auto e = Step(&reported, {{Cand({5}, "gpu_compute", "compute kernels", 0.1),
                             Cand({7}, "dataloader", "DataLoaderIter.__next__", 0.05)},
                            {}});
  REQUIRE(e.size() == 2);
  CHECK(e[0].type == WatchEventType::kCandidateAppeared);
  CHECK(e[0].candidate.rank_set == std::vector<int>{7});
  CHECK(e[1].type == WatchEventType::kCandidateCleared);
  CHECK(e[1].candidate.rank_set == std::vector<int>{3});
}

TEST_CASE("watch: a hang is reported once, with who never arrived", "[analyzer][watch]") {
  WatchState reported;
  const WatchHang h{"all_reduce on comm 0xc0", 0xC0, 10, false, {3}, {0, 1, 2}, 60};
  auto e = Step(&reported, {{}, {h}});
  REQUIRE(e.size() == 1);
  CHECK(e[0].type == WatchEventType::kHang);
  CHECK(e[0].hang.ranks_missing == std::vector<int>{3});
  const auto json = analyzer::EventJson(e[0], "t");
  CHECK(json["type"] == "hang");
  CHECK(json["ranks_missing"] == nlohmann::ordered_json::array({3}));
  CHECK(analyzer::EventText(e[0], "t").find("never arrived: rank 3") != std::string::npos);
  WatchHang longer = h;
  longer.stuck_s = 90;
  CHECK(Step(&reported, {{}, {longer}}).empty());
  e = Step(&reported, WatchState{});
  REQUIRE(e.size() == 1);
  CHECK(e[0].type == WatchEventType::kHangCleared);
}

TEST_CASE("watch: event JSON names the type and the candidate", "[analyzer][watch]") {
  WatchState reported;
  Step(&reported, {{Cand({3}, "gpu_compute", "k", 0.2)}, {}});
  const auto e = Step(&reported, {{Cand({4}, "gpu_compute", "k", 0.2)}, {}});
  REQUIRE(e.size() == 1);
  const auto j = analyzer::EventJson(e[0], "2026-01-01T00:00:00.000Z");
  CHECK(j["type"] == "candidate_changed");
  CHECK(j["rank_set"] == nlohmann::ordered_json::array({4}));
  CHECK(j["previous"]["rank_set"] == nlohmann::ordered_json::array({3}));
  CHECK(j["time"] == "2026-01-01T00:00:00.000Z");
}

TEST_CASE("prometheus: label values and HELP are escaped per the text format",
          "[analyzer][watch][prometheus]") {
  CHECK(analyzer::PrometheusLabelValue("plain") == "plain");
  CHECK(analyzer::PrometheusLabelValue("a\\b") == "a\\\\b");
  CHECK(analyzer::PrometheusLabelValue("say \"hi\"") == "say \\\"hi\\\"");
  CHECK(analyzer::PrometheusLabelValue("two\nlines") == "two\\nlines");
  CHECK(analyzer::PrometheusLabelValue("f\xC3\xA9") == "f\xC3\xA9");    // UTF-8 kept
  CHECK(analyzer::PrometheusLabelValue("x\xFFy") == "x\xEF\xBF\xBDy");  // not UTF-8
  CHECK(analyzer::PrometheusLabelValue("\xC3") == "\xEF\xBF\xBD");      // cut short
  CHECK(analyzer::PrometheusLabelValue("\xED\xA0\x80") ==               // a surrogate
        "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(analyzer::PrometheusHelp("a \"q\" \\ \n") == "a \"q\" \\\\ \\n");
  CHECK(analyzer::PrometheusValue(0.25) == "0.25");
  CHECK(analyzer::PrometheusValue(3) == "3");
  CHECK(analyzer::PrometheusValue(std::numeric_limits<double>::infinity()) == "+Inf");
  CHECK(analyzer::PrometheusValue(-std::numeric_limits<double>::infinity()) == "-Inf");
  CHECK(analyzer::PrometheusValue(std::nan("")) == "NaN");
}

TEST_CASE("prometheus: HELP and TYPE before samples, one sample per series",
          "[analyzer][watch][prometheus]") {
  analyzer::PrometheusText t;
  t.Family("m", "gauge", "help");
  t.Sample("m", {{"f", "a\"b"}}, 1);
  t.Sample("m", {{"f", "a\"b"}}, 2);  // the same series again replaces it
  t.Sample("m", {{"f", "c"}}, 3);
  CHECK(t.str() == "# HELP m help\n# TYPE m gauge\nm{f=\"a\\\"b\"} 2\nm{f=\"c\"} 3\n");

  const WatchState state{{Cand({3, 5}, "gpu_compute", "kern<\"x\">\n", 0.5)}, {}};
  const std::string text =
      analyzer::WatchMetrics("job\\1", {{0, "node\"0", 0.27}}, state, 1700000000);
  CHECK(text.find("perftracker_step_seconds{job=\"job\\\\1\",rank=\"0\",host=\"node\\\"0\"} "
                  "0.27\n") != std::string::npos);
  CHECK(text.find("rank_set=\"3,5\",category=\"gpu_compute\",function=\"kern<\\\"x\\\">\\n\"} "
                  "0.5\n") != std::string::npos);
  CHECK(text.find("perftracker_hang{job=\"job\\\\1\"} 0\n") != std::string::npos);
  CHECK(text.find("# TYPE perftracker_hang gauge\n") < text.find("perftracker_hang{"));
}

TEST_CASE("prometheus: the file is replaced whole", "[analyzer][watch][prometheus]") {
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/perftracker.prom";
  std::string error;
  REQUIRE(analyzer::WriteFileAtomically(path, "a 1\n", &error));
  REQUIRE(analyzer::WriteFileAtomically(path, "b 2\n", &error));
  std::ifstream is(path);
  std::stringstream ss;
  ss << is.rdbuf();
  CHECK(ss.str() == "b 2\n");
  CHECK_FALSE(analyzer::WriteFileAtomically(dir + "/no/such/dir/x.prom", "", &error));
  CHECK_FALSE(error.empty());
  RemoveTree(dir);
}

TEST_CASE("watch names a throttled GPU and ends on a hang with exit 3", "[analyzer][watch]") {
  const std::string dir = MakeTempDir();
  JobSpec spec;
  spec.shape = SmallShape();
  spec.shape.fault = synthetic::Fault::kSlowGpu;
  spec.shape.fault_rank = 5;
  spec.shape.fault_factor = 1.3;
  WriteJob(dir + "/slow", spec);
  const std::string prom = dir + "/watch.prom";
  CliResult r =
      Cli({"watch", dir + "/slow", "--json-lines", "--rounds", "1", "--prometheus", prom});
  INFO(r.out << r.err);
  REQUIRE(r.code == analyzer::kExitOk);
  const auto first = nlohmann::ordered_json::parse(r.out.substr(0, r.out.find('\n')));
  CHECK(first["type"] == "candidate_appeared");
  CHECK(first["rank_set"] == nlohmann::ordered_json::array({5}));
  CHECK(std::ifstream(prom).good());

  spec.shape.fault = synthetic::Fault::kHang;
  spec.shape.fault_rank = 3;
  WriteJob(dir + "/hung", spec);
  r = Cli({"watch", dir + "/hung", "--exit-on", "hang", "--interval", "0.1", "--rounds", "5"});
  CHECK(r.code == analyzer::kExitHang);
  CHECK(r.out.find("HANG: ") != std::string::npos);
  CHECK(r.out.find("never arrived: rank 3") != std::string::npos);

  CHECK(Cli({"watch", dir, "--exit-on", "crash"}).code == analyzer::kExitUsage);
  CHECK(Cli({"watch"}).code == analyzer::kExitUsage);
  RemoveTree(dir);
}

namespace {

// One window written (start-up), and the open one, where rank 5's GPU is throttled, holding
// `open_iterations` of the window's iterations (all: 0).
std::string JobWithOpenWindow(uint64_t open_iterations) {
  const std::string dir = MakeTempDir();
  JobSpec spec;
  spec.shape = SmallShape();
  spec.windows = 1;
  spec.shape.fault = synthetic::Fault::kSlowGpu;
  spec.shape.fault_rank = 5;
  spec.shape.fault_factor = 1.3;
  spec.shape.fault_from_window = 1;
  synthetic::JobShape open_shape = spec.shape;
  open_shape.ranks_per_node = spec.ranks_per_host;
  const int ranks = spec.ranks;
  spec.edit_live = [&](int rank, format::LiveState* live) {
    format::WindowEncoder encoder;
    format::Window open = synthetic::MakeWindow(open_shape, rank, ranks, 1);
    if (open_iterations > 0) {
      open.iterations.total_ns = open.iterations.total_ns / open.iterations.count * open_iterations;
      open.iterations.count = open_iterations;
      open.iter_end = open.iter_begin + open_iterations;
    }
    REQUIRE(format::CompressOpenWindow(encoder.Encode(open), &live->open_window));
  };
  WriteJob(dir, spec);
  return dir;
}

}  // namespace

TEST_CASE("watch sees a fault in the window still open, from the live slot", "[analyzer][watch]") {
  // With 20 s windows, a watch that read only the written windows would not know yet.
  const std::string dir = JobWithOpenWindow(0);
  const CliResult analyzed = Cli({"analyze", dir, "--json", "-"});
  REQUIRE(analyzed.code == analyzer::kExitOk);
  CHECK(analyzed.json["candidates"].empty());  // analyze reads the windows written
  const CliResult r = Cli({"watch", dir, "--json-lines", "--rounds", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.code == analyzer::kExitOk);
  const auto first = nlohmann::ordered_json::parse(r.out.substr(0, r.out.find('\n')));
  CHECK(first["type"] == "candidate_appeared");
  CHECK(first["category"] == "gpu_compute");
  CHECK(first["rank_set"] == nlohmann::ordered_json::array({5}));
  RemoveTree(dir);
}

TEST_CASE("watch names nothing until a window's worth of iterations follows start-up",
          "[analyzer][watch]") {
  // Two iterations into the window after start-up, the job is still warming up (the benchmark's
  // live GIL-thread job was claimed on rank 0 then, and cleared six seconds later): watch
  // holds candidates, which analyze of the same files would not.
  const std::string dir = JobWithOpenWindow(2);
  const CliResult r = Cli({"watch", dir, "--json-lines", "--rounds", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.code == analyzer::kExitOk);
  CHECK(r.out.find("candidate_appeared") == std::string::npos);
  RemoveTree(dir);
}
