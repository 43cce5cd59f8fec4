// analyze --last N, --since DURATION and --iterations A:B analyze the windows they name: each
// rank's iteration count in the report is the selected windows' iterations.
#include <catch2/catch.hpp>

#include "test/analyzer/fixture.h"

namespace perftracker::testing {
namespace {

constexpr int kSelectWindows = 6;

JobSpec SelectJob() {
  JobSpec spec;
  spec.shape = SmallShape();
  spec.ranks = 4;
  spec.windows = kSelectWindows;
  return spec;
}

// Iterations every rank's report counts (they must agree).
uint64_t IterationsCounted(const nlohmann::ordered_json& j) {
  const auto& per_rank = j["iterations"]["per_rank"];
  REQUIRE(per_rank.size() == 4);
  const uint64_t n = per_rank[0]["count"];
  for (const auto& r : per_rank) CHECK(r["count"] == n);
  return n;
}

}  // namespace

TEST_CASE("analyze selects the windows --last, --since and --iterations name",
          "[analyzer][select]") {
  const std::string dir = MakeTempDir();
  const JobSpec spec = SelectJob();
  WriteJob(dir, spec);
  const uint64_t per_window = static_cast<uint64_t>(spec.shape.iterations);
  auto count = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"analyze", dir, "--json", "-"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult r = Cli(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    return IterationsCounted(r.json);
  };
  const CliResult all = Cli({"analyze", dir, "--json", "-"});
  REQUIRE(all.code == 0);
  CHECK(IterationsCounted(all.json) == kSelectWindows * per_window);

  CHECK(count({"--last", "2"}) == 2 * per_window);
  CHECK(count({"--last", "100"}) == kSelectWindows * per_window);
  // Windows are keyed by their first iteration: [16, 40) holds windows 2, 3 and 4.
  const std::string a = std::to_string(2 * per_window), b = std::to_string(5 * per_window);
  CHECK(count({"--iterations", a + ":" + b}) == 3 * per_window);
  CHECK(count({"--iterations", a + ":"}) == 4 * per_window);
  CHECK(count({"--iterations", ":" + a}) == 2 * per_window);
  // A window lasts iterations x the mean step: 2.5 windows back from the newest end reaches the
  // ends of the newest three.
  const double window_s = static_cast<double>(per_window) *
                          static_cast<double>(all.json["iterations"]["per_rank"][0]["mean_s"]);
  CHECK(count({"--since", std::to_string(2.5 * window_s) + "s"}) == 3 * per_window);
  // Selections intersect: of windows 2-4, only 4 is among the ring's newest two.
  CHECK(count({"--iterations", a + ":" + b, "--last", "2"}) == per_window);
  RemoveTree(dir);
}

TEST_CASE("a selection that leaves nothing is no damage; bad values are usage errors",
          "[analyzer][select]") {
  const std::string dir = MakeTempDir();
  WriteJob(dir, SelectJob());
  const CliResult none = Cli({"analyze", dir, "--json", "-", "--iterations", "100000:"});
  REQUIRE(none.code == 0);
  CHECK(none.json["inputs"]["diagnostics"]["no_windows"] == 0);
  for (const auto& [flag, value] :
       std::vector<std::pair<std::string, std::string>>{{"--last", "0"},
                                                        {"--last", "-3"},
                                                        {"--last", "x"},
                                                        {"--since", "10x"},
                                                        {"--since", "0"},
                                                        {"--since", "-5m"},
                                                        {"--iterations", "5:3"},
                                                        {"--iterations", "5"},
                                                        {"--iterations", ":"},
                                                        {"--iterations", "a:b"}}) {
    const CliResult r = Cli({"analyze", dir, flag, value});
    INFO(flag << " " << value);
    CHECK(r.code == 2);
    CHECK(r.err.find("bad " + flag) != std::string::npos);
  }
  CHECK(Cli({"analyze", dir, "--since", "90s"}).code == 0);
  CHECK(Cli({"analyze", dir, "--since", "2h"}).code == 0);
  RemoveTree(dir);
}

TEST_CASE("the step's spread is measured after start-up, as its median is",
          "[analyzer][select]") {
  // The first window's steps take 2 s (first batches, compilation); every later one 500 ms.
  JobSpec spec = SelectJob();
  spec.edit = [](int, format::Window* w) {
    const uint64_t step = w->window_seq == 0 ? 2'000'000'000 : 500'000'000;
    const auto n = static_cast<uint32_t>(w->iterations.count);
    w->iterations.total_ns = step * n;
    w->iterations.min_ns = w->iterations.max_ns = step;
    w->iterations.duration = {};
    w->iterations.duration.Add(step, n);
  };
  const Json j = AnalyzeJob(spec);
  for (const auto& r : j["iterations"]["per_rank"]) {
    INFO(r.dump());
    CHECK(r["steady_s"].get<double>() == Approx(0.5).epsilon(0.01));
    CHECK(r["p99_s"].get<double>() == Approx(0.5).epsilon(0.1));
    CHECK(r["max_s"].get<double>() == Approx(0.5).epsilon(0.1));
    // The mean is the whole run's, start-up included.
    CHECK(r["mean_s"].get<double>() > 0.6);
  }
}

}  // namespace perftracker::testing
