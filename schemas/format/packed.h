// LEB128 varints, the packed columns of window.fbs.
#pragma once

#include <cstdint>
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

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

}  // namespace perftracker::format
