// Packed function sums (analyzer/ingest/function_sums.h) read back exactly what was summed, whatever is
// done to them after packing, and take the room only of the fields in use.
#include <catch2/catch.hpp>
#include <random>

#include "analyzer/ingest/model.h"

namespace perftracker::testing {
namespace {

using analyzer::FunctionSum;
using analyzer::FunctionSums;

bool Same(const FunctionSum& a, const FunctionSum& b) {
  return a.self_ns == b.self_ns && a.critical_ns == b.critical_ns && a.wait_ns == b.wait_ns &&
         a.device_est_ns == b.device_est_ns && a.count == b.count && a.total_ns == b.total_ns &&
         a.device_ns == b.device_ns && a.device_samples == b.device_samples && a.bytes == b.bytes &&
         a.sampling_var == b.sampling_var;
}

float Derived(const FunctionSum& s) { return std::max(0.0f, s.self_ns - s.wait_ns); }

// A row shaped like a function of a real job: Python (self, total, count, maybe waiting or on
// the critical path), kernel (device samples), copy (bytes).
FunctionSum RandomRow(std::mt19937& rng) {
  auto value = [&] { return static_cast<float>(rng() % 1000 + 1); };
  FunctionSum s;
  switch (rng() % 4) {
    case 0:
      break;  // not called in this slot
    case 1:
      s.self_ns = value(), s.total_ns = value(), s.count = value();
      if (rng() % 4 == 0) s.wait_ns = value();
      if (rng() % 4 == 0) s.critical_ns = value();
      if (rng() % 8 == 0) s.sampling_var = value();
      break;
    case 2:
      s.self_ns = s.total_ns = value(), s.count = value();
      s.device_ns = value(), s.device_samples = value();
      break;
    default:
      s.self_ns = s.total_ns = value(), s.count = value(), s.bytes = value();
      break;
  }
  return s;
}

FunctionSums Dense(const std::vector<FunctionSum>& rows) {
  FunctionSums out;
  for (size_t i = 0; i < rows.size(); ++i) out.Mutable(i) = rows[i];
  return out;
}

TEST_CASE("packed function sums read back every field, in a fraction of the room",
          "[analyzer][sums]") {
  std::mt19937 rng(7);
  std::vector<FunctionSum> rows(500);
  for (FunctionSum& r : rows) r = RandomRow(rng);
  FunctionSums sums = Dense(rows);
  const size_t dense_bytes = sums.bytes();
  analyzer::RankData rank;
  rank.slots.resize(1);
  rank.slots[0].functions = std::move(sums);
  rank.PackSums();
  const FunctionSums& packed = rank.slots[0].functions;
  REQUIRE(packed.packed());
  REQUIRE(packed.size() == rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    FunctionSum want = rows[i];
    // Not estimated and without device samples: what Align gives such a function.
    if (want.device_samples == 0) want.device_est_ns = Derived(want);
    CHECK(Same(packed[i], want));
  }
  // Three or four of ten fields per called function, none for the rest: under 40 %.
  CHECK(packed.bytes() * 5 < dense_bytes * 2);
}

TEST_CASE("a rank's slots, and the next rank like it, share one layout", "[analyzer][sums]") {
  std::mt19937 rng(11);
  std::vector<FunctionSum> rows(64);
  for (FunctionSum& r : rows) r = RandomRow(rng);
  auto make_rank = [&] {
    analyzer::RankData r;
    for (int k = 0; k < 3; ++k) r.slots.emplace_back().functions = Dense(rows);
    return r;
  };
  analyzer::RankData a = make_rank(), b = make_rank();
  a.slots[1].functions = Dense({rows.begin(), rows.begin() + 10});  // it reached fewer functions
  a.PackSums();
  b.PackSums();
  CHECK(a.slots[0].functions.layout() == a.slots[2].functions.layout());
  CHECK(a.slots[1].functions.layout() == a.slots[0].functions.layout());
  CHECK(a.slots[1].functions.size() == 10);
  CHECK(b.slots[0].functions.layout() == a.slots[0].functions.layout());
}

// Everything done to slots after they are packed (Align's re-keying merges, mode harmonizing,
// the device estimate), checked against plain rows.
TEST_CASE("changes to packed sums give what the same changes to plain rows give",
          "[analyzer][sums]") {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    const size_t n = 40 + rng() % 40;
    std::vector<FunctionSum> want(n), other(n);
    for (size_t i = 0; i < n; ++i) want[i] = RandomRow(rng), other[i] = RandomRow(rng);
    analyzer::RankData rank;
    rank.slots.resize(2);
    rank.slots[0].functions = Dense(want);
    rank.slots[1].functions = Dense(other);
    if (seed % 2) rank.PackSums();  // the same layout for both, or (below) one each
    FunctionSums& sums = rank.slots[0].functions;
    FunctionSums merged_in = Dense(other);
    if (seed % 2 == 0) {
      sums.Pack(analyzer::MakeLayout(std::vector<uint16_t>(n, 1), nullptr));  // self only: widens
      merged_in.Pack(analyzer::MakeLayout(std::vector<uint16_t>(n, 0x3ff), nullptr));
    }
    REQUIRE(sums.packed());
    for (int op = 0; op < 60; ++op) {
      const size_t i = rng() % n;
      switch (rng() % 4) {
        case 0: {
          FunctionSum delta;
          delta.self_ns = static_cast<float>(rng() % 100);
          delta.critical_ns = rng() % 3 == 0 ? 5.0f : 0.0f;
          delta.sampling_var = rng() % 5 == 0 ? 7.0f : 0.0f;
          sums.Add(i, delta);
          want[i] += delta;
          break;
        }
        case 1:
          sums.Clear(i);
          want[i] = FunctionSum{};
          break;
        case 2:
          if (op % 10 == 0) {
            sums.Merge(seed % 2 ? rank.slots[1].functions : merged_in);
            for (size_t k = 0; k < n; ++k) {
              const float est = want[k].device_est_ns;
              want[k] += other[k];
              want[k].device_est_ns = est;  // not estimated yet: compared below, once set
            }
          }
          break;
        default:
          break;
      }
    }
    // Align's estimate, last: from samples where there are any (kept), else the derived value.
    for (size_t i = 0; i < n; ++i) {
      want[i].device_est_ns = rng() % 2 ? Derived(want[i]) : static_cast<float>(rng() % 500);
      sums.SetDeviceEst(i, want[i].device_est_ns);
    }
    REQUIRE(sums.packed());
    for (size_t i = 0; i < n; ++i) {
      const FunctionSum got = sums[i];
      INFO("seed " << seed << " row " << i << " got " << got.self_ns << " " << got.critical_ns
                   << " " << got.wait_ns << " " << got.device_est_ns << " " << got.count << " "
                   << got.total_ns << " " << got.device_ns << " " << got.device_samples << " "
                   << got.bytes << " " << got.sampling_var << " want " << want[i].self_ns << " "
                   << want[i].critical_ns << " " << want[i].wait_ns << " " << want[i].device_est_ns
                   << " " << want[i].count << " " << want[i].total_ns << " " << want[i].device_ns
                   << " " << want[i].device_samples << " " << want[i].bytes << " "
                   << want[i].sampling_var);
      CHECK(Same(sums[i], want[i]));
    }
  }
}

TEST_CASE("the estimate a packed row would read anyway takes no room", "[analyzer][sums]") {
  analyzer::RankData rank;
  FunctionSum python;
  python.self_ns = 300, python.wait_ns = 100, python.count = 1;
  rank.slots.emplace_back().functions.Mutable(0) = python;
  rank.PackSums();
  FunctionSums& sums = rank.slots[0].functions;
  const analyzer::SumLayout* before = sums.layout();
  sums.SetDeviceEst(0, 200);
  CHECK(sums.layout() == before);
  CHECK(sums[0].device_est_ns == 200);
  sums.SetDeviceEst(0, 250);  // a value of its own: the row makes room for it
  CHECK(sums.layout() != before);
  CHECK(sums[0].device_est_ns == 250);
  CHECK(sums[0].self_ns == 300);
}

}  // namespace
}  // namespace perftracker::testing
