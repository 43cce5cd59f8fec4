// Helpers shared by the ring-file tests: deterministic windows, temporary directories, and a
// reader that collects every record.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "schemas/format/ring_file.h"
#include "schemas/format/window.h"

namespace perftracker::testing {

// A small window whose contents follow from `seq` alone, so a reader can check any record.
format::Window SmallWindow(uint64_t seq, int functions = 40);

format::Identity TestIdentity(int rank = 3);

class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct ReadBack {
  format::ReadStatus status = format::ReadStatus::kIoError;
  std::string error;
  format::RingContents contents;
  std::vector<std::pair<uint64_t, format::Window>> records;
  uint64_t undecodable = 0;
};

ReadBack ReadAll(std::span<const uint8_t> file);
ReadBack ReadAllFile(const std::string& path);

std::vector<uint8_t> Slurp(const std::string& path);
void Spit(const std::string& path, const std::vector<uint8_t>& bytes);

// Writes `count` SmallWindows (seq 0..count-1) to a new ring file of `file_size` bytes.
void WriteRing(const std::string& path, uint64_t count, uint64_t file_size);

}  // namespace perftracker::testing
