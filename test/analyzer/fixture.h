// Deterministic multi-rank fixtures for the analyzer tests: the synthetic job written as ring
// files laid out like the preload library's ($DIR/<job>/<host>/rank-<r>.ptr), and a helper
// that runs a CLI command in-process.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "schemas/format/ring_file.h"
#include "tools/synthetic/synthetic.h"

namespace perftracker::testing {

// The reports as the tests read them: keys in the order written.
using Json = nlohmann::ordered_json;

struct JobSpec {
  synthetic::JobShape shape;
  int ranks = 8;
  int windows = 4;
  int ranks_per_host = 4;
  std::string job = "job";
  std::string host_prefix = "node";  // hosts are host_prefix + 0, 1, ...
  std::vector<int> skip_ranks;       // ranks without a file
  // Edits each window before it is written (rank, window).
  std::function<void(int, format::Window*)> edit;
  // Whether a window is written at all (rank, window); every one when unset.
  std::function<bool(int, int)> keep;
  // Edits each rank's live slot before it is written (rank).
  std::function<void(int, format::LiveState*)> edit_live;
  // Helper processes per rank (files rank-<r>.helper-<pid>.ptr), and what each helper's window
  // holds (rank, helper, window): the rank's window with no functions until edited.
  int helpers = 0;
  std::function<void(int, int, format::Window*)> edit_helper;
};

// Small, fast defaults: 200 functions, 20 collectives, 8 iterations per window.
synthetic::JobShape SmallShape();

// A function called `count` times at `each_ns` a call, all of it its own time: what the tests add
// to a window.
format::FunctionPattern LeafFunction(format::FunctionKind kind, std::string name, uint64_t count,
                                     uint64_t each_ns);

// A CPU rank's window: no device work (the synthetic kernels and copies become host calls), and
// critical-path time carried.
void AsCpuWindow(format::Window* w);

// Appends a Python frame called `count` times under the window's function `parent` (-1: none),
// each call `self_each` ns of its own and `total_each` with its callees; with `critical`, all of
// its own time on the critical path. Returns its index among the window's functions.
int32_t AddCallFrame(format::Window* w, const char* name, int32_t parent, uint64_t count,
                     uint64_t self_each, uint64_t total_each, bool critical = false);

// Writes the job under `dir`; returns the path of each rank's file (empty when skipped).
std::vector<std::string> WriteJob(const std::string& dir, const JobSpec& spec);

struct CliResult {
  int code = -1;
  std::string out, err;
  nlohmann::ordered_json json;  // parsed stdout when it is JSON
};

CliResult Cli(const std::vector<std::string>& args);

// Writes the job to a fresh directory, runs `analyze --json - --threads 2 --top 20` plus
// `extra` on it, removes it, and returns the report (the test fails if analyze did).
Json AnalyzeJob(const JobSpec& spec, const std::vector<std::string>& extra = {});

std::string MakeTempDir();
void RemoveTree(const std::string& dir);

// A file's bytes, and a file written from bytes (its directories made first): the tests that
// damage, copy or rename ring files.
std::vector<uint8_t> ReadBytes(const std::string& path);
void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace perftracker::testing
