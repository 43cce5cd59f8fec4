// Damaged input is data: every problem found while reading the inputs is one of these declared
// diagnostics, counted and reported; none of them stops the analysis.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace perftracker::analyzer {

// X(enumerator, json name, what it means)
#define PERFTRACKER_DIAGNOSTICS(X)                                                         \
  X(kUnreadable, "unreadable", "file could not be read")                                   \
  X(kNotRingFile, "not_ring_file", "file is not a perftracker ring or reduced file")       \
  X(kCorruptHeader, "corrupt_header", "ring file header failed its checks")                \
  X(kUnsupportedVersion, "unsupported_version", "ring file format this build cannot read") \
  X(kTruncatedTail, "truncated_tail", "file shorter than its header says")                 \
  X(kCrcMismatch, "crc_mismatch", "record failed its CRC, zstd or verifier check")         \
  X(kUndecodableRecord, "undecodable_record", "record verified but did not decode")        \
  X(kSeqGap, "seq_gap", "records missing between the oldest and newest")                   \
  X(kDuplicateRecord, "duplicate_record", "record sequence number repeated")               \
  X(kDuplicateRank, "duplicate_rank", "two files claim the same rank; newest start kept")  \
  X(kRestartedRank, "restarted_rank", "rank restarted: earlier run's file ignored")        \
  X(kHelperFile, "helper_file",                                                            \
    "file of a process a rank started (DataLoader worker, subprocess): attached to it")    \
  X(kOtherJob, "other_job", "file of another job id ignored")                              \
  X(kRankMissing, "rank_missing", "rank of the world size without a file")                 \
  X(kNoWindows, "no_windows", "ring file holds no window")                                 \
  X(kLiveMissing, "live_missing", "ring file without a valid live slot")                   \
  X(kWorldSizeMismatch, "world_size_mismatch", "files disagree about the world size")      \
  X(kDroppedEvents, "dropped_events", "events the collector dropped (buffers full)")       \
  X(kDroppedFunctions, "dropped_functions", "functions that did not fit the table")        \
  X(kDroppedWindows, "dropped_windows", "windows the collector could not store")           \
  X(kPythonUnrecorded, "python_unrecorded",                                                \
    "windows missing Python functions (another tool's frame evaluator did not call ours)") \
  X(kSelectionIgnored, "selection_ignored",                                                \
    "reduced file: --last/--since/--iterations apply when reducing, not when analyzing")

enum class Diagnostic : uint8_t {
#define PERFTRACKER_ENUM(e, name, doc) e,
  PERFTRACKER_DIAGNOSTICS(PERFTRACKER_ENUM)
#undef PERFTRACKER_ENUM
      kCount
};

std::string_view DiagnosticName(Diagnostic d);
std::string_view DiagnosticDoc(Diagnostic d);

// Thread-safe counters plus the first few messages (with file names) for the report.
class Diagnostics {
 public:
  static constexpr size_t kMaxMessages = 8;
  void Add(Diagnostic d, uint64_t n = 1, const std::string& message = {});
  uint64_t Count(Diagnostic d) const { return counts_[static_cast<size_t>(d)]; }
  const std::vector<std::string>& messages() const { return messages_; }
  uint64_t Total() const;
  // Adds `other`'s counts and messages as if its Adds had been made here, in order. Ingest gives
  // each file its own Diagnostics and merges them in file order: the report's messages do not
  // depend on which reader thread finished first.
  void Merge(const Diagnostics& other);
  // A message as messages() gives it (a reduced file's), kept if there is room.
  void AddMessage(const std::string& message);

 private:
  mutable std::mutex mu_;
  std::array<uint64_t, static_cast<size_t>(Diagnostic::kCount)> counts_{};
  std::vector<std::string> messages_;
};

}  // namespace perftracker::analyzer
