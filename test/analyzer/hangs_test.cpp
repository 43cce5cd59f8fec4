// Hang detection against the live slots: the hung collective is the first one no rank completed,
// whoever ran ahead of it; a job whose ranks all exited normally is not hung; a reported hang names
// the ranks that were terminated and those that vanished.
#include "analyzer/detect/hangs.h"

#include <catch2/catch.hpp>

#include "test/analyzer/fixture.h"
#include "tools/synthetic/synthetic.h"

using namespace perftracker;           // NOLINT
using namespace perftracker::testing;  // NOLINT
using format::ExitState;

namespace {

constexpr uint64_t kS = 1'000'000'000;

// Four ranks on one communicator, 60 s after the ranks launched all-reduces up to
// `launched[r]`, each having seen #`completed` finish; a rank that launched past #`completed`
// has had one in flight since. The hangs found in it.
std::vector<analyzer::Hang> Launched(std::vector<ExitState> exits, std::vector<uint64_t> launched,
                                     uint64_t completed) {
  analyzer::Dataset ds;
  for (int r = 0; r < 4; ++r) {
    analyzer::RankData d;
    d.identity.rank = r;
    format::LiveState live;
    live.update_mono_ns = 100 * kS;
    live.exit_state = exits[r];
    live.python_stack = {"train.py:10:main", "train.py:42:step"};
    format::CommProgress p{0xC0, 4, uint32_t(r), launched[r], completed, 0, 0};
    if (launched[r] > completed) {
      p.inflight_op = uint8_t(format::CollectiveOp::kAllReduce);
      p.inflight_since_mono_ns = 40 * kS;
    }
    live.comms.push_back(p);
    d.live = live;
    ds.ranks.push_back(std::move(d));
  }
  return analyzer::DetectHangs(ds, 1e9);
}

// Ranks 0-2 launched all-reduce #10; rank 3 is still at #9 (it never arrived) unless
// `all_arrived`.
std::vector<analyzer::Hang> HangsOf(std::vector<ExitState> exits, bool all_arrived = false) {
  return Launched(exits, {10, 10, 10, all_arrived ? 10u : 9u}, 9);
}

constexpr ExitState kNormal = ExitState::kNormalExit;
constexpr ExitState kRunning = ExitState::kRunning;
constexpr ExitState kTerm = ExitState::kSigterm;

}  // namespace

TEST_CASE("a job whose every rank exited normally is not hung", "[analyzer][hang]") {
  CHECK(HangsOf({kNormal, kNormal, kNormal, kNormal}).empty());
  CHECK(HangsOf({kNormal, kNormal, kNormal, kNormal}, true).empty());
}

TEST_CASE("still running everywhere: the hang is reported, nobody vanished", "[analyzer][hang]") {
  const auto hangs = HangsOf({kRunning, kRunning, kRunning, kRunning});
  REQUIRE(hangs.size() == 1);
  CHECK(hangs[0].ranks_missing == std::vector<int>{3});
  CHECK(hangs[0].ranks_vanished.empty());
  CHECK(hangs[0].ranks_sigterm.empty());
  CHECK(hangs[0].stuck_s == Approx(60));
}

TEST_CASE("ranks that launched further ahead do not make one that arrived a suspect",
          "[analyzer][hang]") {
  const std::vector<ExitState> running(4, kRunning);
  // Rank 3 never launched #10; rank 2 launched it and stopped there, while ranks 0 and 1 went on
  // to #14 (nothing blocked their hosts sooner).
  auto hangs = Launched(running, {14, 14, 10, 9}, 9);
  REQUIRE(hangs.size() == 1);
  CHECK(hangs[0].sequence == 10);
  CHECK(hangs[0].ranks_missing == std::vector<int>{3});
  CHECK(hangs[0].ranks_arrived == std::vector<int>{0, 1, 2});
  CHECK_FALSE(hangs[0].communication);
  // Every rank launched #10 and none saw it finish: the transfer is stuck, whoever ran ahead.
  hangs = Launched(running, {12, 14, 10, 11}, 9);
  REQUIRE(hangs.size() == 1);
  CHECK(hangs[0].communication);
  CHECK(hangs[0].ranks_missing.empty());
  CHECK(hangs[0].sequence == 10);
  // A collector that saw no collective finish: the first one some rank never launched.
  hangs = Launched(running, {14, 14, 10, 9}, 0);
  REQUIRE(hangs.size() == 1);
  CHECK(hangs[0].ranks_missing == std::vector<int>{3});
}

TEST_CASE("a rank that vanished while the others exited is named", "[analyzer][hang]") {
  const auto hangs = HangsOf({kNormal, kNormal, kNormal, kRunning});
  REQUIRE(hangs.size() == 1);
  CHECK(hangs[0].ranks_missing == std::vector<int>{3});
  CHECK(hangs[0].ranks_vanished == std::vector<int>{3});
  CHECK(hangs[0].ranks_exited_normally == std::vector<int>{0, 1, 2});
}

TEST_CASE("terminated ranks are named in the hang", "[analyzer][hang]") {
  const auto hangs = HangsOf({kTerm, kTerm, kTerm, kRunning});
  REQUIRE(hangs.size() == 1);
  CHECK(hangs[0].ranks_sigterm == std::vector<int>{0, 1, 2});
  CHECK(hangs[0].ranks_vanished == std::vector<int>{3});
  const auto comm = HangsOf({kTerm, kTerm, kTerm, kTerm}, true);
  REQUIRE(comm.size() == 1);
  CHECK(comm[0].communication);
  CHECK(comm[0].ranks_sigterm == std::vector<int>{0, 1, 2, 3});
}

TEST_CASE("the report's hang evidence carries the exit states", "[analyzer][hang]") {
  const std::string dir = MakeTempDir();
  JobSpec spec;
  spec.shape = SmallShape();
  spec.shape.fault = synthetic::Fault::kHang;
  spec.shape.fault_rank = 3;
  spec.edit_live = [](int rank, format::LiveState* live) {
    live->exit_state = rank == 3 ? kRunning : kTerm;
  };
  WriteJob(dir, spec);
  const CliResult r = Cli({"analyze", dir, "--json", "-", "--threads", "2"});
  CliResult text = Cli({"analyze", dir});
  RemoveTree(dir);
  REQUIRE(r.code == 0);
  REQUIRE(r.json["hangs"].size() == 1);
  const Json& h = r.json["hangs"][0];
  CHECK(h["ranks_vanished"] == Json::array({3}));
  CHECK(h["ranks_sigterm"] == Json::array({0, 1, 2, 4, 5, 6, 7}));
  bool found = false;
  for (const Json& c : r.json["candidates"]) {
    if (c["category"] != "hang") continue;
    found = true;
    CHECK(c["evidence"]["ranks_vanished"] == Json::array({3}));
  }
  CHECK(found);
  CHECK(text.out.find("vanished without an exit record") != std::string::npos);
}

TEST_CASE("the report shows no hang when the synthetic job exited normally", "[analyzer][hang]") {
  const std::string dir = MakeTempDir();
  JobSpec spec;
  spec.shape = SmallShape();
  spec.shape.fault = synthetic::Fault::kHang;
  spec.shape.fault_rank = 3;
  spec.edit_live = [](int, format::LiveState* live) { live->exit_state = kNormal; };
  WriteJob(dir, spec);
  const CliResult r = Cli({"analyze", dir, "--json", "-", "--threads", "2"});
  RemoveTree(dir);
  REQUIRE(r.code == 0);
  CHECK(r.json["hangs"].empty());
}
