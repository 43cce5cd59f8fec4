#include "test/unit/ring_test_util.h"

#include <catch2/catch.hpp>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace perftracker::testing {

format::Window SmallWindow(uint64_t seq, int functions) {
  format::Window w;
  w.window_seq = seq;
  w.iter_begin = seq * 10;
  w.iter_end = w.iter_begin + 10;
  w.start_mono_ns = 1'000'000 + seq * 7'000'000;
  w.end_mono_ns = w.start_mono_ns + 5'000'000;
  for (int i = 0; i < functions; ++i) {
    format::FunctionPattern p;
    p.kind = static_cast<format::FunctionKind>(1 + i % 11);
    p.name = "module.py:" + std::to_string(i) + ":function_" + std::to_string(i);
    p.parent = i > 0 && i % 3 == 0 ? i - 1 : -1;
    p.count = 1 + (seq + static_cast<uint64_t>(i)) % 17;
    for (uint64_t c = 0; c < p.count; ++c) {
      const uint64_t d = 1000 + (seq * 131 + static_cast<uint64_t>(i) * 977 + c * 37) % 50000;
      p.duration.Add(d);
      p.total_ns += d;
      p.min_ns = c == 0 ? d : std::min(p.min_ns, d);
      p.max_ns = std::max(p.max_ns, d);
    }
    p.self_ns = p.total_ns / 2;
    p.per_iteration.Add(p.total_ns / 10);
    w.functions.push_back(std::move(p));
  }
  format::FillFunctionIds(&w.functions);
  format::CollectivePattern c;
  c.comm_id = 0xC0FFEE;
  c.comm_size = 8;
  c.comm_rank = 3;
  c.op = format::CollectiveOp::kAllReduce;
  c.name = "ncclAllReduce";
  c.bytes = 1 << 20;
  c.count = 10;
  c.device.Add(120'000 + seq);
  c.launch_offset.Add(40'000'000 + seq);
  c.first_seq = seq * 10;
  c.last_seq_launched = c.last_seq_completed = seq * 10 + 9;
  w.collectives.push_back(std::move(c));
  w.iterations.first = w.iter_begin;
  w.iterations.count = 10;
  w.iterations.duration.Add(500'000 + seq);
  w.health.hook_calls = seq;
  return w;
}

format::Identity TestIdentity(int rank) {
  return format::Identity{"job-42", "node7", rank, rank % 8, 16, 4242,
                          1'790'000'000'000'000'000ull, 123'456'789ull, "0.1.0"};
}

TempDir::TempDir() {
  char pattern[] = "/tmp/perftracker-test-XXXXXX";
  const char* dir = mkdtemp(pattern);
  REQUIRE(dir != nullptr);
  path_ = dir;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

ReadBack ReadAll(std::span<const uint8_t> file) {
  ReadBack r;
  format::RingReader reader;
  r.status = reader.Open(file, &r.error);
  if (r.status != format::ReadStatus::kOk) return r;
  reader.ForEachRecord([&](uint64_t seq, std::span<const uint8_t> bytes) {
    format::Window w;
    if (format::DecodeWindow(bytes, &w)) {
      r.records.emplace_back(seq, std::move(w));
    } else {
      ++r.undecodable;
    }
    return true;
  });
  r.contents = reader.contents();
  return r;
}

ReadBack ReadAllFile(const std::string& path) {
  const std::vector<uint8_t> bytes = Slurp(path);
  return ReadAll(bytes);
}

std::vector<uint8_t> Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void Spit(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void WriteRing(const std::string& path, uint64_t count, uint64_t file_size) {
  format::RingOptions options;
  options.file_size = file_size;
  options.live_size = 4096;
  std::string error;
  auto writer = format::RingWriter::Create(path, TestIdentity(), options, &error);
  REQUIRE(writer);
  format::WindowEncoder encoder;
  for (uint64_t seq = 0; seq < count; ++seq) {
    const auto encoded = encoder.Encode(SmallWindow(seq));
    REQUIRE(writer->Append(encoded, encoder.static_tail_size(), encoder.detail_size()));
  }
}

}  // namespace perftracker::testing
