#include <flatbuffers/flatbuffers.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "schemas/format/crc32c.h"
#include "schemas/format/ring_layout.h"
#include "test/unit/ring_test_util.h"

using namespace perftracker;
using namespace perftracker::testing;

TEST_CASE("records, identity and live slot round-trip", "[ring]") {
  TempDir dir;
  const std::string path = dir.File("a/b/rank-3.ptr");  // directories are created
  format::RingOptions options;
  options.file_size = 1 << 20;
  std::string error;
  auto writer = format::RingWriter::Create(path, TestIdentity(), options, &error);
  REQUIRE(writer);
  format::WindowEncoder encoder;
  for (uint64_t seq = 0; seq < 10; ++seq) {
    const auto encoded = encoder.Encode(SmallWindow(seq));
    REQUIRE(writer->Append(encoded, encoder.static_tail_size(), encoder.detail_size()));
  }
  format::LiveState live;
  live.iteration = 99;
  live.python_stack = {"train.py:3:main"};
  flatbuffers::FlatBufferBuilder builder;
  REQUIRE(writer->WriteLive(format::EncodeLiveState(live, builder)));
  writer.reset();

  CHECK(std::filesystem::file_size(path) == options.file_size);
  const ReadBack r = ReadAllFile(path);
  REQUIRE(r.status == format::ReadStatus::kOk);
  REQUIRE(r.records.size() == 10);
  for (uint64_t seq = 0; seq < 10; ++seq) {
    CHECK(r.records[seq].first == seq);
    CHECK(r.records[seq].second == SmallWindow(seq));
  }
  const format::Identity& id = r.contents.identity;
  const format::Identity want = TestIdentity();
  CHECK(id.job_id == want.job_id);
  CHECK(id.hostname == want.hostname);
  CHECK(id.rank == want.rank);
  CHECK(id.local_rank == want.local_rank);
  CHECK(id.world_size == want.world_size);
  CHECK(id.pid == want.pid);
  CHECK(id.start_real_ns == want.start_real_ns);
  CHECK(id.start_mono_ns == want.start_mono_ns);
  CHECK(id.library_version == want.library_version);
  REQUIRE(r.contents.live);
  CHECK(*r.contents.live == live);
  CHECK(r.contents.stats.records_corrupt == 0);
  CHECK(r.contents.stats.seq_gaps == 0);
  CHECK_FALSE(r.contents.stats.truncated);
}

TEST_CASE("wrap-around keeps the newest records as one unbroken run", "[ring]") {
  TempDir dir;
  const std::string path = dir.File("rank-0.ptr");
  const uint64_t file_size = 4096 + 4096 + 64 * 1024;
  WriteRing(path, 500, file_size);
  const ReadBack r = ReadAllFile(path);
  REQUIRE(r.status == format::ReadStatus::kOk);
  REQUIRE(!r.records.empty());
  CHECK(r.records.back().first == 499);
  CHECK(r.records.front().first > 0);
  for (size_t i = 1; i < r.records.size(); ++i) {
    REQUIRE(r.records[i].first == r.records[i - 1].first + 1);
  }
  for (const auto& [seq, window] : r.records) REQUIRE(window == SmallWindow(seq));
  CHECK(r.contents.stats.seq_gaps == 0);
  CHECK(r.contents.stats.records_corrupt == 0);
  // The ring holds as many of the newest records as fit, less at most one record of slack.
  format::WindowEncoder encoder;
  const size_t record = encoder.Encode(SmallWindow(1)).size();
  CHECK(r.records.size() >= 4);
  INFO("raw record " << record << " kept " << r.records.size());
}

TEST_CASE("the live slot keeps the previous state when the newest half is damaged", "[ring]") {
  TempDir dir;
  const std::string path = dir.File("rank-1.ptr");
  format::RingOptions options;
  options.file_size = 64 * 1024;
  options.live_size = 8192;
  std::string error;
  auto writer = format::RingWriter::Create(path, TestIdentity(1), options, &error);
  REQUIRE(writer);
  flatbuffers::FlatBufferBuilder builder;
  for (uint64_t i = 1; i <= 5; ++i) {
    format::LiveState s;
    s.iteration = i;
    REQUIRE(writer->WriteLive(format::EncodeLiveState(s, builder)));
  }
  writer.reset();
  std::vector<uint8_t> bytes = Slurp(path);
  REQUIRE(ReadAll(bytes).contents.live->iteration == 5);
  // seq 5 went to half 1 (odd): damage its payload.
  bytes[format::kHeaderRegionSize + 4096 + sizeof(format::LiveFrame) + 4] ^= 0x40;
  const ReadBack r = ReadAll(bytes);
  REQUIRE(r.contents.live);
  CHECK(r.contents.live->iteration == 4);
}

TEST_CASE("a second writer keeps the first run's file as .prev.ptr", "[ring]") {
  TempDir dir;
  const std::string path = dir.File("rank-2.ptr");
  WriteRing(path, 3, 64 * 1024);
  WriteRing(path, 1, 64 * 1024);
  CHECK(ReadAllFile(path).records.size() == 1);
  CHECK(ReadAllFile(dir.File("rank-2.prev.ptr")).records.size() == 3);
}

TEST_CASE("impossible options and unwritable places fail with a message", "[ring]") {
  TempDir dir;
  std::string error;
  format::RingOptions tiny;
  tiny.file_size = 1024;
  CHECK_FALSE(format::RingWriter::Create(dir.File("x.ptr"), {}, tiny, &error));
  CHECK(error.find("too small") != std::string::npos);
  if (geteuid() != 0) {
    chmod(dir.path().c_str(), 0500);
    CHECK_FALSE(format::RingWriter::Create(dir.File("y.ptr"), {}, {}, &error));
    chmod(dir.path().c_str(), 0700);
  }
  CHECK_FALSE(format::RingWriter::Create("/proc/perftracker/z.ptr", {}, {}, &error));
  CHECK_FALSE(error.empty());
}

TEST_CASE("a record larger than the ring is refused, and the file stays readable", "[ring]") {
  TempDir dir;
  const std::string path = dir.File("rank-0.ptr");
  format::RingOptions options;
  options.file_size = 4096 + 4096 + 4096;
  options.live_size = 4096;
  std::string error;
  auto writer = format::RingWriter::Create(path, {}, options, &error);
  REQUIRE(writer);
  std::vector<uint8_t> noise(64 * 1024);  // incompressible: no frame of it fits in 4 KiB
  std::mt19937_64 rng(1);
  for (auto& b : noise) b = static_cast<uint8_t>(rng());
  CHECK_FALSE(writer->Append(noise));
  writer.reset();
  const ReadBack r = ReadAllFile(path);
  CHECK(r.status == format::ReadStatus::kOk);
  CHECK(r.records.empty());
}

namespace {

void Reseal(std::vector<uint8_t>& bytes) {
  format::FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  h.header_crc = format::Crc32c(&h, offsetof(format::FileHeader, header_crc));
  std::memcpy(bytes.data(), &h, sizeof h);
}

}  // namespace

TEST_CASE("format versions: newer but compatible reads, incompatible is refused", "[ring]") {
  TempDir dir;
  const std::string path = dir.File("rank-0.ptr");
  WriteRing(path, 2, 64 * 1024);
  std::vector<uint8_t> bytes = Slurp(path);
  format::FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);

  h.format_version = 7;  // a newer writer that promised v1 readers can read it
  std::memcpy(bytes.data(), &h, sizeof h);
  Reseal(bytes);
  ReadBack r = ReadAll(bytes);
  CHECK(r.status == format::ReadStatus::kOk);
  CHECK(r.records.size() == 2);
  CHECK(r.contents.format_version == 7);

  h.min_reader_version = 7;  // ... and one that did not
  std::memcpy(bytes.data(), &h, sizeof h);
  Reseal(bytes);
  r = ReadAll(bytes);
  CHECK(r.status == format::ReadStatus::kUnsupportedVersion);
  CHECK(r.error.find("version 7") != std::string::npos);

  h.format_version = 0;
  h.min_reader_version = 0;
  std::memcpy(bytes.data(), &h, sizeof h);
  Reseal(bytes);
  CHECK(ReadAll(bytes).status == format::ReadStatus::kUnsupportedVersion);
}

// The first record a reader hands over from `path`, as bytes.
std::vector<uint8_t> FirstRecordBytes(const std::string& path, bool skip_details = false) {
  format::RingReader reader;
  std::string error;
  REQUIRE(reader.OpenFile(path, &error) == format::ReadStatus::kOk);
  reader.set_skip_details(skip_details);
  std::vector<uint8_t> stored;
  reader.ForEachRecord([&](uint64_t, std::span<const uint8_t> bytes) {
    stored.assign(bytes.begin(), bytes.end());
    return false;
  });
  return stored;
}

std::string Fixture(const char* name) {
  return std::string(PERFTRACKER_SOURCE_DIR) + "/test/unit/fixtures/" + name;
}

// ring_v1.ptr was written before the detail frame (two zstd frames a record, the detail columns
// elsewhere in the FlatBuffer); ring_v1_detail_frame.ptr by format-1 writers with it;
// ring_v2_table.ptr is what writers produce today: the names in the table region. All must read
// the same forever.
TEST_CASE("the committed fixtures of every format still read, and writers still produce the newest",
          "[ring]") {
  const std::string today = Fixture("ring_v2_table.ptr");
  if (std::getenv("PERFTRACKER_UPDATE_FIXTURES")) WriteRing(today, 3, 4096 + 4096 + 16384);
  const std::pair<std::string, uint32_t> fixtures[] = {
      {Fixture("ring_v1.ptr"), 1}, {Fixture("ring_v1_detail_frame.ptr"), 1}, {today, 2}};
  for (const auto& [fixture, version] : fixtures) {
    CAPTURE(fixture);
    const ReadBack r = ReadAllFile(fixture);
    REQUIRE(r.status == format::ReadStatus::kOk);
    REQUIRE(r.records.size() == 3);
    for (const auto& [seq, window] : r.records) CHECK(window == SmallWindow(seq));
    CHECK(r.contents.identity.job_id == "job-42");
    CHECK(r.contents.format_version == version);
  }
  // Today's records name their names in the table region, and the reader's view of record 0 is
  // the exact FlatBuffer today's encoder writes.
  const std::vector<uint8_t> bytes = Slurp(today);
  format::FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  format::RecordFrame f;
  std::memcpy(&f, bytes.data() + h.data_offset, sizeof f);
  CHECK((f.flags & format::kRecordFlagTableTail) != 0);
  format::WindowEncoder encoder;
  const auto fresh = encoder.Encode(SmallWindow(0));
  CHECK(FirstRecordBytes(today) == std::vector<uint8_t>(fresh.begin(), fresh.end()));
}

TEST_CASE("a reader skipping details zeroes exactly the detail frame, and only when flagged",
          "[ring]") {
  format::WindowEncoder encoder;
  const auto fresh = encoder.Encode(SmallWindow(0));
  const size_t tail = encoder.static_tail_size(), details = encoder.detail_size();
  REQUIRE(details > 0);
  std::vector<uint8_t> want(fresh.begin(), fresh.end());
  std::fill(want.end() - static_cast<long>(tail + details), want.end() - static_cast<long>(tail),
            0);
  CHECK(FirstRecordBytes(Fixture("ring_v1_detail_frame.ptr"), true) == want);
  CHECK(FirstRecordBytes(Fixture("ring_v2_table.ptr"), true) == want);
  // Records written before the flag are read whole whatever the reader asks.
  CHECK(FirstRecordBytes(Fixture("ring_v1.ptr"), true) == FirstRecordBytes(Fixture("ring_v1.ptr")));
  // What was skipped decodes as the slim decode of the whole record: the detail columns empty.
  format::Window slim, whole;
  REQUIRE(format::DecodeWindow(want, &slim, {.function_details = false}));
  REQUIRE(format::DecodeWindow(fresh, &whole, {.function_details = false}));
  CHECK(slim == whole);
  CHECK_FALSE(slim.functions.empty());
  format::Window full;  // asking for the details of a record read without them fails cleanly
  CHECK_FALSE(format::DecodeWindow(want, &full));
}
