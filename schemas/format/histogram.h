// The log-bucket histogram every duration in a window is summarized with.
//
// Buckets are defined with integer arithmetic only, so every rank puts the same value in the same
// bucket: values below 64 get a bucket each; above, every power-of-two octave [2^e, 2^(e+1)) is
// split into 32 equal buckets. The midpoint of a bucket is within 1/64 (1.6%) of every value in it.
// Histograms merge by adding counts, bucket by bucket.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <vector>

namespace perftracker::format {

inline constexpr int kHistogramSubBuckets = 32;
inline constexpr int kHistogramLinearLimit = 64;
inline constexpr int kHistogramBuckets =
    kHistogramLinearLimit + (63 - 6 + 1) * kHistogramSubBuckets;  // 1920

constexpr int HistogramBucket(uint64_t v) {
  if (v < kHistogramLinearLimit) return static_cast<int>(v);
  const int e = 63 - std::countl_zero(v);  // >= 6
  const int sub = static_cast<int>((v >> (e - 5)) & (kHistogramSubBuckets - 1));
  return kHistogramLinearLimit + (e - 6) * kHistogramSubBuckets + sub;
}

constexpr uint64_t HistogramBucketLow(int bucket) {
  if (bucket < kHistogramLinearLimit) return static_cast<uint64_t>(bucket);
  const int e = (bucket - kHistogramLinearLimit) / kHistogramSubBuckets + 6;
  const uint64_t sub =
      static_cast<uint64_t>((bucket - kHistogramLinearLimit) % kHistogramSubBuckets);
  return (kHistogramSubBuckets + sub) << (e - 5);
}

constexpr uint64_t HistogramBucketWidth(int bucket) {
  if (bucket < kHistogramLinearLimit) return 1;
  return uint64_t{1} << ((bucket - kHistogramLinearLimit) / kHistogramSubBuckets + 1);
}

// The value that stands for a bucket: its midpoint.
constexpr uint64_t HistogramBucketValue(int bucket) {
  return HistogramBucketLow(bucket) + HistogramBucketWidth(bucket) / 2;
}

// Count, sum and sum of squares of a histogram's values, each taken as its bucket's midpoint.
struct HistogramMoments {
  double count = 0;
  double sum = 0;
  double sum_squares = 0;
  bool operator==(const HistogramMoments&) const = default;
};

// Adds `length` counts of the buckets from `first` on to `m`; `next(uint32_t*)` yields each count
// in turn, false to stop (then AddBucketRun returns false). Histogram::Moments and the decoder's
// moments-only path (window_decode.cpp) both sum through here, so they agree to the bit.
template <class Next>
bool AddBucketRun(int first, uint64_t length, Next&& next, HistogramMoments* m) {
  for (uint64_t i = 0; i < length; ++i) {
    uint32_t c;
    if (!next(&c)) return false;
    const auto v = static_cast<double>(HistogramBucketValue(first + static_cast<int>(i)));
    m->count += c;
    m->sum += v * c;
    m->sum_squares += v * v * c;
  }
  return true;
}

// A sparse run of buckets as stored on disk: counts[i] belongs to bucket first + i.
struct Histogram {
  int first = 0;
  std::vector<uint32_t> counts;

  void Add(uint64_t value, uint32_t n = 1);
  void Merge(const Histogram& other);
  uint64_t Count() const;
  HistogramMoments Moments() const;
  // Value at quantile q in [0, 1] (bucket midpoint); 0 when empty.
  uint64_t Quantile(double q) const;
  bool empty() const { return counts.empty(); }
  bool operator==(const Histogram&) const = default;
};

}  // namespace perftracker::format
