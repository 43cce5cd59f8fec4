#include "schemas/format/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace perftracker::format {
namespace {

constexpr uint32_t kPolyReflected = 0x82F63B78u;

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolyReflected : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = MakeTable();

uint32_t Crc32cPortable(const uint8_t* p, size_t n, uint32_t crc) {
  for (size_t i = 0; i < n; ++i) crc = kTable[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
[[gnu::target("sse4.2")]] uint64_t Crc32cWords(const uint8_t* p, size_t words, uint64_t c) {
  for (size_t i = 0; i < words; ++i) {
    uint64_t word;
    std::memcpy(&word, p + 8 * i, 8);
    c = _mm_crc32_u64(c, word);
  }
  return c;
}

// The instruction takes three cycles and can start one a cycle, so long buffers are summed as
// three streams of kLane bytes at a time and joined. Without the inversions, a CRC update is
// linear: the state after A then B is the state after A moved on over |B| zero bytes, xor the
// state B alone leaves from zero. Moving a state over kLane zero bytes is a linear map on 32
// bits, applied with one table per state byte.
constexpr size_t kLane = 1024;

struct LaneShift {
  std::array<std::array<uint32_t, 256>, 4> table;
  uint32_t operator()(uint32_t x) const {
    return table[0][x & 0xFF] ^ table[1][(x >> 8) & 0xFF] ^ table[2][(x >> 16) & 0xFF] ^
           table[3][x >> 24];
  }
};

[[gnu::target("sse4.2")]] LaneShift MakeLaneShift() {
  LaneShift shift;
  const std::array<uint8_t, kLane> zeros{};
  for (uint32_t j = 0; j < 4; ++j) {
    for (uint32_t b = 0; b < 256; ++b) {
      shift.table[j][b] =
          static_cast<uint32_t>(Crc32cWords(zeros.data(), kLane / 8, uint64_t{b} << (8 * j)));
    }
  }
  return shift;
}

[[gnu::target("sse4.2")]] uint32_t Crc32cHardware(const uint8_t* p, size_t n, uint32_t crc) {
  uint64_t c = crc;
  if (n >= 3 * kLane) {
    static const LaneShift shift = MakeLaneShift();  // 1,024 x 128 instructions, once
    for (; n >= 3 * kLane; p += 3 * kLane, n -= 3 * kLane) {
      uint64_t a = c, b = 0, d = 0;
      for (size_t i = 0; i < kLane; i += 8) {
        uint64_t wa, wb, wd;
        std::memcpy(&wa, p + i, 8);
        std::memcpy(&wb, p + kLane + i, 8);
        std::memcpy(&wd, p + 2 * kLane + i, 8);
        a = _mm_crc32_u64(a, wa);
        b = _mm_crc32_u64(b, wb);
        d = _mm_crc32_u64(d, wd);
      }
      c = shift(shift(static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b)) ^
          static_cast<uint32_t>(d);
    }
  }
  c = Crc32cWords(p, n / 8, c);
  p += n / 8 * 8;
  n %= 8;
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n-- > 0) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");
#endif

}  // namespace

uint32_t Crc32c(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
#if defined(__x86_64__)
  if (kHaveSse42) return ~Crc32cHardware(p, size, crc);
#endif
  return ~Crc32cPortable(p, size, crc);
}

}  // namespace perftracker::format
