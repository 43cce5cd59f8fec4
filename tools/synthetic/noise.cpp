#include "tools/synthetic/noise.h"

#include <cmath>
#include <vector>

namespace perftracker::synthetic {
namespace {

double NormalCdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// The midpoint quantiles of n equally likely strata of the standard normal: (k + 0.5) / n for
// k = 0..n-1, by bisection on the CDF (once per process).
std::vector<float> QuantileTable(int n) {
  std::vector<float> table(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    const double p = (k + 0.5) / n;
    double lo = -10, hi = 10;
    for (int step = 0; step < 56; ++step) {
      const double mid = (lo + hi) / 2;
      (NormalCdf(mid) < p ? lo : hi) = mid;
    }
    table[static_cast<size_t>(k)] = static_cast<float>((lo + hi) / 2);
  }
  return table;
}

uint64_t SplitMix(uint64_t* x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

FastNormal::FastNormal(uint64_t seed) {
  static const std::vector<float> table = QuantileTable(1 << kStrataBits);
  table_ = table.data();
  for (uint64_t& word : s_) word = SplitMix(&seed);
}

}  // namespace perftracker::synthetic
