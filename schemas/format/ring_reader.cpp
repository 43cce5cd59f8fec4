// Reading never trusts a byte it has not checked: every offset and length is bounds-checked
// against the buffer before use, and a record reaches the visitor only after its frame CRC,
// payload CRC, decompression to the announced size and the FlatBuffers verifier all pass.
#include <fcntl.h>
#include <flatbuffers/flatbuffers.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "schemas/format/crc32c.h"
#include "schemas/format/ring_file.h"
#include "schemas/format/ring_layout.h"
#include "schemas/format/version.h"
#include "schemas/window_generated.h"

namespace perftracker::format {
namespace {

// Unique in the process, so a decoder's memo (FunctionTableMemo) never mistakes another file's
// or reader's tail for the one it saw.
uint64_t NewTailGeneration() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// A record's decompressed bytes, and the static tail (FORMAT.md "Records": the last frame, the
// function names) of the record before: its zstd frame, what it decompressed to, and which
// decompression that was (RecordTail::generation).
struct RecordBuffer {
  std::vector<uint8_t> raw;
  std::vector<uint8_t> tail_frame;
  std::vector<uint8_t> tail_raw;
  uint64_t generation = 0;

  // The tail of the record in `raw`, as RingReader::tail() reports it.
  RecordTail tail() const { return {tail_raw.empty() ? 0 : generation, tail_raw.size()}; }
};

std::string Field(const char* p, size_t size) { return std::string(p, strnlen(p, size)); }

template <class T>
bool Load(std::span<const uint8_t> file, uint64_t offset, T* out) {
  if (offset > file.size() || file.size() - offset < sizeof(T)) return false;
  std::memcpy(out, file.data() + offset, sizeof(T));
  return true;
}

ReadStatus ParseHeader(std::span<const uint8_t> file, FileHeader* h, std::string* error) {
  if (!Load(file, 0, h) || std::memcmp(h->magic, kFileMagic, sizeof kFileMagic) != 0) {
    *error = "not a perftracker ring file (bad magic)";
    return ReadStatus::kNotRingFile;
  }
  if (Crc32c(h, offsetof(FileHeader, header_crc)) != h->header_crc) {
    *error = "ring file header is corrupt (checksum mismatch)";
    return ReadStatus::kCorruptHeader;
  }
  if (h->format_version < kOldestReadableVersion || h->min_reader_version > kFormatVersion) {
    *error = "unsupported ring file format version " + std::to_string(h->format_version) +
             " (this build reads " + std::to_string(kOldestReadableVersion) + ".." +
             std::to_string(kFormatVersion) + ")";
    return ReadStatus::kUnsupportedVersion;
  }
  const bool layout_ok =
      h->live_offset >= sizeof(FileHeader) && h->live_size % 2 == 0 &&
      h->live_size >= 2 * sizeof(LiveFrame) && h->data_offset >= h->live_offset + h->live_size &&
      h->data_capacity <= h->file_size && h->data_offset <= h->file_size - h->data_capacity;
  if (!layout_ok) {
    *error = "ring file header describes an impossible layout";
    return ReadStatus::kCorruptHeader;
  }
  return ReadStatus::kOk;
}

std::optional<LiveState> ReadLive(std::span<const uint8_t> file, const FileHeader& h) {
  std::optional<LiveState> best;
  uint64_t best_seq = 0;
  const uint64_t half = h.live_size / 2;
  for (uint64_t i = 0; i < 2; ++i) {
    const uint64_t at = h.live_offset + i * half;
    LiveFrame f;
    if (!Load(file, at, &f) || f.magic != kLiveMagic ||
        Crc32c(&f, offsetof(LiveFrame, header_crc)) != f.header_crc) {
      continue;
    }
    if (f.payload_size > half - sizeof f || at + sizeof f + f.payload_size > file.size()) continue;
    const std::span<const uint8_t> payload = file.subspan(at + sizeof f, f.payload_size);
    LiveState state;
    if (Crc32c(payload.data(), payload.size()) != f.payload_crc ||
        !DecodeLiveState(payload, &state)) {
      continue;
    }
    if (!best || f.seq > best_seq) {
      best = std::move(state);
      best_seq = f.seq;
    }
  }
  return best;
}

// Frames whose own header checks out, in file order. Leftovers of overwritten records have no
// valid frame header and are stepped over eight bytes at a time.
template <class FrameRef>
std::vector<FrameRef> ScanFrames(std::span<const uint8_t> file, const FileHeader& h) {
  std::vector<FrameRef> frames;
  const uint64_t end = std::min<uint64_t>(file.size(), h.data_offset + h.data_capacity);
  uint64_t pos = h.data_offset;
  while (pos + sizeof(RecordFrame) <= end) {
    RecordFrame f;
    std::memcpy(&f, file.data() + pos, sizeof f);
    const bool framed = f.magic == kRecordMagic &&
                        Crc32c(&f, offsetof(RecordFrame, header_crc)) == f.header_crc &&
                        f.payload_size <= end - pos - sizeof f;
    if (!framed) {
      pos += kRecordAlign;
      continue;
    }
    frames.push_back(FrameRef{f.seq, pos, f});
    pos += AlignRecord(sizeof f + f.payload_size);
  }
  std::sort(frames.begin(), frames.end(),
            [](const FrameRef& a, const FrameRef& b) { return a.seq < b.seq; });
  return frames;
}

// Where the last zstd frame of `frames` starts: 0 when it holds one frame or is malformed (it is
// then decompressed whole, and zstd judges it).
size_t LastFrameStart(std::span<const uint8_t> frames) {
  size_t at = 0;
  size_t last = 0;
  while (at < frames.size()) {
    const size_t n = ZSTD_findFrameCompressedSize(frames.data() + at, frames.size() - at);
    if (ZSTD_isError(n) || n == 0 || n > frames.size() - at) return 0;
    last = at;
    at += n;
  }
  return last;
}

// A record's compressed parts: everything before the static tail (body, then the detail frame
// when the record has one), and the static tail's frame, from the payload or the table region.
struct Parts {
  std::span<const uint8_t> front;
  std::span<const uint8_t> tail;
};

// The static tail a record names (kRecordFlagTableTail): the first of its two copies in the table
// region that passes every check. Empty when neither does.
std::span<const uint8_t> TableTail(std::span<const uint8_t> table, const TableRef& ref) {
  if (ref.entry > table.size()) return {};
  const uint64_t copy = AlignRecord(sizeof(TableEntry) + uint64_t{ref.payload_size});
  for (uint64_t i = 0; i < 2; ++i) {
    const uint64_t at = ref.entry + i * copy;
    TableEntry e;
    if (at > table.size() || !Load(table, at, &e) || e.magic != kTableEntryMagic ||
        Crc32c(&e, offsetof(TableEntry, header_crc)) != e.header_crc ||
        e.payload_size != ref.payload_size || e.raw_size != ref.raw_size ||
        e.payload_size > table.size() - at - sizeof e) {
      continue;
    }
    const auto frame = table.subspan(at + sizeof e, e.payload_size);
    if (Crc32c(frame.data(), frame.size()) == e.payload_crc) return frame;
  }
  return {};
}

bool SplitPayload(std::span<const uint8_t> payload, const RecordFrame& f,
                  std::span<const uint8_t> table, Parts* parts) {
  if ((f.flags & kRecordFlagTableTail) == 0) {
    const size_t last = LastFrameStart(payload);
    *parts = {payload.first(last), payload.subspan(last)};
    return true;
  }
  if (payload.size() < kTableRefFrameSize) return false;
  const auto closing = payload.last(kTableRefFrameSize);
  uint32_t skippable[2];
  TableRef ref;
  std::memcpy(skippable, closing.data(), sizeof skippable);
  std::memcpy(&ref, closing.data() + sizeof skippable, sizeof ref);
  if (skippable[0] != kZstdSkippableMagic || skippable[1] != sizeof ref) return false;
  parts->front = payload.first(payload.size() - kTableRefFrameSize);
  parts->tail = TableTail(table, ref);
  return !parts->front.empty() && !parts->tail.empty();
}

// Decompresses a record's parts into buf->raw (raw_size bytes). The static tail is byte-identical
// from window to window while the function table is: when its frame equals the previous
// record's, its earlier output is copied, not decompressed again (it was most of the reader's zstd
// time). With `skip_details` the front's last frame (kRecordFlagDetailFrame) is not decompressed:
// its bytes are zeroed, so its columns read as empty vectors, which the verifier accepts and the
// decoder never looks at.
bool Decompress(const Parts& parts, size_t raw_size, bool skip_details, ZSTD_DCtx* dctx,
                RecordBuffer* buf) {
  std::vector<uint8_t>& raw = buf->raw;
  raw.resize(raw_size);
  const size_t details_at = skip_details ? LastFrameStart(parts.front) : 0;
  const std::span<const uint8_t> head =
      details_at > 0 ? parts.front.first(details_at) : parts.front;
  size_t n = 0;
  if (!head.empty()) {
    n = ZSTD_decompressDCtx(dctx, raw.data(), raw.size(), head.data(), head.size());
    if (ZSTD_isError(n)) return false;
  }
  if (details_at > 0) {
    const auto details = parts.front.subspan(details_at);
    const unsigned long long size = ZSTD_getFrameContentSize(details.data(), details.size());
    if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR ||
        size > raw.size() - n) {
      return false;
    }
    std::memset(raw.data() + n, 0, size);
    n += size;
  }
  const std::span<const uint8_t> tail = parts.tail;
  if (!parts.front.empty() &&
      std::equal(tail.begin(), tail.end(), buf->tail_frame.begin(), buf->tail_frame.end())) {
    if (buf->tail_raw.size() != raw.size() - n) return false;
    std::memcpy(raw.data() + n, buf->tail_raw.data(), buf->tail_raw.size());
    return true;
  }
  const size_t m =
      ZSTD_decompressDCtx(dctx, raw.data() + n, raw.size() - n, tail.data(), tail.size());
  if (ZSTD_isError(m)) return false;
  buf->tail_frame.clear(), buf->tail_raw.clear();
  if (!parts.front.empty()) {  // a tail worth keeping: there is a body before it
    buf->tail_frame.assign(tail.begin(), tail.end());
    buf->tail_raw.assign(raw.begin() + static_cast<ptrdiff_t>(n),
                         raw.begin() + static_cast<ptrdiff_t>(n + m));
    buf->generation = NewTailGeneration();
  }
  return n + m == raw.size();
}

// The record at `offset`, checked and decompressed into `buf`; empty when it fails a check.
std::span<const uint8_t> DecodePayload(std::span<const uint8_t> file,
                                       std::span<const uint8_t> table, uint64_t offset,
                                       const RecordFrame& f, bool skip_details, ZSTD_DCtx* dctx,
                                       RecordBuffer* buf) {
  const std::span<const uint8_t> payload = file.subspan(offset + sizeof f, f.payload_size);
  Parts parts;
  if (Crc32c(payload.data(), payload.size()) != f.payload_crc || f.codec != kCodecZstd ||
      f.raw_size > kMaxRawRecordSize || !SplitPayload(payload, f, table, &parts)) {
    return {};
  }
  const bool skip = skip_details && (f.flags & kRecordFlagDetailFrame) != 0;
  if (!Decompress(parts, f.raw_size, skip, dctx, buf)) return {};
  const std::span<const uint8_t> record(buf->raw);
  flatbuffers::Verifier verifier(record.data(), record.size());
  if (!fb::VerifyWindowSummaryBuffer(verifier)) return {};
  return record;
}

}  // namespace

ReadStatus RingReader::Open(std::span<const uint8_t> file, std::string* error) {
  FileHeader h;
  if (const ReadStatus s = ParseHeader(file, &h, error); s != ReadStatus::kOk) return s;
  file_ = file;
  contents_ = RingContents{};
  RingContents& c = contents_;
  c.identity = Identity{Field(h.job_id, sizeof h.job_id),
                        Field(h.hostname, sizeof h.hostname),
                        h.rank,
                        h.local_rank,
                        h.world_size,
                        h.pid,
                        h.start_real_ns,
                        h.start_mono_ns,
                        Field(h.library_version, sizeof h.library_version),
                        (h.flags & kFileFlagHelper) != 0 ? h.rank_pid : 0};
  c.format_version = h.format_version;
  c.file_size = h.file_size;
  c.data_capacity = h.data_capacity;
  c.stats.truncated = file.size() < h.file_size;
  c.live = ReadLive(file, h);
  // Format 2's table region lies between the live slot and the records (empty in format 1).
  const uint64_t table_at = std::min<uint64_t>(h.live_offset + h.live_size, file.size());
  table_ = file.subspan(table_at, std::min<uint64_t>(h.data_offset, file.size()) - table_at);
  c.stats.live_valid = c.live.has_value();
  frames_ = ScanFrames<FrameRef>(file, h);
  return ReadStatus::kOk;
}

bool RingReader::PeekRecord(size_t i, const RecordVisitor& visit) {
  if (i >= frames_.size()) return false;
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  RecordBuffer buf;
  const FrameRef& r = frames_[i];
  const auto record =
      DecodePayload(file_, table_, r.offset, r.frame, skip_details_, dctx.get(), &buf);
  if (record.empty()) return false;
  tail_ = buf.tail();
  if (visit) visit(r.seq, record);
  return true;
}

void RingReader::ForEachRecord(const RecordVisitor& visit, size_t first) {
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  RecordBuffer buf;
  std::optional<uint64_t> last_seq;
  RingStats& stats = contents_.stats;
  for (size_t i = std::min(first, frames_.size()); i < frames_.size(); ++i) {
    const FrameRef& r = frames_[i];
    if (last_seq && r.seq == *last_seq) {
      ++stats.duplicates;
      continue;
    }
    const auto record =
        DecodePayload(file_, table_, r.offset, r.frame, skip_details_, dctx.get(), &buf);
    if (record.empty()) {
      ++stats.records_corrupt;
      continue;
    }
    tail_ = buf.tail();
    if (last_seq) stats.seq_gaps += r.seq - *last_seq - 1;
    last_seq = r.seq;
    ++stats.records_valid;
    stats.record_bytes += AlignRecord(sizeof r.frame + r.frame.payload_size);
    if (visit && !visit(r.seq, record)) break;
  }
  frames_.clear();
}

ReadStatus RingReader::OpenFile(const std::string& path, std::string* error) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = path + ": cannot open: " + std::strerror(errno);
    return ReadStatus::kIoError;
  }
  struct stat st {};
  // Not cleared: a reader reused for the next file of the same size keeps its buffer, and
  // resize() zero-fills nothing (10-64 MiB a file, faulted in and zeroed, was a tenth of ingest).
  const bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  int read_errno = 0;
  if (regular) {
    owned_.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < owned_.size()) {
      const ssize_t n =
          pread(fd, owned_.data() + got, owned_.size() - got, static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) read_errno = errno;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    owned_.resize(got);  // a file that shrank while we read is read as truncated
  }
  close(fd);
  if (!regular || read_errno != 0) {
    *error = path + ": cannot read: " +
             (regular ? std::strerror(read_errno) : std::string("not a regular file"));
    return ReadStatus::kIoError;
  }
  std::string inner;
  const ReadStatus s = Open(owned_, &inner);
  if (s != ReadStatus::kOk) *error = path + ": " + inner;
  return s;
}

}  // namespace perftracker::format
