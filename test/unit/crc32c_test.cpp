#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "schemas/format/crc32c.h"

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
