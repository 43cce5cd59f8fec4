// Parallel ingest (analyze --jobs N) gives byte-identical reports for any N: each file is folded
// against its own catalog and diagnostics, merged in file order (analyzer/ingest/ingest.cpp); the
// analysis's per-rank and per-function-block work (parallel.h) is combined in item order.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "test/analyzer/fixture.h"

namespace perftracker::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream is(path);
  return {std::istreambuf_iterator<char>(is), {}};
}

}  // namespace

TEST_CASE("analyze reports the same for any number of threads", "[analyzer][ingest]") {
  const std::string dir = MakeTempDir();
  JobSpec spec;
  spec.shape = SmallShape();
  spec.shape.fault = synthetic::Fault::kSlowGpu;
  spec.shape.fault_rank = 7;
  spec.shape.fault_factor = 1.3;
  spec.ranks = 12;
  spec.windows = 5;
  // Ranks disagree about some functions, so the catalog's order depends on which file is
  // folded first; and two files are damaged, so diagnostics carry messages from several files.
  spec.edit = [](int rank, format::Window* w) {
    for (size_t i = static_cast<size_t>(rank) + 20; i < w->functions.size(); i += 37) {
      w->functions[i].name += " @rank" + std::to_string(rank % 3);
    }
    REQUIRE(format::FillFunctionIds(&w->functions));
  };
  const std::vector<std::string> paths = WriteJob(dir, spec);
  for (const int r : {3, 10}) {
    std::filesystem::resize_file(paths[static_cast<size_t>(r)],
                                 std::filesystem::file_size(paths[static_cast<size_t>(r)]) / 4);
  }
  std::string text, json, html;
  for (const char* jobs : {"1", "2", "3", "8"}) {
    INFO("--jobs " << jobs);
    const CliResult t = Cli({"analyze", dir, "--jobs", jobs});
    const CliResult j = Cli({"analyze", dir, "--jobs", jobs, "--json", "-"});
    const std::string html_path = dir + "/report-" + jobs + ".html";
    REQUIRE(Cli({"analyze", dir, "--jobs", jobs, "--html", html_path}).code == 0);
    REQUIRE(t.code == 0);
    REQUIRE(j.code == 0);
    CHECK(j.json["candidates"][0]["rank_set"] == nlohmann::ordered_json::array({7}));
    if (text.empty()) {
      text = t.out, json = j.out, html = Slurp(html_path);
      CHECK(j.json["inputs"]["diagnostics"]["truncated_tail"] == 2);
      CHECK(j.json["inputs"]["messages"].size() >= 2);
      continue;
    }
    CHECK(t.out == text);
    CHECK(j.out == json);
    CHECK(Slurp(html_path) == html);
  }
  RemoveTree(dir);
}

}  // namespace perftracker::testing
