// The table region (format 2): a function table's names are stored once, twice over, and records
// name them; a region that is full, damaged or absent costs no record that could be read.
#include <catch2/catch.hpp>
#include <cstring>

#include "schemas/format/crc32c.h"
#include "schemas/format/ring_layout.h"
#include "schemas/format/version.h"
#include "test/unit/ring_test_util.h"

using namespace perftracker;
using namespace perftracker::testing;

namespace {

struct Written {
  std::vector<uint8_t> bytes;
  std::vector<uint64_t> record_sizes;
};

// `count` windows; window i has the function table of SmallWindow(0, functions(i)).
template <class Functions>
Written Write(const TempDir& dir, int64_t table_size, uint64_t count, Functions functions) {
  const std::string path = dir.File("rank-" + std::to_string(table_size) + ".ptr");
  format::RingOptions options;
  options.file_size = 256 * 1024;
  options.live_size = 4096;
  options.table_size = table_size;
  std::string error;
  auto writer = format::RingWriter::Create(path, TestIdentity(), options, &error);
  REQUIRE(writer);
  Written out;
  format::WindowEncoder encoder;
  for (uint64_t seq = 0; seq < count; ++seq) {
    const auto encoded = encoder.Encode(SmallWindow(seq, functions(seq)));
    REQUIRE(writer->Append(encoded, encoder.static_tail_size(), encoder.detail_size()));
    out.record_sizes.push_back(writer->last_record_size());
  }
  writer.reset();
  out.bytes = Slurp(path);
  return out;
}

format::FileHeader Header(const std::vector<uint8_t>& bytes) {
  format::FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  return h;
}

// Offsets (in the file) of the table region's entries, in order.
std::vector<uint64_t> Entries(const std::vector<uint8_t>& bytes) {
  const format::FileHeader h = Header(bytes);
  std::vector<uint64_t> at;
  for (uint64_t pos = h.live_offset + h.live_size;
       pos + sizeof(format::TableEntry) <= h.data_offset;) {
    format::TableEntry e;
    std::memcpy(&e, bytes.data() + pos, sizeof e);
    if (e.magic != format::kTableEntryMagic) break;
    at.push_back(pos);
    pos += format::AlignRecord(sizeof e + e.payload_size);
  }
  return at;
}

void CheckAllRead(const ReadBack& r, uint64_t count, int functions) {
  REQUIRE(r.status == format::ReadStatus::kOk);
  REQUIRE(r.records.size() == count);
  for (const auto& [seq, window] : r.records) CHECK(window == SmallWindow(seq, functions));
  CHECK(r.contents.stats.records_corrupt == 0);
}

}  // namespace

TEST_CASE("a function table is stored once, twice over, and every record names it", "[ring]") {
  TempDir dir;
  const auto same = [](uint64_t) { return 200; };
  const Written shared = Write(dir, -1, 12, same);
  const Written carried = Write(dir, 0, 12, same);
  CHECK(Header(shared.bytes).min_reader_version == format::kTableReaderVersion);
  // Without a table region the file is one a format-1 reader reads.
  CHECK(Header(carried.bytes).min_reader_version == 1);
  CHECK(Entries(shared.bytes).size() == 2);
  CHECK(Entries(carried.bytes).empty());
  for (size_t i = 0; i < 12; ++i) {
    CAPTURE(i);
    // 200 names are ~2 KB compressed; a reference is 24 bytes.
    CHECK(shared.record_sizes[i] + 1000 < carried.record_sizes[i]);
  }
  CheckAllRead(ReadAll(shared.bytes), 12, 200);
  CheckAllRead(ReadAll(carried.bytes), 12, 200);
}

TEST_CASE("each new function table gets its entry; a full region has records carry theirs",
          "[ring]") {
  TempDir dir;
  // Tables of 40, 80, 120, ... functions: a new one every second window.
  const auto growing = [](uint64_t seq) { return 40 * static_cast<int>(1 + seq / 2); };
  const Written roomy = Write(dir, -1, 8, growing);
  CHECK(Entries(roomy.bytes).size() == 2 * 4);
  // Room for the first tables only (two copies each); the rest travel in their records.
  const uint64_t entry = Entries(roomy.bytes)[1] - Entries(roomy.bytes)[0];
  const Written tight = Write(dir, static_cast<int64_t>(2 * entry + 8), 8, growing);
  CHECK(Entries(tight.bytes).size() == 2);
  CHECK(tight.record_sizes[0] < roomy.record_sizes[0] + 8);
  CHECK(tight.record_sizes[7] > roomy.record_sizes[7] + 500);
  for (const Written* w : {&roomy, &tight}) {
    const ReadBack r = ReadAll(w->bytes);
    REQUIRE(r.records.size() == 8);
    for (const auto& [seq, window] : r.records) CHECK(window == SmallWindow(seq, growing(seq)));
  }
}

TEST_CASE("a function table that comes back is named again, not stored again", "[ring]") {
  TempDir dir;
  // Windows with and without a periodic job's functions: two tables, alternating.
  const auto alternating = [](uint64_t seq) { return seq % 2 == 0 ? 40 : 90; };
  const Written w = Write(dir, -1, 9, alternating);
  CHECK(Entries(w.bytes).size() == 2 * 2);
  const ReadBack r = ReadAll(w.bytes);
  REQUIRE(r.records.size() == 9);
  for (const auto& [seq, window] : r.records) CHECK(window == SmallWindow(seq, alternating(seq)));
}

TEST_CASE("one damaged copy of a table entry costs nothing; both cost only their records",
          "[ring][damage]") {
  TempDir dir;
  const auto same = [](uint64_t) { return 120; };
  const Written w = Write(dir, -1, 6, same);
  const std::vector<uint64_t> entries = Entries(w.bytes);
  REQUIRE(entries.size() == 2);
  for (const size_t hit : {size_t{0}, sizeof(format::TableEntry) + 9}) {
    CAPTURE(hit);
    std::vector<uint8_t> first = w.bytes;
    first[entries[0] + hit] ^= 0x10;
    CheckAllRead(ReadAll(first), 6, 120);
    std::vector<uint8_t> second = w.bytes;
    second[entries[1] + hit] ^= 0x10;
    CheckAllRead(ReadAll(second), 6, 120);
    first[entries[1] + hit] ^= 0x10;
    const ReadBack both = ReadAll(first);
    REQUIRE(both.status == format::ReadStatus::kOk);
    CHECK(both.records.empty());
    CHECK(both.contents.stats.records_corrupt == 6);
  }
}

TEST_CASE("a reference past the table region, or a file cut inside it, fails its records only",
          "[ring][damage]") {
  TempDir dir;
  const Written w = Write(dir, -1, 3, [](uint64_t) { return 60; });
  const format::FileHeader h = Header(w.bytes);
  for (const uint64_t entry : {uint64_t{1} << 40, ~uint64_t{0} - 8, h.data_offset}) {
    CAPTURE(entry);
    std::vector<uint8_t> bytes = w.bytes;
    format::RecordFrame f;
    std::memcpy(&f, bytes.data() + h.data_offset, sizeof f);
    REQUIRE((f.flags & format::kRecordFlagTableTail) != 0);
    uint8_t* payload = bytes.data() + h.data_offset + sizeof f;
    std::memcpy(payload + f.payload_size - sizeof(format::TableRef), &entry, sizeof entry);
    f.payload_crc = format::Crc32c(payload, f.payload_size);
    f.header_crc = format::Crc32c(&f, offsetof(format::RecordFrame, header_crc));
    std::memcpy(bytes.data() + h.data_offset, &f, sizeof f);
    const ReadBack r = ReadAll(bytes);
    REQUIRE(r.records.size() == 2);
    CHECK(r.records.front().first == 1);
    CHECK(r.contents.stats.records_corrupt == 1);
  }
  // Cut inside the table region: the header and live slot read, no record does.
  std::vector<uint8_t> cut(w.bytes.begin(),
                           w.bytes.begin() + static_cast<long>(h.live_offset + h.live_size + 40));
  const ReadBack r = ReadAll(cut);
  REQUIRE(r.status == format::ReadStatus::kOk);
  CHECK(r.contents.stats.truncated);
  CHECK(r.records.empty());
}
