#include "schemas/format/packed.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

using perftracker::format::kMaxVarintSize;
using perftracker::format::PutVarint;
using perftracker::format::VarintReader;

namespace {

// The definition, a byte at a time: what the reader's word-at-a-time path must agree with.
std::vector<std::pair<bool, uint64_t>> ReferenceRead(const std::vector<uint8_t>& bytes) {
  std::vector<std::pair<bool, uint64_t>> out;
  size_t pos = 0;
  while (pos < bytes.size()) {
    uint64_t result = 0;
    bool ok = false;
    for (int shift = 0; shift < 64 && pos < bytes.size(); shift += 7) {
      const uint8_t b = bytes[pos++];
      result |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) {
        ok = true;
        break;
      }
    }
    out.push_back({ok, ok ? result : 0});
    if (!ok) break;
  }
  return out;
}

std::vector<std::pair<bool, uint64_t>> ReaderRead(const std::vector<uint8_t>& bytes) {
  std::vector<std::pair<bool, uint64_t>> out;
  VarintReader in(bytes);
  while (!in.done()) {
    uint64_t v = 0;
    const bool ok = in.Next(&v);
    out.push_back({ok, ok ? v : 0});
    if (!ok) break;
  }
  return out;
}

}  // namespace

TEST_CASE("varints of every length round-trip, with room after them and without", "[packed]") {
  std::mt19937_64 rng(7);
  for (int bits = 0; bits <= 64; ++bits) {
    for (int k = 0; k < 20; ++k) {
      const uint64_t top = bits == 0 ? 0 : uint64_t{1} << (bits - 1);
      const uint64_t v = bits == 0 ? 0 : top | (rng() & (top - 1));
      for (const size_t after : {size_t{0}, size_t{3}, size_t{9}}) {
        std::vector<uint8_t> bytes(kMaxVarintSize);
        bytes.resize(static_cast<size_t>(PutVarint(bytes.data(), v) - bytes.data()));
        bytes.resize(bytes.size() + after, 0x01);
        VarintReader in(bytes);
        uint64_t got = ~v;
        REQUIRE(in.Next(&got));
        CHECK(got == v);
      }
    }
  }
}

TEST_CASE("the reader agrees with the byte-at-a-time definition on any bytes", "[packed]") {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<uint8_t> bytes(rng() % 40);
    // Mostly continuation bytes, so long and overlong varints, and ones cut off, are common.
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng() % 4 != 0 ? (rng() | 0x80) : rng());
    CAPTURE(trial);
    CHECK(ReaderRead(bytes) == ReferenceRead(bytes));
  }
}

TEST_CASE("one-byte runs are summed as reading them one by one would", "[packed]") {
  std::mt19937_64 rng(13);
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<uint8_t> bytes(rng() % 40);
    // Mostly small values, now and then a longer one inside or just past the run.
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng() % 10 != 0 ? rng() % 0x80 : rng());
    const uint64_t n = rng() % 20;
    CAPTURE(trial, n);
    VarintReader fast(bytes), slow(bytes);
    uint64_t sum = 5;
    if (!fast.TrySumOneByte(n, &sum)) {
      CHECK(sum == 5);  // nothing read: the next value is still the first
      uint64_t a = 0, b = 0;
      CHECK(fast.Next(&a) == slow.Next(&b));
      CHECK(a == b);
      continue;
    }
    uint64_t want = 5;
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t v = 0;
      REQUIRE(slow.Next(&v));
      REQUIRE(v < 0x80);
      want += v;
    }
    CHECK(sum == want);
    uint64_t a = 0, b = 0;  // both stand at the same place after the run
    CHECK(fast.Next(&a) == slow.Next(&b));
    CHECK(a == b);
  }
}
