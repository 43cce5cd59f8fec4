// Writing and reading ring files: the only code that knows their bytes (see ring_layout.h).
//
// RingWriter: one writer per file (the collector's background thread). Not thread-safe. Every
// Append is two pwrite calls: the frame with its magic zeroed plus the payload, then the magic.
// A writer killed at any point leaves every earlier record intact and the current one invisible.
// When the data region is full, writing continues at its start and overwrites the oldest records.
//
// RingReader: scans the data region for frames, orders them by sequence number and hands each
// record that passes every check (frame CRC, payload CRC, zstd, FlatBuffers verifier) to a
// visitor, one at a time, so memory stays bounded by one record.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "schemas/format/live.h"
#include "schemas/format/ring_layout.h"
#include "schemas/format/window.h"

namespace perftracker::format {

struct Identity {
  std::string job_id;
  std::string hostname;
  int32_t rank = -1;
  int32_t local_rank = -1;
  int32_t world_size = 0;
  int32_t pid = 0;
  uint64_t start_real_ns = 0;
  uint64_t start_mono_ns = 0;
  std::string library_version;
  // A helper process of rank `rank` (FileHeader's kFileFlagHelper): the rank's pid; 0 for the
  // rank itself.
  int32_t helper_of = 0;
};

// The level libperftracker.so's writer compresses records at. A light record of 2,000 functions
// is 31.3 KB at level 1 and 29.98 KB at 7, for ~1.5 ms more of the writer thread once a window
// (>= PERFTRACKER_WINDOW_S, 20 s); level 19 saves 1.2% more at 40 times the time (FORMAT.md
// "Sizes and speed").
inline constexpr int kLibraryZstdLevel = 7;

struct RingOptions {
  uint64_t file_size = 64ull << 20;  // whole file, header and live slot included
  uint32_t live_size = 256u << 10;   // both halves of the live slot (the open window fits)
  int zstd_level = 1;  // the fastest: tools and tests; the library's is kLibraryZstdLevel
  // Bytes of the table region, where static tails (function names) are stored once per function
  // table instead of once per window; when it is full, records carry their tails again. -1: a
  // sixteenth of file_size, at most 4 MiB. 0: none (a file format-1 readers can read).
  int64_t table_size = -1;
};

class RingWriter {
 public:
  // Creates `name` in the open directory `dir_fd` (whose path `dir` is for messages), never
  // following a link: the file is created with O_EXCL | O_NOFOLLOW, mode 0640 (less if the umask
  // says so), and holds an exclusive flock for the writer's lifetime. A file already there is
  // renamed to "<stem>.prev.ptr" first so a restarted rank never destroys the previous run's
  // records -- unless a live process still holds its lock: then nothing is touched and Create fails
  // with *holder set to that process's pid (from its header; -1 if unreadable). A symbolic link or
  // anything but a regular file there fails too, untouched. The file's blocks are allocated up
  // front: a full disk fails here, never later. nullptr and *error on failure.
  static std::unique_ptr<RingWriter> CreateAt(int dir_fd, const std::string& dir,
                                              const std::string& name, const Identity& identity,
                                              const RingOptions& options, std::string* error,
                                              int32_t* holder = nullptr);
  // The same at a path, creating its directories (0750) first: for tools and tests.
  static std::unique_ptr<RingWriter> Create(const std::string& path, const Identity& identity,
                                            const RingOptions& options, std::string* error);
  ~RingWriter();
  RingWriter(const RingWriter&) = delete;
  RingWriter& operator=(const RingWriter&) = delete;

  // Compresses one WindowSummary FlatBuffer and appends it. False on an I/O error or a record
  // larger than the data region; the file stays readable either way. The last `static_tail`
  // bytes (WindowEncoder::static_tail_size) are compressed as a zstd frame of their own, and
  // that frame is reused while those bytes do not change: function names are compressed once
  // per function table, not once per window. The `details` bytes before the tail
  // (WindowEncoder::detail_size) get a frame of their own too, which readers may skip. Encode in a
  // statement of its own: as arguments beside Encode, the sizes may be read before it runs.
  bool Append(std::span<const uint8_t> flatbuffer, size_t static_tail = 0, size_t details = 0);
  // Replaces the live slot's contents with one LiveState FlatBuffer (at most live_size/2 - 24).
  bool WriteLive(std::span<const uint8_t> flatbuffer);
  // The largest LiveState WriteLive takes.
  size_t live_capacity() const { return live_half_ - sizeof(LiveFrame); }

  uint64_t next_seq() const { return next_seq_; }
  uint64_t data_capacity() const { return capacity_; }
  // On-disk bytes of the last record appended, frame and padding included.
  uint64_t last_record_size() const { return last_record_size_; }
  // Bytes of the table region used: the function tables stored so far, both copies.
  uint64_t table_bytes() const { return table_used_ <= table_size_ ? table_used_ : 0; }
  // The open file (to tell it from another one at the same name before removing that name).
  int fd() const { return fd_; }

 private:
  RingWriter() = default;
  bool WriteAt(uint64_t offset, const void* data, size_t size);
  bool RetireTail();
  // Makes `tail` the current static tail: tail_ref_ set where it is (or was) stored, else
  // tail_compressed_ its frame. False when compression failed.
  bool NewTail(std::span<const uint8_t> tail);
  // Stores tail_compressed_ (twice) in the table region; false when it has no room or a write
  // failed, and the records go on carrying the tail themselves.
  bool StoreTail(size_t raw_size);

  int fd_ = -1;
  uint64_t data_offset_ = 0;
  uint64_t capacity_ = 0;
  uint64_t write_pos_ = 0;  // relative to data_offset_
  uint64_t next_seq_ = 0;
  uint64_t last_record_size_ = 0;
  uint64_t live_offset_ = 0;
  uint32_t live_half_ = 0;
  uint64_t live_seq_ = 0;
  int zstd_level_ = 3;
  void* cctx_ = nullptr;  // ZSTD_CCtx*
  std::vector<uint8_t> frame_;
  std::vector<uint8_t> scan_;             // the region retired on wrap-around
  std::vector<uint8_t> tail_raw_;         // the static tail last compressed
  std::vector<uint8_t> tail_compressed_;  // its zstd frame
  uint64_t table_offset_ = 0;             // the table region: [table_offset_, +table_size_)
  uint64_t table_size_ = 0;
  uint64_t table_used_ = 0;
  std::optional<TableRef> tail_ref_;  // where tail_raw_ lies in the table region
  struct StoredTail {
    uint64_t hash;  // XXH3 of the raw tail
    TableRef ref;
  };
  std::vector<StoredTail> stored_;  // every tail in the table region
};

// Damage found while reading; reported, never fatal.
struct RingStats {
  uint64_t records_valid = 0;
  uint64_t record_bytes = 0;     // on disk, of the valid records: frames, payloads, padding
  uint64_t records_corrupt = 0;  // a complete frame whose payload failed a check
  uint64_t seq_gaps = 0;         // sequence numbers missing between the oldest and newest record
  uint64_t duplicates = 0;       // frames repeating a sequence number already accepted
  bool truncated = false;        // the file is shorter than its header says
  bool live_valid = false;
};

enum class ReadStatus { kOk, kIoError, kNotRingFile, kCorruptHeader, kUnsupportedVersion };

struct RingContents {
  Identity identity;
  uint32_t format_version = 0;
  uint64_t file_size = 0;
  uint64_t data_capacity = 0;
  std::optional<LiveState> live;
  RingStats stats;
};

// Called once per valid record in sequence order with the verified, decompressed FlatBuffer.
// Return false to stop early.
using RecordVisitor = std::function<bool(uint64_t seq, std::span<const uint8_t> flatbuffer)>;

// Reads one ring file: Open parses the header and the live slot and finds every frame;
// ForEachRecord then checks and hands over the records one at a time, oldest first.
class RingReader {
 public:
  // `file` must outlive the reader.
  ReadStatus Open(std::span<const uint8_t> file, std::string* error);
  // Reads the whole file into memory first; errors name the path. A reader may open file after
  // file: its buffer is reused.
  ReadStatus OpenFile(const std::string& path, std::string* error);
  const RingContents& contents() const { return contents_; }
  // Frames Open found, in sequence order: the records ForEachRecord can hand over (some may
  // fail their checks or repeat a sequence number).
  size_t frame_count() const { return frames_.size(); }
  // Checks and hands over the records of frames [first, frame_count()), oldest first; frames
  // before `first` are not read at all (analyze --last). Updates contents().stats as it goes.
  // Once only: the frames are released at the end.
  void ForEachRecord(const RecordVisitor& visit, size_t first = 0);
  // Checks frame i and hands over its record alone, stats untouched: a look at the newest record
  // before the pass (analyze --since). False when i is out of range or the record fails a check.
  bool PeekRecord(size_t i, const RecordVisitor& visit);
  // Records hand over their detail columns (DecodeOptions::function_details) as empty vectors,
  // not decompressed: for readers that decode without them. Off by default.
  void set_skip_details(bool skip) { skip_details_ = skip; }
  // The tail of the record being handed over, valid inside the visitor (DecodeOptions::tail).
  RecordTail tail() const { return tail_; }

 private:
  struct FrameRef {
    uint64_t seq;
    uint64_t offset;
    RecordFrame frame;
  };
  std::vector<uint8_t> owned_;
  std::span<const uint8_t> file_;
  std::span<const uint8_t> table_;  // the table region (format 2), as far as the file holds it
  std::vector<FrameRef> frames_;
  RingContents contents_;
  bool skip_details_ = false;
  RecordTail tail_;
};

}  // namespace perftracker::format
