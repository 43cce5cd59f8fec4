// Damaged files: the reader never crashes, never accepts a damaged record, and never loses a
// record that is intact.
#include <catch2/catch.hpp>

#include <random>

#include "schemas/format/ring_layout.h"
#include "test/unit/ring_test_util.h"

using namespace perftracker;
using namespace perftracker::testing;

namespace {

constexpr uint64_t kFileSize = 4096 + 4096 + 48 * 1024;
constexpr uint64_t kRecords = 12;

std::vector<uint8_t> GoodFile(const TempDir& dir) {
  const std::string path = dir.File("rank-0.ptr");
  WriteRing(path, kRecords, kFileSize);
  return Slurp(path);
}

// Whatever the reader returns must be exactly what was written for that sequence number.
void RequireOnlyGenuine(const ReadBack& r) {
  REQUIRE(r.undecodable == 0);
  for (const auto& [seq, window] : r.records) REQUIRE(window == SmallWindow(seq));
}

}  // namespace

TEST_CASE("every truncation keeps the records before the cut", "[ring][damage]") {
  TempDir dir;
  const std::vector<uint8_t> good = GoodFile(dir);
  const ReadBack full = ReadAll(good);
  REQUIRE(full.records.size() == kRecords);
  for (size_t cut = 0; cut <= good.size(); cut += 509) {
    const std::vector<uint8_t> part(good.begin(), good.begin() + static_cast<long>(cut));
    const ReadBack r = ReadAll(part);
    if (cut < sizeof(format::FileHeader)) {
      REQUIRE(r.status == format::ReadStatus::kNotRingFile);
      continue;
    }
    REQUIRE(r.status == format::ReadStatus::kOk);
    RequireOnlyGenuine(r);
    REQUIRE(r.contents.stats.truncated == (cut < good.size()));
    // A record survives exactly when its frame lies wholly before the cut.
    for (size_t i = 0; i + 1 < r.records.size(); ++i) {
      REQUIRE(r.records[i + 1].first == r.records[i].first + 1);
    }
    if (!r.records.empty()) REQUIRE(r.records.front().first == 0);
  }
}

TEST_CASE("zero-filled, empty and random files are refused with a reason", "[ring][damage]") {
  for (size_t size : {0ul, 17ul, 4096ul, 1ul << 20}) {
    const std::vector<uint8_t> zeros(size, 0);
    const ReadBack r = ReadAll(zeros);
    CHECK(r.status == format::ReadStatus::kNotRingFile);
    CHECK(r.error.find("not a perftracker ring file") != std::string::npos);
  }
  std::mt19937_64 rng(11);
  for (int i = 0; i < 50; ++i) {
    std::vector<uint8_t> noise(1 + rng() % 100000);
    for (auto& b : noise) b = static_cast<uint8_t>(rng());
    CHECK(ReadAll(noise).status == format::ReadStatus::kNotRingFile);
  }
}

TEST_CASE("random bytes behind a valid header yield no records", "[ring][damage]") {
  TempDir dir;
  std::vector<uint8_t> bytes = GoodFile(dir);
  std::mt19937_64 rng(5);
  for (size_t i = format::kHeaderRegionSize; i < bytes.size(); ++i) {
    bytes[i] = static_cast<uint8_t>(rng());
  }
  const ReadBack r = ReadAll(bytes);
  REQUIRE(r.status == format::ReadStatus::kOk);
  CHECK(r.records.empty());
  CHECK_FALSE(r.contents.live.has_value());
}

TEST_CASE("a bit flip costs at most the record it hits", "[ring][damage]") {
  TempDir dir;
  const std::vector<uint8_t> good = GoodFile(dir);
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<uint8_t> bytes = good;
    const size_t at = format::kHeaderRegionSize + rng() % (bytes.size() - format::kHeaderRegionSize);
    bytes[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    const ReadBack r = ReadAll(bytes);
    REQUIRE(r.status == format::ReadStatus::kOk);
    RequireOnlyGenuine(r);
    const auto& s = r.contents.stats;
    REQUIRE(r.records.size() >= kRecords - 1);
    // A lost record is accounted for as corrupt or as a gap, unless it was the oldest or the
    // newest, whose absence no neighbour can reveal.
    if (r.records.size() == kRecords - 1) {
      const bool edge = r.records.front().first == 1 || r.records.back().first == kRecords - 2;
      REQUIRE(s.records_corrupt + s.seq_gaps + (edge ? 1 : 0) >= 1);
    }
  }
}

TEST_CASE("a damaged header is refused as corrupt, not misread", "[ring][damage]") {
  TempDir dir;
  std::vector<uint8_t> bytes = GoodFile(dir);
  bytes[40] ^= 0x01;  // inside data_offset
  const ReadBack r = ReadAll(bytes);
  CHECK(r.status == format::ReadStatus::kCorruptHeader);
  CHECK(r.error.find("corrupt") != std::string::npos);
}

TEST_CASE("unreadable paths fail with the path in the message", "[ring][damage]") {
  TempDir dir;
  ReadBack r = ReadAllFile(dir.File("missing.ptr"));
  format::RingReader reader;
  std::string error;
  CHECK(reader.OpenFile(dir.File("missing.ptr"), &error) == format::ReadStatus::kIoError);
  CHECK(error.find("missing.ptr") != std::string::npos);
  CHECK(reader.OpenFile(dir.path(), &error) == format::ReadStatus::kIoError);
  CHECK(error.find("not a regular file") != std::string::npos);
}
