// Fast Gaussian noise for the generator's per-call durations. A synthetic rank draws tens of
// millions of deviates (every call of 2,000 functions, 20 iterations a window, 120 windows), and
// std::normal_distribution over std::mt19937_64 (a log and two 64-bit draws per pair) was most of
// perftracker-gen's time. Here one 64-bit xoshiro256** draw gives two deviates through an
// inverse-CDF table with linear interpolation: the same distribution, tails cut at 3.7 sigma.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace perftracker::synthetic {

class FastNormal {
 public:
  explicit FastNormal(uint64_t seed);
  // A standard normal deviate.
  double Next() {
    if (!have_spare_) {
      spare_ = NextU64();
      have_spare_ = true;
      return FromBits(static_cast<uint32_t>(spare_));
    }
    have_spare_ = false;
    return FromBits(static_cast<uint32_t>(spare_ >> 32));
  }

 private:
  static constexpr int kTableBits = 12;
  uint64_t NextU64();
  double FromBits(uint32_t bits) const {
    const uint32_t i = bits >> (32 - kTableBits);
    const double frac = static_cast<double>(bits & ((1u << (32 - kTableBits)) - 1)) /
                        static_cast<double>(1u << (32 - kTableBits));
    return table_[i] + (table_[i + 1] - table_[i]) * frac;
  }

  const double* table_;  // (1 << kTableBits) + 1 quantiles, shared by every instance
  std::array<uint64_t, 4> s_;
  uint64_t spare_ = 0;
  bool have_spare_ = false;
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
