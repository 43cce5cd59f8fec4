// The collective-period iteration detector (preload/core/iteration_period.h) on synthetic launch
// sequences: warm-up prefixes, all-equal collectives, interleaved communicators, noise, and
// ranks that see the same sequence with different timing.
#include "preload/core/iteration_period.h"

#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <vector>

using perftracker::preload::IterationBoundary;
using perftracker::preload::IterationPeriod;
using perftracker::preload::PeriodDetector;

namespace {

constexpr uint64_t kMs = 1'000'000;

struct Sent {
  uint64_t comm;
  uint32_t symbol;
  uint64_t t;
};

// One rank's launches, with a clock and per-communicator sequence numbers.
struct Rank {
  std::vector<Sent> launches;
  uint64_t now = 1'000 * kMs;
  double scale = 1.0;  // a slower or faster rank
  std::mt19937_64 rng{1};
  double jitter = 0;  // relative, uniform +-

  void Wait(uint64_t ns) {
    std::uniform_real_distribution<double> u(-jitter, jitter);
    now += static_cast<uint64_t>(static_cast<double>(ns) * scale * (1 + u(rng)));
  }
  void Launch(uint64_t comm, uint32_t symbol, uint64_t gap_before) {
    Wait(gap_before);
    launches.push_back({comm, symbol, now});
  }
  // Forward pass, then the buckets of the backward pass.
  void Iteration(uint64_t comm, const std::vector<uint32_t>& buckets, uint64_t forward = 40 * kMs,
                 uint64_t between = 3 * kMs) {
    for (size_t i = 0; i < buckets.size(); ++i)
      Launch(comm, buckets[i], i == 0 ? forward : between);
  }

  std::vector<IterationBoundary> Run(std::map<uint64_t, uint64_t>* boundary_comm = nullptr) const {
    IterationPeriod period;
    std::map<uint64_t, uint64_t> seq;
    std::vector<IterationBoundary> out;
    for (const auto& l : launches) {
      const size_t before = out.size();
      period.Feed(l.comm, seq[l.comm]++, l.symbol, l.t, &out);
      for (size_t i = before; boundary_comm && i < out.size(); ++i) {
        (*boundary_comm)[out[i].iteration] = l.comm;
      }
    }
    return out;
  }
};

void CheckNumbered(const std::vector<IterationBoundary>& b) {
  for (size_t i = 0; i < b.size(); ++i) {
    CHECK(b[i].iteration == i);
    if (i > 0) CHECK(b[i].seq > b[i - 1].seq);
  }
}

}  // namespace

TEST_CASE("a periodic sequence after a warm-up ends one iteration per period", "[unit][period]") {
  Rank r;
  for (uint32_t s : {100u, 101u, 100u}) r.Launch(1, s, 1 * kMs);  // initial broadcasts
  constexpr int kIters = 30;
  for (int i = 0; i < kIters; ++i) r.Iteration(1, {1, 2, 3});
  const auto b = r.Run();
  REQUIRE(b.size() == kIters);
  CheckNumbered(b);
  for (size_t i = 0; i < b.size(); ++i) {
    CHECK(b[i].seq == 3 + 3 * i + 2);  // the last all-reduce of each iteration
    CHECK(b[i].t_ns == r.launches[b[i].seq].t);
  }
}

TEST_CASE("all-equal collectives: the forward-pass gap picks the iteration length",
          "[unit][period]") {
  Rank r;
  r.jitter = 0.2;
  r.Launch(1, 9, kMs);  // one broadcast of another size
  constexpr int kIters = 25, kBuckets = 5;
  for (int i = 0; i < kIters; ++i) r.Iteration(1, std::vector<uint32_t>(kBuckets, 7));
  const auto b = r.Run();
  REQUIRE(b.size() == kIters);
  CheckNumbered(b);
  for (size_t i = 0; i < b.size(); ++i) CHECK(b[i].seq == 1 + kBuckets * i + kBuckets - 1);
}

TEST_CASE("an iteration that repeats a pattern twice is one iteration, not two", "[unit][period]") {
  Rank r;
  // Two micro-batches each doing [1, 2]; the optimizer/forward gap only after the second.
  for (int i = 0; i < 20; ++i) {
    r.Launch(1, 1, 40 * kMs);
    r.Launch(1, 2, 3 * kMs);
    r.Launch(1, 1, 3 * kMs);
    r.Launch(1, 2, 3 * kMs);
  }
  const auto b = r.Run();
  REQUIRE(b.size() == 20);
  for (size_t i = 0; i < b.size(); ++i) CHECK(b[i].seq == 4 * i + 3);
}

TEST_CASE("a stray gap (the host descheduled) delays the lock but not the numbering",
          "[unit][period]") {
  Rank r;
  r.jitter = 0.1;
  constexpr int kIters = 40;
  for (int i = 0; i < kIters; ++i) {
    r.Launch(1, 7, 40 * kMs);
    r.Launch(1, 7, i == 1 ? 200 * kMs : 3 * kMs);  // before the lock, larger than any forward pass
    r.Launch(1, 7, 3 * kMs);
  }
  const auto b = r.Run();
  REQUIRE(b.size() == kIters);
  CheckNumbered(b);
  for (size_t i = 0; i < b.size(); ++i) CHECK(b[i].seq == 3 * i + 2);
}

TEST_CASE("all-equal collectives without a gap structure give no iterations", "[unit][period]") {
  Rank r;
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> gap(1.0);
  for (int i = 0; i < 2000; ++i) r.Launch(1, 7, static_cast<uint64_t>(gap(rng) * kMs) + 1);
  CHECK(r.Run().empty());
}

TEST_CASE("noise: an aperiodic collective sequence gives no iterations", "[unit][period]") {
  Rank r;
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<uint32_t> symbol(0, 7);
  std::uniform_int_distribution<uint64_t> gap(1, 20);
  for (int i = 0; i < 5000; ++i) r.Launch(1, symbol(rng), gap(rng) * kMs);
  CHECK(r.Run().empty());
}

TEST_CASE("two interleaved communicators: one source, ranks in other groups number alike",
          "[unit][period]") {
  // Rank A is in data-parallel group 10 and tensor-parallel group 20; rank B in groups 11 and
  // 20. Each interns its patterns in its own order, so their symbols differ.
  auto make = [](uint64_t dp, uint32_t sym_base, double scale) {
    Rank r;
    r.scale = scale;
    r.jitter = 0.1;
    r.Launch(dp, sym_base + 90, kMs);  // DP warm-up broadcast
    r.Launch(dp, sym_base + 91, kMs);
    for (int i = 0; i < 30; ++i) {
      r.Launch(20, sym_base + 5, 20 * kMs);  // TP all-reduces inside the forward pass
      r.Launch(20, sym_base + 5, 5 * kMs);
      r.Launch(20, sym_base + 6, 10 * kMs);  // and the backward
      r.Launch(dp, sym_base + 1, 2 * kMs);   // DP gradient buckets
      r.Launch(dp, sym_base + 2, 2 * kMs);
    }
    return r;
  };
  std::map<uint64_t, uint64_t> comm_a, comm_b;
  const auto a = make(10, 0, 1.0).Run(&comm_a);
  const auto b = make(11, 1000, 1.6).Run(&comm_b);
  REQUIRE(a.size() == 30);
  REQUIRE(b.size() == a.size());
  CheckNumbered(a);
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].seq == b[i].seq);
    // Both lock their data-parallel group first (its gaps are the clearer): the same choice.
    CHECK(comm_a[i] == 10);
    CHECK(comm_b[i] == 11);
  }
}

TEST_CASE("two ranks with different timing agree on every boundary", "[unit][period]") {
  auto make = [](double scale, uint64_t seed, double jitter) {
    Rank r;
    r.scale = scale;
    r.rng.seed(seed);
    r.jitter = jitter;
    r.now += seed * 777 * kMs;  // unrelated clocks
    for (uint32_t s : {50u, 51u, 52u}) r.Launch(3, s, kMs);
    r.Iteration(3, {4, 4, 4, 4, 9}, 60 * kMs);  // the first iteration: buckets not rebuilt yet
    for (int i = 0; i < 40; ++i) r.Iteration(3, {4, 4, 4, 4, 4, 4}, 60 * kMs, 4 * kMs);
    return r;
  };
  const auto a = make(1.0, 1, 0.25).Run();
  for (uint64_t seed = 2; seed < 12; ++seed) {
    INFO("seed " << seed);
    const auto b = make(0.5 + 0.2 * double(seed), seed, 0.25).Run();
    REQUIRE(a.size() >= 40);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].iteration == b[i].iteration);
      CHECK(a[i].seq == b[i].seq);
    }
  }
}

TEST_CASE("a break in the pattern loses the lock; numbering continues after it", "[unit][period]") {
  Rank r;
  for (int i = 0; i < 20; ++i) r.Iteration(1, {1, 2, 3});
  r.Launch(1, 8, 5 * kMs);  // an evaluation all-gather
  for (int i = 0; i < 20; ++i) r.Iteration(1, {1, 2, 3});
  const auto b = r.Run();
  CheckNumbered(b);
  CHECK(b.size() >= 38);
  CHECK(b.size() <= 40);
}

TEST_CASE("a missing sequence number restarts the search", "[unit][period]") {
  PeriodDetector d;
  std::vector<IterationBoundary> out;
  uint64_t t = 0;
  for (uint64_t seq = 0; seq < 60; ++seq) d.Feed(seq, uint32_t(seq % 3), t += kMs, &out);
  REQUIRE(d.locked());
  const size_t before = out.size();
  d.Feed(61, 1, t += kMs, &out);  // 60 never arrived
  CHECK_FALSE(d.locked());
  CHECK(out.size() == before);
  d.Feed(61, 1, t += kMs, &out);  // a repeat is ignored
  CHECK(d.next_iteration() == before);
}
