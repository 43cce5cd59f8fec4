// Writes seed corpora for the fuzz targets into DIR/ring_reader_fuzz and DIR/window_decode_fuzz:
// small valid ring files and raw window and live-slot FlatBuffers.
#include <flatbuffers/flatbuffers.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "schemas/format/live.h"
#include "schemas/format/ring_file.h"
#include "tools/synthetic/synthetic.h"

namespace {

using namespace perftracker;

void Write(const std::string& path, std::span<const uint8_t> bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

format::Window Tiny(uint64_t seq, int functions) {
  synthetic::JobShape shape;
  shape.functions = functions;
  shape.collectives = 3;
  shape.iterations = 2;
  return synthetic::MakeWindow(shape, 1, 4, seq);
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
    writer->Append(encoder.Encode(Tiny(seq, 6)), encoder.static_tail_size());
  }
  format::LiveState live;
  live.python_stack = {"train.py:9:step"};
  writer->WriteLive(format::EncodeLiveState(live, builder));
  return 0;
}
