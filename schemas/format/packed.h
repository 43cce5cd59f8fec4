// LEB128 varints, the packed columns of window.fbs.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace perftracker::format {

inline constexpr size_t kMaxVarintSize = 10;

// Writes v at p (room for kMaxVarintSize bytes) and returns the end.
inline uint8_t* PutVarint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// Reads varints from an untrusted buffer; Next fails at the end or on a malformed varint.
class VarintReader {
 public:
  explicit VarintReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  bool Next(uint64_t* v) {
    // Most values in a window (counts, histogram buckets) fit one byte: take them at once.
    if (pos_ < bytes_.size() && bytes_[pos_] < 0x80) {
      *v = bytes_[pos_++];
      return true;
    }
    // Durations take four or five bytes: a branch per byte, on lengths that vary from value to
    // value, was most of the decoder's time. Up to eight bytes are taken from one word.
    if (bytes_.size() - pos_ >= 8) {
      uint64_t word;
      std::memcpy(&word, bytes_.data() + pos_, sizeof word);
      word = LittleEndian(word);
      const uint64_t stops = ~word & 0x8080808080808080u;
      if (stops != 0) {
        const int bits = std::countr_zero(stops) + 1;  // 8 per byte of the varint
        uint64_t x = (bits == 64 ? word : word & ((uint64_t{1} << bits) - 1)) & 0x7F7F7F7F7F7F7F7Fu;
        x = (x & 0x007F007F007F007Fu) | ((x & 0x7F007F007F007F00u) >> 1);
        x = (x & 0x00003FFF00003FFFu) | ((x & 0x3FFF00003FFF0000u) >> 2);
        x = (x & 0x000000000FFFFFFFu) | ((x & 0x0FFFFFFF00000000u) >> 4);
        pos_ += static_cast<size_t>(bits / 8);
        *v = x;
        return true;
      }
    }
    uint64_t result = 0;
    for (int shift = 0; shift < 64 && pos_ < bytes_.size(); shift += 7) {
      const uint8_t b = bytes_[pos_++];
      result |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) {
        *v = result;
        return true;
      }
    }
    return false;
  }
  bool done() const { return pos_ == bytes_.size(); }

  // When the next n varints are one byte each (histogram counts mostly are) and n <= 16, adds
  // them to *sum, moves past them and returns true: two words, no branch per value. Otherwise
  // reads nothing and returns false.
  bool TrySumOneByte(uint64_t n, uint64_t* sum) {
    if (n > 16 || bytes_.size() - pos_ < 16) return false;
    uint64_t low, high;
    std::memcpy(&low, bytes_.data() + pos_, sizeof low);
    std::memcpy(&high, bytes_.data() + pos_ + 8, sizeof high);
    low = LittleEndian(low) & FirstBytes(n),
    high = LittleEndian(high) & FirstBytes(n - std::min<uint64_t>(n, 8));
    if (((low | high) & 0x8080808080808080u) != 0) return false;
    *sum += ByteSum(low) + ByteSum(high);
    pos_ += n;
    return true;
  }

 private:
  static uint64_t FirstBytes(uint64_t n) {
    return n >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * n)) - 1;
  }
  // The sum of the eight bytes of x, each below 0x80.
  static uint64_t ByteSum(uint64_t x) {
    x = (x & 0x00FF00FF00FF00FFu) + ((x >> 8) & 0x00FF00FF00FF00FFu);
    return (x * 0x0001000100010001u) >> 48;
  }

  static uint64_t LittleEndian(uint64_t word) {
    if constexpr (std::endian::native == std::endian::big) return __builtin_bswap64(word);
    return word;
  }

  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

}  // namespace perftracker::format
