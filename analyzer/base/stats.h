// Robust statistics over small samples (the values of one function across peer ranks).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace perftracker::analyzer {

// Median of `v` (reordered in place); 0 when empty.
inline double Median(std::vector<double>& v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<long>(mid));
  return (lo + hi) / 2;
}

inline double MedianOf(std::vector<double> v) { return Median(v); }

// Median absolute deviation scaled to a normal standard deviation (1.4826 MAD).
inline double RobustSigma(const std::vector<double>& v, double median) {
  std::vector<double> dev;
  dev.reserve(v.size());
  for (const double x : v) dev.push_back(std::abs(x - median));
  return 1.4826 * Median(dev);
}

}  // namespace perftracker::analyzer
