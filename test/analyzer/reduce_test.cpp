// perftracker reduce: a node's ring files as one reduced file. Analyzing the reduced files of
// every node (or some reduced, some raw; or a reduction of reductions) gives the report the raw
// rings give; damaged reduced files give diagnostics and partial results, never a crash.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "analyzer/ingest/reduced.h"
#include "schemas/format/crc32c.h"
#include "test/analyzer/fixture.h"

namespace perftracker::testing {
namespace {

namespace fs = std::filesystem;

// 16 ranks on 4 hosts, rank 6 on a slow GPU; its GC on rank 9 in the second half, so more than
// one candidate and the "when" of a finding must survive the reduction.
JobSpec TwoFaultJob() {
  JobSpec spec;
  spec.shape = SmallShape();
  spec.ranks = 16;
  spec.ranks_per_host = 4;
  spec.windows = 8;
  spec.shape.fault = synthetic::Fault::kSlowGpu;
  spec.shape.fault_rank = 6;
  spec.shape.fault_factor = 1.3;
  spec.edit = [](int rank, format::Window* w) {
    if (rank != 9 || w->window_seq < 4) return;
    for (format::FunctionPattern& p : w->functions) {
      if (p.kind == format::FunctionKind::kPython) p.self_ns += p.self_ns / 2;
    }
  };
  return spec;
}

Json AnalyzeDir(const std::string& dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"analyze", dir, "--json", "-", "--jobs", "2", "--top", "20"};
  args.insert(args.end(), extra.begin(), extra.end());
  const CliResult r = Cli(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  return r.json;
}

void Reduce(const std::string& from, const std::string& to) {
  const CliResult r = Cli({"reduce", from, "-o", to});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("-> " + to) != std::string::npos);
}

// Candidates agree when they name the same cause on the same ranks, with scores equal to the
// report's rounding.
void CheckSameCandidates(const Json& a, const Json& b) {
  REQUIRE(a["candidates"].size() == b["candidates"].size());
  REQUIRE(!a["candidates"].empty());
  for (size_t i = 0; i < a["candidates"].size(); ++i) {
    const Json& x = a["candidates"][i];
    const Json& y = b["candidates"][i];
    INFO("candidate " << i << ": " << x.dump() << "\nvs " << y.dump());
    CHECK(x["category"] == y["category"]);
    CHECK(x["rank_set"] == y["rank_set"]);
    CHECK(x["function"] == y["function"]);
    CHECK(std::abs(x["score"].get<double>() - y["score"].get<double>()) <= 1e-9);
    CHECK(x["evidence"] == y["evidence"]);
  }
  CHECK(a["iterations"] == b["iterations"]);
  CHECK(a["inputs"]["files"] == b["inputs"]["files"]);
}

}  // namespace

TEST_CASE("reduce -> gather -> analyze reports what analyze on the rings reports",
          "[analyzer][reduce]") {
  const std::string dir = MakeTempDir();
  WriteJob(dir + "/raw", TwoFaultJob());
  const Json raw = AnalyzeDir(dir + "/raw");
  REQUIRE(raw["candidates"][0]["rank_set"] == Json::array({6}));

  fs::create_directories(dir + "/gathered");
  for (int node = 0; node < 4; ++node) {
    const std::string n = "node" + std::to_string(node);
    Reduce(dir + "/raw/job/" + n, dir + "/gathered/" + n + ".ptrd");
  }
  // A reduced file is a fraction of its rings.
  uint64_t rings = 0, reduced = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir + "/raw")) {
    if (e.is_regular_file()) rings += e.file_size();
  }
  for (const auto& e : fs::directory_iterator(dir + "/gathered")) reduced += e.file_size();
  CHECK(reduced * 4 < rings);
  CheckSameCandidates(raw, AnalyzeDir(dir + "/gathered"));

  SECTION("reduced files and rings mixed") {
    fs::create_directories(dir + "/mixed");
    fs::copy(dir + "/gathered/node0.ptrd", dir + "/mixed/node0.ptrd");
    fs::copy(dir + "/gathered/node3.ptrd", dir + "/mixed/node3.ptrd");
    fs::copy(dir + "/raw/job/node1", dir + "/mixed/node1");
    fs::copy(dir + "/raw/job/node2", dir + "/mixed/node2");
    CheckSameCandidates(raw, AnalyzeDir(dir + "/mixed"));
  }
  SECTION("a reduction of reductions (a rack's), and one reduced file named directly") {
    Reduce(dir + "/gathered", dir + "/rack.ptrd");
    CheckSameCandidates(raw, AnalyzeDir(dir + "/rack.ptrd"));
  }
  SECTION("a selection applies when reducing and is reported when it cannot apply") {
    const Json last = AnalyzeDir(dir + "/raw", {"--last", "3"});
    fs::create_directories(dir + "/last");
    for (int node = 0; node < 4; ++node) {
      const std::string n = "node" + std::to_string(node);
      const CliResult r =
          Cli({"reduce", dir + "/raw/job/" + n, "-o", dir + "/last/" + n + ".ptrd", "--last", "3"});
      REQUIRE(r.code == 0);
    }
    CheckSameCandidates(last, AnalyzeDir(dir + "/last"));
    const Json ignored = AnalyzeDir(dir + "/gathered", {"--last", "3"});
    CHECK(ignored["inputs"]["diagnostics"]["selection_ignored"] == 4);
  }
  RemoveTree(dir);
}

TEST_CASE("damaged reduced files: diagnostics and the other nodes' ranks", "[analyzer][reduce]") {
  const std::string dir = MakeTempDir();
  JobSpec spec = TwoFaultJob();
  WriteJob(dir + "/raw", spec);
  fs::create_directories(dir + "/in");
  for (int node = 0; node < 4; ++node) {
    const std::string n = "node" + std::to_string(node);
    Reduce(dir + "/raw/job/" + n, dir + "/in/" + n + ".ptrd");
  }
  const std::string victim = dir + "/in/node3.ptrd";
  const std::vector<uint8_t> good = ReadBytes(victim);
  auto analyze_with = [&](std::vector<uint8_t> bytes) {
    WriteBytes(victim, bytes);
    const Json j = AnalyzeDir(dir + "/in");
    CHECK(j["ranks"]["found"] == 12);  // node3's four are lost, the rest kept
    CHECK(j["candidates"][0]["rank_set"] == Json::array({6}));
    return j["inputs"]["diagnostics"];
  };
  std::vector<uint8_t> bytes = good;
  bytes.resize(bytes.size() / 2);
  CHECK(analyze_with(bytes)["truncated_tail"] == 1);
  bytes = good;
  bytes[bytes.size() - 10] ^= 0x40;
  CHECK(analyze_with(bytes)["crc_mismatch"] == 1);
  bytes = good;
  bytes[20] ^= 0x01;  // the payload size, under the header CRC
  CHECK(analyze_with(bytes)["corrupt_header"] == 1);
  bytes = good;
  bytes[8] = 2;  // a newer version, its header CRC recomputed as its writer would
  const uint32_t crc = format::Crc32c(bytes.data(), 36);
  std::memcpy(bytes.data() + 36, &crc, 4);
  CHECK(analyze_with(bytes)["unsupported_version"] == 1);
  CHECK(analyze_with(std::vector<uint8_t>(5000, 'z'))["not_ring_file"] == 1);
  CHECK(analyze_with({})["not_ring_file"] == 1);
  RemoveTree(dir);
}

TEST_CASE("a rank that fails its checks is left out of a reduced file's ranks",
          "[analyzer][reduce]") {
  using analyzer::FileSet;
  FileSet set;
  set.ring_files = 3;
  set.catalog.Intern(analyzer::FunctionInfo{11, format::FunctionKind::kPython, "f", false, 0});
  for (int rank = 0; rank < 3; ++rank) {
    analyzer::RankData& r = set.ranks.emplace_back();
    r.identity.rank = rank;
    r.identity.world_size = 3;
    for (uint64_t key = 0; key < 2; ++key) {
      analyzer::Slot& s = r.slots.emplace_back();
      s.key = key;
      s.functions.Mutable(0).self_ns = 100;
    }
  }
  set.ranks[1].slots[1].functions.Mutable(0).total_ns = std::nanf("");
  set.ranks[2].slots[1].key = 0;  // slots out of order: FindSlot's binary search would lie
  const std::vector<uint8_t> bytes = analyzer::EncodeReduced(set, "host");
  FileSet back;
  std::string error;
  REQUIRE(analyzer::DecodeReduced(bytes, &back, &error) == analyzer::ReducedStatus::kOk);
  REQUIRE(back.ranks.size() == 1);
  CHECK(back.ranks[0].rank() == 0);
  CHECK(back.ranks[0].slots[1].functions[0].self_ns == 100);
  CHECK(back.ring_files == 3);
  CHECK(back.diagnostics.Count(analyzer::Diagnostic::kUndecodableRecord) == 2);
}

TEST_CASE("reduce: usage errors and unwritable output are one line, exit 2",
          "[analyzer][reduce][cli]") {
  const std::string dir = MakeTempDir();
  JobSpec spec;
  spec.shape = SmallShape();
  spec.ranks = 2;
  WriteJob(dir, spec);
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"reduce"},
                                             {"reduce", dir},
                                             {"reduce", dir, "-o"},
                                             {"reduce", dir, "-o", dir + "/x.ptrd", "--bogus"},
                                             {"reduce", dir, "-o", dir + "/x.ptrd", "--last", "0"},
                                             {"reduce", "/nonexistent/dir", "-o", dir + "/x.ptrd"},
                                             {"reduce", dir, "-o", "/nonexistent/dir/x.ptrd"}}) {
    const CliResult r = Cli(args);
    INFO(args.size() << " args: " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find("perftracker reduce: ") == 0);
  }
  CHECK(!fs::exists(dir + "/x.ptrd"));
  // Not named *.ptrd: written, with a warning that a directory scan will not find it.
  const CliResult odd = Cli({"reduce", dir, "-o", dir + "/node.out"});
  CHECK(odd.code == 0);
  CHECK(odd.err.find("does not end in .ptrd") != std::string::npos);
  RemoveTree(dir);
}

}  // namespace perftracker::testing
