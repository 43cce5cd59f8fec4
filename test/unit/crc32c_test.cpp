#include "schemas/format/crc32c.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

using perftracker::format::Crc32c;

TEST_CASE("crc32c matches the Castagnoli check values", "[crc32c]") {
  const std::string check = "123456789";
  CHECK(Crc32c(check.data(), check.size()) == 0xE3069283u);
  CHECK(Crc32c(nullptr, 0) == 0u);
  const std::vector<uint8_t> zeros(32, 0);
  CHECK(Crc32c(zeros.data(), zeros.size()) == 0x8A9136AAu);  // RFC 3720 B.4
  const std::vector<uint8_t> ones(32, 0xFF);
  CHECK(Crc32c(ones.data(), ones.size()) == 0x62A8AB43u);
}

TEST_CASE("crc32c continues across pieces and unaligned tails", "[crc32c]") {
  std::vector<uint8_t> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31 + 7);
  const uint32_t whole = Crc32c(data.data(), data.size());
  for (size_t split : {0u, 1u, 7u, 8u, 13u, 500u, 999u}) {
    const uint32_t first = Crc32c(data.data(), split);
    CHECK(Crc32c(data.data() + split, data.size() - split, first) == whole);
  }
  data[500] ^= 1;
  CHECK(Crc32c(data.data(), data.size()) != whole);
}

// Bit by bit from the polynomial: what the table and the three-stream hardware paths must equal.
uint32_t ReferenceCrc32c(const uint8_t* p, size_t n, uint32_t crc) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}

TEST_CASE("crc32c of long buffers, summed as three streams, equals the bitwise definition",
          "[crc32c]") {
  std::vector<uint8_t> data(3 * 1024 * 5 + 777);
  uint32_t x = 12345;
  for (uint8_t& b : data) b = static_cast<uint8_t>((x = x * 1103515245u + 12345u) >> 24);
  for (const size_t n : std::vector<size_t>{3071, 3072, 3073, 6149, 9216, data.size()}) {
    for (const size_t offset : {size_t{0}, size_t{1}, size_t{5}}) {
      CAPTURE(n, offset);
      const size_t len = std::min(n, data.size() - offset);
      CHECK(Crc32c(data.data() + offset, len, 0x1234u) ==
            ReferenceCrc32c(data.data() + offset, len, 0x1234u));
    }
  }
}
