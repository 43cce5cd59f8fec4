// Writes seed corpora for the fuzz targets into DIR/ring_reader_fuzz, DIR/window_decode_fuzz and
// DIR/reduced_decode_fuzz: small valid ring files, raw window and live-slot FlatBuffers, and a
// small reduced file.
#include <flatbuffers/flatbuffers.h>
#include <sys/stat.h>
#include <zstd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "analyzer/ingest/reduced.h"
#include "schemas/format/live.h"
#include "schemas/format/ring_file.h"
#include "tools/synthetic/synthetic.h"

namespace {

using namespace perftracker;

void Write(const std::string& path, std::span<const uint8_t> bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

format::Window Tiny(uint64_t seq, int functions) {
  synthetic::JobShape shape;
  shape.functions = functions;
  shape.collectives = 3;
  shape.iterations = 2;
  return synthetic::MakeWindow(shape, 1, 4, seq);
}

// Two ranks of a few slots each over a catalog of `functions`, one with a live state.
std::vector<uint8_t> TinyReduced(int functions) {
  analyzer::FileSet set;
  set.ring_files = 2;
  for (int i = 0; i < functions; ++i) {
    set.catalog.Intern(analyzer::FunctionInfo{uint64_t(100 + i), format::FunctionKind::kKernel,
                                              "k" + std::to_string(i), false, 0});
  }
  set.catalog.Intern(
      analyzer::CollectiveInfo{7, 2, format::CollectiveOp::kAllReduce, -1, 4096, "ncclAllReduce"});
  for (int rank = 0; rank < 2; ++rank) {
    analyzer::RankData& r = set.ranks.emplace_back();
    r.identity = {"job", "host", rank, rank, 2, 100 + rank, 1, 1, "0.1.0", 0};
    r.path = "host/rank-" + std::to_string(rank) + ".ptr";
    r.shift = 1;
    r.iteration_hist.Add(1000, 3);
    if (rank == 0) r.live = format::LiveState{1, 2, 3, 4, {{7, 2, 0, 5, 4, 1, 100}}, {"a.py:1:f"}};
    for (uint64_t key = 0; key < 3; ++key) {
      analyzer::Slot& s = r.slots.emplace_back();
      s.key = key;
      s.iter_begin = key * 2;
      s.iter_end = key * 2 + 2;
      s.windows = 1;
      s.iterations = 2;
      s.iteration_ns = 2000;
      for (size_t i = 0; i < static_cast<size_t>(functions); ++i) {
        analyzer::FunctionSum& f = s.functions.Mutable(i);
        f.self_ns = f.count = f.device_ns = f.device_samples = 1;
      }
      s.collectives.resize(1);
      s.collectives[0].count = 1;
    }
  }
  return analyzer::EncodeReduced(set, "host");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds DIR (DIR ends in the target's name)\n");
    return 2;
  }
  const std::string dir = argv[1];
  mkdir(dir.substr(0, dir.rfind('/')).c_str(), 0755);
  mkdir(dir.c_str(), 0755);
  format::WindowEncoder encoder;
  flatbuffers::FlatBufferBuilder builder;
  if (dir.ends_with("window_decode_fuzz")) {
    for (int n : {0, 1, 5, 20}) {
      Write(dir + "/window-" + std::to_string(n), encoder.Encode(Tiny(1, n)));
    }
    format::LiveState live;
    live.comms.push_back({1, 2, 0, 5, 4, 1, 100});
    live.python_stack = {"a.py:1:f"};
    Write(dir + "/live", format::EncodeLiveState(live, builder));
    return 0;
  }
  if (dir.ends_with("reduced_decode_fuzz")) {
    // The fuzz target's two kinds of input: 0 + a whole file, 1 + its FlatBuffer alone.
    for (int n : {0, 1, 6}) {
      std::vector<uint8_t> file = TinyReduced(n);
      file.insert(file.begin(), 0);
      Write(dir + "/reduced-" + std::to_string(n), file);
      std::vector<uint8_t> raw(ZSTD_getFrameContentSize(file.data() + 1 + 40, file.size() - 41));
      ZSTD_decompress(raw.data(), raw.size(), file.data() + 1 + 40, file.size() - 41);
      raw.insert(raw.begin(), 1);
      Write(dir + "/node-summary-" + std::to_string(n), raw);
    }
    return 0;
  }
  format::RingOptions options;
  options.file_size = 4096 + 2048 + 24 * 1024;
  options.live_size = 2048;
  std::string error;
  auto writer = format::RingWriter::Create(dir + "/ring.ptr", {}, options, &error);
  if (!writer) {
    std::fprintf(stderr, "fuzz_seeds: %s\n", error.c_str());
    return 1;
  }
  for (uint64_t seq = 0; seq < 12; ++seq) {
    const auto encoded = encoder.Encode(Tiny(seq, 6));
    writer->Append(encoded, encoder.static_tail_size(), encoder.detail_size());
  }
  format::LiveState live;
  live.python_stack = {"train.py:9:step"};
  writer->WriteLive(format::EncodeLiveState(live, builder));
  writer.reset();
  // ring_reader_fuzz reads an input of odd length as the analyzer does: seed that way too.
  std::ifstream in(dir + "/ring.ptr", std::ios::binary);
  std::vector<uint8_t> ring((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ring.push_back(0);
  Write(dir + "/ring-odd.ptr", ring);
  return 0;
}
