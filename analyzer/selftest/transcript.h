// What the selftest workload prints: a transcript that two runs of it on the same node must
// reproduce line for line (every call's name, return code and count; digests of the result
// buffers; what was skipped and why), followed by `info` lines that differ between runs (paths,
// timings, CUPTI's counts in the counting run). checks.cpp reads it back.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace perftracker::selftest {

class Transcript {
 public:
  // One call: `name` is what the library records it as, when it records it (e.g.
  // "cudaMemcpyAsync HtoD"). Returns rc so calls read `if (t.Call(...) != 0)`.
  int Call(const std::string& name, int rc) {
    ++calls_[{name, rc}];
    return rc;
  }
  // A line compared between runs ("launched selftest_saxpy x12", "skip cublas: ...").
  void Line(std::string line) { lines_.push_back(std::move(line)); }
  // FNV-1a of a result buffer.
  void Result(const std::string& name, const void* data, size_t bytes) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < bytes; ++i)
      h = (h ^ static_cast<const uint8_t*>(data)[i]) * 1099511628211ull;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    lines_.push_back("result " + name + " " + hex);
  }
  // A line not compared (paths, timings, CUPTI's counts).
  void Info(std::string line) { info_.push_back(std::move(line)); }

  void Print(std::FILE* out) const {
    std::fprintf(out, "perftracker-selftest-workload 1\n");
    for (const auto& [key, n] : calls_) {
      std::fprintf(out, "call %s rc=%d x%ld\n", key.first.c_str(), key.second, n);
    }
    for (const std::string& l : lines_) std::fprintf(out, "%s\n", l.c_str());
    for (const std::string& l : info_) std::fprintf(out, "info %s\n", l.c_str());
  }

 private:
  std::map<std::pair<std::string, int>, long> calls_;
  std::vector<std::string> lines_;
  std::vector<std::string> info_;
};

}  // namespace perftracker::selftest
