// The command line's conventions, for every command: COMMAND --help lists the options with
// their defaults on stdout and exits 0; --opt=value and --opt value are the same; an unknown
// option or a bad value is one line on stderr and exit 2.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "analyzer/commands/cli.h"
#include "test/analyzer/fixture.h"

namespace perftracker::testing {
namespace {

// Each command with an option --help must list.
const std::vector<std::pair<std::string, std::string>> kCommands = {
    {"analyze", "--json"},   {"watch", "--interval"}, {"reduce", "--output"},
    {"diff", "--threshold"}, {"export", "--perfetto"}, {"dump", "FILE"},
    {"run", "--dir"},        {"selftest", "--launches"}};

size_t Lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

TEST_CASE("COMMAND --help prints the command's options on stdout and exits 0", "[analyzer][cli]") {
  for (const auto& [command, option] : kCommands) {
    for (const char* help : {"--help", "-h"}) {
      INFO(command << " " << help);
      const CliResult r = Cli({command, help});
      CHECK(r.code == analyzer::kExitOk);
      CHECK(r.err.empty());
      CHECK(r.out.find("perftracker " + command) != std::string::npos);
      CHECK(r.out.find(option) != std::string::npos);
    }
  }
  // Defaults are shown.
  CHECK(Cli({"analyze", "--help"}).out.find("10") != std::string::npos);
  CHECK(Cli({"watch", "--help"}).out.find("--windows") != std::string::npos);
}

TEST_CASE("an unknown option is one line on stderr and exit 2, for every command",
          "[analyzer][cli]") {
  for (const auto& [command, option] : kCommands) {
    INFO(command);
    const CliResult r = Cli({command, "x", "--no-such-option"});
    CHECK(r.code == analyzer::kExitUsage);
    CHECK(Lines(r.err) == 1);
    CHECK(r.err.find("perftracker " + command + ": ") == 0);
    CHECK(r.err.find("--no-such-option") != std::string::npos);
    CHECK(r.out.empty());
  }
}

TEST_CASE("bad values are one line and exit 2", "[analyzer][cli]") {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"analyze", "/tmp", "--top", "many"},
                                             {"analyze", "/tmp", "--top"},
                                             {"analyze", "/tmp", "--jobs=x"},
                                             {"watch", "/tmp", "--interval", "0"},
                                             {"watch", "/tmp", "--windows=0"},
                                             {"watch", "/tmp", "--exit-on=crash"},
                                             {"diff", "/a", "/b", "--threshold=-1"},
                                             {"selftest", "--launches", "0"},
                                             {"export", "/tmp"},
                                             {"dump"},
                                             {"dump", "a", "b"},
                                             {"run", "--dir", "/tmp"}}) {
    const CliResult r = Cli(args);
    INFO(args[0] << " " << args.size() << " args: " << r.err);
    CHECK(r.code == analyzer::kExitUsage);
    CHECK(Lines(r.err) == 1);
  }
}

TEST_CASE("an option takes its value after = or after a space", "[analyzer][cli]") {
  const std::string dir = MakeTempDir();
  JobSpec spec;
  spec.shape = SmallShape();
  WriteJob(dir + "/job", spec);
  const std::string spaced = dir + "/spaced.json", joined = dir + "/joined.json";
  REQUIRE(Cli({"analyze", dir + "/job", "--json", spaced, "--top", "3", "--jobs", "2"}).code == 0);
  REQUIRE(Cli({"analyze", dir + "/job", "--json=" + joined, "--top=3", "--jobs=2"}).code == 0);
  const auto read = [](const std::string& path) {
    std::ifstream is(path);
    return nlohmann::json::parse(is, nullptr, false);
  };
  const nlohmann::json a = read(spaced), b = read(joined);
  REQUIRE_FALSE(a.is_discarded());
  CHECK(a == b);
  // The last of a repeated option wins: a wrapper's default, then the user's choice.
  CHECK(Cli({"analyze", dir + "/job", "--json", "/nonexistent/x.json", "--json=-"}).code == 0);
  RemoveTree(dir);
}

TEST_CASE("run hands everything after -- to COMMAND untouched", "[analyzer][cli]") {
  // COMMAND's own --help and unknown options are not ours: `false` fails with status 1.
  setenv("PERFTRACKER_LIBRARY", "libc.so.6", 1);  // preloading it changes nothing
  const CliResult r = Cli({"run", "--dir", "/tmp", "--", "false", "--help", "--bogus"});
  unsetenv("PERFTRACKER_LIBRARY");
  CHECK(r.code == 1);
}

}  // namespace
}  // namespace perftracker::testing
