// The writer's collective-period iterations (preload/core/collective_iterations.h): iteration
// events appear for a loop of collectives without step markers, and Python step markers win.
#include "preload/core/collective_iterations.h"

#include <catch2/catch.hpp>

using namespace perftracker;           // NOLINT
using namespace perftracker::preload;  // NOLINT

namespace {

constexpr uint64_t kMs = 1'000'000;

void AddCollective(Tables& tables, uint64_t bytes) {
  tables.collectives.push_back(
      CollectiveEntry{0xC0, 2, 0, format::CollectiveOp::kAllReduce, -1, bytes, "ncclAllReduce"});
  tables.collective_count.store(static_cast<uint32_t>(tables.collectives.size()));
}

// `iters` iterations of all-reduces on slots 0, 1, 2, one batch per iteration.
size_t Run(CollectiveIterations& ci, const Tables& tables, int iters, bool markers) {
  size_t iterations = 0;
  uint64_t t = 1000 * kMs, seq = 0;
  for (int i = 0; i < iters; ++i) {
    std::vector<Event> batch;
    t += 30 * kMs;
    for (uint32_t slot = 0; slot < 3; ++slot) {
      batch.push_back(Event{slot, EventType::kCollLaunch, {}, t += 2 * kMs, seq++, 100, 0, 0});
    }
    if (markers) batch.push_back(Event{0, EventType::kIteration, {}, t + kMs, 0, 0, 0, 0});
    ci.Synthesize(&batch, tables);
    for (const Event& e : batch) iterations += e.type == EventType::kIteration;
  }
  return iterations;
}

}  // namespace

TEST_CASE("collective launches without step markers become iterations", "[recorder][period]") {
  Tables tables;
  tables.collectives.reserve(8);
  for (uint64_t bytes : {4u << 20, 1u << 20, 256u << 10}) AddCollective(tables, bytes);
  CollectiveIterations ci;
  CHECK(Run(ci, tables, 20, false) == 20);
  CHECK(ci.synthesized() == 20);
  CHECK_FALSE(ci.python_markers_seen());
}

TEST_CASE("Python step markers win over the collective period", "[recorder][period]") {
  Tables tables;
  tables.collectives.reserve(8);
  for (uint64_t bytes : {4u << 20, 1u << 20, 256u << 10}) AddCollective(tables, bytes);
  CollectiveIterations ci;
  CHECK(Run(ci, tables, 20, true) == 20);  // the markers only
  CHECK(ci.synthesized() == 0);
  CHECK(ci.python_markers_seen());
}
