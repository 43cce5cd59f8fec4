// The README's configuration table and preload/core/config.h's X-macro list the same variables.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "preload/core/config.h"

TEST_CASE("README documents exactly the PERFTRACKER_* variables the library reads", "[config]") {
  std::set<std::string> in_code;
#define PERFTRACKER_CONFIG_NAME(NAME, TYPE, field, def, doc) in_code.insert("PERFTRACKER_" #NAME);
  PERFTRACKER_CONFIG(PERFTRACKER_CONFIG_NAME)
#undef PERFTRACKER_CONFIG_NAME

  std::ifstream readme(std::string(PERFTRACKER_SOURCE_DIR) + "/README.md");
  REQUIRE(readme);
  std::set<std::string> in_readme;
  const std::regex row(R"(^\| `(PERFTRACKER_[A-Z_]+)` \|)");
  for (std::string line; std::getline(readme, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) in_readme.insert(m[1]);
  }
  CHECK(in_readme == in_code);
}

TEST_CASE("configuration parses numbers and flags, and keeps defaults on bad input", "[config]") {
  using perftracker::preload::LoadConfig;
  setenv("PERFTRACKER_ENABLE", "0", 1);
  setenv("PERFTRACKER_RING_MB", "16", 1);
  auto c = LoadConfig();
  CHECK_FALSE(c.enable);
  CHECK(c.ring_mb == 16);
  setenv("PERFTRACKER_ENABLE", "maybe", 1);
  setenv("PERFTRACKER_RING_MB", "12abc", 1);
  c = LoadConfig();
  CHECK(c.enable);
  CHECK(c.ring_mb == 64);
  unsetenv("PERFTRACKER_ENABLE");
  unsetenv("PERFTRACKER_RING_MB");
}
