// Every fault class of the synthetic job -> the right top candidate (category, rank set,
// function); clean and pipeline runs -> nothing above the threshold. The fixtures simulate the
// physics (late arrivals, waits, longer iterations everywhere), not labels.
#include <catch2/catch.hpp>

#include "test/analyzer/fixture.h"

namespace perftracker::testing {
namespace {

using synthetic::Fault;

struct Case {
  const char* name;
  Fault fault;
  int rank, peer;
  double factor;
  bool ring;
  const char* category;
  std::vector<int> rank_set;  // empty: every rank
  const char* function;       // substring of the top candidate's function
};

Json AnalyzeFault(const JobSpec& spec, const std::string& dir) {
  WriteJob(dir, spec);
  const CliResult r = Cli({"analyze", dir, "--json", "-", "--threads", "2", "--top", "20"});
  REQUIRE(r.code == 0);
  REQUIRE_FALSE(r.json.is_discarded());
  return r.json;
}

std::vector<int> AllRanks(int n) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

}  // namespace

TEST_CASE("each fault class names its cause first", "[analyzer][faults]") {
  const std::vector<Case> cases = {
      {"throttled gpu", Fault::kSlowGpu, 5, -1, 1.3, false, "gpu_compute", {5}, "compute kernels"},
      {"slow link", Fault::kSlowLink, 6, 7, 5, true, "communication_link", {6, 7}, "link rank 6"},
      {"slow node links",
       Fault::kSlowNodeLinks,
       9,
       -1,
       5,
       true,
       "communication_link",
       {8, 9, 10, 11},
       "links of node node2"},
      {"slow pcie", Fault::kSlowPcie, 2, -1, 4, false, "gpu_memory", {2}, "Memcpy HtoD"},
      {"slow data loader, one rank",
       Fault::kSlowDataLoader,
       11,
       -1,
       20,
       false,
       "dataloader",
       {11},
       "DataLoaderIter"},
      {"slow data loader, all ranks",
       Fault::kSlowDataLoader,
       -1,
       -1,
       20,
       false,
       "dataloader",
       {},
       "DataLoaderIter"},
      // 0.3% of the step 30 times over: 9%, 8% above the expected range, past the 6% a
      // finding on every rank must cost (Thresholds::whole_group_material).
      {"host sync on all ranks",
       Fault::kHostSync,
       -1,
       -1,
       30,
       false,
       "software_all_ranks",
       {},
       "Tensor.item"},
      {"gc on one rank", Fault::kGc, 4, -1, 60, false, "gc", {4}, "gc.collect"},
      {"cpu contention", Fault::kCpuContention, 13, -1, 1.6, false, "host_cpu", {13}, ""},
      {"hang", Fault::kHang, 7, -1, 1, false, "hang", {7}, "all_reduce"},
      {"communication hang", Fault::kCommHang, -1, -1, 1, false, "hang", {}, "all_reduce"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      const std::string dir = MakeTempDir();
      JobSpec spec;
      spec.ranks = 16;
      spec.shape = SmallShape();
      spec.shape.fault = c.fault;
      spec.shape.fault_rank = c.rank;
      spec.shape.fault_peer = c.peer;
      spec.shape.fault_factor = c.factor;
      spec.shape.p2p_ring = c.ring;
      const Json j = AnalyzeFault(spec, dir);
      RemoveTree(dir);
      REQUIRE(j["candidates"].size() >= 1);
      const Json& top = j["candidates"][0];
      INFO(top.dump(2));
      CHECK(top["category"] == c.category);
      CHECK(top["rank_set"].get<std::vector<int>>() ==
            (c.rank_set.empty() ? AllRanks(16) : c.rank_set));
      CHECK(top["function"].get<std::string>().find(c.function) != std::string::npos);
      CHECK(top["impact_s_per_iter"].get<double>() >= 0);
      if (c.fault == Fault::kSlowGpu) CHECK(top["kind"] == "kernel");
      CHECK(top["evidence"].contains("peer_median"));
      CHECK(top["evidence"].contains("windows_seen"));
      // The culprit, not its victims: nothing else comes close.
      if (j["candidates"].size() > 1 && c.fault != Fault::kHang && c.fault != Fault::kCommHang) {
        CHECK(j["candidates"][1]["score"].get<double>() < 0.5 * top["score"].get<double>());
      }
    }
  }
}

TEST_CASE("a hang names the missing rank and its last Python frame", "[analyzer][hang]") {
  const std::string dir = MakeTempDir();
  JobSpec spec;
  spec.shape = SmallShape();
  spec.shape.fault = Fault::kHang;
  spec.shape.fault_rank = 3;
  const Json j = AnalyzeFault(spec, dir);
  RemoveTree(dir);
  REQUIRE(j["hangs"].size() == 1);
  const Json& h = j["hangs"][0];
  CHECK(h["ranks_missing"] == Json::array({3}));
  CHECK(h["ranks_arrived"] == Json::array({0, 1, 2, 4, 5, 6, 7}));
  CHECK(h["sequence"] == 32);
  CHECK(h["kind"] == "non_communication");
  CHECK(h["last_python_frame"][0]["frame"] == "train/data.py:88:collate");
  CHECK(h["collective"].get<std::string>().starts_with("all_reduce"));
}

TEST_CASE("clean runs report nothing above the threshold", "[analyzer][clean]") {
  for (const uint64_t run : {1, 2, 3}) {
    const std::string dir = MakeTempDir();
    JobSpec spec;
    spec.ranks = 16;
    spec.shape = SmallShape();
    spec.shape.jitter = 0.05;
    spec.shape.run_seed = run;
    spec.shape.p2p_ring = run == 2;
    const Json j = AnalyzeFault(spec, dir);
    RemoveTree(dir);
    INFO("run " << run << ": " << j["candidates"].dump(2));
    CHECK(j["candidates"].empty());
    CHECK(j["hangs"].empty());
  }
}

TEST_CASE("pipeline stages with unequal work are not compared as peers", "[analyzer][pipeline]") {
  const std::string dir = MakeTempDir();
  JobSpec spec;
  spec.ranks = 16;
  spec.shape = SmallShape();
  spec.shape.pipeline_stages = 4;
  spec.shape.jitter = 0.05;
  const Json j = AnalyzeFault(spec, dir);
  RemoveTree(dir);
  INFO(j["candidates"].dump(2));
  CHECK(j["peer_groups"].size() == 4);
  CHECK(j["candidates"].empty());
}

TEST_CASE("a pipeline stage's slow GPU is found within its stage", "[analyzer][pipeline]") {
  const std::string dir = MakeTempDir();
  JobSpec spec;
  spec.ranks = 16;
  spec.shape = SmallShape();
  spec.shape.pipeline_stages = 2;
  spec.shape.fault = Fault::kSlowGpu;
  spec.shape.fault_rank = 12;
  spec.shape.fault_factor = 1.3;
  const Json j = AnalyzeFault(spec, dir);
  RemoveTree(dir);
  REQUIRE_FALSE(j["candidates"].empty());
  CHECK(j["candidates"][0]["category"] == "gpu_compute");
  CHECK(j["candidates"][0]["rank_set"] == Json::array({12}));
}

TEST_CASE("a fault that starts mid-run is found and persistence is reported",
          "[analyzer][temporal]") {
  const std::string dir = MakeTempDir();
  JobSpec spec;
  spec.windows = 6;
  spec.shape = SmallShape();
  spec.shape.fault = Fault::kSlowDataLoader;
  spec.shape.fault_factor = 20;
  spec.shape.fault_from_window = 3;
  const Json j = AnalyzeFault(spec, dir);
  RemoveTree(dir);
  REQUIRE_FALSE(j["candidates"].empty());
  const Json& top = j["candidates"][0];
  CHECK(top["category"] == "dataloader");
  CHECK(top["rank_set"].size() == 8);
  CHECK(top["evidence"]["windows_seen"] == 3);
}

// The NCCL profiler plugin's network cells (net_send wire time per link) locate what a ring
// all-reduce hides: one slow hop slows every rank's collectives alike, so no rank stands out,
// but the sender on the slow hop is the only one whose data sits on the wire longer.
TEST_CASE("network cells name a slow link or a slow node", "[analyzer][faults][net]") {
  struct NetCase {
    const char* name;
    Fault fault;
    int rank, peer;
    std::vector<int> rank_set;
    const char* function;
  };
  // 16 ranks, 4 per host: the data-parallel ring crosses hosts at 3->4, 7->8, 11->12, 15->0.
  const std::vector<NetCase> cases = {
      {"slow link", Fault::kSlowLink, 7, 8, {7, 8}, "link rank 7 <-> rank 8"},
      {"slow node", Fault::kSlowNodeLinks, 9, -1, {8, 9, 10, 11}, "links of node node2"},
      {"clean", Fault::kNone, -1, -1, {}, ""},
  };
  for (const NetCase& c : cases) {
    SECTION(c.name) {
      const std::string dir = MakeTempDir();
      JobSpec spec;
      spec.ranks = 16;
      spec.shape = SmallShape();
      spec.shape.net_links = true;
      spec.shape.fault = c.fault;
      spec.shape.fault_rank = c.rank;
      spec.shape.fault_peer = c.peer;
      spec.shape.fault_factor = 1 / 0.3;
      const Json j = AnalyzeFault(spec, dir);
      RemoveTree(dir);
      INFO(j["candidates"].dump(2));
      if (c.rank_set.empty()) {
        for (const Json& cand : j["candidates"]) CHECK(cand["category"] != "communication_link");
        continue;
      }
      REQUIRE(j["candidates"].size() >= 1);
      const Json& top = j["candidates"][0];
      CHECK(top["category"] == "communication_link");
      CHECK(top["rank_set"].get<std::vector<int>>() == c.rank_set);
      CHECK(top["function"].get<std::string>().find(c.function) != std::string::npos);
      CHECK(top["evidence"]["throughput_gbps"].get<double>() <
            0.5 * top["evidence"]["peers_throughput_gbps"].get<double>());
    }
  }
}

}  // namespace perftracker::testing
