// Peer groups on hand-made ranks: which function sets keep a pair of ranks together.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "analyzer/detect/peers.h"

namespace perftracker::testing {
namespace {

// Two ranks on one all-reduce communicator, four slots each running `functions[r]`, grouped.
std::vector<analyzer::PeerGroup> GroupPair(const std::vector<std::vector<uint32_t>>& functions) {
  analyzer::Dataset ds;
  analyzer::CollectiveInfo all_reduce;
  all_reduce.comm_id = 0xC0;
  all_reduce.comm_size = 2;
  all_reduce.op = format::CollectiveOp::kAllReduce;
  all_reduce.bytes = 1 << 20;
  const uint32_t coll = ds.catalog.Intern(all_reduce);
  // Functions 10-13 are 6-9 reached by other call paths (the same names, other parents);
  // 14-17 are functions of their own.
  for (uint32_t i = 0; i < 18; ++i) {
    analyzer::FunctionInfo f;
    f.id = i + 1;
    f.kind = format::FunctionKind::kPython;
    const uint32_t code = i >= 10 && i < 14 ? i - 4 : i;
    f.name = "train.py:" + std::to_string(code) + ":f" + std::to_string(code);
    f.parent_id = i >= 10 && i < 14 ? 1 : 0;
    ds.catalog.Intern(f);
  }
  for (int r = 0; r < 2; ++r) {
    analyzer::RankData d;
    d.identity.rank = r;
    for (uint64_t k = 0; k < 4; ++k) {
      analyzer::Slot s;
      s.key = k;
      s.iterations = 10;
      s.collectives.resize(coll + 1);
      s.collectives[coll].count = 10;
      for (const uint32_t fn : functions[static_cast<size_t>(r)]) s.functions.Mutable(fn).count = 10;
      d.slots.push_back(std::move(s));
    }
    ds.ranks.push_back(std::move(d));
  }
  return analyzer::GroupPeers(ds);
}

std::vector<uint32_t> Range(uint32_t lo, uint32_t hi) {
  std::vector<uint32_t> v;
  for (uint32_t i = lo; i < hi; ++i) v.push_back(i);
  return v;
}

}  // namespace

TEST_CASE("ranks running the same functions by other call paths are peers", "[analyzer][peers]") {
  // Rank 1 reached four of its ten functions under another caller (a kernel launched, a send
  // made while another frame was open): 6 of 14 alike by call path, all alike by name.
  std::vector<uint32_t> other_paths = Range(0, 6);
  for (uint32_t i = 10; i < 14; ++i) other_paths.push_back(i);
  const auto groups = GroupPair({Range(0, 10), other_paths});
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].members == std::vector<size_t>{0, 1});
}

TEST_CASE("a pair of pipeline stages, each with functions of its own, stays apart",
          "[analyzer][peers]") {
  std::vector<uint32_t> last = Range(0, 6);
  for (uint32_t i = 14; i < 18; ++i) last.push_back(i);
  CHECK(GroupPair({Range(0, 10), last}).size() == 2);
}

}  // namespace perftracker::testing
