#include "schemas/format/histogram.h"

#include <algorithm>
#include <cmath>

namespace perftracker::format {

static_assert(HistogramBucket(63) == 63);
static_assert(HistogramBucket(64) == 64);
static_assert(HistogramBucketLow(HistogramBucket(1000)) <= 1000);
static_assert(HistogramBucket(~uint64_t{0}) == kHistogramBuckets - 1);

void Histogram::Add(uint64_t value, uint32_t n) {
  const int b = HistogramBucket(value);
  if (counts.empty()) {
    first = b;
    counts.assign(1, n);
    return;
  }
  if (b < first) {
    counts.insert(counts.begin(), static_cast<size_t>(first - b), 0);
    first = b;
  } else if (b >= first + static_cast<int>(counts.size())) {
    counts.resize(static_cast<size_t>(b - first + 1), 0);
  }
  counts[static_cast<size_t>(b - first)] += n;
}

void Histogram::Merge(const Histogram& other) {
  for (size_t i = 0; i < other.counts.size(); ++i) {
    if (other.counts[i] == 0) continue;
    Add(HistogramBucketLow(other.first + static_cast<int>(i)), other.counts[i]);
  }
}

uint64_t Histogram::Count() const {
  uint64_t total = 0;
  for (uint32_t c : counts) total += c;
  return total;
}

HistogramMoments Histogram::Moments() const {
  HistogramMoments m;
  const uint32_t* c = counts.data();
  AddBucketRun(
      first, counts.size(),
      [&c](uint32_t* out) {
        *out = *c++;
        return true;
      },
      &m);
  return m;
}

uint64_t Histogram::Quantile(double q) const {
  const uint64_t total = Count();
  if (total == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // Rank of the wanted value, 1-based: the smallest value for q == 0, the largest for q == 1.
  const auto want = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * double(total))));
  uint64_t seen = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    seen += counts[i];
    if (seen >= want) return HistogramBucketValue(first + static_cast<int>(i));
  }
  return HistogramBucketValue(first + static_cast<int>(counts.size()) - 1);
}

}  // namespace perftracker::format
