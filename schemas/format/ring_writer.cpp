#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "schemas/format/crc32c.h"
#include "schemas/format/ring_file.h"
#include "schemas/format/ring_layout.h"
#include "schemas/format/version.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace perftracker::format {
namespace {

void CopyField(char* dst, size_t size, const std::string& src) {
  std::memset(dst, 0, size);
  std::memcpy(dst, src.data(), std::min(size - 1, src.size()));
}

// mkdir -p for the parent directories of `path`.
bool MakeParents(const std::string& path, std::string* error) {
  for (size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
    const std::string dir = path.substr(0, pos);
    if (mkdir(dir.c_str(), 0750) != 0 && errno != EEXIST) {
      *error = "cannot create directory " + dir + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

std::string PreviousName(const std::string& name) {
  const std::string ext = ".ptr";
  if (name.size() > ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0) {
    return name.substr(0, name.size() - ext.size()) + ".prev.ptr";
  }
  return name + ".prev";
}

// Moves a file already at `name` out of the way, unless a live writer holds its lock. Only a
// regular file is moved (renameat never follows a link, but a link there is refused outright:
// someone else put it there).
bool SetAsidePrevious(int dir_fd, const std::string& name, const std::string& shown,
                      std::string* error, int32_t* holder) {
  const int fd = openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return true;
    *error =
        shown + (errno == ELOOP ? " is a symbolic link" : ": " + std::string(std::strerror(errno)));
    return false;
  }
  struct stat st {};
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (!ok) {
    *error = shown + " is not a regular file";
  } else if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    // A file system without flock (ENOLCK, EOPNOTSUPP) cannot tell: the rank's own environment
    // marker (preload/core/identity.h) is then the only guard.
    FileHeader h{};
    *holder = pread(fd, &h, sizeof h, 0) == sizeof h && h.pid > 0 ? h.pid : -1;
    ok = false;
    *error = shown + " is being written by a live process (pid " + std::to_string(*holder) + ")";
  } else {
    // Still the file we looked at (not one a racing process just created), then aside.
    struct stat now {};
    ok = fstatat(dir_fd, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_ino == st.st_ino &&
         now.st_dev == st.st_dev &&
         renameat(dir_fd, name.c_str(), dir_fd, PreviousName(name).c_str()) == 0;
    if (!ok) *error = "cannot set " + shown + " aside: " + std::strerror(errno ? errno : EEXIST);
  }
  close(fd);
  return ok;
}

// The records keep at least this much: a file too small for both does without a table.
constexpr uint64_t kMinDataCapacity = 4096;

uint64_t TableSize(const RingOptions& options) {
  if (options.table_size >= 0) return AlignRecord(static_cast<uint64_t>(options.table_size));
  const uint64_t fixed = kHeaderRegionSize + options.live_size + kMinDataCapacity;
  const uint64_t room = options.file_size > fixed ? options.file_size - fixed : 0;
  return std::min<uint64_t>({options.file_size / 16, 4u << 20, room}) & ~uint64_t{kRecordAlign - 1};
}

FileHeader MakeHeader(const Identity& id, const RingOptions& options) {
  const uint64_t table = TableSize(options);
  FileHeader h;
  std::memset(&h, 0, sizeof h);
  std::memcpy(h.magic, kFileMagic, sizeof h.magic);
  h.format_version = kFormatVersion;
  h.min_reader_version = table > 0 ? kTableReaderVersion : kOldestReadableVersion;
  h.file_size = options.file_size;
  h.live_offset = kHeaderRegionSize;
  h.live_size = options.live_size;
  h.data_offset = kHeaderRegionSize + options.live_size + table;
  h.data_capacity = options.file_size - h.data_offset;
  h.flags = id.helper_of != 0 ? kFileFlagHelper : 0;
  h.rank_pid = id.helper_of;
  h.rank = id.rank;
  h.local_rank = id.local_rank;
  h.world_size = id.world_size;
  h.pid = id.pid;
  h.start_real_ns = id.start_real_ns;
  h.start_mono_ns = id.start_mono_ns;
  CopyField(h.job_id, sizeof h.job_id, id.job_id);
  CopyField(h.hostname, sizeof h.hostname, id.hostname);
  CopyField(h.library_version, sizeof h.library_version, id.library_version);
  h.header_crc = Crc32c(&h, offsetof(FileHeader, header_crc));
  return h;
}

}  // namespace

std::unique_ptr<RingWriter> RingWriter::CreateAt(int dir_fd, const std::string& dir,
                                                 const std::string& name, const Identity& identity,
                                                 const RingOptions& options, std::string* error,
                                                 int32_t* holder) {
  const std::string shown = dir + "/" + name;
  int32_t holder_ignored = 0;
  if (holder == nullptr) holder = &holder_ignored;
  *holder = 0;
  if (options.live_size < 1024 || options.live_size % kRecordAlign != 0 ||
      options.file_size <
          kHeaderRegionSize + options.live_size + TableSize(options) + kMinDataCapacity) {
    *error = "ring file size too small";
    return nullptr;
  }
  if (!SetAsidePrevious(dir_fd, name, shown, error, holder)) return nullptr;
  const int fd =
      openat(dir_fd, name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
  if (fd < 0) {
    *error = "cannot create " + shown + ": " + std::strerror(errno);
    return nullptr;
  }
  // Held until the writer's process ends: tells a later process claiming the same name that
  // this one is alive. Advisory only; a file system without flock just goes without.
  (void)flock(fd, LOCK_EX | LOCK_NB);
  std::unique_ptr<RingWriter> w(new RingWriter());
  w->fd_ = fd;
  if (const int rc = posix_fallocate(fd, 0, static_cast<off_t>(options.file_size)); rc != 0) {
    *error = "cannot allocate " + shown + ": " + std::strerror(rc);
    unlinkat(dir_fd, name.c_str(), 0);
    return nullptr;
  }
  const FileHeader header = MakeHeader(identity, options);
  if (!w->WriteAt(0, &header, sizeof header)) {
    *error = "cannot write " + shown + ": " + std::strerror(errno);
    return nullptr;
  }
  w->data_offset_ = header.data_offset;
  w->capacity_ = header.data_capacity;
  w->live_offset_ = header.live_offset;
  w->live_half_ = header.live_size / 2;
  w->table_offset_ = header.live_offset + header.live_size;
  w->table_size_ = header.data_offset - w->table_offset_;
  w->zstd_level_ = options.zstd_level;
  w->cctx_ = ZSTD_createCCtx();
  return w;
}

std::unique_ptr<RingWriter> RingWriter::Create(const std::string& path, const Identity& identity,
                                               const RingOptions& options, std::string* error) {
  if (!MakeParents(path, error)) return nullptr;
  const size_t slash = path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : path.substr(0, std::max<size_t>(slash, 1));
  const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    *error = "cannot open directory " + dir + ": " + std::strerror(errno);
    return nullptr;
  }
  auto w = CreateAt(dir_fd, dir, slash == std::string::npos ? path : path.substr(slash + 1),
                    identity, options, error);
  close(dir_fd);
  return w;
}

RingWriter::~RingWriter() {
  if (fd_ >= 0) close(fd_);
  ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(cctx_));
}

bool RingWriter::WriteAt(uint64_t offset, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = pwrite(fd_, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    offset += static_cast<uint64_t>(n);
    size -= static_cast<size_t>(n);
  }
  return true;
}

namespace {

// The static tail changes only when the function table does: spend more effort on it.
constexpr int kStaticTailLevel = 12;

size_t Compress(ZSTD_CCtx* cctx, std::span<const uint8_t> in, int level, uint8_t* out,
                size_t capacity) {
  return ZSTD_compressCCtx(cctx, out, capacity, in.data(), in.size(), level);
}

}  // namespace

bool RingWriter::Append(std::span<const uint8_t> flatbuffer, size_t static_tail, size_t details) {
  if (flatbuffer.size() > kMaxRawRecordSize || cctx_ == nullptr) return false;
  auto* cctx = static_cast<ZSTD_CCtx*>(cctx_);
  static_tail = std::min(static_tail, flatbuffer.size());
  // A detail frame only between a body and a tail: the reader finds it as the next-to-last frame.
  details = static_tail == 0 ? 0 : std::min(details, flatbuffer.size() - static_tail);
  if (details == flatbuffer.size() - static_tail) details = 0;
  const size_t body_size = flatbuffer.size() - static_tail - details;
  const std::span<const uint8_t> body = flatbuffer.first(body_size);
  const std::span<const uint8_t> detail = flatbuffer.subspan(body_size, details);
  const std::span<const uint8_t> tail = flatbuffer.last(static_tail);
  if (!tail.empty() && !std::equal(tail.begin(), tail.end(), tail_raw_.begin(), tail_raw_.end()) &&
      !NewTail(tail)) {
    return false;
  }
  const bool by_ref = !tail.empty() && tail_ref_.has_value();
  const size_t tail_z = tail.empty() ? 0 : by_ref ? kTableRefFrameSize : tail_compressed_.size();
  const size_t body_bound = ZSTD_compressBound(body.size());
  const size_t detail_bound = detail.empty() ? 0 : ZSTD_compressBound(detail.size());
  frame_.resize(sizeof(RecordFrame) + body_bound + detail_bound + tail_z + kRecordAlign);
  uint8_t* payload = frame_.data() + sizeof(RecordFrame);
  const size_t body_z = Compress(cctx, body, zstd_level_, payload, body_bound);
  if (ZSTD_isError(body_z)) return false;
  size_t detail_z = 0;
  if (!detail.empty()) {
    detail_z = Compress(cctx, detail, zstd_level_, payload + body_z, detail_bound);
    if (ZSTD_isError(detail_z)) return false;
  }
  if (by_ref) {
    uint8_t* ref = payload + body_z + detail_z;
    const uint32_t skippable[2] = {kZstdSkippableMagic, sizeof(TableRef)};
    std::memcpy(ref, skippable, sizeof skippable);
    std::memcpy(ref + sizeof skippable, &*tail_ref_, sizeof(TableRef));
  } else if (tail_z > 0) {
    std::memcpy(payload + body_z + detail_z, tail_compressed_.data(), tail_z);
  }
  const size_t csize = body_z + detail_z + tail_z;
  const uint64_t frame_size = AlignRecord(sizeof(RecordFrame) + csize);
  if (frame_size > capacity_) return false;
  std::memset(payload + csize, 0, frame_size - sizeof(RecordFrame) - csize);

  RecordFrame f{};
  f.magic = kRecordMagic;
  f.payload_size = static_cast<uint32_t>(csize);
  f.seq = next_seq_;
  f.raw_size = static_cast<uint32_t>(flatbuffer.size());
  f.payload_crc = Crc32c(payload, csize);
  f.codec = kCodecZstd;
  f.flags = static_cast<uint16_t>((detail.empty() ? 0 : kRecordFlagDetailFrame) |
                                  (by_ref ? kRecordFlagTableTail : 0));
  f.header_crc = Crc32c(&f, offsetof(RecordFrame, header_crc));
  const uint32_t magic = f.magic;
  f.magic = 0;  // the frame becomes visible only when the magic lands, after everything else
  std::memcpy(frame_.data(), &f, sizeof f);

  if (write_pos_ + frame_size > capacity_) {
    if (!RetireTail()) return false;
    write_pos_ = 0;
  }
  const uint64_t at = data_offset_ + write_pos_;
  if (!WriteAt(at, frame_.data(), frame_size) || !WriteAt(at, &magic, sizeof magic)) return false;
  write_pos_ += frame_size;
  last_record_size_ = frame_size;
  ++next_seq_;
  return true;
}

// A function table that is not the previous record's: one stored before (windows with and without
// a periodic checkpoint's functions alternate between two tables) is named again; another is
// compressed, and stored when the table region has room. Known by XXH3 and size: a collision
// among a process's few tables (~n^2 / 2^65) is not a risk worth their bytes in memory.
bool RingWriter::NewTail(std::span<const uint8_t> tail) {
  const uint64_t hash = XXH3_64bits(tail.data(), tail.size());
  tail_raw_.assign(tail.begin(), tail.end());
  tail_compressed_.clear();
  tail_ref_.reset();
  for (const StoredTail& t : stored_) {
    if (t.hash == hash && t.ref.raw_size == tail.size()) {
      tail_ref_ = t.ref;
      return true;
    }
  }
  auto* cctx = static_cast<ZSTD_CCtx*>(cctx_);
  tail_compressed_.resize(ZSTD_compressBound(tail.size()));
  const size_t n = Compress(cctx, tail, std::max(zstd_level_, kStaticTailLevel),
                            tail_compressed_.data(), tail_compressed_.size());
  if (ZSTD_isError(n)) {
    tail_raw_.clear();
    return false;
  }
  tail_compressed_.resize(n);
  const TableRef ref{table_used_, static_cast<uint32_t>(n), static_cast<uint32_t>(tail.size())};
  if (StoreTail(tail.size())) {
    tail_ref_ = ref;
    stored_.push_back({hash, ref});
    table_used_ += 2 * AlignRecord(sizeof(TableEntry) + n);
  }
  return true;
}

// Two identical copies, each a TableEntry and the frame, magic last: a kill leaves at most an
// entry no record names yet, and a damaged copy leaves the other.
bool RingWriter::StoreTail(size_t raw_size) {
  const size_t n = tail_compressed_.size();
  const uint64_t copy = AlignRecord(sizeof(TableEntry) + n);
  if (table_used_ > table_size_ || 2 * copy > table_size_ - table_used_) return false;
  TableEntry e{};
  e.payload_size = static_cast<uint32_t>(n);
  e.raw_size = static_cast<uint32_t>(raw_size);
  e.payload_crc = Crc32c(tail_compressed_.data(), n);
  e.magic = kTableEntryMagic;
  e.header_crc = Crc32c(&e, offsetof(TableEntry, header_crc));
  const uint32_t magic = e.magic;
  e.magic = 0;
  for (int i = 0; i < 2; ++i) {
    const uint64_t at = table_offset_ + table_used_ + static_cast<uint64_t>(i) * copy;
    if (!WriteAt(at + sizeof e, tail_compressed_.data(), n) || !WriteAt(at, &e, sizeof e) ||
        !WriteAt(at, &magic, sizeof magic)) {
      table_used_ = table_size_;  // never again: the region's state is unknown past here
      return false;
    }
  }
  return true;
}

// Frames left in [write_pos_, end) when the writer wraps are older than every record it keeps;
// once the next lap overwrites their successors they would be an island before a gap. Retiring
// them now keeps the records on disk one unbroken run of sequence numbers.
bool RingWriter::RetireTail() {
  const uint64_t size = capacity_ - write_pos_;
  scan_.resize(size);
  const uint64_t at = data_offset_ + write_pos_;
  if (pread(fd_, scan_.data(), size, static_cast<off_t>(at)) != static_cast<ssize_t>(size)) {
    return false;
  }
  const uint32_t zero = 0;
  for (uint64_t pos = 0; pos + sizeof(RecordFrame) <= size; pos += kRecordAlign) {
    uint32_t magic;
    std::memcpy(&magic, scan_.data() + pos, sizeof magic);
    if (magic == kRecordMagic && !WriteAt(at + pos, &zero, sizeof zero)) return false;
  }
  return true;
}

bool RingWriter::WriteLive(std::span<const uint8_t> flatbuffer) {
  if (flatbuffer.size() + sizeof(LiveFrame) > live_half_) return false;
  LiveFrame f{};
  f.magic = kLiveMagic;
  f.payload_size = static_cast<uint32_t>(flatbuffer.size());
  f.seq = ++live_seq_;
  f.payload_crc = Crc32c(flatbuffer.data(), flatbuffer.size());
  f.header_crc = Crc32c(&f, offsetof(LiveFrame, header_crc));
  // Alternate halves: a write torn by SIGKILL leaves the other, previous state readable.
  const uint64_t at = live_offset_ + (live_seq_ % 2) * live_half_;
  return WriteAt(at + sizeof f, flatbuffer.data(), flatbuffer.size()) && WriteAt(at, &f, sizeof f);
}

}  // namespace perftracker::format
