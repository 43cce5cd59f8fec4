// Encode + compress + append, and read + decode, of a realistic window (2,000 functions,
// 50 collectives). Targets: <= 30 KB per light window on disk at the library's level (issue 32:
// args kLibraryZstdLevel/0), >= 5,000 windows/s encoded at level 1 (issue 2). A detailed window
// (second arg 1) also carries its detail columns (FORMAT.md), ~21 KB more.
// The "bytes_per_window" counter is the on-disk size of one record, frame included; the function
// names are stored once per table (format 2's table region: "table_bytes", both copies), so every
// record after the first names them in 24 bytes.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <flatbuffers/flatbuffers.h>

#include "schemas/format/ring_file.h"
#include "tools/synthetic/synthetic.h"

namespace {

using namespace perftracker;

const format::Window& RealisticWindow(bool detailed = false) {
  static const format::Window light = [] {
    synthetic::JobShape shape;  // 2,000 functions, 50 collectives, 20 iterations
    return synthetic::MakeWindow(shape, 3, 64, 7);
  }();
  static const format::Window detailed_window = [] {
    format::Window w = light;
    w.detailed = true;
    return w;
  }();
  return detailed ? detailed_window : light;
}

std::string TempPath(const char* name) {
  return "/tmp/perftracker-bench-" + std::to_string(getpid()) + "-" + name + ".ptr";
}

void BM_EncodeCompressAppend(benchmark::State& state) {
  const format::Window& window = RealisticWindow(state.range(1) != 0);
  const std::string path = TempPath("append");
  std::string error;
  format::RingOptions options;
  options.file_size = 64ull << 20;
  options.zstd_level = static_cast<int>(state.range(0));
  auto writer = format::RingWriter::Create(path, {}, options, &error);
  if (!writer) {
    state.SkipWithError(error.c_str());
    return;
  }
  format::WindowEncoder encoder;
  size_t raw = 0;
  for (auto _ : state) {
    const auto bytes = encoder.Encode(window, format::LibraryDetails(window));
    raw = bytes.size();
    if (!writer->Append(bytes, encoder.static_tail_size(), encoder.detail_size())) {
      state.SkipWithError("append failed");
    }
  }
  state.counters["windows_per_s"] = benchmark::Counter(double(state.iterations()),
                                                       benchmark::Counter::kIsRate);
  state.counters["raw_bytes"] = double(raw);
  state.counters["bytes_per_window"] = double(writer->last_record_size());
  state.counters["table_bytes"] = double(writer->table_bytes());
  unlink(path.c_str());
}
BENCHMARK(BM_EncodeCompressAppend)
    ->ArgNames({"level", "detailed"})
    ->Args({-1, 0})
    ->Args({1, 0})
    ->Args({3, 0})
    ->Args({format::kLibraryZstdLevel, 0})
    ->Args({format::kLibraryZstdLevel, 1})
    ->Unit(benchmark::kMicrosecond);

void BM_ReadDecode(benchmark::State& state) {
  const format::Window& window = RealisticWindow();
  const std::string path = TempPath("read");
  std::string error;
  format::RingOptions options;
  options.file_size = 8ull << 20;
  {
    auto writer = format::RingWriter::Create(path, {}, options, &error);
    format::WindowEncoder encoder;
    const auto bytes = encoder.Encode(window, format::LibraryDetails(window));  // light
    while (writer->Append(bytes, encoder.static_tail_size(), encoder.detail_size()) &&
           writer->next_seq() * 40'000 < options.file_size) {
    }
  }
  format::RingReader reader;
  if (reader.OpenFile(path, &error) != format::ReadStatus::kOk) state.SkipWithError(error.c_str());
  uint64_t records = 0;
  for (auto _ : state) {
    format::RingReader r;
    r.OpenFile(path, &error);
    r.ForEachRecord([&](uint64_t, std::span<const uint8_t> bytes) {
      format::Window w;
      benchmark::DoNotOptimize(format::DecodeWindow(bytes, &w));
      ++records;
      return true;
    });
  }
  state.counters["windows_per_s"] = benchmark::Counter(double(records), benchmark::Counter::kIsRate);
  unlink(path.c_str());
}
BENCHMARK(BM_ReadDecode)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
