// Fast Gaussian noise for the generator's per-call durations. A synthetic rank draws tens of
// millions of deviates (every call of 2,000 functions, 20 iterations a window, 120 windows), and
// std::normal_distribution over std::mt19937_64 (a log and two 64-bit draws per pair) was most of
// perftracker-gen's time. Here one 64-bit xoshiro256** draw gives five deviates, each the
// midpoint quantile of one of 4,096 equally likely strata (an inverse-CDF table): the same
// distribution to within 1e-3 sigma, tails cut at 3.7 sigma.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace perftracker::synthetic {

class FastNormal {
 public:
  explicit FastNormal(uint64_t seed);
  // A standard normal deviate.
  double Next() {
    if (left_ == 0) {
      bits_ = NextU64();
      left_ = 64 / kStrataBits;
    }
    --left_;
    const auto stratum = static_cast<size_t>(bits_ & ((1u << kStrataBits) - 1));
    bits_ >>= kStrataBits;
    return table_[stratum];
  }

 private:
  // 4,096 strata: the table (16 KiB) stays in L1 beside the histograms being counted.
  static constexpr int kStrataBits = 12;
  uint64_t NextU64();

  const float* table_;  // 1 << kStrataBits quantiles, shared by every instance
  std::array<uint64_t, 4> s_;
  uint64_t bits_ = 0;
  int left_ = 0;
};

inline uint64_t FastNormal::NextU64() {
  const uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = std::rotl(s_[3], 45);
  return result;
}

}  // namespace perftracker::synthetic
