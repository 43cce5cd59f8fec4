#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "schemas/format/histogram.h"

using namespace perftracker::format;

TEST_CASE("every value lies within 1.6% of its bucket's midpoint", "[histogram]") {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const uint64_t v = rng() >> (rng() % 64);
    const int b = HistogramBucket(v);
    REQUIRE(b >= 0);
    REQUIRE(b < kHistogramBuckets);
    REQUIRE(HistogramBucketLow(b) <= v);
    REQUIRE(v - HistogramBucketLow(b) < HistogramBucketWidth(b));
    const double mid = static_cast<double>(HistogramBucketValue(b));
    if (v > 0) REQUIRE(std::fabs(mid - double(v)) / double(v) <= 1.0 / 64 + 1e-12);
  }
}

TEST_CASE("buckets are contiguous and increasing", "[histogram]") {
  for (int b = 0; b + 1 < kHistogramBuckets; ++b) {
    REQUIRE(HistogramBucketLow(b) + HistogramBucketWidth(b) == HistogramBucketLow(b + 1));
    REQUIRE(HistogramBucket(HistogramBucketLow(b)) == b);
  }
}

TEST_CASE("histograms merge by adding counts and answer quantiles", "[histogram]") {
  Histogram a, b, all;
  for (uint64_t v = 1000; v < 2000; ++v) {
    (v % 2 ? a : b).Add(v);
    all.Add(v);
  }
  Histogram merged = a;
  merged.Merge(b);
  CHECK(merged == all);
  CHECK(merged.Count() == 1000);
  const double p50 = double(merged.Quantile(0.5));
  CHECK(std::fabs(p50 - 1500) / 1500 < 0.02);
  CHECK(merged.Quantile(0.0) <= 1016);
  CHECK(merged.Quantile(1.0) >= 1984);
  CHECK(Histogram{}.Quantile(0.5) == 0);
}

TEST_CASE("adding below the first bucket grows the run downwards", "[histogram]") {
  Histogram h;
  h.Add(100000);
  h.Add(10);
  CHECK(h.first == HistogramBucket(10));
  CHECK(h.Count() == 2);
  CHECK(h.counts.front() == 1);
  CHECK(h.counts.back() == 1);
}
