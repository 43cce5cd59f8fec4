// The plugin's per-connection accounting: wire time is SendWait (sends) / RecvWait (receives)
// only, bytes come from the steps, and foreign handles, full pools and many threads are safe.
#include "preload/nccl/net_links.h"

#include <catch2/catch.hpp>
#include <mutex>
#include <thread>
#include <vector>

#include "preload/nccl/nccl_profiler_abi.h"

using namespace perftracker::preload;
namespace np = perftracker::preload::nccl_profiler;

namespace {

std::mutex g_mu;
std::vector<net::Transfer> g_seen;

void Collect(net::Connection&, const net::Transfer& t) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_seen.push_back(t);
}

// One step: waits for the GPU `gpu` ns, then `wire` ns on the wire; returns the end time.
uint64_t SendStep(net::NetLinks& l, void* op, uint64_t t, uint64_t gpu, uint64_t wire,
                  uint64_t bytes) {
  void* s = l.StartStep(op, t);
  l.StepState(s, np::kSendGpuWait, bytes, t);
  l.StepState(s, np::kSendWait, bytes, t + gpu);
  l.Stop(s, t + gpu + wire);
  return t + gpu + wire;
}

}  // namespace

TEST_CASE("a send's wire time excludes waiting for the GPU and the peer", "[net]") {
  g_seen.clear();
  auto links = std::make_unique<net::NetLinks>(&Collect);
  net::Comm* comm = links->OpenComm(0xabc, 8, 3);
  REQUIRE(comm != nullptr);
  void* op = links->StartOp(comm, 4, true, 1 << 20, 2, 1000);
  REQUIRE(op != nullptr);
  uint64_t t = SendStep(*links, op, 1000, 700, 300, 1 << 20);
  void* s = links->StartStep(op, t);
  links->StepState(s, np::kSendGpuWait, 0, t);
  links->StepState(s, np::kSendPeerWait, 0, t + 100);
  links->StepState(s, np::kSendWait, 1 << 20, t + 200);
  links->Stop(s, t + 600);
  links->Stop(op, t + 600);
  REQUIRE(g_seen.size() == 1);
  CHECK(g_seen[0].peer == 4);
  CHECK(g_seen[0].is_send);
  CHECK(g_seen[0].bytes == 2u << 20);
  CHECK(g_seen[0].wire_ns == 300 + 400);
  CHECK(g_seen[0].start_ns == 1000);
  CHECK(g_seen[0].seq == 1);
  int connections = 0;
  links->ForEachConnection([&](const net::Connection& c) {
    ++connections;
    CHECK(c.bytes.load() == 2u << 20);
    CHECK(c.wire_ns.load() == 700);
    CHECK(c.ops.load() == 1);
  });
  CHECK(connections == 1);
}

TEST_CASE("receives count RecvWait, and directions, peers and comms are separate cells", "[net]") {
  g_seen.clear();
  auto links = std::make_unique<net::NetLinks>(&Collect);
  net::Comm* a = links->OpenComm(1, 4, 0);
  net::Comm* b = links->OpenComm(2, 4, 0);
  for (net::Comm* comm : {a, b}) {
    for (const bool send : {true, false}) {
      void* op = links->StartOp(comm, 1, send, 0, 1, 0);
      void* s = links->StartStep(op, 0);
      links->StepState(s, send ? np::kSendWait : np::kRecvWait, 512, 10);
      links->StepState(s, np::kRecvGpuWait, 512, 60);
      links->Stop(s, 80);
      links->Stop(op, 90);
    }
  }
  REQUIRE(g_seen.size() == 4);
  for (const net::Transfer& t : g_seen) CHECK(t.wire_ns == 50);
  CHECK(g_seen[1].seq == 2);  // per communicator
  CHECK(g_seen[2].seq == 1);
  int connections = 0;
  links->ForEachConnection([&](const net::Connection&) { ++connections; });
  CHECK(connections == 4);
}

TEST_CASE("steps without sizes fall back to the op chunks, and bad handles are ignored", "[net]") {
  g_seen.clear();
  auto links = std::make_unique<net::NetLinks>(&Collect);
  net::Comm* comm = links->OpenComm(7, 2, 1);
  void* op = links->StartOp(comm, 0, true, 4096, 3, 0);
  links->Stop(op, 10);
  REQUIRE(g_seen.size() == 1);
  CHECK(g_seen[0].bytes == 3 * 4096);
  int local = 0;
  links->Stop(&local, 5);
  links->StepState(&local, np::kSendWait, 1, 5);
  links->Stop(nullptr, 5);
  CHECK(links->StartStep(&local, 5) == nullptr);
  CHECK(links->StartOp(nullptr, 1, true, 1, 1, 0) == nullptr);
  CHECK(links->StartOp(comm, -1, true, 1, 1, 0) == nullptr);
  links->Stop(op, 20);  // already stopped: nothing more
  CHECK(g_seen.size() == 1);
}

TEST_CASE("a full pool drops and counts, never blocks", "[net]") {
  auto links = std::make_unique<net::NetLinks>(nullptr);
  net::Comm* comm = links->OpenComm(7, 2, 1);
  std::vector<void*> ops;
  for (size_t i = 0; i < net::NetLinks::kOps + 5; ++i) {
    ops.push_back(links->StartOp(comm, 0, true, 1, 1, 0));
  }
  CHECK(ops.back() == nullptr);
  CHECK(links->dropped() == 5);
  for (void* op : ops) links->Stop(op, 1);
  CHECK(links->StartOp(comm, 0, true, 1, 1, 0) != nullptr);
}

TEST_CASE("proxy threads of many communicators account concurrently", "[net]") {
  auto links = std::make_unique<net::NetLinks>(nullptr);
  constexpr int kThreads = 4, kOpsEach = 2000;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      net::Comm* comm = links->OpenComm(100 + static_cast<uint64_t>(i), 8, 0);
      for (int k = 0; k < kOpsEach; ++k) {
        void* op = links->StartOp(comm, k % 3, true, 0, 1, 0);
        SendStep(*links, op, 0, 5, 10, 100);
        links->Stop(op, 20);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  uint64_t bytes = 0, wire = 0;
  links->ForEachConnection([&](const net::Connection& c) {
    bytes += c.bytes.load();
    wire += c.wire_ns.load();
  });
  CHECK(bytes == uint64_t{kThreads} * kOpsEach * 100);
  CHECK(wire == uint64_t{kThreads} * kOpsEach * 10);
  CHECK(links->dropped() == 0);
}
