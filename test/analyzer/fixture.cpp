#include "test/analyzer/fixture.h"

#include <flatbuffers/flatbuffers.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analyzer/commands/cli.h"
#include "schemas/format/version.h"

namespace perftracker::testing {

synthetic::JobShape SmallShape() {
  synthetic::JobShape s;
  s.functions = 200;
  s.collectives = 20;
  s.iterations = 8;
  return s;
}

format::FunctionPattern LeafFunction(format::FunctionKind kind, std::string name, uint64_t count,
                                     uint64_t each_ns) {
  format::FunctionPattern f;
  f.kind = kind;
  f.name = std::move(name);
  f.count = count;
  f.self_ns = f.total_ns = each_ns * count;
  f.min_ns = f.max_ns = each_ns;
  return f;
}

void AsCpuWindow(format::Window* w) {
  w->critical_path = true;
  for (format::FunctionPattern& p : w->functions) {
    if (p.kind == format::FunctionKind::kKernel || p.kind == format::FunctionKind::kMemcpy ||
        p.kind == format::FunctionKind::kMemset) {
      p.kind = format::FunctionKind::kUnknown;
      p.device_samples = p.device_ns = 0;
      p.device = {};
    }
  }
}

int32_t AddCallFrame(format::Window* w, const char* name, int32_t parent, uint64_t count,
                     uint64_t self_each, uint64_t total_each, bool critical) {
  format::FunctionPattern f = LeafFunction(format::FunctionKind::kPython, name, count, self_each);
  f.parent = parent;
  f.total_ns = total_each * count;
  f.min_ns = f.max_ns = total_each;
  f.critical_ns = critical ? f.self_ns : 0;
  w->functions.push_back(f);
  return static_cast<int32_t>(w->functions.size() - 1);
}

std::vector<std::string> WriteJob(const std::string& dir, const JobSpec& spec) {
  std::vector<std::string> paths;
  synthetic::JobShape shape = spec.shape;
  shape.ranks_per_node = spec.ranks_per_host;
  format::RingOptions options;
  options.file_size = 1 << 20;
  options.live_size = 128 << 10;  // room for an open window (edit_live)
  for (int r = 0; r < spec.ranks; ++r) {
    if (std::find(spec.skip_ranks.begin(), spec.skip_ranks.end(), r) != spec.skip_ranks.end()) {
      paths.emplace_back();
      continue;
    }
    const std::string host = spec.host_prefix + std::to_string(r / spec.ranks_per_host);
    const std::string path =
        dir + "/" + spec.job + "/" + host + "/rank-" + std::to_string(r) + ".ptr";
    format::Identity id{spec.job,
                        host,
                        r,
                        r % spec.ranks_per_host,
                        spec.ranks,
                        1000 + r,
                        1'790'000'000'000'000'000ull,
                        1'000'000'000ull,
                        format::kLibraryVersion};
    std::string error;
    auto writer = format::RingWriter::Create(path, id, options, &error);
    if (!writer) throw std::runtime_error(error);
    format::WindowEncoder encoder;
    for (int w = 0; w < spec.windows; ++w) {
      if (spec.keep && !spec.keep(r, w)) continue;
      format::Window window = synthetic::MakeWindow(shape, r, spec.ranks, static_cast<uint64_t>(w));
      if (spec.edit) spec.edit(r, &window);
      const auto encoded = encoder.Encode(window);
      if (!writer->Append(encoded, encoder.static_tail_size(), encoder.detail_size())) {
        throw std::runtime_error("append failed: " + path);
      }
    }
    flatbuffers::FlatBufferBuilder builder;
    format::LiveState live =
        synthetic::MakeLiveState(shape, r, spec.ranks, static_cast<uint64_t>(spec.windows));
    if (spec.edit_live) spec.edit_live(r, &live);
    writer->WriteLive(format::EncodeLiveState(live, builder));
    paths.push_back(path);
    for (int h = 0; h < spec.helpers; ++h) {
      format::Identity helper = id;
      helper.pid = 100'000 + r * 100 + h;
      helper.helper_of = id.pid;
      const std::string helper_path = dir + "/" + spec.job + "/" + host + "/rank-" +
                                      std::to_string(r) + ".helper-" +
                                      std::to_string(helper.pid) + ".ptr";
      auto hw = format::RingWriter::Create(helper_path, helper, options, &error);
      if (!hw) throw std::runtime_error(error);
      for (int w = 0; w < spec.windows; ++w) {
        format::Window window =
            synthetic::MakeWindow(shape, r, spec.ranks, static_cast<uint64_t>(w));
        window.functions.clear();
        window.collectives.clear();
        if (spec.edit_helper) spec.edit_helper(r, h, &window);
        const auto encoded = encoder.Encode(window);
        if (!hw->Append(encoded, encoder.static_tail_size(), encoder.detail_size())) {
          throw std::runtime_error("append failed: " + helper_path);
        }
      }
    }
  }
  return paths;
}

CliResult Cli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CliResult r;
  r.code = analyzer::RunCli(args, out, err);
  r.out = out.str();
  r.err = err.str();
  r.json = nlohmann::ordered_json::parse(r.out, nullptr, false);
  return r;
}

nlohmann::ordered_json AnalyzeJob(const JobSpec& spec, const std::vector<std::string>& extra) {
  const std::string dir = MakeTempDir();
  WriteJob(dir, spec);
  std::vector<std::string> args = {"analyze", dir, "--json", "-", "--threads", "2", "--top", "20"};
  args.insert(args.end(), extra.begin(), extra.end());
  const CliResult r = Cli(args);
  RemoveTree(dir);
  REQUIRE(r.code == 0);
  REQUIRE_FALSE(r.json.is_discarded());
  return r.json;
}

std::string MakeTempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "pt-analyzer-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

void RemoveTree(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream is(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(is), {}};
}

void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream os(path, std::ios::binary | std::ios::trunc);
  os.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace perftracker::testing
